#include "kernel/vfs/ops.h"

#include <linux/errno.h>

#include "kernel/kernel.h"

namespace flatux {

Vfs& vfs_of(Task& t) { return *t.kernel->vfs; }

long vfs_open(Task& t, int dirfd, const char* path, int flags, int mode, File** out) {
  ResolvedPath rp;
  long r = vfs_of(t).resolve(t, dirfd, path, &rp);
  if (r < 0) return r;
  return rp.fs->ops->open(t, *rp.fs, rp.path, flags, mode, out);
}

long vfs_stat(Task& t, int dirfd, const char* path, bool follow, struct stat* out) {
  ResolvedPath rp;
  long r = vfs_of(t).resolve(t, dirfd, path, &rp);
  if (r < 0) return r;
  return rp.fs->ops->stat(t, *rp.fs, rp.path, follow, out);
}

long vfs_readlink(Task& t, int dirfd, const char* path, char* buf, size_t n) {
  ResolvedPath rp;
  long r = vfs_of(t).resolve(t, dirfd, path, &rp);
  if (r < 0) return r;
  return rp.fs->ops->readlink(t, *rp.fs, rp.path, buf, n);
}

long vfs_access(Task& t, int dirfd, const char* path, int mode, bool follow) {
  ResolvedPath rp;
  long r = vfs_of(t).resolve(t, dirfd, path, &rp);
  if (r < 0) return r;
  return rp.fs->ops->access(t, *rp.fs, rp.path, mode, follow);
}

}  // namespace flatux

namespace flatux {

long vfs_statfs(Task& t, int dirfd, const char* path, struct statfs* out) {
  ResolvedPath rp;
  long r = vfs_of(t).resolve(t, dirfd, path, &rp);
  if (r < 0) return r;
  if (!rp.fs->ops->statfs) return -ENOSYS;
  return rp.fs->ops->statfs(t, *rp.fs, rp.path, out);
}

}  // namespace flatux
