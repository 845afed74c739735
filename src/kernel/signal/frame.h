// The guest's signal frame: a Linux x86_64 rt_sigframe, so that guest libcs,
// debuggers and unwinders see exactly what they would on Linux.
#pragma once
#include <csignal>

#include "kernel/task/task.h"

namespace flatux {

// The kernel's struct ucontext (glibc's ucontext_t is larger).
struct GuestUcontext {
  uint64_t uc_flags;
  uint64_t uc_link;
  stack_t uc_stack;
  mcontext_t uc_mcontext;  // same layout as the kernel's struct sigcontext
  uint64_t uc_sigmask;
};

struct RtSigframe {
  uint64_t pretcode;  // the handler's return address: sa_restorer
  GuestUcontext uc;
  siginfo_t info;
};
static_assert(sizeof(GuestUcontext) == 304);

// Builds the frame for `sig` on the guest's stack (or its sigaltstack) and
// points t.regs at the handler. Returns 0, or -EFAULT if the stack is bad.
long setup_frame(Task& t, int sig, const siginfo_t& info, const GuestSigaction& act,
                 uint64_t saved_mask);

}  // namespace flatux
