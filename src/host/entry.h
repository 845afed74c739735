// The trap path: host signal handlers, entering guest code, task threads.
#pragma once
#include <cstdint>
#include <sys/ucontext.h>

#include "kernel/kernel.h"

namespace flatux {

// Installs the kernel's host handlers (SIGSYS, synchronous faults) for the
// whole host process. Call once, before the seccomp filter.
long install_host_handlers();

// Allocates and initialises a kernel stack for t; false when out of memory.
bool kstack_setup(Task& t);
// Returns t's kernel stack to the heap; its thread must be gone.
void kstack_release(Task& t);

// Starts a new host thread for t that enters guest mode with `regs`
// (a full gregs set; FPU state starts clean). Returns 0 or -errno.
long start_task_thread(Task& t, const greg_t (&regs)[NGREG]);

// Replaces the current (trapped) guest context with `regs` and a clean FPU
// state, on the calling task's thread. Used by execve. Never returns.
[[noreturn]] void enter_guest(Task& t, const greg_t (&regs)[NGREG]);

// A fatal kernel error: message, backtrace, clean exit.
[[noreturn]] void kernel_panic(Kernel* k, const char* msg);

}  // namespace flatux
