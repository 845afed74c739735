#include "host/usercopy.h"

#include <linux/errno.h>

#include "kernel/heap.h"

namespace flatux {

bool access_ok(const void* guest, size_t n) {
  uintptr_t p = (uintptr_t)guest;
  // Nothing is touched: any user address will do, NULL included, as
  // Linux's access_ok (write(fd, NULL, 0) is 0, not EFAULT).
  if (n == 0) return p <= kGuestMaxAddr;
  if (p + n < p) return false;
  if (p < kGuestMinAddr || p + n > kGuestMaxAddr) return false;
  return !in_kernel_heap(p, n);
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

long strncpy_from_user(char* dst, const char* guest_src, size_t cap) {
  if (cap == 0) return -ENAMETOOLONG;
  uintptr_t p = (uintptr_t)guest_src;
  if (p < kGuestMinAddr || p >= kGuestMaxAddr) return -EFAULT;
  // Only scan up to the end of the guest range so access_ok holds below.
  size_t scan = cap;
  if (scan > kGuestMaxAddr - p) scan = kGuestMaxAddr - p;
  if (in_kernel_heap(p, scan)) {
    if (p >= kHeapBase) return -EFAULT;
    scan = kHeapBase - p;
  }
  long len = flatux_strnlen_raw(guest_src, scan);
  if (len < 0) return -EFAULT;
  if ((size_t)len == scan) return scan == cap ? -ENAMETOOLONG : -EFAULT;
  if (flatux_copy_raw(dst, guest_src, len + 1)) return -EFAULT;
  return len;
}

}  // namespace flatux
