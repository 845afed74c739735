// Bringing the kernel up from the launcher: the steps `flatux run` and a
// boot share (strace output, host facts, the kernel object, the host's
// signal handlers and the seccomp filter).
#pragma once
#include <string>

#include "kernel/kernel.h"

namespace flatux::launcher {

// Opens the --strace destination ("" off, "-" stderr) into cfg.strace_fd.
bool open_strace(KernelConfig& cfg, const std::string& strace);

// Sets cfg.syscall_entry from --syscall-entry (or syscall_entry=): auto,
// trap, rewrite or rewrite-page0; "" takes $FLATUX_SYSCALL_ENTRY, else
// auto. Makes what rewriting needs (the membarrier registration, page 0
// for rewrite-page0); auto falls back to trap without them, an explicit
// mode fails with a message (false).
bool choose_syscall_entry(KernelConfig& cfg, const std::string& mode);

// Creates the kernel and arms the trap path. nullptr after a message.
Kernel* start_kernel(KernelConfig& cfg);

}  // namespace flatux::launcher
