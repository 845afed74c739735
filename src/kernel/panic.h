// The kernel's own failures: a fault in kernel code (an oops) and a fatal
// error (a panic). Both report on the host's stderr and end the host
// process: kernel state can no longer be trusted.
#pragma once
#include <csignal>
#include <cstdint>
#include <sys/ucontext.h>

namespace flatux {

struct Kernel;
struct KStackHeader;

// Whether ip is in the kernel's own code (KernelConfig::text).
bool in_kernel_text(const Kernel* k, uintptr_t ip);

// A host signal `sig` hit kernel code (or a thread with no task): the
// place, the registers that matter and a backtrace, then exit. `k` may be
// null (found through the heap), as may `h` (not on a kernel stack).
[[noreturn]] void oops(Kernel* k, KStackHeader* h, int sig, const siginfo_t* si, const ucontext_t* uc);

// A fatal kernel error: message, clean exit.
[[noreturn]] void kernel_panic(Kernel* k, const char* msg);

}  // namespace flatux
