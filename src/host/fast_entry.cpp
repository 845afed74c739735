#include "host/fast_entry.h"

#include <asm/prctl.h>
#include <cstring>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

namespace flatux {

void fast_entry_setup(KStackHeader& h, const std::atomic<uint32_t>* notify) {
  uintptr_t top = (uintptr_t)&h + kFastStackTop;
  h.fast_frame = reinterpret_cast<FastFrame*>(top - sizeof(FastFrame));
  h.guest_rsp = 0;
  h.notify = notify;
}

void fast_entry_thread_init(bool fsgsbase, void* kstack) {
  if (fsgsbase) asm volatile("wrgsbase %0" ::"r"(kstack) : "memory");
  else host::sys(SYS_arch_prctl, ARCH_SET_GS, kstack);
}

void page0_contents(uint8_t (&page)[kPage0Size]) {
  memset(page, 0x90, kPage0Jump);  // nop
  page[kPage0Jump] = 0xff, page[kPage0Jump + 1] = 0x25;  // jmp *kPage0Disp(%rip)
  memcpy(page + kPage0Jump + 2, &kPage0Disp, 4);
}

void fast_frame_to_host(const FastFrame& f, ucontext_t* uc) {
  greg_t* g = uc->uc_mcontext.gregs;
  greg_t csgsfs = g[REG_CSGSFS];
  memcpy(g, f.uc.uc_mcontext.gregs, sizeof f.uc.uc_mcontext.gregs);
  g[REG_CSGSFS] = csgsfs;
}

}  // namespace flatux
