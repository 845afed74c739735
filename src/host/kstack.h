// Kernel stacks: one per task, kKernelStackSize bytes aligned to their size,
// taken from the kernel heap. The host delivers SIGSYS and guest faults on
// this stack (it is the thread's sigaltstack), so the running task is found
// by rounding the stack pointer down -- no host TLS involved.
//
//   base                 base+4K      base+8K                      top
//   | KStackHeader ...   | guard page | stack, grows down <--------|
#pragma once
#include <cstdint>

#include "kernel/heap.h"

namespace flatux {

struct Task;

constexpr uint64_t kKStackMagic = 0x6b737461636b2121ull;  // "kstack!!"
constexpr uintptr_t kKStackUsable = 2 * 4096;               // header + guard

struct KStackHeader {
  Task* task;
  uint64_t magic;
  int in_oops;  // set while reporting a kernel fault, to stop recursion
};

inline uintptr_t current_sp() {
  uintptr_t sp;
  asm volatile("mov %%rsp, %0" : "=r"(sp));
  return sp;
}

inline KStackHeader* kstack_header_of(uintptr_t sp) {
  return reinterpret_cast<KStackHeader*>(sp & ~(uintptr_t)(kKernelStackSize - 1));
}

// The task whose kernel stack we are running on.
inline Task* current_task() { return kstack_header_of(current_sp())->task; }

// Like current_task() but safe to call on any stack: nullptr when the
// stack pointer is not on a kernel stack (the launcher's own threads).
inline KStackHeader* current_kstack_checked() {
  uintptr_t sp = current_sp();
  if (!in_kernel_heap(sp, 1)) return nullptr;
  KStackHeader* h = kstack_header_of(sp);
  return h->magic == kKStackMagic ? h : nullptr;
}

inline uintptr_t kstack_top(void* base) { return (uintptr_t)base + kKernelStackSize; }

}  // namespace flatux
