// rseq: restartable sequences. A guest task is a host thread, so its rseq
// area is registered with the host kernel for that thread: the host keeps
// cpu_id up to date and aborts a critical section that is preempted or
// interrupted by a signal (every guest signal starts as a host one: the
// kick, SIGSYS, a fault), exactly as it would for a native thread. The
// host checks the arguments (EINVAL, EPERM, EBUSY); the area must be guest
// memory. exec and thread exit drop the registration, as Linux's do.
//
// The host kernel writes the area on the thread's returns to user mode and
// reads the critical-section descriptor it points to; if it cannot, it
// kills the host process (all of flatux). So a registration is dropped
// before the memory can go: at exit (before the tid word a joiner waits on
// is cleared), at exec (before the old image goes), in the first thread of
// a host process forked from the task's thread (kernel/task/hostproc.cpp: the
// clone hands the registration on), and when the thread itself unmaps or
// write-protects the area (SIGSEGV for the guest, as Linux gives it). A guest that breaks
// its descriptor by writing garbage, or another thread of it that unmaps
// the area, still takes the instance down with it: the shared address
// space limit (docs/ARCHITECTURE.md).
#include "kernel/task/rseq.h"

#include <csignal>
#include <linux/errno.h>
#include <linux/rseq.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"

namespace flatux {

long sys_rseq(Task& t, SyscallArgs a) {
  uint64_t addr = a[0], len = (uint32_t)a[1], flags = (int)a[2], sig = (uint32_t)a[3];
  if (flags & ~(uint64_t)RSEQ_FLAG_UNREGISTER) return -EINVAL;
  if (!(flags & RSEQ_FLAG_UNREGISTER) && !t.rseq_addr && !access_ok((void*)addr, len)) return -EFAULT;
  long r = host::sys(SYS_rseq, addr, len, flags, sig);
  if (r < 0) return r;
  if (flags & RSEQ_FLAG_UNREGISTER) {
    t.rseq_addr = 0;
  } else {
    t.rseq_addr = addr;
    t.rseq_len = (uint32_t)len;
    t.rseq_sig = (uint32_t)sig;
  }
  return 0;
}

void rseq_drop(Task& t) {
  if (!t.rseq_addr) return;
  host::sys(SYS_rseq, t.rseq_addr, t.rseq_len, RSEQ_FLAG_UNREGISTER, t.rseq_sig);
  t.rseq_addr = 0;
}

void rseq_range_going(Task& t, uintptr_t start, size_t len) {
  if (!t.rseq_addr || t.rseq_addr + t.rseq_len <= start || t.rseq_addr >= start + len) return;
  // The host would find the area gone at the thread's next return to user
  // mode and kill the whole host process; Linux kills the thread's
  // process with SIGSEGV, which is what the guest gets.
  rseq_drop(t);
  siginfo_t info{};
  info.si_signo = SIGSEGV;
  info.si_code = SI_KERNEL;
  guest_fault(t, SIGSEGV, &info);
}

}  // namespace flatux
