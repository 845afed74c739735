#include <sys/syscall.h>

#include "kernel/syscalls.h"
#include "kernel/task/exit.h"

namespace flatux {

long sys_exit(Task& t, SyscallArgs a) {
  strace_noreturn(t, __NR_exit, a);
  do_exit(t, (int)((a[0] & 0xff) << 8));
}

long sys_exit_group(Task& t, SyscallArgs a) {
  strace_noreturn(t, __NR_exit_group, a);
  do_group_exit(t, (int)((a[0] & 0xff) << 8));
}

}  // namespace flatux
