// The trap path: host signal handlers, entering guest code, task threads.
#pragma once
#include <cstdint>
#include <sys/ucontext.h>

#include "host/isyscall.h"
#include "kernel/kernel.h"

// clone(2) of a host thread in this host process that starts on
// `stack_top` and runs fn(arg), never returning from it (entry.S).
extern "C" long flatux_clone_thread(unsigned long flags, void* stack_top, void* ctid, unsigned long tls,
                                    void (*fn)(void*), void* arg);

namespace flatux {

// A syscall handler's result meaning "the handler already set every guest
// register itself" (rt_sigreturn): the dispatcher leaves RAX alone.
constexpr long kRegsAlreadySet = -(1l << 62);

// Installs the kernel's host handlers (SIGSYS, faults, kick) for the whole
// host process. Call once, before the seccomp filter.
long install_host_handlers();

// Allocates and initialises a kernel stack for t; false when out of memory.
bool kstack_setup(Task& t);
// Returns t's kernel stack to the heap; its thread must be gone.
void kstack_release(Task& t);
// The parts of kstack_setup and of a task thread's start, for a kernel
// stack made elsewhere (a task moving to another host process): the
// header for task t; the guard pages (in the calling host process's page
// tables); and, on the thread that will run the task, its
// GS base (host/kstack.h).
void kstack_header_init(void* base, Task& t);
void kstack_guard(void* base);
// Undoes kstack_guard (in the calling host process) before the stack goes
// back to the heap.
void kstack_unguard(void* base);
void kstack_thread_start(const Kernel& k, void* base);

// Starts a new host thread for t that enters guest mode with t.entry_regs
// (and t.entry_fpstate, or a clean FPU). Returns 0 or -errno.
long start_task_thread(Task& t);


// Replaces the current guest context with `regs` on the calling task's
// thread (clean FPU unless fpstate is given). Used by execve. Never returns.
[[noreturn]] void enter_guest(Task& t, const greg_t (&regs)[NGREG], const void* fpstate);

// Makes task t look at its signals soon (it may be running guest code).
void kick_task(Task& t);

// Size of the FPU/xstate area in the host's signal frames (from its
// fpx_sw_bytes), or 512 when only the legacy area is present.
size_t fpstate_size(const void* fpstate);

}  // namespace flatux
