// The kernel's side of the fast entry (host/fast_entry.S): the call a
// rewritten syscall site jumped in with, served on the fast-entry stack.
#include "host/fast_entry.h"
#include "kernel/entry/entry.h"
#include "kernel/mm/syscall_sites.h"
#include "kernel/syscall.h"

namespace flatux {

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
