#include "kernel/boot/sysfs.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

// Every folder but the root, parents before children: /sys/fs/cgroup is
// where init mounts the cgroup v2 hierarchy (kernel/fs/cgroupfs).
constexpr const char* kDirs[] = {"block", "bus",    "class", "dev",   "devices",  "firmware",
                                 "fs",    "kernel", "module", "power", "fs/cgroup"};
constexpr int kNDirs = sizeof kDirs / sizeof kDirs[0];
constexpr uint64_t kSysfsDev = 0x17;

// -1: not found, 0: the root, i+1: kDirs[i].
int lookup(std::string_view p) {
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  if (p.empty()) return 0;
  for (int i = 0; i < kNDirs; i++)
    if (p == kDirs[i]) return i + 1;
  return -1;
}

// The folder holding kDirs[i] (0: the root), and its last name.
int parent_of(int i, std::string_view* name) {
  std::string_view p(kDirs[i]);
  size_t slash = p.rfind('/');
  if (slash == std::string_view::npos) {
    *name = p;
    return 0;
  }
  *name = tail(p, slash + 1);
  return lookup(head(p, slash));
}

long sys_stat_op(Task&, Filesystem&, Lookup& lk, struct stat* out) {
  int n = lookup(lk.path);
  if (n < 0) return -ENOENT;
  synth_stat(out, S_IFDIR | 0755, (uint64_t)n + 1, 0, kSysfsDev);
  return 0;
}

long sys_open_op(Task& t, Filesystem& fs, Lookup& lk, int flags, int, File** out) {
  int n = lookup(lk.path);
  if (n < 0) return (flags & O_CREAT) ? -EACCES : -ENOENT;
  if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
  SynthDirent ents[kNDirs];
  int count = 0;
  for (int i = 0; i < kNDirs; i++) {
    std::string_view name;
    if (parent_of(i, &name) != n) continue;
    copy_cstr(ents[count].name, sizeof ents[count].name, name);
    ents[count].type = DT_DIR;
    ents[count++].ino = (uint64_t)i + 2;
  }
  File* f = synth_dir_file(t.kernel->heap, ents, count, S_IFDIR | 0755, (uint64_t)n + 1, kSysfsDev);
  if (!f) return -ENOMEM;
  f->fs = &fs;
  *out = f;
  return 0;
}

long sys_readlink_op(Task&, Filesystem&, Lookup& lk, char*, size_t) {
  return lookup(lk.path) < 0 ? -ENOENT : -EINVAL;
}

long sys_access_op(Task& t, Filesystem& fs, Lookup& lk, int) {
  struct stat st;
  return sys_stat_op(t, fs, lk, &st);
}

long sys_statfs_op(Task&, Filesystem&, Lookup&, struct statfs* out) {
  memset(out, 0, sizeof *out);
  out->f_type = 0x62656572;  // SYSFS_MAGIC
  out->f_bsize = 4096;
  out->f_namelen = 255;
  return 0;
}

const FsOps kSysFsOps = {
    .name = "sysfs",
    .open = sys_open_op,
    .stat = sys_stat_op,
    .readlink = sys_readlink_op,
    .access = sys_access_op,
    .statfs = sys_statfs_op,
};

long sysfs_mount(Kernel& k, const char*, unsigned long, const char*, Filesystem** out) {
  return sysfs_create(k.heap, out);
}

}  // namespace

long sysfs_create(Heap* heap, Filesystem** out) {
  Filesystem* fs = heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kSysFsOps;
  fs->dev = kSysfsDev;
  *out = fs;
  return 0;
}

const FsType kSysFsType = {.name = "sysfs", .mount = sysfs_mount};

}  // namespace flatux
