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
#include <cstddef>
#include <cstdint>
#include <sys/ucontext.h>

namespace flatux {

struct Mm;
struct Task;

// Called from the SIGSYS handler for every trapped call (before it is
// served). Rewrites the site when it has the shape `mov $NR,%eax;
// syscall` (b8 imm32 0f 05) with RAX == NR, lies in private code the guest
// cannot write, and NR is not one of the calls that need a host frame
// (with rewrite-page0, any other site in such code too). Anything else
// keeps trapping, which stays correct.
void rewrite_syscall_site(Task& t, const ucontext_t* uc);

// Is addr a page-0 site (`call *%rax`) of this process? Lock-free: the
// fast entry asks on every call that comes through page 0.
bool is_page0_site(Mm& mm, uintptr_t addr);

// rewrite-page0: a fault (sig) that a page-0 site's call ran into because
// RAX held no syscall number the sled covers (past page 0's sled, or not
// canonical). Sets uc up as the trapped syscall it is (RIP after the site,
// RCX and R11 as the syscall instruction sets them) and returns true.
bool syscall_site_call_fault(Task& t, int sig, ucontext_t* uc);

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

// The Mm goes (exit, exec): stubs are unmapped, the table freed. (mm.lock
// held) With unmap false only the table goes: an Mm that was never mapped
// in this host process (a fork that failed) forgets, and unmaps nothing.
void syscall_sites_release(Mm& mm, bool unmap = true);

// fork: the child's copy of the memory holds the rewritten code and the
// stub areas at the same addresses; its Mm gets a copy of the table.
// False when out of memory. (parent.lock held)
bool syscall_sites_fork(const Mm& parent, Mm& child);

// The stub areas of mm, which are not among its regions but are its memory
// all the same (a forked host process keeps them). Fills up to `max`
// [start, end) pairs and returns how many there are.
size_t syscall_sites_areas(const Mm& mm, uintptr_t (*ranges)[2], size_t max);

// What a trapped call's site is, for --site-survey (mm/site_survey.h).
enum class SiteShape : uint8_t {
  kMovRewritable,   // mov $NR,%eax; syscall in read-only private code: gets a jump
  kHostFrame,       // a call that needs a host frame: never rewritten
  kMovAfterPrefix,  // the mov shape after a prefix- or REX-like byte (rewrite-page0: a call)
  kXorEax,          // xor %eax,%eax; syscall (read's usual shape) (rewrite-page0: a call)
  kOther,           // any other shape (rewrite-page0: a call)
  kNotCode,         // in writable or shared code, or not the process's (the vDSO): never
  kCount
};
SiteShape classify_syscall_site(Task& t, const ucontext_t* uc);

// Counts for tests and the coverage figures in docs/PERFORMANCE.md.
struct SyscallSiteStats {
  uint32_t rewritten = 0, refused = 0, stub_areas = 0;
};
SyscallSiteStats syscall_site_stats(Mm& mm);

}  // namespace flatux
