#include "kernel/fs/devfs/devfs.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/ops.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

struct DevNode {
  const char* name;
  const char* host;    // host device opened for it, or nullptr for a link
  const char* target;  // symlink target
};

constexpr DevNode kNodes[] = {
    {"null", "/dev/null", nullptr},       {"zero", "/dev/zero", nullptr},
    {"full", "/dev/full", nullptr},       {"random", "/dev/random", nullptr},
    {"urandom", "/dev/urandom", nullptr}, {"tty", "/dev/tty", nullptr},
    {"fd", nullptr, "/proc/self/fd"},     {"stdin", nullptr, "/proc/self/fd/0"},
    {"stdout", nullptr, "/proc/self/fd/1"}, {"stderr", nullptr, "/proc/self/fd/2"},
};
constexpr uint64_t kDevfsDev = 0x5;

// nullptr with *root set for "/", else the node.
const DevNode* find(const char* path, bool* root) {
  std::string_view p(path);
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  *root = p.empty();
  for (const DevNode& n : kNodes)
    if (p == n.name) return &n;
  return nullptr;
}

long dev_stat(Task& t, Filesystem&, const char* path, bool follow, struct stat* out) {
  bool root;
  const DevNode* n = find(path, &root);
  if (root) {
    synth_stat(out, S_IFDIR | 0755, 1, 0, kDevfsDev);
    return 0;
  }
  if (!n) return -ENOENT;
  if (n->target) {
    if (follow) return vfs_stat(t, AT_FDCWD, n->target, true, out);
    synth_stat(out, S_IFLNK | 0777, 2 + (n - kNodes), strlen(n->target), kDevfsDev);
    return 0;
  }
  return host::sys(SYS_newfstatat, AT_FDCWD, n->host, out, 0);
}

long dev_open(Task& t, Filesystem& fs, const char* path, int flags, int mode, File** out) {
  bool root;
  const DevNode* n = find(path, &root);
  if (root) {
    if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
    SynthDirent ents[sizeof kNodes / sizeof kNodes[0]];
    int i = 0;
    for (const DevNode& d : kNodes) {
      copy_cstr(ents[i].name, sizeof ents[i].name, d.name);
      ents[i].type = d.target ? DT_LNK : DT_CHR;
      ents[i].ino = 2 + i;
      i++;
    }
    File* f = synth_dir_file(t.kernel->heap, ents, i, S_IFDIR | 0755, 1);
    if (!f) return -ENOMEM;
    f->fs = &fs;
    *out = f;
    return 0;
  }
  if (!n) return (flags & O_CREAT) ? -EACCES : -ENOENT;
  if (n->target) {
    if (flags & O_NOFOLLOW) return -ELOOP;
    return vfs_open(t, AT_FDCWD, n->target, flags, mode, out);
  }
  if (flags & O_DIRECTORY) return -ENOTDIR;
  long fd = host::sys(SYS_openat, AT_FDCWD, n->host,
                      (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC | O_NOCTTY, 0);
  if (fd < 0) return fd;
  File* f = hostfs_adopt_host_fd(t.kernel->heap, (int)fd, (uint32_t)flags & ~O_CLOEXEC);
  if (!f) return -ENOMEM;
  f->fs = &fs;
  *out = f;
  return 0;
}

long dev_readlink(Task&, Filesystem&, const char* path, char* buf, size_t n) {
  bool root;
  const DevNode* d = find(path, &root);
  if (!d) return root ? -EINVAL : -ENOENT;
  if (!d->target) return -EINVAL;
  size_t len = strlen(d->target);
  if (len > n) len = n;
  memcpy(buf, d->target, len);
  return (long)len;
}

long dev_access(Task& t, Filesystem& fs, const char* path, int mode, bool follow) {
  struct stat st;
  return dev_stat(t, fs, path, follow, &st);
}

long dev_dir_path(Task&, Filesystem&, File&, char* out, size_t n) {
  return copy_cstr(out, n, "/") ? 0 : -ENAMETOOLONG;
}

long dev_statfs(Task&, Filesystem&, const char*, struct statfs* out) {
  memset(out, 0, sizeof *out);
  out->f_type = 0x1021994;  // TMPFS_MAGIC, as devtmpfs reports
  out->f_bsize = 4096;
  out->f_namelen = 255;
  return 0;
}

const FsOps kDevFsOps = {
    .name = "devtmpfs",
    .open = dev_open,
    .stat = dev_stat,
    .readlink = dev_readlink,
    .access = dev_access,
    .dir_path = dev_dir_path,
    .statfs = dev_statfs,
};

}  // namespace

long devfs_create(Heap* heap, Filesystem** out) {
  Filesystem* fs = heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kDevFsOps;
  *out = fs;
  return 0;
}

}  // namespace flatux
