// Kernel stacks: one per task, kKernelStackSize bytes aligned to their size,
// taken from the kernel heap. The running task is found by rounding the
// stack pointer down -- no host TLS involved.
//
//   base        +4K     +8K                 +256K   +260K                top
//   | header    | guard | fast-entry stack  | guard | signal stack        |
//                         grows down <------|         grows down <--------|
//
// The signal stack is the host thread's sigaltstack: SIGSYS, guest faults
// and the kick run there (the trap path). The fast-entry stack is where a
// rewritten syscall site enters the kernel without a host signal
// (host/fast_entry.S); its frame sits at its top. They are apart because a
// host signal arriving during a fast entry is delivered at the top of the
// signal stack (always, with SS_AUTODISARM), and must not land on the fast
// entry's frames; the guard page between them keeps an overflow of the
// signal stack from reaching them either.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ucontext.h>

#include "host/fast_entry_layout.h"
#include "host/layout.h"

namespace flatux {

struct Task;

// Host mappings a guarded kernel stack adds to its host process: its two
// guard pages split the heap's mapping around them.
constexpr int kKStackMaps = 4;
constexpr uint64_t kKStackMagic = 0x6b737461636b2121ull;  // "kstack!!"
constexpr uintptr_t kFastStackBottom = 2 * 4096;          // above the header and its guard
constexpr uintptr_t kFastStackTop = kKernelStackSize / 2;
constexpr uintptr_t kSignalStackBottom = kFastStackTop + 4096;  // above the second guard

// What a fast entry saves: the guest's registers as a host ucontext (so
// kernel code sees the same `Task::regs` as on the trap path; fpregs is
// null, the guest's FPU state stays live in the registers), the number the
// call was made with, and whether it came through page 0 (`call *%rax`).
struct alignas(64) FastFrame {
  ucontext_t uc;
  uint64_t nr;
  uint64_t via_page0;
};

struct KStackHeader {
  Task* task;
  uint64_t magic;
  int in_oops;  // set while reporting a kernel fault, to stop recursion
  // Read by the fast entry through %gs (the thread's GS base is this
  // header): where its frame goes, the guest's RSP while it switches
  // stacks, and the task's `notify` word it checks on the way out.
  FastFrame* fast_frame;
  uintptr_t guest_rsp;
  const std::atomic<uint32_t>* notify;
};

static_assert(offsetof(KStackHeader, magic) == FLATUX_KS_MAGIC);
static_assert((uint32_t)kKStackMagic == FLATUX_KS_MAGIC_LO);
static_assert(offsetof(KStackHeader, fast_frame) == FLATUX_KS_FAST_FRAME);
static_assert(offsetof(KStackHeader, guest_rsp) == FLATUX_KS_GUEST_RSP);
static_assert(offsetof(KStackHeader, notify) == FLATUX_KS_NOTIFY);
static_assert(offsetof(FastFrame, uc.uc_mcontext.gregs) == FLATUX_FF_GREGS);
static_assert(offsetof(FastFrame, uc.uc_mcontext.fpregs) == FLATUX_FF_FPREGS);
static_assert(offsetof(FastFrame, nr) == FLATUX_FF_NR);
static_assert(offsetof(FastFrame, via_page0) == FLATUX_FF_PAGE0);
static_assert(REG_R8 == 0 && REG_RDI == 8 && REG_RAX == 13 && REG_RSP == 15 && REG_RIP == 16 &&
              REG_EFL == 17 && REG_CSGSFS == 18);

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

// Is sp on the fast-entry stack of the kernel stack at `base`?
inline bool on_fast_stack(const void* base, uintptr_t sp) {
  uintptr_t b = (uintptr_t)base;
  return sp >= b + kFastStackBottom && sp <= b + kFastStackTop;
}

}  // namespace flatux
