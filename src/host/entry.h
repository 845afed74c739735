// The trap path: host signal handlers, entering guest code, task threads.
#pragma once
#include <cstdint>
#include <sys/ucontext.h>

#include "kernel/kernel.h"

extern "C" long flatux_isyscall(const std::atomic<uint32_t>* notify, long nr, long a1, long a2,
                                long a3, long a4, long a5, long a6);
extern "C" void flatux_unblock_kick();

namespace flatux {

// The host signal used to make a task look at its guest signals now
// ("kick"): it interrupts guest code, and blocking host calls made with
// isys(). Guests can neither see nor block it.
constexpr int kKickSignal = 62;

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

// Starts a kernel thread (no guest task) in the calling host process,
// running fn(arg) on a kernel stack from the heap (stored in *stack).
long start_kernel_thread(Kernel& k, void (*fn)(void*), void* arg, void** stack);

// Replaces the current guest context with `regs` on the calling task's
// thread (clean FPU unless fpstate is given). Used by execve. Never returns.
[[noreturn]] void enter_guest(Task& t, const greg_t (&regs)[NGREG], const void* fpstate);

// Makes task t look at its signals soon (it may be running guest code).
void kick_task(Task& t);

// A host syscall that returns -EINTR as soon as t has a signal to handle.
// A kick that came earlier in this trap, while kernel code ran, was left
// pending and blocked until the return to guest code; unblocked first
// (and dropped: notify is what counts), so a later one can end the wait.
template <typename... A>
long isys(Task& t, long nr, A... args) {
  if (t.kick_deferred) [[unlikely]] {
    t.kick_deferred = false;
    flatux_unblock_kick();
  }
  long v[6] = {(long)args...};
  return flatux_isyscall(&t.notify, nr, v[0], v[1], v[2], v[3], v[4], v[5]);
}

// Size of the FPU/xstate area in the host's signal frames (from its
// fpx_sw_bytes), or 512 when only the legacy area is present.
size_t fpstate_size(const void* fpstate);

// A fatal kernel error: message, clean exit.
[[noreturn]] void kernel_panic(Kernel* k, const char* msg);

}  // namespace flatux
