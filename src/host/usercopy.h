// Fault-tolerant access to guest memory (Linux's exception-table idea).
// The copy loops live in usercopy.S; a fault inside them is caught by the
// host SIGSEGV/SIGBUS handler, which resumes at the fixup and the copy
// returns -EFAULT instead of crashing the kernel. Which guest memory a
// copy may touch is the kernel's rule (kernel/mm/usercopy.h).
#pragma once
#include <cstddef>

extern "C" {
// Implemented in usercopy.S. Return the number of bytes NOT copied.
size_t flatux_copy_raw(void* dst, const void* src, size_t n);
size_t flatux_clear_raw(void* dst, size_t n);
// Returns the index of the NUL within n bytes, n if none, or -1 on a fault.
long flatux_strnlen_raw(const char* s, size_t n);
// Bounds of the faultable region and the fixup it resumes at.
extern const char flatux_usercopy_begin[], flatux_usercopy_end[], flatux_usercopy_fixup[];
}
