// Writing guest code that other threads may be executing at that moment
// (the rewriting of syscall sites, kernel/mm/syscall_sites.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

struct Kernel;

// Writes n bytes at addr through the host's /proc/self/mem descriptor
// opened at boot (KernelConfig::code_mem_fd): the page keeps the protection
// the guest gave it (a private mapping gets its own copy of the page, as a
// debugger's breakpoint would). Returns 0 or -errno.
long code_write(const Kernel& k, uintptr_t addr, const void* bytes, size_t n);

// Replaces the instruction at addr (n bytes, n <= 15) with `insn` so that a
// thread executing it meanwhile sees either the old or the new instruction,
// never a mixture: an int3 goes first, then the tail, then the first byte,
// each step made visible to every CPU running this process (membarrier
// SYNC_CORE), like Linux's text_poke_bp. A thread that meets the int3
// traps; its SIGTRAP handler retries the instruction once the patch is done
// (syscall_site_trap). `old` is what is there now: a failed write puts its
// first byte back. Returns 0 or -errno.
long code_patch_insn(const Kernel& k, uintptr_t addr, const uint8_t* old, const uint8_t* insn, size_t n);

}  // namespace flatux
