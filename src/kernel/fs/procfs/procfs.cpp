#include "kernel/fs/procfs/procfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/ops.h"

namespace flatux {
namespace {

enum class Node { kRoot, kSelf, kPidDir, kExe, kNone };

struct Lookup {
  Node node = Node::kNone;
  Process* proc = nullptr;
};

Process* find_process(Kernel& k, int pid) {
  Guard g(k.tasks_lock);
  for (Task* t : k.tasks)
    if (t && t->proc && t->proc->pid == pid) return t->proc;
  return nullptr;
}

// Splits "/self/exe" style paths; only a handful of shapes exist.
Lookup lookup(Task& t, const char* path) {
  Lookup l;
  std::string_view p(path);
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  if (p.empty()) return {Node::kRoot, nullptr};
  size_t slash = p.find('/');
  std::string_view first = head(p, slash);
  std::string_view rest = slash == std::string_view::npos ? "" : tail(p, slash + 1);
  if (first == "self") {
    l.proc = t.proc;
    if (rest.empty()) return {Node::kSelf, t.proc};
  } else {
    int pid = 0;
    for (char c : first) {
      if (c < '0' || c > '9' || pid > 10000000) return l;
      pid = pid * 10 + (c - '0');
    }
    l.proc = find_process(*t.kernel, pid);
    if (!l.proc) return l;
    if (rest.empty()) return {Node::kPidDir, l.proc};
  }
  if (rest == "exe") l.node = Node::kExe;
  return l;
}

void fake_stat(struct stat* st, mode_t mode, uint64_t ino) {
  memset(st, 0, sizeof *st);
  st->st_mode = mode;
  st->st_nlink = S_ISDIR(mode) ? 2 : 1;
  st->st_ino = ino;
  st->st_dev = 0x16;  // procfs has its own anonymous device
  st->st_blksize = 1024;
}

long proc_readlink(Task& t, Filesystem&, const char* path, char* buf, size_t n) {
  Lookup l = lookup(t, path);
  char tmp[kPathMax];
  KFmt f(tmp, sizeof tmp);
  switch (l.node) {
    case Node::kSelf: f.dec(l.proc->pid); break;
    case Node::kExe: f.str(l.proc->exe); break;
    case Node::kRoot: case Node::kPidDir: return -EINVAL;
    default: return -ENOENT;
  }
  size_t len = f.size() < n ? f.size() : n;
  memcpy(buf, tmp, len);
  return (long)len;
}

long proc_stat(Task& t, Filesystem&, const char* path, bool follow, struct stat* out) {
  Lookup l = lookup(t, path);
  switch (l.node) {
    case Node::kRoot: fake_stat(out, S_IFDIR | 0555, 1); return 0;
    case Node::kSelf:
      if (follow) fake_stat(out, S_IFDIR | 0555, 0x10000 + l.proc->pid);
      else fake_stat(out, S_IFLNK | 0777, 2);
      return 0;
    case Node::kPidDir: fake_stat(out, S_IFDIR | 0555, 0x10000 + l.proc->pid); return 0;
    case Node::kExe:
      if (follow) return vfs_stat(t, AT_FDCWD, l.proc->exe, true, out);
      fake_stat(out, S_IFLNK | 0777, 0x20000 + l.proc->pid);
      return 0;
    default: return -ENOENT;
  }
}

long proc_open(Task& t, Filesystem&, const char* path, int flags, int mode, File** out) {
  Lookup l = lookup(t, path);
  if (flags & (O_WRONLY | O_RDWR | O_CREAT)) return l.node == Node::kNone ? -ENOENT : -EACCES;
  if (l.node == Node::kExe && !(flags & O_NOFOLLOW))
    return vfs_open(t, AT_FDCWD, l.proc->exe, flags, mode, out);
  return l.node == Node::kNone ? -ENOENT : -EOPNOTSUPP;
}

long proc_access(Task& t, Filesystem& fs, const char* path, int mode, bool follow) {
  struct stat st;
  long r = proc_stat(t, fs, path, follow, &st);
  if (r < 0) return r;
  return (mode & W_OK) ? -EACCES : 0;
}

long proc_dir_path(Task&, Filesystem&, File&, char*, size_t) { return -ENOTDIR; }

long proc_statfs(Task& t, Filesystem& fs, const char* path, struct statfs* out) {
  struct stat st;
  long r = proc_stat(t, fs, path, true, &st);
  if (r < 0) return r;
  memset(out, 0, sizeof *out);
  out->f_type = 0x9fa0;  // PROC_SUPER_MAGIC
  out->f_bsize = 4096;
  out->f_namelen = 255;
  out->f_frsize = 4096;
  return 0;
}

const FsOps kProcFsOps = {
    .name = "proc",
    .open = proc_open,
    .stat = proc_stat,
    .readlink = proc_readlink,
    .access = proc_access,
    .dir_path = proc_dir_path,
    .statfs = proc_statfs,
};

}  // namespace

long procfs_create(Heap* heap, Filesystem** out) {
  Filesystem* fs = heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kProcFsOps;
  fs->readonly = true;
  *out = fs;
  return 0;
}

}  // namespace flatux
