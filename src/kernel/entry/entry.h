// The kernel's side of entering and leaving guest code: the host signal
// handlers' work (a trapped syscall served, a fault or kick turned into
// guest signals; trap.cpp), the fast entry's call (fast_syscall.cpp), and
// task threads with their kernel stacks. The host mechanisms under them
// are host/entry.h, host/fast_entry.h and host/kstack.h.
#pragma once
#include <sys/ucontext.h>

#include "host/entry.h"
#include "kernel/kernel.h"

namespace flatux {

// A syscall handler's result meaning "the handler already set every guest
// register itself" (rt_sigreturn): the dispatcher leaves RAX alone.
constexpr long kRegsAlreadySet = -(1l << 62);

// Allocates and initialises a kernel stack for t; false when out of memory.
bool kstack_setup(Task& t);
// Returns t's kernel stack to the heap; its thread must be gone.
void kstack_release(Task& t);
// The parts of kstack_setup and of a task thread's start, for a kernel
// stack made elsewhere (a task moving to another host process): the
// header for task t, and, on the thread that will run the task, its GS
// base (host/kstack.h). The guard pages are kstack_guard's (host/entry.h).
void kstack_header_init(void* base, Task& t);
void kstack_thread_start(const Kernel& k, void* base);

// Starts a new host thread for t that enters guest mode with t.entry_regs
// (and t.entry_fpstate, or a clean FPU). Returns 0 or -errno.
long start_task_thread(Task& t);

// Replaces the current guest context with `regs` on the calling task's
// thread (clean FPU unless fpstate is given). Used by execve. Never returns.
[[noreturn]] void enter_guest(Task& t, const greg_t (&regs)[NGREG], const void* fpstate);

// Makes task t look at its signals soon (it may be running guest code).
void kick_task(Task& t);

}  // namespace flatux
