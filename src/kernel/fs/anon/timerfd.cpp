// timerfd: a host timerfd. Guest and host share their clocks (no time
// namespace), so absolute expiry times mean the same on both sides.
#include <ctime>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/anon/anon.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {

long sys_timerfd_create(Task& t, SyscallArgs a) {
  int clock = (int)a[0];
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC && clock != CLOCK_BOOTTIME) return -EINVAL;
  if (a[1] & ~(uint64_t)(TFD_NONBLOCK | TFD_CLOEXEC)) return -EINVAL;
  long hfd = host::sys(SYS_timerfd_create, clock, TFD_CLOEXEC | (a[1] & TFD_NONBLOCK));
  return anon_install(t, hfd, O_RDWR | ((a[1] & TFD_NONBLOCK) ? O_NONBLOCK : 0), a[1] & TFD_CLOEXEC);
}

long sys_timerfd_settime(Task& t, SyscallArgs a) {
  if (a[1] & ~(uint64_t)(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)) return -EINVAL;
  itimerspec nv, ov;
  if (copy_from_user(&nv, (const void*)a[2], sizeof nv) < 0) return -EFAULT;
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (f->host_fd < 0) return -EINVAL;
  long r = host::sys(SYS_timerfd_settime, f->host_fd, a[1], &nv, a[3] ? &ov : nullptr);
  if (r < 0) return r;
  if (a[3] && copy_to_user((void*)a[3], &ov, sizeof ov) < 0) return -EFAULT;
  return r;
}

long sys_timerfd_gettime(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (f->host_fd < 0) return -EINVAL;
  itimerspec cur;
  long r = host::sys(SYS_timerfd_gettime, f->host_fd, &cur);
  if (r < 0) return r;
  return copy_to_user((void*)a[1], &cur, sizeof cur) < 0 ? -EFAULT : r;
}

}  // namespace flatux
