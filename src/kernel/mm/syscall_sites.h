// Rewritten syscall sites: the first time a guest `syscall` instruction
// traps, its site may be rewritten so that later calls from it enter the
// kernel by a jump (host/fast_entry.S) instead of a host signal. This is
// the bookkeeping per process (Mm): which sites are rewritten, the stubs
// they jump to, and putting code back when the guest changes it.
//
// Locking: everything here runs under Mm::lock, the lock every change of
// the process's mappings takes, so a rewrite never races a munmap or
// mprotect of the same code.
#pragma once
#include <cstdint>
#include <sys/ucontext.h>

namespace flatux {

struct Mm;
struct Task;

// Called from the SIGSYS handler for every trapped call (before it is
// served). Rewrites the site when it has the shape `mov $NR,%eax;
// syscall` (b8 imm32 0f 05) with RAX == NR, lies in private code the guest
// cannot write, and NR is not one of the calls that need a host frame.
// Anything else keeps trapping, which stays correct.
void rewrite_syscall_site(Task& t, const ucontext_t* uc);

// SIGTRAP at an int3: if it is one that rewriting (or putting back) a site
// left there while a thread ran into it, retries the instruction once the
// patch is complete and returns true; false for the guest's own int3.
bool syscall_site_trap(Task& t, ucontext_t* uc);

// Code in [start, end) goes away (munmap, MAP_FIXED over it, mremap away):
// its sites and their stubs are forgotten. (mm.lock held)
void syscall_sites_forget(Mm& mm, uintptr_t start, uintptr_t end);

// The code in [start, end) is about to move or stop being plain code:
// rewritten sites get their original bytes back. (mm.lock held)
void syscall_sites_revert(Mm& mm, uintptr_t start, uintptr_t end);

// mprotect of [start, end) to `prot`: made writable or not executable, the
// guest must find (and be able to change) its original bytes, so sites are
// put back; they are rewritten again when they next trap from code that is
// executable and read-only. (mm.lock held)
void syscall_sites_protect(Mm& mm, uintptr_t start, uintptr_t end, int prot);

// The Mm goes (exit, exec): stubs are unmapped, the table freed. (mm.lock held)
void syscall_sites_release(Mm& mm);

// Counts for tests and the coverage figures in docs/PERFORMANCE.md.
struct SyscallSiteStats {
  uint32_t rewritten = 0, refused = 0, stub_areas = 0;
};
SyscallSiteStats syscall_site_stats(Mm& mm);

}  // namespace flatux
