#include <fcntl.h>
#include <linux/errno.h>
#include <sys/ioctl.h>

#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

// FIONBIO and FIOASYNC: `flag` on when *arg is not 0, off when it is.
long set_status_flag(Task& t, SyscallArgs a, File& f, uint32_t flag) {
  int on;
  if (get_user(on, (const void*)a[2]) < 0) return -EFAULT;
  uint64_t args[6] = {a[0], F_SETFL, on ? (f.flags | flag) : (f.flags & ~flag), 0, 0, 0};
  return sys_fcntl(t, args);
}

}  // namespace

long sys_ioctl(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  int fd = (int)a[0];
  switch ((unsigned)a[1]) {
    // Descriptor-level requests are the fd table's business, not the file's.
    case FIOCLEX: return t.proc->files->set_cloexec(fd, true);
    case FIONCLEX: return t.proc->files->set_cloexec(fd, false);
    // The open file's status flags, as fcntl(F_SETFL) sets them (O_ASYNC
    // as fcntl keeps it: docs/COMPATIBILITY.md).
    case FIONBIO: return set_status_flag(t, a, *f, O_NONBLOCK);
    case FIOASYNC: return set_status_flag(t, a, *f, O_ASYNC);
  }
  if (!f->ops->ioctl) return -ENOTTY;
  return f->ops->ioctl(t, *f, (unsigned)a[1], a[2]);
}

long sys_fadvise64(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (a[3] > 5) return -EINVAL;  // POSIX_FADV_NORMAL .. POSIX_FADV_NOREUSE
  if (f->host_fd < 0) return -ESPIPE;
  return host::sys(SYS_fadvise64, f->host_fd, a[1], a[2], a[3]);
}

}  // namespace flatux
