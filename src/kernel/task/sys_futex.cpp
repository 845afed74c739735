// futex: guest futex words live in the one shared address space, so the
// host's futex serves them directly once the arguments are checked and any
// timeout has been copied into kernel memory. Each guest task is a host
// thread, so a waiting task blocks exactly its own thread.
#include <ctime>
#include <linux/errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"

namespace flatux {

long sys_futex(Task&, SyscallArgs a) {
  uint64_t uaddr = a[0], val = a[2], utime = a[3], uaddr2 = a[4], val3 = a[5];
  int op = (int)a[1];
  int cmd = op & FUTEX_CMD_MASK;
  if (uaddr & 3) return -EINVAL;  // Linux checks alignment before the address
  // The host reads the word (or only hashes its address); only
  // FUTEX_WAKE_OP writes, to uaddr2, which must then be the caller's own.
  if (!user_range_ok((void*)uaddr, 4)) return -EFAULT;
  timespec ts;
  timespec* tsp = nullptr;
  switch (cmd) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
      if (utime) {
        if (copy_from_user(&ts, (const void*)utime, sizeof ts) < 0) return -EFAULT;
        if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return -EINVAL;
        tsp = &ts;
      }
      return host::sys(SYS_futex, uaddr, op, val, tsp, 0, val3);
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET:
      return host::sys(SYS_futex, uaddr, op, val, 0, 0, val3);
    case FUTEX_REQUEUE:
    case FUTEX_CMP_REQUEUE:
    case FUTEX_WAKE_OP:
      // For these the "timeout" argument is a count, passed by value.
      if (cmd == FUTEX_WAKE_OP ? !access_ok((void*)uaddr2, 4) : !user_range_ok((void*)uaddr2, 4))
        return -EFAULT;
      return host::sys(SYS_futex, uaddr, op, val, utime, uaddr2, val3);
    default:
      return -ENOSYS;  // PI futexes are not supported yet
  }
}

// futex_waitv: the waiters are copied into kernel memory and each word
// checked to be a guest address; the host judges the rest (flags,
// clock, timeout) with Linux's own errnos and does the waiting.
long sys_futex_waitv(Task& t, SyscallArgs a) {
  uint64_t guest = a[0], nr = a[1], flags = a[2], timeout = a[3];
  if (flags) return -EINVAL;
  if (!nr || nr > FUTEX_WAITV_MAX || !guest) return -EINVAL;
  if (timeout && a[4] != CLOCK_REALTIME && a[4] != CLOCK_MONOTONIC) return -EINVAL;
  timespec ts;
  if (timeout && copy_from_user(&ts, (const void*)timeout, sizeof ts) < 0) return -EFAULT;
  futex_waitv w[FUTEX_WAITV_MAX];
  if (copy_from_user(w, (const void*)guest, sizeof(futex_waitv) * nr) < 0) return -EFAULT;
  constexpr uint32_t kKnown = FUTEX_32 | FUTEX_PRIVATE_FLAG;
  for (uint64_t i = 0; i < nr; i++) {
    if ((w[i].flags & ~kKnown) || (w[i].flags & FUTEX_32) != FUTEX_32 || w[i].__reserved) return -EINVAL;
    if (w[i].uaddr & 3) return -EINVAL;
    if (!access_ok((void*)w[i].uaddr, 4)) return -EFAULT;
  }
  long r = isys(t, SYS_futex_waitv, w, nr, 0, timeout ? &ts : nullptr, a[4]);
  return r == -EINTR ? -ERESTARTSYS : r;
}

}  // namespace flatux
