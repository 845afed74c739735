#include <csignal>
#include <linux/errno.h>

#include "host/usercopy.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/task.h"

namespace flatux {
namespace {

constexpr uint64_t sigbit(int sig) { return 1ull << (sig - 1); }
// SIGKILL and SIGSTOP can never be blocked or caught.
constexpr uint64_t kUnblockable = sigbit(SIGKILL) | sigbit(SIGSTOP);

bool valid_sig(uint64_t sig) { return sig <= (uint64_t)kNSig; }

}  // namespace

// Only the calling process exists as a target so far (one process per
// kernel until clone arrives); other pids are ESRCH.
long sys_kill(Task& t, SyscallArgs a) {
  if (!valid_sig(a[1])) return -EINVAL;
  int pid = (int)a[0];
  if (pid != t.proc->pid && pid != 0 && pid != -1 && pid != -t.proc->pgid) return -ESRCH;
  return send_signal_self(t, (int)a[1]);
}

long sys_tkill(Task& t, SyscallArgs a) {
  if (!valid_sig(a[1]) || (int)a[0] <= 0) return -EINVAL;
  if ((int)a[0] != t.tid) return -ESRCH;
  return send_signal_self(t, (int)a[1]);
}

long sys_tgkill(Task& t, SyscallArgs a) {
  if (!valid_sig(a[2]) || (int)a[0] <= 0 || (int)a[1] <= 0) return -EINVAL;
  if ((int)a[0] != t.proc->pid || (int)a[1] != t.tid) return -ESRCH;
  return send_signal_self(t, (int)a[2]);
}

long sys_rt_sigaction(Task& t, SyscallArgs a) {
  int sig = (int)a[0];
  if (a[3] != 8) return -EINVAL;
  if (sig < 1 || sig > kNSig) return -EINVAL;
  GuestSigaction& cur = t.proc->sigactions[sig - 1];
  GuestSigaction old = cur, nw;
  if (a[1]) {
    if (copy_from_user(&nw, (const void*)a[1], sizeof nw) < 0) return -EFAULT;
    if (sig == SIGKILL || sig == SIGSTOP) return -EINVAL;
  }
  if (a[2] && copy_to_user((void*)a[2], &old, sizeof old) < 0) return -EFAULT;
  if (a[1]) {
    nw.mask &= ~kUnblockable;
    cur = nw;
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
    switch ((int)a[0]) {
      case SIG_BLOCK: t.sigmask |= set; break;
      case SIG_UNBLOCK: t.sigmask &= ~set; break;
      default: t.sigmask = set; break;
    }
    t.sigmask &= ~kUnblockable;
    if (t.sigpending & ~t.sigmask) recheck_pending(t);
  }
  return 0;
}

long sys_rt_sigpending(Task& t, SyscallArgs a) {
  if (a[1] > 8) return -EINVAL;
  uint64_t pending = t.sigpending & t.sigmask;
  return copy_to_user((void*)a[0], &pending, a[1]);
}

long sys_sigaltstack(Task& t, SyscallArgs a) {
  stack_t old{};
  old.ss_sp = (void*)t.altstack_sp;
  old.ss_size = t.altstack_size;
  old.ss_flags = t.altstack_flags;
  if (a[0]) {
    stack_t ss;
    if (copy_from_user(&ss, (const void*)a[0], sizeof ss) < 0) return -EFAULT;
    constexpr int kSsAutodisarm = 1 << 31;
    if (ss.ss_flags & ~(SS_DISABLE | kSsAutodisarm)) return -EINVAL;
    if (!(ss.ss_flags & SS_DISABLE)) {
      if (ss.ss_size < 2048) return -ENOMEM;  // MINSIGSTKSZ
      t.altstack_sp = (uint64_t)ss.ss_sp;
      t.altstack_size = ss.ss_size;
      t.altstack_flags = ss.ss_flags;
    } else {
      t.altstack_sp = 0;
      t.altstack_size = 0;
      t.altstack_flags = SS_DISABLE;
    }
  }
  if (a[1] && copy_to_user((void*)a[1], &old, sizeof old) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
