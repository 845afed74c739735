#include <sys/syscall.h>

#include "kernel/syscalls.h"
#include "kernel/task/process.h"

namespace flatux {

// With one thread per process so far, exit and exit_group both end the
// process; threads come with clone().
long sys_exit(Task& t, SyscallArgs a) {
  strace_noreturn(t, __NR_exit, a);
  process_exit(t, (int)((a[0] & 0xff) << 8));
}

long sys_exit_group(Task& t, SyscallArgs a) {
  strace_noreturn(t, __NR_exit_group, a);
  process_exit(t, (int)((a[0] & 0xff) << 8));
}

}  // namespace flatux
