#include "kernel/vfs/ops.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>

#include "kernel/kernel.h"

namespace flatux {

Vfs& vfs_of(Task& t) { return *t.kernel->vfs; }

namespace {

constexpr int kMountLinkDepth = 8;

// The root filesystem walks whole paths itself and cannot follow a
// symlink into another mount (hostfs refuses host /proc's magic links with
// ELOOP). When its last component is a symlink whose target lies on
// another mount (/dev/stdin -> /proc/self/fd/0, /etc/mtab ->
// ../proc/self/mounts), the operation is redone on the target.
bool mount_link_target(Task& t, const ResolvedPath& rp, char* out, size_t n) {
  if (rp.mount->len != 1) return false;
  char link[kPathMax];
  long len = rp.fs->ops->readlink(t, *rp.fs, rp.path, link, sizeof link - 1);
  if (len <= 0) return false;
  link[len] = 0;
  char joined[kPathMax];
  if (link[0] == '/') {
    memcpy(joined, link, (size_t)len + 1);
  } else {
    const char* slash = strrchr(rp.path, '/');
    size_t dl = slash ? (size_t)(slash - rp.path) + 1 : 0;
    if (dl + (size_t)len + 1 > sizeof joined) return false;
    memcpy(joined, rp.path, dl);
    memcpy(joined + dl, link, (size_t)len + 1);
  }
  if (normalize_path(joined, out, n) < 0) return false;
  ResolvedPath other;
  return vfs_of(t).resolve(t, AT_FDCWD, out, &other) == 0 && other.mount != rp.mount;
}

// Resolves and runs op(rp); retries through a cross-mount symlink.
template <typename Op>
long with_path(Task& t, int dirfd, const char* path, bool follow, Op op) {
  char buf[kPathMax];
  for (int depth = 0;; depth++) {
    ResolvedPath rp;
    long r = vfs_of(t).resolve(t, dirfd, path, &rp);
    if (r < 0) return r;
    r = op(rp);
    if (r != -ELOOP || !follow || depth == kMountLinkDepth || !mount_link_target(t, rp, buf, sizeof buf))
      return r;
    path = buf;
    dirfd = AT_FDCWD;
  }
}

}  // namespace

long vfs_open(Task& t, int dirfd, const char* path, int flags, int mode, File** out) {
  return with_path(t, dirfd, path, !(flags & O_NOFOLLOW), [&](ResolvedPath& rp) {
    return rp.fs->ops->open(t, *rp.fs, rp.path, flags, mode, out);
  });
}

long vfs_stat(Task& t, int dirfd, const char* path, bool follow, struct stat* out) {
  return with_path(t, dirfd, path, follow, [&](ResolvedPath& rp) {
    return rp.fs->ops->stat(t, *rp.fs, rp.path, follow, out);
  });
}

long vfs_readlink(Task& t, int dirfd, const char* path, char* buf, size_t n) {
  ResolvedPath rp;
  long r = vfs_of(t).resolve(t, dirfd, path, &rp);
  if (r < 0) return r;
  return rp.fs->ops->readlink(t, *rp.fs, rp.path, buf, n);
}

long vfs_access(Task& t, int dirfd, const char* path, int mode, bool follow) {
  return with_path(t, dirfd, path, follow, [&](ResolvedPath& rp) {
    return rp.fs->ops->access(t, *rp.fs, rp.path, mode, follow);
  });
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
