// Bringing the kernel up from the launcher: the steps `flatux run` and a
// boot share (strace output, host facts, the host process's sandbox, the
// kernel object, the host's signal handlers and the seccomp filters).
#pragma once
#include <string>

#include "kernel/kernel.h"
#include "launcher/sandbox/sandbox.h"

namespace flatux::launcher {

// Opens the --strace destination ("" off, "-" stderr) into cfg.strace_fd.
bool open_strace(KernelConfig& cfg, const std::string& strace);

// Sets cfg.syscall_entry from --syscall-entry (or syscall_entry=): auto,
// trap, rewrite or rewrite-page0; "" takes $FLATUX_SYSCALL_ENTRY, else
// auto. Makes what rewriting needs (the membarrier registration, page 0
// for rewrite-page0); auto falls back to trap without them, an explicit
// mode fails with a message (false).
bool choose_syscall_entry(KernelConfig& cfg, const std::string& mode);

// What the command line granted and how to hold the process to it.
struct Sandbox {
  SandboxGrant grant;
  SandboxOptions options;
  SandboxState state;
};

// Creates the kernel, arms the trap path and confines the host process to
// `sb.grant` (src/launcher/sandbox/). nullptr after a message.
Kernel* start_kernel(KernelConfig& cfg, Sandbox& sb);

}  // namespace flatux::launcher
