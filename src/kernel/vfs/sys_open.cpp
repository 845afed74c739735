#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/errno.h>

#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/mm/host_charge.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/dnotify.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/fown.h"
#include "kernel/vfs/lease.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/locks.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/perm.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

long do_open(Task& t, int dirfd, uint64_t guest_path, uint64_t flags, uint64_t mode,
             unsigned resolve = 0) {
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)guest_path, sizeof path);
  if (r < 0) return r;
  if (r == 0) return -ENOENT;
  // O_PATH keeps only these, as Linux's build_open_flags (musl's open
  // adds O_LARGEFILE to every call).
  if (flags & O_PATH) flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  if (flags & (O_CREAT | __O_TMPFILE)) mode &= ~(uint64_t)t.proc->fs->umask;
  File* f = nullptr;
  if (resolve) {
    WalkScope* scope = t.kernel->heap->make<WalkScope>();  // a path buffer: off the kernel stack
    if (!scope) return -ENOMEM;
    r = walk_scope_at(t, dirfd, resolve, scope);
    if (r == 0) r = vfs_open(t, dirfd, path, (int)flags, (int)mode, &f, scope);
    t.kernel->heap->destroy_obj(scope);
  } else {
    r = vfs_open(t, dirfd, path, (int)flags, (int)mode, &f);
  }
  if (r < 0) return r;
  if (!(f->flags & O_PATH)) f->flags |= kOLargeFile;
  long fd = t.proc->files->install(f, flags & O_CLOEXEC);
  f->put();
  return fd;
}

// F_GETPIPE_SZ/F_SETPIPE_SZ: pipes are host pipes and the host keeps
// their capacity; growing one past the guest's fs.pipe-max-size is for
// root only (CAP_SYS_RESOURCE), as Linux's pipe_set_size.
long pipe_size(Task& t, File& f, int cmd, uint32_t arg) {
  if (f.host_fd < 0) return -EBADF;  // not a pipe
  long cur = host::sys(SYS_fcntl, f.host_fd, F_GETPIPE_SZ);
  if (cur < 0 || cmd == F_GETPIPE_SZ) return cur;
  uint32_t size = round_pipe_size(arg);
  if (!size) return -EINVAL;
  if (size > (uint64_t)cur && size > t.kernel->sysctl.pipe_max_size.load() && !capable(t.proc->creds, CAP_SYS_RESOURCE))
    return -EPERM;
  if (!f.charge) return host::sys(SYS_fcntl, f.host_fd, F_SETPIPE_SZ, size);
  // The capacity is charged to mem= (fs/pipe/pipe.cpp): growth before, as
  // Linux's pipe-user-pages limits (EPERM), and what shrinks after.
  HostCharge& c = *f.charge;
  Guard g(c.lock);
  cur = host::sys(SYS_fcntl, f.host_fd, F_GETPIPE_SZ);
  if (cur < 0) return cur;
  if (size > (uint64_t)cur && !host_charge_grow(c, size - (uint64_t)cur)) return -EPERM;
  long r = host::sys(SYS_fcntl, f.host_fd, F_SETPIPE_SZ, size);
  long now = host::sys(SYS_fcntl, f.host_fd, F_GETPIPE_SZ);
  if (now > 0) host_charge_set(c, (uint64_t)now);
  return r;
}

}  // namespace

long sys_open(Task& t, SyscallArgs a) { return do_open(t, AT_FDCWD, a[0], a[1], a[2]); }
long sys_openat(Task& t, SyscallArgs a) { return do_open(t, (int)a[0], a[1], a[2], a[3]); }
// openat2(dirfd, path, how, size): open_how is checked as Linux's
// build_open_flags does (unknown flags or resolve bits, a mode without
// O_CREAT or O_TMPFILE: EINVAL); a larger struct must end in zeros (E2BIG).
long sys_openat2(Task& t, SyscallArgs a) {
  struct OpenHow {
    uint64_t flags, mode, resolve;
  } how;
  size_t size = a[3];
  if (size < sizeof how) return -EINVAL;
  if (size > 4096) return -E2BIG;
  if (copy_from_user(&how, (const void*)a[2], sizeof how) < 0) return -EFAULT;
  for (size_t off = sizeof how; off < size; off++) {
    char c;
    if (copy_from_user(&c, (const char*)a[2] + off, 1) < 0) return -EFAULT;
    if (c) return -E2BIG;
  }
  constexpr uint64_t kValidFlags = O_RDONLY | O_WRONLY | O_RDWR | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC |
                                   O_APPEND | O_NONBLOCK | O_DSYNC | FASYNC | O_DIRECT | kOLargeFile |
                                   O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_PATH | __O_TMPFILE |
                                   O_SYNC;
  constexpr uint64_t kValidResolve = 0x1f;
  if (how.flags & ~kValidFlags) return -EINVAL;
  if (how.resolve & ~kValidResolve) return -EINVAL;
  if ((how.resolve & WalkScope::kBeneath) && (how.resolve & WalkScope::kInRoot)) return -EINVAL;
  if (how.flags & (O_CREAT | __O_TMPFILE)) {
    if (how.mode & ~(uint64_t)07777) return -EINVAL;
  } else if (how.mode) {
    return -EINVAL;
  }
  if ((how.flags & O_PATH) && (how.flags & ~(uint64_t)(O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)))
    return -EINVAL;
  return do_open(t, (int)a[0], a[1], how.flags, how.mode, (unsigned)how.resolve);
}

long sys_creat(Task& t, SyscallArgs a) {
  return do_open(t, AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, a[1]);
}

long sys_close(Task& t, SyscallArgs a) {
  if (a[0] > (uint64_t)FdTable::kMaxFds) return -EBADF;
  if (t.proc->has_posix_locks) {
    FdRef f(t, a[0]);
    if (f) t.kernel->locks->on_close(t, *f);
  }
  return t.proc->files->close((int)a[0]);
}

// close_range(first, last, flags): every open descriptor in the range is
// closed (or marked close-on-exec); CLOSE_RANGE_UNSHARE first gives the
// process a table of its own when another process shares it.
long sys_close_range(Task& t, SyscallArgs a) {
  uint64_t first = a[0] & 0xffffffffu, last = a[1] & 0xffffffffu, flags = a[2];
  if (flags & ~(uint64_t)(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) return -EINVAL;
  if (first > last) return -EINVAL;
  Process& p = *t.proc;
  if ((flags & CLOSE_RANGE_UNSHARE) && p.files->refs.load() > 1) {
    FdTable* own = p.files->clone();
    if (!own) return -ENOMEM;
    FdTable* old = p.files;
    p.files = own;
    if (old->refs.fetch_sub(1) == 1) t.kernel->heap->destroy_obj(old);
  }
  if (last >= (uint64_t)FdTable::kMaxFds) last = FdTable::kMaxFds - 1;
  for (uint64_t fd = first; fd <= last; fd++) {
    if (flags & CLOSE_RANGE_CLOEXEC) {
      p.files->set_cloexec((int)fd, true);
      continue;
    }
    if (p.has_posix_locks) {
      FdRef f(t, fd);
      if (f) t.kernel->locks->on_close(t, *f);
    }
    p.files->close((int)fd);
  }
  return 0;
}

long sys_flock(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  return t.kernel->locks->flock(t, *f, (int)a[1]);
}

long sys_dup(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  return t.proc->files->install(&*f, false);
}

long sys_dup3(Task& t, SyscallArgs a) {
  if (a[0] == a[1]) return -EINVAL;
  if (a[2] & ~(uint64_t)O_CLOEXEC) return -EINVAL;
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (a[1] >= (uint64_t)t.proc->files->limit()) return -EBADF;
  return t.proc->files->install_at((int)a[1], &*f, a[2] & O_CLOEXEC);
}

long sys_dup2(Task& t, SyscallArgs a) {
  if (a[0] == a[1]) {
    FdRef f(t, a[0]);
    return f ? (long)a[1] : -EBADF;
  }
  const uint64_t args[6] = {a[0], a[1], 0, 0, 0, 0};
  return sys_dup3(t, args);
}

long sys_fcntl(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  int fd = (int)a[0];
  // Flags F_SETFL may change; the access mode and creation flags stay.
  constexpr uint32_t kSettable = O_APPEND | O_NONBLOCK | O_ASYNC | O_DIRECT | O_NOATIME;
  switch ((int)a[1]) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
      if (a[2] >= (uint64_t)t.proc->files->limit()) return -EINVAL;
      return t.proc->files->install(&*f, (int)a[1] == F_DUPFD_CLOEXEC, (int)a[2]);
    case F_GETFD: return t.proc->files->cloexec(fd) ? FD_CLOEXEC : 0;
    case F_SETFD: return t.proc->files->set_cloexec(fd, a[2] & FD_CLOEXEC);
    case F_GETFL: return f->flags;
    case F_SETFL: {
      if ((a[2] & O_NOATIME) && !(f->flags & O_NOATIME)) {
        // Only the file's owner (or root) may stop its access times.
        struct stat st;
        if (f->ops->stat && f->ops->stat(t, *f, &st) == 0 && !owner_or_root(t, st.st_uid)) return -EPERM;
      }
      if (f->host_fd >= 0) {
        long r = host::sys(SYS_fcntl, f->host_fd, F_SETFL, a[2] & kSettable);
        if (r < 0) return r;
      }
      f->flags = (f->flags & ~kSettable) | ((uint32_t)a[2] & kSettable);
      return 0;
    }
    case F_GETLK: case F_SETLK: case F_SETLKW:
    case F_OFD_GETLK: case F_OFD_SETLK: case F_OFD_SETLKW: {
      if (f->flags & O_PATH) return -EBADF;
      struct flock fl;
      if (copy_from_user(&fl, (const void*)a[2], sizeof fl) < 0) return -EFAULT;
      long r = t.kernel->locks->fcntl_lock(t, *f, (int)a[1], &fl);
      if (r == 0 && ((int)a[1] == F_GETLK || (int)a[1] == F_OFD_GETLK))
        r = copy_to_user((void*)a[2], &fl, sizeof fl);
      return r;
    }
    case F_ADD_SEALS:
    case F_GET_SEALS:
      // Seals live on host memfds; anything else cannot be sealed.
      if (f->host_fd < 0) return -EINVAL;
      return host::sys(SYS_fcntl, f->host_fd, (int)a[1], a[2]);
    case F_NOTIFY:
      if (f->flags & O_PATH) return -EBADF;
      return dnotify_fcntl(t, fd, *f, a[2]);
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ: return pipe_size(t, *f, (int)a[1], (uint32_t)a[2]);
    case F_SETOWN: case F_GETOWN: case F_SETOWN_EX: case F_GETOWN_EX: case F_SETSIG: case F_GETSIG:
      if (f->flags & O_PATH) return -EBADF;
      return fcntl_owner(t, *f, (int)a[1], a[2]);
    case F_SETLEASE:
      if (f->flags & O_PATH) return -EBADF;
      return t.kernel->leases->set(t, *f, fd, (long)a[2]);
    case F_GETLEASE:
      if (f->flags & O_PATH) return -EBADF;
      return t.kernel->leases->get(t, *f);
    default: return -EINVAL;
  }
}

}  // namespace flatux
