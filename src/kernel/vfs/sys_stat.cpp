#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/task/caps.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

long fd_stat(Task& t, uint64_t fd, struct stat* st, MountSpot* spot = nullptr) {
  FdRef f(t, fd);
  if (!f) return -EBADF;
  if (!f->ops->stat) return -EINVAL;
  if (spot && f->mount && f->path) *spot = {f->mount->id, f->mount->is_root(f->path)};
  char node[kPathMax];
  if (device_node_path(t, *f, node) && vfs_stat(t, AT_FDCWD, node, false, st) == 0) return 0;
  return f->ops->stat(t, *f, st);
}

// Resolves (dirfd, path, flags) the way every *at stat-like call does.
long stat_at(Task& t, int dirfd, uint64_t guest_path, int flags, struct stat* st,
             MountSpot* spot = nullptr) {
  if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE))
    return -EINVAL;
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)guest_path, sizeof path);
  if (r < 0) return r;
  if (r == 0) {
    if (!(flags & AT_EMPTY_PATH)) return -ENOENT;
    if (dirfd == AT_FDCWD) return vfs_stat(t, AT_FDCWD, ".", true, st, spot);
    return fd_stat(t, (uint64_t)(int64_t)dirfd, st, spot);
  }
  return vfs_stat(t, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), st, spot);
}

long put_stat(uint64_t guest, long r, const struct stat& st) {
  if (r < 0) return r;
  return copy_to_user((void*)guest, &st, sizeof st);
}

statx_timestamp to_statx_ts(const timespec& ts) {
  statx_timestamp s{};
  s.tv_sec = ts.tv_sec;
  s.tv_nsec = (uint32_t)ts.tv_nsec;
  return s;
}

long access_as(Task& t, int dirfd, uint64_t guest_path, uint64_t mode, uint64_t flags);

// access(2) asks with the real ids (AT_EACCESS: the effective ones), as
// Linux's access_override_creds.
long do_access(Task& t, int dirfd, uint64_t guest_path, uint64_t mode, uint64_t flags) {
  if (mode & ~(uint64_t)(R_OK | W_OK | X_OK)) return -EINVAL;
  if (flags & ~(uint64_t)(AT_SYMLINK_NOFOLLOW | AT_EACCESS | AT_EMPTY_PATH)) return -EINVAL;
  if (flags & AT_EACCESS) return access_as(t, dirfd, guest_path, mode, flags);
  Creds real = t.proc->creds;
  real.fsuid = real.uid;
  real.fsgid = real.gid;
  // The real user's rights: root's whole permitted set, nobody else's.
  if (!has_securebit(real, SECURE_NO_SETUID_FIXUP)) real.cap_effective = real.uid == 0 ? real.cap_permitted : 0;
  t.creds_override = &real;
  long r = access_as(t, dirfd, guest_path, mode, flags);
  t.creds_override = nullptr;
  return r;
}

long access_as(Task& t, int dirfd, uint64_t guest_path, uint64_t mode, uint64_t flags) {
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)guest_path, sizeof path);
  if (r < 0) return r;
  if (r == 0) {
    if (!(flags & AT_EMPTY_PATH)) return -ENOENT;
    struct stat st;
    return dirfd == AT_FDCWD ? vfs_access(t, AT_FDCWD, ".", (int)mode, true)
                             : fd_stat(t, (uint64_t)(int64_t)dirfd, &st);
  }
  return vfs_access(t, dirfd, path, (int)mode, !(flags & AT_SYMLINK_NOFOLLOW));
}

long do_readlink(Task& t, int dirfd, uint64_t guest_path, uint64_t buf, uint64_t size) {
  if ((int64_t)size <= 0) return -EINVAL;
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)guest_path, sizeof path);
  if (r < 0) return r;
  char target[kPathMax];
  if (r == 0) {
    // An empty path reads the link dirfd itself names (O_PATH | O_NOFOLLOW).
    if (dirfd == AT_FDCWD) return -ENOENT;
    FdRef f(t, (uint64_t)(int64_t)dirfd);
    if (!f) return -EBADF;
    r = vfs_readlink_file(t, *f, target, sizeof target);
  } else {
    r = vfs_readlink(t, dirfd, path, target, sizeof target);
  }
  if (r < 0) return r;
  size_t n = (size_t)r < size ? (size_t)r : size;
  if (copy_to_user((void*)buf, target, n) < 0) return -EFAULT;
  return (long)n;
}

}  // namespace

long sys_stat(Task& t, SyscallArgs a) {
  struct stat st;
  return put_stat(a[1], stat_at(t, AT_FDCWD, a[0], 0, &st), st);
}

long sys_lstat(Task& t, SyscallArgs a) {
  struct stat st;
  return put_stat(a[1], stat_at(t, AT_FDCWD, a[0], AT_SYMLINK_NOFOLLOW, &st), st);
}

long sys_fstat(Task& t, SyscallArgs a) {
  struct stat st;
  return put_stat(a[1], fd_stat(t, a[0], &st), st);
}

long sys_newfstatat(Task& t, SyscallArgs a) {
  struct stat st;
  return put_stat(a[2], stat_at(t, (int)a[0], a[1], (int)a[3], &st), st);
}

long sys_statx(Task& t, SyscallArgs a) {
  // Linux's statx: a reserved mask bit, or both sync types at once, is EINVAL.
  if (a[3] & STATX__RESERVED) return -EINVAL;
  if (((int)a[2] & AT_STATX_SYNC_TYPE) == AT_STATX_SYNC_TYPE) return -EINVAL;
  struct stat st;
  MountSpot spot;
  long r = stat_at(t, (int)a[0], a[1], (int)a[2], &st, &spot);
  if (r < 0) return r;
  struct statx sx;
  memset(&sx, 0, sizeof sx);
  sx.stx_mask = STATX_BASIC_STATS;
  if (spot.mnt_id) {
    // As Linux's: the mount's id as /proc/PID/mountinfo numbers it, and
    // whether the node is that mount's root (how systemd and findmnt tell
    // a mount point without parsing mountinfo).
    sx.stx_mask |= STATX_MNT_ID;
    sx.stx_mnt_id = (uint64_t)spot.mnt_id;
    sx.stx_attributes_mask |= STATX_ATTR_MOUNT_ROOT;
    if (spot.root) sx.stx_attributes |= STATX_ATTR_MOUNT_ROOT;
  }
  sx.stx_blksize = (uint32_t)st.st_blksize;
  sx.stx_nlink = (uint32_t)st.st_nlink;
  sx.stx_uid = st.st_uid;
  sx.stx_gid = st.st_gid;
  sx.stx_mode = (uint16_t)st.st_mode;
  sx.stx_ino = st.st_ino;
  sx.stx_size = (uint64_t)st.st_size;
  sx.stx_blocks = (uint64_t)st.st_blocks;
  sx.stx_atime = to_statx_ts(st.st_atim);
  sx.stx_mtime = to_statx_ts(st.st_mtim);
  sx.stx_ctime = to_statx_ts(st.st_ctim);
  sx.stx_rdev_major = (uint32_t)((st.st_rdev >> 8) & 0xfff) | (uint32_t)((st.st_rdev >> 32) & ~0xfffu);
  sx.stx_rdev_minor = (uint32_t)(st.st_rdev & 0xff) | (uint32_t)((st.st_rdev >> 12) & ~0xffu);
  sx.stx_dev_major = (uint32_t)((st.st_dev >> 8) & 0xfff) | (uint32_t)((st.st_dev >> 32) & ~0xfffu);
  sx.stx_dev_minor = (uint32_t)(st.st_dev & 0xff) | (uint32_t)((st.st_dev >> 12) & ~0xffu);
  return copy_to_user((void*)a[4], &sx, sizeof sx);
}

long sys_access(Task& t, SyscallArgs a) { return do_access(t, AT_FDCWD, a[0], a[1], 0); }
long sys_faccessat(Task& t, SyscallArgs a) { return do_access(t, (int)a[0], a[1], a[2], 0); }
long sys_faccessat2(Task& t, SyscallArgs a) { return do_access(t, (int)a[0], a[1], a[2], a[3]); }

long sys_statfs(Task& t, SyscallArgs a) {
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)a[0], sizeof path);
  if (r < 0) return r;
  if (r == 0) return -ENOENT;
  struct statfs sf;
  r = vfs_statfs(t, AT_FDCWD, path, &sf);
  if (r < 0) return r;
  return copy_to_user((void*)a[1], &sf, sizeof sf);
}

long sys_fstatfs(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (!f->ops->statfs) return -ENOSYS;
  struct statfs sf;
  long r = f->ops->statfs(t, *f, &sf);
  if (r < 0) return r;
  if (f->mount) statfs_mount_flags(*f->mount, &sf);
  return copy_to_user((void*)a[1], &sf, sizeof sf);
}

long sys_readlink(Task& t, SyscallArgs a) { return do_readlink(t, AT_FDCWD, a[0], a[1], a[2]); }
long sys_readlinkat(Task& t, SyscallArgs a) { return do_readlink(t, (int)a[0], a[1], a[2], a[3]); }

}  // namespace flatux
