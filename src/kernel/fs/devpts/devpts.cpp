#include "kernel/fs/devpts/devpts.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/tty/pty.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr uint64_t kDevPtsDev = 0x1b;
constexpr long kDevPtsMagic = 0x1cd1;

enum class Node { kNone, kRoot, kPtmx, kSlave };

// "/", "/ptmx" or "/N" (a number with no leading zero, as devpts names them).
Node parse(const char* path, int* index) {
  std::string_view p(path);
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  if (p.empty()) return Node::kRoot;
  if (p == "ptmx") return Node::kPtmx;
  if (p.size() > 7 || (p.size() > 1 && p[0] == '0')) return Node::kNone;
  int v = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return Node::kNone;
    v = v * 10 + (c - '0');
  }
  *index = v;
  return Node::kSlave;
}

long pts_stat(Task& t, Filesystem&, Lookup& lk, struct stat* out) {
  int index = 0;
  switch (parse(lk.path, &index)) {
    case Node::kRoot:
      synth_stat(out, S_IFDIR | 0755, 1, 0, kDevPtsDev);
      return 0;
    case Node::kPtmx:
      synth_stat(out, S_IFCHR | 0666, 2, 0, kDevPtsDev);
      out->st_rdev = kPtmxRdev;
      return 0;
    case Node::kSlave: {
      PtyNode n;
      if (!pty_node(*t.kernel, index, &n)) return -ENOENT;
      synth_stat(out, S_IFCHR | n.mode, (uint64_t)index + 3, 0, kDevPtsDev);
      out->st_rdev = pty_slave_rdev(index);
      out->st_uid = n.uid;
      out->st_gid = n.gid;
      out->st_atim = out->st_mtim = out->st_ctim = n.created;
      out->st_blksize = 1024;
      return 0;
    }
    default:
      return -ENOENT;
  }
}

long pts_open(Task& t, Filesystem& fs, Lookup& lk, int flags, int, File** out) {
  int index = 0;
  Node node = parse(lk.path, &index);
  if (node == Node::kNone) return (flags & O_CREAT) ? -EACCES : -ENOENT;
  if ((flags & O_CREAT) && (flags & O_EXCL)) return -EEXIST;
  long r;
  if (node == Node::kRoot) {
    if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
    int idx[kMaxPtys];
    int n = pty_list(*t.kernel, idx, kMaxPtys);
    auto* ents = static_cast<SynthDirent*>(t.kernel->heap->alloc(sizeof(SynthDirent) * (size_t)(n + 1)));
    if (!ents) return -ENOMEM;
    copy_cstr(ents[0].name, sizeof ents[0].name, "ptmx");
    ents[0].type = DT_CHR;
    ents[0].ino = 2;
    for (int i = 0; i < n; i++) {
      KFmt f(ents[i + 1].name, sizeof ents[i + 1].name);
      f.dec(idx[i]).ch('\0');
      ents[i + 1].type = DT_CHR;
      ents[i + 1].ino = (uint64_t)idx[i] + 3;
    }
    File* dir = synth_dir_file(t.kernel->heap, ents, n + 1, S_IFDIR | 0755, 1, kDevPtsDev);
    t.kernel->heap->free(ents);
    if (!dir) return -ENOMEM;
    *out = dir;
    r = 0;
  } else if (flags & O_DIRECTORY) {
    return -ENOTDIR;
  } else if (node == Node::kPtmx) {
    r = ptmx_open(t, flags, out);
  } else {
    r = pty_slave_open(t, index, flags, out);
  }
  if (r == 0) (*out)->fs = &fs;
  return r;
}

long pts_readlink(Task& t, Filesystem& fs, Lookup& lk, char*, size_t) {
  struct stat st;
  long r = pts_stat(t, fs, lk, &st);
  return r < 0 ? r : -EINVAL;
}

long pts_access(Task& t, Filesystem& fs, Lookup& lk, int) {
  struct stat st;
  return pts_stat(t, fs, lk, &st);
}

long pts_statfs(Task&, Filesystem&, Lookup&, struct statfs* out) {
  synth_statfs(out, kDevPtsMagic);
  return 0;
}

// Names are made by opening ptmx, never by hand.
long pts_no_create(Task& t, Filesystem& fs, Lookup& lk) {
  struct stat st;
  return pts_stat(t, fs, lk, &st) == 0 ? -EEXIST : -EACCES;
}
long pts_mkdir(Task& t, Filesystem& fs, Lookup& lk, int) { return pts_no_create(t, fs, lk); }
long pts_mknod(Task& t, Filesystem& fs, Lookup& lk, int, uint64_t) { return pts_no_create(t, fs, lk); }
long pts_symlink(Task& t, Filesystem& fs, Lookup& lk, const char*) { return pts_no_create(t, fs, lk); }
long pts_unlink(Task& t, Filesystem& fs, Lookup& lk) {
  long r = pts_no_create(t, fs, lk);
  return r == -EEXIST ? -EPERM : -ENOENT;
}

const FsOps kDevPtsOps = {
    .name = "devpts",
    .open = pts_open,
    .stat = pts_stat,
    .readlink = pts_readlink,
    .access = pts_access,
    .statfs = pts_statfs,
    .mkdir = pts_mkdir,
    .mknod = pts_mknod,
    .unlink = pts_unlink,
    .rmdir = pts_unlink,
    .symlink = pts_symlink,
    .dcache_drop_unused = true,
};

long devpts_mount(Kernel& k, const char*, unsigned long, const char*, Filesystem** out) {
  return devpts_create(k.heap, out);
}

}  // namespace

long devpts_create(Heap* heap, Filesystem** out) {
  Filesystem* fs = heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kDevPtsOps;
  fs->dev = kDevPtsDev;
  *out = fs;
  return 0;
}

const FsType kDevPtsType = {.name = "devpts", .mount = devpts_mount};

}  // namespace flatux
