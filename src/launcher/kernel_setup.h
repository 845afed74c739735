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
