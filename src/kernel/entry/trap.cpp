// The kernel's side of the trap path: what the host signal handlers
// (host/entry.S) call. SIGSYS serves a trapped guest syscall, a fault is
// the guest's (or an oops), the kick delivers pending signals; the fast
// entry's own faults end here too. Also the task threads and their kernel
// stacks.
#include "kernel/entry/entry.h"

#include <csignal>
#include <cstring>
#include <linux/errno.h>
#include <sched.h>
#include <sys/syscall.h>

#include "host/fast_entry.h"
#include "host/kstack.h"
#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/mm/site_survey.h"
#include "kernel/mm/syscall_sites.h"
#include "kernel/mm/usercopy.h"
#include "kernel/panic.h"
#include "kernel/signal/signal.h"
#include "kernel/syscall.h"
#include "kernel/task/hostproc.h"

extern "C" {
extern const char flatux_isyscall_window[], flatux_isyscall_done[], flatux_isyscall_eintr[];
extern const char flatux_unblock_window[], flatux_unblock_done[];
}

namespace flatux {
namespace {

Task* current_task_or_null() {
  KStackHeader* h = current_kstack_checked();
  return h ? h->task : nullptr;
}

// Serves the guest syscall described by the host frame uc (the trap path,
// and a fast entry turned into a trap) and delivers what is pending.
void serve_trapped_syscall(Task* t, ucontext_t* uc) {
  greg_t* g = uc->uc_mcontext.gregs;
  const uint64_t a[6] = {(uint64_t)g[REG_RDI], (uint64_t)g[REG_RSI], (uint64_t)g[REG_RDX],
                         (uint64_t)g[REG_R10], (uint64_t)g[REG_R8],  (uint64_t)g[REG_R9]};
  t->regs = uc;
  long nr = (long)g[REG_RAX];
  long ret = syscall_entry(*t, (uint64_t)nr, a);
  if (ret != kRegsAlreadySet) g[REG_RAX] = ret;
  // Signals to deliver, or an interrupted call to restart (-ERESTART*).
  if (t->notify.load(std::memory_order_acquire) || (ret <= -512 && ret >= -516)) [[unlikely]]
    handle_signals(*t, ret == kRegsAlreadySet ? -1 : nr);
  t->regs = nullptr;
}

extern "C" void flatux_on_sigsys(int, siginfo_t*, void* ctx) {
  Task* t = current_task();
  auto* uc = static_cast<ucontext_t*>(ctx);
  // The first call from a site may rewrite it, so later ones take the fast
  // entry (kernel/mm/syscall_sites.h); the call itself is served here.
  if (t->kernel->survey) [[unlikely]] site_survey_call(*t, uc);
  if (t->kernel->cfg.syscall_entry != SyscallEntryMode::kTrap) rewrite_syscall_site(*t, uc);
  serve_trapped_syscall(t, uc);
}

// A fast entry that needs a host frame reached the ud2 at
// flatux_fast_convert: this SIGILL frame becomes the guest's context (its
// FPU state is the guest's: kernel code never touched it) and the call is
// finished as on the trap path. The fast-entry stack is simply left.
void fast_entry_to_trap(Task* t, KStackHeader* h, ucontext_t* uc) {
  int why = (int)uc->uc_mcontext.gregs[REG_RDI];
  FastFrame* f = h->fast_frame;
  fast_frame_to_host(*f, uc);
  reinterpret_cast<uint64_t*>(&uc->uc_sigmask)[0] = guest_mode_mask();
  if (why == FLATUX_FAST_TRAP_BEFORE) {
    serve_trapped_syscall(t, uc);
    return;
  }
  t->regs = uc;
  if (why == FLATUX_FAST_NOT_A_SITE) {
    // A call into page 0 from something other than a rewritten site (a
    // null function pointer): the fault it would be with page 0 unmapped.
    greg_t* g = uc->uc_mcontext.gregs;
    g[REG_RSP] -= 8;  // the call's return address stays pushed
    g[REG_RIP] = 0;
    siginfo_t si{};
    si.si_signo = SIGSEGV;
    si.si_code = SEGV_MAPERR;
    guest_fault(*t, SIGSEGV, &si);
    handle_signals(*t, -1);
  } else {
    handle_signals(*t, (long)f->nr);
  }
  t->regs = nullptr;
}

// rewrite-page0: the guest jumped (not called) into page 0 with an RSP
// that points nowhere, so the entry could not pop a return address: the
// guest takes SIGSEGV at the trampoline's jump, with its own RSP and flags.
void fast_page0_bad_stack(Task* t, KStackHeader* h, ucontext_t* uc) {
  greg_t* g = uc->uc_mcontext.gregs;
  g[REG_RSP] = (greg_t)h->guest_rsp;
  g[REG_EFL] = h->fast_frame->uc.uc_mcontext.gregs[REG_EFL];
  g[REG_RIP] = (greg_t)kPage0Jump;
  reinterpret_cast<uint64_t*>(&uc->uc_sigmask)[0] = guest_mode_mask();
  siginfo_t si{};
  si.si_signo = SIGSEGV;
  si.si_code = SEGV_MAPERR;
  si.si_addr = (void*)h->guest_rsp;
  t->regs = uc;
  guest_fault(*t, SIGSEGV, &si);
  handle_signals(*t, -1);
  t->regs = nullptr;
}

// A host signal (sig) stopped the fast entry's own code at uc's RIP.
// True when it was one the entry expects (the guest's doing, or a call
// becoming a trap) and is now handled; false for a kernel fault.
bool fast_entry_fault(Task* t, KStackHeader* h, int sig, const siginfo_t* si, ucontext_t* uc) {
  greg_t* g = uc->uc_mcontext.gregs;
  uintptr_t rip = g[REG_RIP];
  if (rip == (uintptr_t)flatux_fast_convert && sig == SIGILL) {
    fast_entry_to_trap(t, h, uc);
    return true;
  }
  if (in_fast_entry_gs_window(rip)) {
    // The entry's read of the header through %gs faulted: the guest
    // changed its GS base (wrgsbase). Point it back and retry.
    fast_entry_thread_init(t->kernel->cfg.fsgsbase, h);
    return true;
  }
  if (const char* entry = fast_entry_restart_for(rip); entry && sig == SIGILL) {
    // %gs:8 held no kernel stack's magic (a GS base the guest set to its
    // own memory): nothing was written yet, so restart the entry.
    fast_entry_thread_init(t->kernel->cfg.fsgsbase, h);
    g[REG_RIP] = (greg_t)entry;
    return true;
  }
  if (rip == (uintptr_t)flatux_fast_page0_pop && (sig == SIGSEGV || sig == SIGBUS)) {
    fast_page0_bad_stack(t, h, uc);
    return true;
  }
  if (sig == SIGTRAP && si->si_code == TRAP_TRACE) {
    // A guest single-stepping itself (TF) through a rewritten site: the
    // fast entry clears TF at its start and sets it again at its end.
    return true;
  }
  return false;
}

extern "C" void flatux_on_kick(int, siginfo_t*, void* ctx) {
  KStackHeader* h = current_kstack_checked();
  if (!h || !h->task) return;
  Task* t = h->task;
  auto* uc = static_cast<ucontext_t*>(ctx);
  greg_t* g = uc->uc_mcontext.gregs;
  uintptr_t rip = g[REG_RIP];
  if (rip >= (uintptr_t)flatux_isyscall_window && rip < (uintptr_t)flatux_isyscall_done) {
    g[REG_RIP] = (greg_t)flatux_isyscall_eintr;  // not yet blocked: don't
    return;
  }
  if (rip >= (uintptr_t)flatux_unblock_window && rip <= (uintptr_t)flatux_unblock_done)
    return;  // the deferred kick, unblocked by isys(): stale, notify says what is due
  if (rip >= (uintptr_t)flatux_fast_exit_window && rip < (uintptr_t)flatux_fast_exit_window_end) {
    // A fast entry on its way out, past its look at `notify`: finish the
    // return here and deliver, as if the thread were back in guest code.
    fast_frame_to_host(*h->fast_frame, uc);
    t->regs = uc;
    handle_signals(*t, -1);
    t->regs = nullptr;
    return;
  }
  if (in_fast_entry_text(rip) || (in_kernel_text(t->kernel, rip) && on_fast_stack(h, g[REG_RSP]))) {
    // Kernel code of a fast entry: it looks at `notify` on its way out.
    // (Not re-raised blocked as below: no host sigreturn would unblock it.)
    return;
  }
  if (in_kernel_text(t->kernel, rip)) {
    // Kernel code will look at `notify` on its way out, but it may already
    // have looked. Keep one kick pending until the thread is back in guest
    // mode (the interrupted frame's mask blocks it until then).
    reinterpret_cast<uint64_t*>(&uc->uc_sigmask)[0] |= signal_bit(kKickSignal);
    host::sys(SYS_tgkill, task_host_pid(*t), t->host_tid.load(), kKickSignal);
    t->kick_deferred = true;
    return;
  }
  t->regs = uc;
  handle_signals(*t, -1);
  t->regs = nullptr;
}

extern "C" void flatux_on_fault(int sig, siginfo_t* si, void* ctx) {
  auto* uc = static_cast<ucontext_t*>(ctx);
  greg_t* g = uc->uc_mcontext.gregs;
  uintptr_t rip = g[REG_RIP];
  if (rip >= (uintptr_t)flatux_usercopy_begin && rip < (uintptr_t)flatux_usercopy_end) {
    g[REG_RIP] = (greg_t)flatux_usercopy_fixup;
    return;
  }
  KStackHeader* h = current_kstack_checked();
  if (!h || !h->task || h->in_oops) oops(nullptr, h, sig, si, uc);
  Task* t = h->task;
  if (in_fast_entry_text(rip) && fast_entry_fault(t, h, sig, si, uc)) return;
  if (sig == SIGTRAP && syscall_site_trap(*t, uc)) return;  // a site being rewritten
  if (syscall_site_call_fault(*t, sig, uc)) {  // rewrite-page0: a number past the sled
    serve_trapped_syscall(t, uc);
    return;
  }
  if (in_kernel_text(t->kernel, rip)) {
    h->in_oops = 1;
    oops(t->kernel, h, sig, si, uc);
  }
  t->regs = uc;
  guest_fault(*t, sig, si);
  handle_signals(*t, -1);
  t->regs = nullptr;
}

// The thread starts on its kernel stack with no sigaltstack: enter_guest's
// sigreturn installs it as it enters guest code. Set any earlier, a kick
// arriving before that would be written over this very stack (an
// SS_AUTODISARM stack is never "the one in use").
void task_thread_main(void* arg) {
  Task* t = static_cast<Task*>(arg);
  kstack_thread_start(*t->kernel, t->kstack);
  // A forked child's own tid goes into its own copy of the memory only.
  if (t->set_child_tid) put_user((void*)t->set_child_tid, (int)t->tid);
  alignas(64) char fpbuf[kMaxFpstate];
  const void* fp = nullptr;
  if (void* heap_fp = t->entry_fpstate) {
    memcpy(fpbuf, heap_fp, fpstate_size(heap_fp));
    t->entry_fpstate = nullptr;
    t->kernel->heap->free(heap_fp);
    fp = fpbuf;
  }
  enter_guest(*t, t->entry_regs, fp);
}

}  // namespace

void kick_task(Task& t) {
  if (&t == current_task_or_null()) return;
  // A task asleep on its notify word (wait_for_notify) needs no host
  // signal: a futex wake is much cheaper. The caller set notify first.
  if (t.waits_on_notify.load(std::memory_order_seq_cst)) {
    futex_wake(&t.notify, 1);
    return;
  }
  uint32_t tid = t.host_tid.load();
  if (tid > 1) host::sys(SYS_tgkill, task_host_pid(t), tid, kKickSignal);
}

void kstack_header_init(void* base, Task& t) {
  auto* h = static_cast<KStackHeader*>(base);
  h->task = &t;
  h->magic = kKStackMagic;
  h->in_oops = 0;
  fast_entry_setup(*h, &t.notify);
}

void kstack_thread_start(const Kernel& k, void* base) {
  // No sigaltstack here: enter_guest's sigreturn arms it (SS_AUTODISARM).
  // Armed any earlier, a kick arriving before that would be written over
  // the very stack this thread runs on.
  fast_entry_thread_init(k.cfg.fsgsbase, base);
}

bool kstack_setup(Task& t) {
  void* base = t.kernel->heap->alloc_kstack();
  if (!base) return false;
  kstack_header_init(base, t);
  kstack_guard(base);
  t.kstack = base;
  return true;
}

void kstack_release(Task& t) {
  if (!t.kstack) return;
  kstack_unguard(t.kstack);
  t.kernel->heap->free_kstack(t.kstack);
  t.kstack = nullptr;
}

long start_task_thread(Task& t) {
  // The host writes the thread id into host_tid at clone (PARENT_SETTID)
  // and clears it when the thread is gone (CHILD_CLEARTID), which is when
  // its kernel stack may be reused. Stored by us after clone returned, the
  // id could land after a quick thread (a vfork child that execs and
  // exits) had already cleared it, and the stack would never be freed.
  t.host_tid.store(1);
  long r = flatux_clone_thread(kCloneTaskThread, (void*)kstack_top(t.kstack), &t.host_tid, t.guest_fs,
                               task_thread_main, &t);
  if (r < 0) t.host_tid.store(0);
  return r < 0 ? r : 0;
}

void enter_guest(Task& t, const greg_t (&regs)[NGREG], const void* fpstate) {
  enter_guest_context(t.kstack, regs, fpstate);
}

}  // namespace flatux
