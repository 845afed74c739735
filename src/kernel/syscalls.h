// Declarations of every syscall handler listed in syscall_list.h.
#pragma once
#include "kernel/syscall.h"

namespace flatux {
#define SYSCALL(nr, fn) long fn(Task&, SyscallArgs);
#include "kernel/syscall_list.h"
#undef SYSCALL
}  // namespace flatux
