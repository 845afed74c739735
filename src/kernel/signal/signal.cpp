#include "kernel/signal/signal.h"

#include <cstring>
#include <linux/errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "kernel/entry/entry.h"
#include "kernel/task/isys.h"
#include "kernel/task/hostproc.h"
#include "host/raw_syscall.h"
#include "kernel/fs/anon/virtual_wait.h"
#include "kernel/kernel.h"
#include "kernel/signal/frame.h"
#include "kernel/task/exit.h"
#include "kernel/task/process.h"

namespace flatux {
namespace {

constexpr uint64_t kUnblockable = (1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1));
constexpr uint64_t kStopMask = (1ull << (SIGSTOP - 1)) | (1ull << (SIGTSTP - 1)) |
                               (1ull << (SIGTTIN - 1)) | (1ull << (SIGTTOU - 1));
// Synchronous signals go first, as on Linux.
constexpr uint64_t kSyncMask = (1ull << (SIGSEGV - 1)) | (1ull << (SIGBUS - 1)) |
                               (1ull << (SIGILL - 1)) | (1ull << (SIGTRAP - 1)) |
                               (1ull << (SIGFPE - 1)) | (1ull << (SIGSYS - 1));

bool is_rt(int sig) { return sig >= 32; }

void drop_from(Heap* h, SigPending& p, uint64_t mask) {
  for (int sig = 1; sig <= kNSig; sig++) {
    if (!(mask & sigbit(sig))) continue;
    for (SigQueued* q = p.head[sig - 1]; q;) {
      SigQueued* n = q->next;
      sigq_free(h, q);
      q = n;
    }
    p.head[sig - 1] = p.tail[sig - 1] = nullptr;
  }
  p.set &= ~mask;
}

// Counts one more queued signal for `uid`; nullptr when that would pass
// `limit` and the signal may not go over it.
std::atomic<uint32_t>* charge_user(SigQueueUsers& u, uint32_t uid, uint64_t limit, bool over_limit_ok) {
  Guard g(u.lock);
  int slot = -1, unused = -1;
  for (int i = 0; i < SigQueueUsers::kSlots && slot < 0; i++) {
    bool taken = u.queued[i].load(std::memory_order_acquire) != 0;
    if (taken && u.uid[i] == uid) slot = i;
    else if (!taken && unused < 0) unused = i;
  }
  if (slot < 0) {
    // Every slot taken by another user: the last one is shared.
    slot = unused >= 0 ? unused : SigQueueUsers::kSlots - 1;
    if (unused >= 0) u.uid[slot] = uid;
  }
  if (!over_limit_ok && u.queued[slot].load(std::memory_order_relaxed) >= limit) return nullptr;
  u.queued[slot].fetch_add(1, std::memory_order_relaxed);
  return &u.queued[slot];
}

}  // namespace

SigQueued* sigq_alloc(Process& to, bool over_limit_ok) {
  Kernel& k = *to.kernel;
  std::atomic<uint32_t>* count =
      charge_user(k.sigqueue_users, to.creds.uid, to.rlimits[RLIMIT_SIGPENDING][0], over_limit_ok);
  if (!count) return nullptr;
  auto* q = static_cast<SigQueued*>(k.heap->alloc(sizeof(SigQueued)));
  if (!q) {
    count->fetch_sub(1, std::memory_order_release);
    return nullptr;
  }
  q->next = nullptr;
  q->charged_to = count;
  q->by_other = false;
  return q;
}

void sigq_free(Heap* h, SigQueued* q) {
  q->charged_to->fetch_sub(1, std::memory_order_release);
  h->free(q);
}

void sigq_push(SigPending& p, int sig, SigQueued* q, bool front) {
  SigQueued*& head = p.head[sig - 1];
  SigQueued*& tail = p.tail[sig - 1];
  if (front) {
    q->next = head;
    head = q;
    if (!tail) tail = q;
  } else {
    q->next = nullptr;
    if (tail) tail->next = q;
    else head = q;
    tail = q;
  }
  p.set |= sigbit(sig);
}

void sigq_clear(Heap* h, SigPending& p) { drop_from(h, p, ~0ull); }

bool dequeue_signal_locked(Heap* h, SigPending& p, int sig, siginfo_t* info) {
  SigQueued*& head = p.head[sig - 1];
  // A bare instance was queued over the limit by kill(), whose sender is
  // not known any more: counted as another process's.
  bool by_other = true;
  if (SigQueued* q = head) {
    *info = q->info;
    by_other = q->by_other;
    head = q->next;
    if (!head) p.tail[sig - 1] = nullptr;
    sigq_free(h, q);
  } else {  // queued over the limit by kill(): still delivered, bare
    memset(info, 0, sizeof *info);
    info->si_signo = sig;
  }
  if (!head) p.set &= ~sigbit(sig);
  return by_other;
}

namespace {

int pick(uint64_t set) {
  if (!set) return 0;
  if (set & sigbit(SIGKILL)) return SIGKILL;
  uint64_t sync = set & kSyncMask;
  return __builtin_ctzll(sync ? sync : set) + 1;
}

// Does `sig`, once t takes it, end the process? (siglock held)
bool kills(Process& p, const Task& t, int sig) {
  if (sig == SIGKILL) return true;
  if (t.sigmask & sigbit(sig)) return false;
  return p.sighand->action[sig - 1].handler == (uint64_t)SIG_DFL && !sig_default_ignore(sig) &&
         !sig_default_stop(sig);
}

bool ignored(Process& p, int sig) {
  uint64_t h = p.sighand->action[sig - 1].handler;
  return h == (uint64_t)SIG_IGN || (h == (uint64_t)SIG_DFL && sig_default_ignore(sig));
}

bool is_guest_init(const Process& p) { return &p == p.kernel->init; }

// Linux's SIGNAL_UNKILLABLE: the guest's init takes from the other
// processes only the signals it has a handler for (or ignores anyway), so
// no child can kill or stop it, whatever route the signal takes (kill,
// sigqueue, a file owner, an exit signal). What init brings on itself
// (raise, abort, a broken pipe, its timers, its faults) and what the host
// or the terminal's user sends still acts as it would natively: `flatux
// run` keeps a program's own signal behaviour and its exit status. A
// container engine's signals come as from an ancestor pid namespace.
// (siglock held)
bool shielded(Process& p, int sig, SigSender from) {
  if (!is_guest_init(p) || p.sighand->action[sig - 1].handler != (uint64_t)SIG_DFL) return false;
  if (from.ancestor_namespace) return sig != SIGKILL && sig != SIGSTOP;
  // A container's init is pid 1 natively too: what it sends itself is
  // dropped as well.
  if (p.kernel->cfg.container_init) return from.pid != 0;
  return from.pid != 0 && from.pid != p.pid;
}

// SIGCONT and stop signals cancel each other when sent; SIGCONT resumes a
// stopped process even when blocked or ignored.
void prepare(Process& p, int sig) {
  Heap* h = p.kernel->heap;
  if (sig == SIGKILL) {  // a frozen process dies as well (cgroup.freeze)
    p.thaw_seq.fetch_add(1);
    futex_wake(&p.thaw_seq, 1 << 30);
  }
  if (sig == SIGCONT || sig == SIGKILL) {
    drop_from(h, p.shared_pending, kStopMask);
    for (Task* t = p.threads; t; t = t->next_thread) drop_from(h, t->pending, kStopMask);
    if (p.stopped) {
      p.stopped = false;
      if (sig == SIGCONT) continue_process(p);
      p.cont_seq.fetch_add(1);
      futex_wake(&p.cont_seq, 1 << 30);
    }
  } else if (kStopMask & sigbit(sig)) {
    drop_from(h, p.shared_pending, sigbit(SIGCONT));
    for (Task* t = p.threads; t; t = t->next_thread) drop_from(h, t->pending, sigbit(SIGCONT));
  }
}

}  // namespace

bool sig_default_ignore(int sig) {
  return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}
bool sig_default_stop(int sig) { return kStopMask & sigbit(sig); }
bool sig_default_core(int sig) {
  switch (sig) {
    case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT: case SIGBUS: case SIGFPE:
    case SIGSEGV: case SIGXCPU: case SIGXFSZ: case SIGSYS:
      return true;
    default:
      return false;
  }
}

bool fatal_signal_pending(Task& t) {
  Process& p = *t.proc;
  Guard g(p.siglock);
  if (t.exit_requested) return true;
  uint64_t pending = t.pending.set | p.shared_pending.set;
  for (int sig = 1; pending; sig++, pending >>= 1)
    if ((pending & 1) && kills(p, t, sig)) return true;
  return false;
}

bool has_deliverable_locked(Task& t) {
  return ((t.pending.set | t.proc->shared_pending.set) & ~t.sigmask) != 0;
}

void recalc_notify_locked(Task& t) {
  // A frozen process's threads keep the word set: each wait ends and
  // handle_signals parks it in the freezer.
  bool attention = t.exit_requested || has_deliverable_locked(t) || t.proc->frozen.load();
  t.notify.store(attention ? 1 : 0, std::memory_order_release);
}

siginfo_t user_siginfo(Task& t, int sig, int code) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = code;
  si.si_pid = t.proc->pid;
  si.si_uid = t.proc->creds.uid;
  return si;
}

long send_signal(Process& p, Task* target, int sig, const siginfo_t& info, SigSender from, Task** deferred) {
  if (sig == 0) return 0;
  if (sig < 0 || sig > kNSig) return -EINVAL;  // (clone's exit signal may be any byte)
  Task* wake = nullptr;
  bool wake_all = false;
  {
    Guard g(p.siglock);
    if (p.state != ProcState::kRunning) return 0;
    // A dropped SIGKILL does not resume a stopped init either; other
    // signals act on stops first, as Linux's prepare_signal.
    if (sig == SIGKILL && shielded(p, sig, from)) return 0;
    prepare(p, sig);
    Task* probe = target ? target : p.threads;
    // A blocked signal is kept: its action may change before it is
    // taken (handle_signals drops it then if init still has no handler).
    bool blocked = probe && ((probe->sigmask | probe->real_blocked) & sigbit(sig));
    if (!blocked && shielded(p, sig, from)) return 0;
    if (sig != SIGKILL && !blocked && ignored(p, sig)) return 0;
    SigPending& q = target ? target->pending : p.shared_pending;
    if (!is_rt(sig) && (q.set & sigbit(sig))) return 0;  // standard signals coalesce
    // RLIMIT_SIGPENDING, as Linux applies it: kill() and the kernel's own
    // standard signals always queue; a real-time signal over the limit
    // fails with EAGAIN, unless kill() sent it: then it loses its siginfo.
    // A timer's signal is never lost (Linux keeps one per timer).
    bool over_limit_ok = info.si_code == SI_TIMER || (!is_rt(sig) && info.si_code >= 0);
    if (SigQueued* e = sigq_alloc(p, over_limit_ok)) {
      e->info = info;
      e->info.si_signo = sig;
      e->by_other = from.pid != 0 && from.pid != p.pid;
      sigq_push(q, sig, e, false);
    } else if (is_rt(sig) && info.si_code != SI_USER) {
      return -EAGAIN;
    }
    q.set |= sigbit(sig);
    p.sig_queued.fetch_add(1, std::memory_order_seq_cst);
    virtual_wait_wake_locked(p, target);  // signalfd pollers
    if (sig == SIGKILL) {
      wake_all = true;
    } else if (target) {
      if (!(target->sigmask & sigbit(sig))) wake = target;
    } else {
      for (Task* t = p.threads; t; t = t->next_thread)
        if (!(t->sigmask & sigbit(sig))) { wake = t; break; }
    }
    if (wake_all) {
      for (Task* t = p.threads; t; t = t->next_thread) t->notify.store(1);
    } else if (wake) {
      wake->notify.store(1);
    }
    // A thread sleeping in vfork() wakes only to die.
    for (Task* t = target ? target : p.threads; t; t = target ? nullptr : t->next_thread)
      if (kills(p, *t, sig)) interrupt_vfork_wait(*t);
  }
  if (p.sig_queued_sleepers.load(std::memory_order_seq_cst)) futex_wake(&p.sig_queued, 1 << 30);
  if (wake_all) {
    for (Task* t = p.threads; t; t = t->next_thread) kick_task(*t);
  } else if (wake && deferred && !*deferred) {
    wake->pins.fetch_add(1);
    *deferred = wake;
  } else if (wake) {
    kick_task(*wake);
  }
  return 0;
}

void kick_pinned(Task* t) {
  if (!t) return;
  kick_task(*t);
  t->pins.fetch_sub(1);
}

int send_signal_pgrp_locked(Kernel& k, int pgrp, int sig, const siginfo_t& info, SigSender from) {
  int n = 0;
  for (Task* x : k.live_tasks()) {
    if (!x || !first_thread_of_process(*x) || x->proc->pgid != pgrp || x->proc->state != ProcState::kRunning) continue;
    send_signal(*x->proc, nullptr, sig, info, from);
    n++;
  }
  return n;
}

long wait_for_notify(Task& t, const timespec* rel) {
  // Dekker with kick_task: we mark ourselves, then look at notify; the
  // sender sets notify, then looks at the mark.
  t.waits_on_notify.store(1, std::memory_order_seq_cst);
  long r = 0;
  if (!t.notify.load(std::memory_order_seq_cst)) r = isys(t, SYS_futex, &t.notify, FUTEX_WAIT, 0, rel);
  t.waits_on_notify.store(0, std::memory_order_relaxed);
  return r;
}

void set_sigmask(Task& t, uint64_t mask) {
  Guard g(t.proc->siglock);
  t.sigmask = mask & ~kUnblockable;
  recalc_notify_locked(t);
}

void guest_fault(Task& t, int sig, const siginfo_t* si) {
  Process& p = *t.proc;
  {
    Guard g(p.siglock);
    GuestSigaction& act = p.sighand->action[sig - 1];
    bool blocked = t.sigmask & sigbit(sig);
    // A fault that cannot be handled must not loop: it kills.
    if (blocked || act.handler == (uint64_t)SIG_IGN) {
      act.handler = (uint64_t)SIG_DFL;
      t.sigmask &= ~sigbit(sig);
    }
    if (SigQueued* e = sigq_alloc(p, true)) {
      e->info = *si;
      sigq_push(t.pending, sig, e, true);  // synchronous: ahead of its kind
    }
    t.pending.set |= sigbit(sig);
    t.notify.store(1);
  }
}

void handle_signals(Task& t, long syscall_nr) {
  Process& p = *t.proc;
  greg_t* g = t.regs->uc_mcontext.gregs;
  long ret = syscall_nr >= 0 ? (long)g[REG_RAX] : 0;
  bool restartable = syscall_nr >= 0 && ret <= -512 && ret >= -516;
  for (;;) {
    if (t.exit_requested) exit_thread(t);
    if (p.stopped) {
      do_stop_wait(t);
      continue;
    }
    if (p.frozen.load() && !do_freeze_wait(t)) continue;
    siginfo_t info;
    int sig;
    GuestSigaction act;
    bool by_other;
    {
      Guard lk(p.siglock);
      sig = pick(t.pending.set & ~t.sigmask);
      SigPending* from = &t.pending;
      if (!sig) {
        sig = pick(p.shared_pending.set & ~t.sigmask);
        from = &p.shared_pending;
      }
      if (!sig) {
        if (t.restore_sigmask) {
          t.sigmask = t.saved_sigmask;
          t.restore_sigmask = false;
        }
        recalc_notify_locked(t);
        if (!t.notify.load()) break;
        continue;
      }
      by_other = dequeue_signal_locked(t.kernel->heap, *from, sig, &info);
      act = p.sighand->action[sig - 1];
      if (act.handler > (uint64_t)SIG_IGN && (act.flags & SA_RESETHAND))
        p.sighand->action[sig - 1].handler = (uint64_t)SIG_DFL;
    }
    if (sig == SIGKILL) do_group_exit(t, SIGKILL);
    if (act.handler == (uint64_t)SIG_IGN) continue;
    if (act.handler == (uint64_t)SIG_DFL) {
      if (sig_default_ignore(sig)) continue;
      // Queued while blocked (or handled): init drops it now, as Linux's
      // get_signal does for an unkillable init.
      if (by_other && is_guest_init(p)) continue;
      if (sig_default_stop(sig)) {
        do_group_stop(t, sig);
        continue;
      }
      // No core file is written (as with RLIMIT_CORE 0), so no 0x80 bit.
      do_group_exit(t, sig);
    }
    // A handler runs: settle the interrupted syscall's fate first.
    if (restartable) {
      bool restart = ret == -513 /*ERESTARTNOINTR*/ ||
                     (ret == -512 /*ERESTARTSYS*/ && (act.flags & SA_RESTART));
      if (restart) {
        g[REG_RAX] = syscall_nr;
        g[REG_RIP] -= 2;
      } else {
        g[REG_RAX] = -EINTR;
      }
      restartable = false;
    }
    uint64_t old_mask;
    {
      Guard lk(p.siglock);
      old_mask = t.restore_sigmask ? t.saved_sigmask : t.sigmask;
      t.restore_sigmask = false;
    }
    if (setup_frame(t, sig, info, act, old_mask) < 0) {
      // No room for the frame (bad stack): Linux forces SIGSEGV.
      do_group_exit(t, SIGSEGV);
    }
    uint64_t nm = old_mask | act.mask;
    if (!(act.flags & SA_NODEFER)) nm |= sigbit(sig);
    set_sigmask(t, nm);
    // Further signals wait for the handler's return or its next syscall;
    // a pending one that is still deliverable gets a kick so it is taken
    // at once, like Linux's nested frames.
    if (t.notify.load()) host::sys(SYS_tgkill, task_host_pid(t), t.host_tid.load(), kKickSignal);
    return;
  }
  if (restartable) {  // interrupted, but no handler ran: restart silently
    if (ret == -516 /*ERESTART_RESTARTBLOCK*/) {
      g[REG_RAX] = SYS_restart_syscall;
    } else {
      g[REG_RAX] = syscall_nr;
    }
    g[REG_RIP] -= 2;
  }
}

}  // namespace flatux
