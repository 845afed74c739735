#include <csignal>
#include <cstring>
#include <ctime>
#include <linux/errno.h>
#include <sys/syscall.h>

#include "kernel/entry/entry.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/process.h"
#include "kernel/time.h"

namespace flatux {
namespace {

constexpr uint64_t kUnblockable = (1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1));

bool valid_sig(uint64_t sig) { return sig <= (uint64_t)kNSig; }

// Signals anyone may send to anyone: the guest runs as one user so far.
long send_to_pid(Task& t, int pid, int sig, const siginfo_t& si) {
  Kernel& k = *t.kernel;
  Process* targets[256];
  int n = 0;
  bool matched = false;
  Task* kick = nullptr;  // one process's thread: kicked once the lock is free
  long err = 0;
  bool sent = false;
  {
    Guard g(k.tasks_lock);
    if (pid > 0) {
      Process* p = find_process_locked(k, pid);
      if (!p) return -ESRCH;
      targets[n++] = p;
    } else {
      int pgid = pid == 0 ? t.proc->pgid : -pid;
      for (Task* x : k.live_tasks()) {
        if (!x || x->proc->state != ProcState::kRunning || !first_thread_of_process(*x)) continue;
        Process* p = x->proc;
        bool hit = pid == -1 ? (p != k.init || p == t.proc) && p != nullptr : p->pgid == pgid;
        if (pid == -1 && p == t.proc) hit = false;  // kill(-1) spares the caller
        if (hit && n < 256) {
          targets[n++] = p;
          matched = true;
        }
      }
      if (!matched) return -ESRCH;
    }
    // Sent under tasks_lock, so no target can be freed meanwhile. One
    // delivery is success (Linux's kill of a group); else the last error
    // (EAGAIN: a real-time signal over RLIMIT_SIGPENDING).
    for (int i = 0; i < n; i++) {
      long r = send_signal(*targets[i], nullptr, sig, si, sent_by(*t.proc), n == 1 ? &kick : nullptr);
      if (r < 0) err = r;
      else sent = true;
    }
  }
  kick_pinned(kick);
  return sent ? 0 : err;
}

long send_to_thread(Task& t, int tgid, int tid, int sig, const siginfo_t& si) {
  Kernel& k = *t.kernel;
  Task* kick = nullptr;
  long r;
  {
    Guard g(k.tasks_lock);
    Task* target = find_task_locked(k, tid);
    if (!target || (tgid > 0 && target->proc->pid != tgid) || target->proc->state != ProcState::kRunning)
      return -ESRCH;
    r = send_signal(*target->proc, target, sig, si, sent_by(*t.proc), &kick);
  }
  kick_pinned(kick);
  return r;
}

long sleep_until_signal(Task& t) {
  while (!t.notify.load()) wait_for_notify(t, nullptr);
  return -ERESTARTNOHAND;
}

}  // namespace

long sys_kill(Task& t, SyscallArgs a) {
  if (!valid_sig(a[1])) return -EINVAL;
  return send_to_pid(t, (int)a[0], (int)a[1], user_siginfo(t, (int)a[1], SI_USER));
}

long sys_tkill(Task& t, SyscallArgs a) {
  if (!valid_sig(a[1]) || (int)a[0] <= 0) return -EINVAL;
  return send_to_thread(t, 0, (int)a[0], (int)a[1], user_siginfo(t, (int)a[1], SI_TKILL));
}

long sys_tgkill(Task& t, SyscallArgs a) {
  if (!valid_sig(a[2]) || (int)a[0] <= 0 || (int)a[1] <= 0) return -EINVAL;
  return send_to_thread(t, (int)a[0], (int)a[1], (int)a[2], user_siginfo(t, (int)a[2], SI_TKILL));
}

long sys_rt_sigqueueinfo(Task& t, SyscallArgs a) {
  if (!valid_sig(a[1])) return -EINVAL;
  siginfo_t si;
  if (copy_from_user(&si, (const void*)a[2], sizeof si) < 0) return -EFAULT;
  // Only the kernel may claim SI_USER/SI_KERNEL-style codes for others.
  if ((si.si_code >= 0 || si.si_code == SI_TKILL) && (int)a[0] != t.proc->pid) return -EPERM;
  si.si_signo = (int)a[1];
  if ((int)a[0] <= 0) return -ESRCH;
  return send_to_pid(t, (int)a[0], (int)a[1], si);
}

long sys_rt_tgsigqueueinfo(Task& t, SyscallArgs a) {
  if (!valid_sig(a[2])) return -EINVAL;
  siginfo_t si;
  if (copy_from_user(&si, (const void*)a[3], sizeof si) < 0) return -EFAULT;
  if ((si.si_code >= 0 || si.si_code == SI_TKILL) && (int)a[0] != t.proc->pid) return -EPERM;
  si.si_signo = (int)a[2];
  return send_to_thread(t, (int)a[0], (int)a[1], (int)a[2], si);
}

long sys_rt_sigaction(Task& t, SyscallArgs a) {
  int sig = (int)a[0];
  if (a[3] != 8) return -EINVAL;
  if (sig < 1 || sig > kNSig) return -EINVAL;
  GuestSigaction nw;
  if (a[1]) {
    if (copy_from_user(&nw, (const void*)a[1], sizeof nw) < 0) return -EFAULT;
    if (sig == SIGKILL || sig == SIGSTOP) return -EINVAL;
  }
  Process& p = *t.proc;
  GuestSigaction old;
  {
    Guard g(p.siglock);
    old = p.sighand->action[sig - 1];
  }
  if (a[2] && copy_to_user((void*)a[2], &old, sizeof old) < 0) return -EFAULT;
  if (a[1]) {
    nw.mask &= ~kUnblockable;
    Guard g(p.siglock);
    p.sighand->action[sig - 1] = nw;
  }
  return 0;
}

long sys_rt_sigprocmask(Task& t, SyscallArgs a) {
  if (a[3] != 8) return -EINVAL;
  uint64_t old = t.sigmask, set = 0;
  if (a[1]) {
    if (a[0] != SIG_BLOCK && a[0] != SIG_UNBLOCK && a[0] != SIG_SETMASK) return -EINVAL;
    if (copy_from_user(&set, (const void*)a[1], sizeof set) < 0) return -EFAULT;
  }
  if (a[2] && copy_to_user((void*)a[2], &old, sizeof old) < 0) return -EFAULT;
  if (a[1]) {
    uint64_t nm = a[0] == SIG_BLOCK ? (old | set) : a[0] == SIG_UNBLOCK ? (old & ~set) : set;
    set_sigmask(t, nm);
  }
  return 0;
}

long sys_rt_sigpending(Task& t, SyscallArgs a) {
  if (a[1] > 8) return -EINVAL;
  uint64_t pending;
  {
    Guard g(t.proc->siglock);
    pending = (t.pending.set | t.proc->shared_pending.set) & t.sigmask;
  }
  return copy_to_user((void*)a[0], &pending, a[1]);
}

long sys_rt_sigsuspend(Task& t, SyscallArgs a) {
  if (a[1] != 8) return -EINVAL;
  uint64_t mask;
  if (copy_from_user(&mask, (const void*)a[0], sizeof mask) < 0) return -EFAULT;
  uint64_t old = t.sigmask;
  set_sigmask(t, mask);
  t.saved_sigmask = old;
  t.restore_sigmask = true;
  return sleep_until_signal(t);
}

long sys_pause(Task& t, SyscallArgs) { return sleep_until_signal(t); }

namespace {
void end_wait_mask(Task& t, uint64_t old) {
  {
    Guard g(t.proc->siglock);
    t.real_blocked = 0;
  }
  set_sigmask(t, old);
}
}  // namespace

long sys_rt_sigtimedwait(Task& t, SyscallArgs a) {
  if (a[3] != 8) return -EINVAL;
  uint64_t set;
  if (copy_from_user(&set, (const void*)a[0], sizeof set) < 0) return -EFAULT;
  set &= ~kUnblockable;
  uint64_t deadline = 0;
  if (a[2]) {
    timespec ts;
    if (copy_from_user(&ts, (const void*)a[2], sizeof ts) < 0) return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return -EINVAL;
    deadline = monotonic_ns() + (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  // While waiting, the awaited signals count as unblocked so they wake us;
  // they are then taken here instead of by a handler.
  uint64_t old = t.sigmask;
  for (;;) {
    siginfo_t info;
    int sig = 0;
    {
      Guard g(t.proc->siglock);
      uint64_t ready = (t.pending.set | t.proc->shared_pending.set) & set;
      if (ready) {
        sig = __builtin_ctzll(ready) + 1;
        SigPending& from = (t.pending.set & sigbit(sig)) ? t.pending : t.proc->shared_pending;
        dequeue_signal_locked(t.kernel->heap, from, sig, &info);
        t.sigmask = old;
        t.real_blocked = 0;
        recalc_notify_locked(t);
      } else {
        // Linux's real_blocked: an awaited signal is not discarded as
        // ignored while it is unblocked only for this wait.
        t.sigmask = old & ~set;
        t.real_blocked = old;
        recalc_notify_locked(t);
      }
    }
    if (sig) {
      if (a[1] && copy_to_user((void*)a[1], &info, sizeof info) < 0) return -EFAULT;
      return sig;
    }
    if (t.notify.load()) {  // something else to handle (a handler, or exit)
      end_wait_mask(t, old);
      return -EINTR;
    }
    long r;
    if (a[2]) {
      uint64_t now = monotonic_ns();
      if (now >= deadline) {
        end_wait_mask(t, old);
        return -EAGAIN;
      }
      timespec rel{(time_t)((deadline - now) / 1000000000ull), (long)((deadline - now) % 1000000000ull)};
      r = wait_for_notify(t, &rel);
    } else {
      r = wait_for_notify(t, nullptr);
    }
    (void)r;
  }
}

long sys_rt_sigreturn(Task& t, SyscallArgs) {
  long r = sigreturn(t);
  if (r == -EFAULT) {
    // A corrupt frame: Linux sends SIGSEGV.
    siginfo_t si = user_siginfo(t, SIGSEGV, SI_KERNEL);
    guest_fault(t, SIGSEGV, &si);
    return kRegsAlreadySet;
  }
  return r;
}

long sys_sigaltstack(Task& t, SyscallArgs a) {
  uint64_t sp = t.regs ? (uint64_t)t.regs->uc_mcontext.gregs[REG_RSP] : 0;
  bool on = t.altstack_size && sp > t.altstack_sp && sp - t.altstack_sp <= t.altstack_size;
  stack_t old{};
  old.ss_sp = (void*)t.altstack_sp;
  old.ss_size = t.altstack_size;
  old.ss_flags = on ? SS_ONSTACK : t.altstack_flags;
  if (a[0]) {
    stack_t ss;
    if (copy_from_user(&ss, (const void*)a[0], sizeof ss) < 0) return -EFAULT;
    if (on) return -EPERM;
    constexpr int kSsAutodisarm = 1 << 31;
    if (ss.ss_flags & ~(SS_DISABLE | SS_ONSTACK | kSsAutodisarm)) return -EINVAL;
    if (ss.ss_flags & SS_DISABLE) {
      t.altstack_sp = 0;
      t.altstack_size = 0;
      t.altstack_flags = SS_DISABLE;
    } else {
      if (ss.ss_size < 2048) return -ENOMEM;  // MINSIGSTKSZ
      t.altstack_sp = (uint64_t)ss.ss_sp;
      t.altstack_size = ss.ss_size;
      t.altstack_flags = 0;
    }
  }
  if (a[1] && copy_to_user((void*)a[1], &old, sizeof old) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
