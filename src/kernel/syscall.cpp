#include "kernel/syscall.h"

#include <linux/errno.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/seccomp/seccomp.h"
#include "kernel/strace/strace.h"

namespace flatux {
namespace {

void strace_write(Task& t, uint64_t nr, SyscallArgs a, long ret, bool returned) {
  char buf[1024];
  size_t n = strace::format_call(buf, sizeof buf, t.tid, (long)nr, a, ret, returned);
  host::sys(SYS_write, t.kernel->cfg.strace_fd, buf, n);
}

}  // namespace

long syscall_entry(Task& t, uint64_t nr, SyscallArgs a) {
  long ret;
  if (t.seccomp_mode.load(std::memory_order_relaxed) && !seccomp_permits(t, nr, a, &ret)) [[unlikely]] {
    if (t.kernel->cfg.strace_fd >= 0) strace_write(t, nr, a, ret, true);
    return ret;
  }
  SyscallFn fn = syscall_lookup(nr);
  ret = fn ? fn(t, a) : -ENOSYS;
  if (t.kernel->cfg.strace_fd >= 0) [[unlikely]]
    strace_write(t, nr, a, ret, true);
  return ret;
}

void strace_result(Task& t, uint64_t nr, SyscallArgs a, long ret) {
  if (t.kernel->cfg.strace_fd >= 0) strace_write(t, nr, a, ret, true);
}

void strace_noreturn(Task& t, uint64_t nr, SyscallArgs a) {
  if (t.kernel->cfg.strace_fd >= 0) strace_write(t, nr, a, 0, false);
}

}  // namespace flatux
