// Bringing the kernel up from the launcher: the steps `flatux run` and a
// boot share (strace output, host facts, the kernel object, the host's
// signal handlers and the seccomp filter).
#pragma once
#include <string>

#include "kernel/kernel.h"

namespace flatux::launcher {

// Opens the --strace destination ("" off, "-" stderr) into cfg.strace_fd.
bool open_strace(KernelConfig& cfg, const std::string& strace);

// Creates the kernel and arms the trap path. nullptr after a message.
Kernel* start_kernel(KernelConfig& cfg);

}  // namespace flatux::launcher
