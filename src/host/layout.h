// Where the kernel's shared memory lies in every host address space: the
// kernel heap (MAP_SHARED at a fixed address, so a pointer into it means
// the same in every host process) and the size of the kernel stacks taken
// from it, aligned to their size so that the stack pointer alone finds the
// running task's header (host/kstack.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

constexpr uintptr_t kHeapBase = 0x7e0000000000ull;
constexpr size_t kHeapReserve = 64ull << 30;  // address space only
// Each kernel stack holds two stacks (host/kstack.h): one for host signal
// handlers, one for fast entries.
constexpr size_t kKernelStackSize = 512 * 1024;

inline bool in_kernel_heap(uintptr_t p, size_t n) {
  return p < kHeapBase + kHeapReserve && p + n > kHeapBase;
}

}  // namespace flatux
