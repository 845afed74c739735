// chmod, chown, utimes, truncate, fallocate, the syncs and chroot.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <utime.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/patharg.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

constexpr uint32_t kNoId = 0xffffffffu;

long path_setattr(Task& t, int dirfd, uint64_t path, bool follow, Attr& a, bool empty_ok = false) {
  PathArg p(path);
  if (p.err == -ENOENT && empty_ok) {
    if (dirfd == AT_FDCWD) return vfs_setattr(t, AT_FDCWD, ".", true, a);
    FdRef f(t, (uint64_t)(int64_t)dirfd);
    return f ? vfs_fsetattr(t, *f, a) : -EBADF;
  }
  if (!p.ok()) return p.err;
  return vfs_setattr(t, dirfd, p.buf, follow, a);
}

long fd_setattr(Task& t, uint64_t fd, Attr& a) {
  FdRef f(t, fd);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  return vfs_fsetattr(t, *f, a);
}

Attr mode_attr(uint64_t mode) {
  Attr a;
  a.mask = kAttrMode;
  a.mode = (uint32_t)mode & 07777;
  return a;
}

Attr owner_attr(uint64_t uid, uint64_t gid) {
  Attr a;
  if ((uint32_t)uid != kNoId) { a.mask |= kAttrUid; a.uid = (uint32_t)uid; }
  if ((uint32_t)gid != kNoId) { a.mask |= kAttrGid; a.gid = (uint32_t)gid; }
  return a;
}

// Times for utimensat: null = now; UTIME_NOW/UTIME_OMIT per entry.
long times_attr(const timespec* ts, Attr* a) {
  timespec now = realtime_now();
  if (!ts) {
    a->mask = kAttrAtime | kAttrMtime | kAttrTimesNow;
    a->atime = a->mtime = now;
    return 0;
  }
  int now_count = 0, set_count = 0;
  for (int i = 0; i < 2; i++) {
    if (ts[i].tv_nsec == UTIME_OMIT) continue;
    if (ts[i].tv_nsec != UTIME_NOW && (ts[i].tv_nsec < 0 || ts[i].tv_nsec >= 1000000000)) return -EINVAL;
    bool is_now = ts[i].tv_nsec == UTIME_NOW;
    now_count += is_now;
    set_count++;
    a->mask |= i == 0 ? kAttrAtime : kAttrMtime;
    (i == 0 ? a->atime : a->mtime) = is_now ? now : ts[i];
  }
  if (set_count && now_count == set_count) a->mask |= kAttrTimesNow;
  return 0;
}

long do_utimensat(Task& t, int dirfd, uint64_t path, const timespec* ts, uint64_t flags) {
  if (flags & ~(uint64_t)(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return -EINVAL;
  Attr a;
  long r = times_attr(ts, &a);
  if (r < 0) return r;
  if (!path) {  // futimens: the descriptor itself
    if (dirfd == AT_FDCWD) return -EFAULT;
    return a.mask ? fd_setattr(t, (uint64_t)(int64_t)dirfd, a) : (FdRef(t, (uint64_t)(int64_t)dirfd) ? 0 : -EBADF);
  }
  if (!a.mask) {  // nothing to change: just check the path
    PathArg p(path);
    if (!p.ok()) return p.err;
    struct stat st;
    return vfs_stat(t, dirfd, p.buf, !(flags & AT_SYMLINK_NOFOLLOW), &st);
  }
  return path_setattr(t, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), a, flags & AT_EMPTY_PATH);
}

// utimes/futimesat take timevals.
long do_utimes(Task& t, int dirfd, uint64_t path, uint64_t guest_tv) {
  if (!guest_tv) return do_utimensat(t, dirfd, path, nullptr, 0);
  timeval tv[2];
  if (copy_from_user(tv, (const void*)guest_tv, sizeof tv) < 0) return -EFAULT;
  timespec ts[2];
  for (int i = 0; i < 2; i++) {
    if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return -EINVAL;
    ts[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
  }
  return do_utimensat(t, dirfd, path, ts, 0);
}

long size_attr(int64_t len, Attr* a) {
  if (len < 0) return -EINVAL;
  a->mask = kAttrSize;
  a->size = len;
  return 0;
}

}  // namespace

long sys_chmod(Task& t, SyscallArgs a) {
  Attr at = mode_attr(a[1]);
  return path_setattr(t, AT_FDCWD, a[0], true, at);
}
long sys_fchmodat(Task& t, SyscallArgs a) {
  Attr at = mode_attr(a[2]);
  return path_setattr(t, (int)a[0], a[1], true, at);
}
long sys_fchmod(Task& t, SyscallArgs a) {
  Attr at = mode_attr(a[1]);
  return fd_setattr(t, a[0], at);
}

long sys_chown(Task& t, SyscallArgs a) {
  Attr at = owner_attr(a[1], a[2]);
  return path_setattr(t, AT_FDCWD, a[0], true, at);
}
long sys_lchown(Task& t, SyscallArgs a) {
  Attr at = owner_attr(a[1], a[2]);
  return path_setattr(t, AT_FDCWD, a[0], false, at);
}
long sys_fchown(Task& t, SyscallArgs a) {
  Attr at = owner_attr(a[1], a[2]);
  return fd_setattr(t, a[0], at);
}
long sys_fchownat(Task& t, SyscallArgs a) {
  if (a[4] & ~(uint64_t)(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return -EINVAL;
  Attr at = owner_attr(a[2], a[3]);
  return path_setattr(t, (int)a[0], a[1], !(a[4] & AT_SYMLINK_NOFOLLOW), at, a[4] & AT_EMPTY_PATH);
}

long sys_utimensat(Task& t, SyscallArgs a) {
  timespec ts[2];
  if (a[2] && copy_from_user(ts, (const void*)a[2], sizeof ts) < 0) return -EFAULT;
  return do_utimensat(t, (int)a[0], a[1], a[2] ? ts : nullptr, a[3]);
}
long sys_utimes(Task& t, SyscallArgs a) { return do_utimes(t, AT_FDCWD, a[0], a[1]); }
long sys_futimesat(Task& t, SyscallArgs a) { return do_utimes(t, (int)a[0], a[1], a[2]); }
long sys_utime(Task& t, SyscallArgs a) {
  if (!a[1]) return do_utimensat(t, AT_FDCWD, a[0], nullptr, 0);
  utimbuf ub;
  if (copy_from_user(&ub, (const void*)a[1], sizeof ub) < 0) return -EFAULT;
  timespec ts[2] = {{ub.actime, 0}, {ub.modtime, 0}};
  return do_utimensat(t, AT_FDCWD, a[0], ts, 0);
}

long sys_truncate(Task& t, SyscallArgs a) {
  Attr at;
  long r = size_attr((int64_t)a[1], &at);
  return r < 0 ? r : path_setattr(t, AT_FDCWD, a[0], true, at);
}
long sys_ftruncate(Task& t, SyscallArgs a) {
  Attr at;
  long r = size_attr((int64_t)a[1], &at);
  if (r < 0) return r;
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  if ((f->flags & O_ACCMODE) == O_RDONLY) return -EINVAL;
  if (f->flags & O_APPEND) return -EPERM;
  return vfs_fsetattr(t, *f, at);
}

long sys_fallocate(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  if ((int64_t)a[2] < 0 || (int64_t)a[3] <= 0) return -EINVAL;
  if ((f->flags & O_ACCMODE) == O_RDONLY) return -EBADF;
  if (f->mount && f->mount->readonly()) return -EROFS;
  return f->ops->fallocate ? f->ops->fallocate(t, *f, (int)a[1], (int64_t)a[2], (int64_t)a[3]) : -EOPNOTSUPP;
}

long sys_fsync(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  return f->ops->fsync ? f->ops->fsync(t, *f, false) : -EINVAL;
}
long sys_fdatasync(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  return f->ops->fsync ? f->ops->fsync(t, *f, true) : -EINVAL;
}

namespace {
void sync_mount(const Mount& m) {
  if (m.fs->ops->sync) m.fs->ops->sync(*m.fs);
}
}  // namespace

long sys_sync(Task& t, SyscallArgs) {
  vfs_of(t).for_each_mount(sync_mount);
  return 0;
}
long sys_syncfs(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (f->mount) sync_mount(*f->mount);
  return 0;
}

long sys_chroot(Task& t, SyscallArgs a) {
  PathArg p(a[0]);
  if (!p.ok()) return p.err;
  if (!capable(t.proc->creds, CAP_SYS_CHROOT)) return -EPERM;
  File* dir = nullptr;
  long r = vfs_open(t, AT_FDCWD, p.buf, O_PATH | O_DIRECTORY, 0, &dir);
  if (r < 0) return r;
  auto root = path_of_file(t, *dir);
  if (root.is_error()) {
    dir->put();
    return root.error();
  }
  fs_set_root(t, root.release_value());
  // Kept with it: "/" still stats the folder once it is removed.
  FsContext& fc = *t.proc->fs;
  File* old;
  {
    Guard g(fc.lock);
    old = fc.root_file;
    fc.root_file = dir;
  }
  if (old) old->put();
  return 0;
}

}  // namespace flatux
