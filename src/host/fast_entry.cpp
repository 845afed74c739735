#include "host/fast_entry.h"

#include <asm/prctl.h>
#include <cstring>
#include <sys/syscall.h>

#include "host/entry.h"
#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/mm/syscall_sites.h"
#include "kernel/syscall.h"

namespace flatux {

void fast_entry_setup(KStackHeader& h, Task& t) {
  uintptr_t top = (uintptr_t)&h + kFastStackTop;
  h.fast_frame = reinterpret_cast<FastFrame*>(top - sizeof(FastFrame));
  h.guest_rsp = 0;
  h.notify = &t.notify;
}

void fast_entry_thread_init(const Kernel& k, void* kstack) {
  if (k.cfg.fsgsbase) asm volatile("wrgsbase %0" ::"r"(kstack) : "memory");
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

// Serves the call a fast entry saved in f; returns FLATUX_FAST_* (what the
// assembly does next). Runs on the fast-entry stack with the guest's
// signal mask on the host thread; kernel code behaves as on the trap path,
// with t.regs pointing at the saved registers.
extern "C" int flatux_fast_syscall(FastFrame* f) {
  uint64_t nr = f->nr;
  Task& t = *current_task();
  greg_t* g = f->uc.uc_mcontext.gregs;
  if (f->via_page0 && !is_page0_site(*t.proc->mm, (uintptr_t)g[REG_RIP] - 2)) [[unlikely]]
    return FLATUX_FAST_NOT_A_SITE;
  if (needs_host_frame(nr)) return FLATUX_FAST_TRAP_BEFORE;
  const uint64_t a[6] = {(uint64_t)g[REG_RDI], (uint64_t)g[REG_RSI], (uint64_t)g[REG_RDX],
                         (uint64_t)g[REG_R10], (uint64_t)g[REG_R8],  (uint64_t)g[REG_R9]};
  t.regs = &f->uc;
  long ret = syscall_entry(t, nr, a);
  t.regs = nullptr;
  // Only rt_sigreturn sets every register itself, and it never gets here;
  // should another, the registers it set go out through a host frame.
  if (ret == kRegsAlreadySet) [[unlikely]] {
    f->nr = ~0ull;  // no call to restart
    return FLATUX_FAST_SIGNALS;
  }
  g[REG_RAX] = ret;
  if (ret <= -512 && ret >= -516) [[unlikely]] return FLATUX_FAST_SIGNALS;  // -ERESTART*
  return FLATUX_FAST_DONE;
}

}  // namespace flatux
