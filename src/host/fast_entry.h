// The fast entry: rewritten guest syscall sites enter the kernel by a jump
// (host/fast_entry.S), the trap path's SIGSYS handler only sees the first
// call of each site (kernel/mm/syscall_sites.h rewrites it). The call
// itself is served by the kernel's flatux_fast_syscall
// (kernel/entry/fast_syscall.cpp).
#pragma once
#include <atomic>
#include <cstdint>
#include <sys/ucontext.h>

#include "host/kstack.h"

extern "C" {
extern const char flatux_fast_entry[], flatux_fast_entry_switched[], flatux_fast_exit_window[],
    flatux_fast_exit_window_end[], flatux_fast_convert[], flatux_fast_entry_end[],
    flatux_fast_entry_page0[], flatux_fast_entry_page0_switched[], flatux_fast_entry_checked[],
    flatux_fast_entry_bad_gs[], flatux_fast_entry_page0_checked[], flatux_fast_entry_page0_bad_gs[],
    flatux_fast_page0_pop[];
}

namespace flatux {

// Calls that need the host's full signal frame (the guest's FPU state in
// memory, every register restorable by rt_sigreturn): rt_sigreturn itself,
// and clone/fork/vfork, whose child starts with a copy of the caller's FPU
// state. Their sites are not rewritten (they would only trap one step
// later).
inline bool needs_host_frame(uint64_t nr) {
  return nr == 15 /*rt_sigreturn*/ || nr == 56 /*clone*/ || nr == 57 /*fork*/ ||
         nr == 58 /*vfork*/ || nr == 435 /*clone3*/;
}

// Prepares a kernel stack's header for fast entries of the task whose
// `notify` word the entry checks on its way out.
void fast_entry_setup(KStackHeader& h, const std::atomic<uint32_t>* notify);

// Points the calling host thread's GS base at its kernel stack's header
// (once per task thread, before it first runs guest code): by wrgsbase
// where the host allows it (fsgsbase), else arch_prctl.
void fast_entry_thread_init(bool fsgsbase, void* kstack);

inline bool in_fast_entry_text(uintptr_t ip) {
  return ip >= (uintptr_t)flatux_fast_entry && ip < (uintptr_t)flatux_fast_entry_end;
}

// The entry's first read through %gs (the header's magic): a fault there
// means the guest changed its GS base (wrgsbase) to memory that is not
// there; the read is retried once GS is the kernel stack's again.
inline bool in_fast_entry_gs_window(uintptr_t ip) {
  return (ip >= (uintptr_t)flatux_fast_entry && ip < (uintptr_t)flatux_fast_entry_checked) ||
         (ip >= (uintptr_t)flatux_fast_entry_page0 && ip < (uintptr_t)flatux_fast_entry_page0_checked);
}

// Where the entry stops (ud2) because %gs:8 held no kernel stack's magic:
// the entry to restart once GS is the kernel stack's again, or nullptr.
inline const char* fast_entry_restart_for(uintptr_t ip) {
  if (ip == (uintptr_t)flatux_fast_entry_bad_gs) return flatux_fast_entry;
  if (ip == (uintptr_t)flatux_fast_entry_page0_bad_gs) return flatux_fast_entry_page0;
  return nullptr;
}

// rewrite-page0's trampoline (zpoline's layout): page 0 is a nop sled
// over every number below kPage0Jump, ending in `jmp *disp(%rip)` to
// flatux_fast_entry_page0. The displacement's bytes (60 06 06 06) are
// invalid opcodes, so a call landing inside the jump traps instead of
// running its bytes, and the word it jumps through (8-byte aligned, for
// guests running with EFLAGS.AC) sits in a read-only page of its own
// (kPage0Word); page 1 stays unmapped, so higher numbers fault.
constexpr uintptr_t kPage0Size = 4096;
constexpr uintptr_t kPage0Jump = kPage0Size - 6;
constexpr uint32_t kPage0Disp = 0x06060660;
constexpr uintptr_t kPage0Word = kPage0Size + kPage0Disp;
static_assert(kPage0Word % 8 == 0);
void page0_contents(uint8_t (&page)[kPage0Size]);

// Copies the guest registers a fast entry saved into a host signal frame
// (keeping the frame's own CS/SS word): from then on the frame is the guest
// context, as if the host had trapped the call.
void fast_frame_to_host(const FastFrame& f, ucontext_t* uc);

}  // namespace flatux
