// Bringing the kernel up from the launcher: the steps `flatux run` and a
// boot share (strace output, host facts, the host process's sandbox, the
// kernel object, the host's signal handlers and the seccomp filters).
#pragma once
#include <functional>
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
// `prepare`, when given, runs once the kernel exists and before the seal:
// what opens host paths by name (mounts of granted host paths) goes there,
// since the sealed process may no longer.
Kernel* start_kernel(KernelConfig& cfg, Sandbox& sb, const std::function<bool(Kernel&)>& prepare = {});

}  // namespace flatux::launcher
