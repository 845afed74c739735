// Writing guest code that other threads may be executing at that moment
// (the rewriting of syscall sites, kernel/mm/syscall_sites.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

// Writes n bytes at addr, in pages whose protection is `prot`: the pages
// are made writable for the write and get `prot` back at once (a private
// mapping gets its own copy of the page, as a debugger's breakpoint would).
// Needs nothing but mprotect, so it works in any host process. The caller
// holds the lock that orders the guest's own mprotect calls (Mm::lock).
// Returns 0 or -errno.
long code_write(uintptr_t addr, const void* bytes, size_t n, int prot);

// Replaces the instruction at addr (n bytes, n <= 15) with `insn` so that a
// thread executing it meanwhile sees either the old or the new instruction,
// never a mixture: an int3 goes first, then the tail, then the first byte,
// each step made visible to every CPU running this process (membarrier
// SYNC_CORE), like Linux's text_poke_bp. A thread that meets the int3
// traps; its SIGTRAP handler retries the instruction once the patch is done
// (syscall_site_trap). Once the pages are writable nothing can fail, so
// the instruction is never left half-written. Returns 0 or -errno.
long code_patch_insn(uintptr_t addr, const uint8_t* insn, size_t n, int prot);

}  // namespace flatux
