#include "kernel/mm/usercopy.h"

#include <linux/errno.h>

#include "host/kstack.h"
#include "kernel/heap.h"
#include "kernel/task/task.h"

namespace flatux {
namespace {

// The calling task's memory map; nullptr off a task's kernel stack (the
// launcher's and the timer's threads make no user copies of their own)
// and inside KernelBuffers: no ownership to check.
const Mm* caller_mm() {
  KStackHeader* h = current_kstack_checked();
  return h && h->task && !h->task->kernel_buffers ? h->task->proc->mm : nullptr;
}


// Bytes owned by mm from p on, at most n (mm.lock taken unless the caller
// holds it already: a file read into a mapping being made).
size_t owned(const Mm& mm, uintptr_t p, size_t n) {
  auto& lock = const_cast<MmLock&>(mm.lock);
  if (lock.held_by_caller()) return mm.regions.extent_from(p, n);
  Guard g(lock);
  return mm.regions.extent_from(p, n);
}

// How much of [p, p + n) is a user address range, from p on (0 when p is
// not a user address).
size_t user_part(uintptr_t p, size_t n) {
  if (p < kGuestMinAddr || p >= kGuestMaxAddr || in_kernel_heap(p, 1)) return 0;
  if (n > kGuestMaxAddr - p) n = kGuestMaxAddr - p;
  if (in_kernel_heap(p, n)) n = kHeapBase - p;  // p lies below the heap here
  return n;
}

}  // namespace

KernelBuffers::KernelBuffers() {
  KStackHeader* h = current_kstack_checked();
  depth_ = h && h->task ? &h->task->kernel_buffers : nullptr;
  if (depth_) ++*depth_;
}
KernelBuffers::~KernelBuffers() {
  if (depth_) --*depth_;
}

bool user_range_ok(const void* guest, size_t n) {
  uintptr_t p = (uintptr_t)guest;
  // Nothing is touched: any user address will do, NULL included, as
  // Linux's access_ok (write(fd, NULL, 0) is 0, not EFAULT).
  if (n == 0) return p <= kGuestMaxAddr;
  if (p + n < p) return false;
  if (p < kGuestMinAddr || p + n > kGuestMaxAddr) return false;
  return !in_kernel_heap(p, n);
}

size_t owned_extent(const void* guest, size_t n) {
  uintptr_t p = (uintptr_t)guest;
  n = user_part(p, n);
  const Mm* mm = caller_mm();
  if (!mm || !n) return n;
  return owned(*mm, p, n);
}

bool access_ok(const void* guest, size_t n) {
  if (!user_range_ok(guest, n)) return false;
  return n == 0 || owned_extent(guest, n) == n;
}

long copy_from_user(void* dst, const void* guest_src, size_t n) {
  if (!access_ok(guest_src, n)) return -EFAULT;
  return flatux_copy_raw(dst, guest_src, n) ? -EFAULT : 0;
}

long copy_to_user(void* guest_dst, const void* src, size_t n) {
  if (!access_ok(guest_dst, n)) return -EFAULT;
  return flatux_copy_raw(guest_dst, src, n) ? -EFAULT : 0;
}

long clear_user(void* guest_dst, size_t n) {
  if (!access_ok(guest_dst, n)) return -EFAULT;
  return flatux_clear_raw(guest_dst, n) ? -EFAULT : 0;
}

long fit_iovecs(iovec* v, size_t* n) {
  bool moved_any = false;  // an earlier buffer takes part
  for (size_t i = 0; i < *n; i++) {
    if (!v[i].iov_len) continue;
    size_t own = owned_extent(v[i].iov_base, v[i].iov_len);
    if (own == v[i].iov_len) {
      moved_any = true;
      continue;
    }
    if (own == 0 && !moved_any) return -EFAULT;
    if (own) v[i].iov_len = own;
    *n = own ? i + 1 : i;
    return 0;
  }
  return 0;
}

long copy_from_process(const Mm& mm, void* dst, const void* guest_src, size_t n) {
  uintptr_t p = (uintptr_t)guest_src;
  if (!user_range_ok(guest_src, n) || owned(mm, p, n) != n) return -EFAULT;
  return flatux_copy_raw(dst, guest_src, n) ? -EFAULT : 0;
}

long copy_to_process(const Mm& mm, void* guest_dst, const void* src, size_t n) {
  if (!user_range_ok(guest_dst, n) || owned(mm, (uintptr_t)guest_dst, n) != n) return -EFAULT;
  return flatux_copy_raw(guest_dst, src, n) ? -EFAULT : 0;
}

size_t process_owned_extent(const Mm& mm, const void* guest, size_t n) {
  uintptr_t p = (uintptr_t)guest;
  n = user_part(p, n);
  return n ? owned(mm, p, n) : 0;
}

long strncpy_from_user(char* dst, const char* guest_src, size_t cap) {
  if (cap == 0) return -ENAMETOOLONG;
  // Only scan what the caller owns, so a string running off its memory is
  // EFAULT rather than a read of someone else's.
  size_t scan = owned_extent(guest_src, cap);
  if (scan == 0) return -EFAULT;
  long len = flatux_strnlen_raw(guest_src, scan);
  if (len < 0) return -EFAULT;
  if ((size_t)len == scan) return scan == cap ? -ENAMETOOLONG : -EFAULT;
  if (flatux_copy_raw(dst, guest_src, len + 1)) return -EFAULT;
  return len;
}

}  // namespace flatux
