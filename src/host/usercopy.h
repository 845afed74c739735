// Fault-tolerant access to guest memory (Linux's exception-table idea).
// The copy loops live in usercopy.S; a fault inside them is caught by the
// host SIGSEGV/SIGBUS handler, which resumes at the fixup and the copy
// returns -EFAULT instead of crashing the kernel.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

// Lowest and highest addresses a guest pointer may name (page 0 is never
// valid, the kernel heap is checked separately by access_ok()).
constexpr uint64_t kGuestMinAddr = 4096;
constexpr uint64_t kGuestMaxAddr = 0x7ffffffff000ull;

// Checks the kernel heap too; defined in host/usercopy.cpp.
bool access_ok(const void* guest, size_t n);

// 0 on success, -EFAULT if any byte could not be read/written.
long copy_from_user(void* dst, const void* guest_src, size_t n);
long copy_to_user(void* guest_dst, const void* src, size_t n);
long clear_user(void* guest_dst, size_t n);
// Copies a NUL-terminated string of at most cap-1 bytes plus the NUL.
// Returns its length, -EFAULT, or -ENAMETOOLONG if no NUL within cap-1.
long strncpy_from_user(char* dst, const char* guest_src, size_t cap);

template <typename T>
long get_user(T& out, const void* guest) { return copy_from_user(&out, guest, sizeof(T)); }
template <typename T>
long put_user(void* guest, const T& v) { return copy_to_user(guest, &v, sizeof(T)); }

}  // namespace flatux

extern "C" {
// Implemented in usercopy.S. Return the number of bytes NOT copied.
size_t flatux_copy_raw(void* dst, const void* src, size_t n);
size_t flatux_clear_raw(void* dst, size_t n);
// Returns the index of the NUL within n bytes, n if none, or -1 on a fault.
long flatux_strnlen_raw(const char* s, size_t n);
// Bounds of the faultable region and the fixup it resumes at.
extern const char flatux_usercopy_begin[], flatux_usercopy_end[], flatux_usercopy_fixup[];
}
