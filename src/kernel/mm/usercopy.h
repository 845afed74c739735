// Copies to and from guest memory: which addresses a guest pointer may
// name and which bytes the calling process owns, over the host layer's
// fault-tolerant copy loops (host/usercopy.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>

#include "host/usercopy.h"

namespace flatux {

struct Mm;

// Lowest and highest addresses a guest pointer may name (page 0 is never
// valid, the kernel heap is checked separately by access_ok()).
constexpr uint64_t kGuestMinAddr = 4096;
constexpr uint64_t kGuestMaxAddr = 0x7ffffffff000ull;

// Whether a guest pointer may name the range at all: above page 0, below
// the top of user space, outside the kernel heap (where mmap may put it).
bool user_range_ok(const void* guest, size_t n);
// user_range_ok, and every byte belongs to the calling process (lies in
// its Mm's regions): what a mapped user buffer is on Linux. All processes
// share one address space, so a pointer or a length running past the
// caller's memory would otherwise have the kernel (or the host, handed the
// buffer) write over another process's memory or the host's own.
bool access_ok(const void* guest, size_t n);
// How many bytes from `guest` on (at most n) the caller owns: a transfer
// of data stops there, short, as Linux's stops at the first fault.
size_t owned_extent(const void* guest, size_t n);
// The length of a data transfer at `guest`: n cut to what the caller owns
// from there, or n itself when it owns nothing there (the transfer's own
// check then fails with EFAULT).
inline size_t user_buffer_len(const void* guest, size_t n) {
  size_t own = n ? owned_extent(guest, n) : 0;
  return own ? own : n;
}

// 0 on success, -EFAULT if any byte could not be read/written.
long copy_from_user(void* dst, const void* guest_src, size_t n);
long copy_to_user(void* guest_dst, const void* src, size_t n);
long clear_user(void* guest_dst, size_t n);
// Cuts an iovec array (*n entries, lengths already checked) where the
// caller's memory ends: the entry running off it is shortened and those
// after it dropped, as a transfer stops at its first fault. -EFAULT when
// the first non-empty buffer is not the caller's at all.
long fit_iovecs(iovec* v, size_t* n);
// While one lives, the calling task's user copies and FileOps may name
// kernel buffers outside the heap as if they were its own memory (Linux's
// kernel_read()): the loop driver's bounce buffer.
class KernelBuffers {
 public:
  KernelBuffers();
  ~KernelBuffers();
  KernelBuffers(const KernelBuffers&) = delete;
  KernelBuffers& operator=(const KernelBuffers&) = delete;

 private:
  int* depth_;
};

// copy_from_user and copy_to_user with the memory of another process
// (/proc/PID/cmdline, process_vm_readv/writev) that lives in the caller's
// host process: every byte must be that process's own.
long copy_from_process(const Mm& mm, void* dst, const void* guest_src, size_t n);
long copy_to_process(const Mm& mm, void* guest_dst, const void* src, size_t n);
// How many bytes from guest address p on (at most n) mm owns.
size_t process_owned_extent(const Mm& mm, const void* guest, size_t n);
// Copies a NUL-terminated string of at most cap-1 bytes plus the NUL.
// Returns its length, -EFAULT, or -ENAMETOOLONG if no NUL within cap-1.
long strncpy_from_user(char* dst, const char* guest_src, size_t cap);

template <typename T>
long get_user(T& out, const void* guest) { return copy_from_user(&out, guest, sizeof(T)); }
template <typename T>
long put_user(void* guest, const T& v) { return copy_to_user(guest, &v, sizeof(T)); }

}  // namespace flatux
