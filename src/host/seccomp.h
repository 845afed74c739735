// The seccomp filter that turns every guest `syscall` into SIGSYS.
#pragma once
#include "kernel/kernel.h"

namespace flatux {

// Allows system calls whose instruction pointer lies in one of `ranges`
// (the kernel's own executable code), traps every other one. Installed on
// all threads of the host process at once (SECCOMP_FILTER_FLAG_TSYNC).
long install_syscall_filter(const TextRange* ranges, int n);

}  // namespace flatux
