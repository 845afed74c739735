// The host side of the trap path: installing the host signal handlers
// (their assembly trampolines, host/entry.S, call the kernel's
// flatux_on_sigsys, flatux_on_kick and flatux_on_fault), the signal masks
// of kernel and guest mode, kernel-stack guard pages, and entering guest
// code by a host sigreturn. Nothing here knows a task: the kernel's side
// (kernel/entry/) passes the kernel stack and registers.
#pragma once
#include <cstddef>
#include <csignal>
#include <cstdint>
#include <sched.h>
#include <sys/ucontext.h>

#include "host/isyscall.h"

// The only shapes of host clone the kernel makes; the host-call allowlist
// takes no other (host_allowlist.cpp).
namespace flatux {
constexpr unsigned long kCloneThreadShared =
    CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
// A kernel thread (no TLS, nobody waits on its id).
constexpr unsigned long kCloneKernelThread = kCloneThreadShared;
// A guest task's thread: its TLS, and its id set at clone and cleared at its end.
constexpr unsigned long kCloneTaskThread =
    kCloneThreadShared | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
// A task moved into a fresh host process by execve (its id stored after clone).
constexpr unsigned long kCloneMovedThread = kCloneThreadShared | CLONE_SETTLS | CLONE_CHILD_CLEARTID;
// A host process of its own for a forked guest: its memory a copy, the
// descriptor table shared, watched through a pidfd.
constexpr unsigned long kCloneHostProcess = CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_PIDFD | SIGCHLD;
}  // namespace flatux

// clone(2) of a host thread in this host process that starts on
// `stack_top` and runs fn(arg), never returning from it (entry.S).
extern "C" long flatux_clone_thread(unsigned long flags, void* stack_top, void* ctid, unsigned long tls,
                                    void (*fn)(void*), void* arg);

namespace flatux {

// Installs the host handlers (SIGSYS, faults, kick) for the whole host
// process. Call once, before the seccomp filter.
long install_host_handlers();

inline uint64_t signal_bit(int sig) { return 1ull << (sig - 1); }
// Everything asynchronous is blocked while kernel code runs, except the
// kick (it must be able to interrupt a blocking isys() call); synchronous
// faults cannot be blocked usefully (the host would kill us instead).
uint64_t kernel_mode_mask();
// While guest code runs, host signals other than SIGSYS, faults and the
// kick stay blocked on task threads: asynchronous host signals (^C, a
// resize) are the launcher thread's business, which turns them into guest
// signals.
inline uint64_t guest_mode_mask() { return kernel_mode_mask() & ~signal_bit(SIGSYS); }

// The guard pages of the kernel stack at `base` (host/kstack.h), in the
// calling host process's page tables; kstack_unguard undoes them before
// the stack goes back to the heap.
void kstack_guard(void* base);
void kstack_unguard(void* base);

// Room for the host's largest xstate (AVX-512 is ~2.7 KiB, AMX ~11 KiB).
constexpr size_t kMaxFpstate = 16384;
// Size of the FPU/xstate area in the host's signal frames (from its
// fpx_sw_bytes), or 512 when only the legacy area is present.
size_t fpstate_size(const void* fpstate);

// Replaces the calling thread's context with `regs` (clean FPU unless
// fpstate is given), arming the signal part of the kernel stack at
// `kstack` as its sigaltstack. Never returns.
[[noreturn]] void enter_guest_context(void* kstack, const greg_t (&regs)[NGREG], const void* fpstate);

}  // namespace flatux
