// prctl(2): the options of a process's own that flatux keeps, with the
// capability options (bounding and ambient sets, securebits, keepcaps)
// under caps.h's rules.
#include <csignal>
#include <linux/capability.h>
#include <linux/errno.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>

#include "kernel/kernel.h"
#include "kernel/seccomp/seccomp.h"
#include "kernel/mm/mm.h"
#include "kernel/mm/usercopy.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"
#include "kernel/task/process.h"

namespace flatux {
namespace {

long set_name(Task& t, uint64_t guest) {
  char name[16];
  long r = strncpy_from_user(name, (const char*)guest, sizeof name);
  if (r == -ENAMETOOLONG) {
    if (copy_from_user(name, (const void*)guest, 15) < 0) return -EFAULT;
    name[15] = 0;
  } else if (r < 0) {
    return r;
  }
  __builtin_memcpy(t.proc->comm, name, sizeof name);
  return 0;
}

// Linux's PR_SET_NO_NEW_PRIVS: arg2 must be 1 and the rest 0; once set it
// stays, and execve then ignores set-id bits and file capabilities.
long set_no_new_privs(Task& t, SyscallArgs a) {
  if (a[1] != 1 || a[2] || a[3] || a[4]) return -EINVAL;
  t.proc->no_new_privs = true;
  return 0;
}

// PR_SET_VMA_ANON_NAME's rules for a name: at most 79 bytes of printable
// ASCII but [ ] \ $ and `; NULL clears.
long set_vma_name(Task& t, SyscallArgs a) {
  if (a[1] != PR_SET_VMA_ANON_NAME) return -EINVAL;
  uintptr_t addr = a[2];
  size_t len = a[3];
  if (addr & (kPageSize - 1) || addr + len < addr) return -EINVAL;
  char name[80];
  const char* use = nullptr;
  if (a[4]) {
    long n = strncpy_from_user(name, (const char*)a[4], sizeof name);
    if (n < 0) return n == -ENAMETOOLONG ? -EINVAL : n;
    for (long i = 0; i < n; i++) {
      char c = name[i];
      if (c < 0x20 || c > 0x7e || c == '[' || c == ']' || c == '\\' || c == '$' || c == '`') return -EINVAL;
    }
    use = name;
  }
  if (len == 0) return 0;
  return t.proc->mm ? mm_name_anon(*t.proc->mm, addr, len, use) : -ENOMEM;
}

// PR_SET_TIMERSLACK: the slack of this thread (0: back to the default).
long set_timer_slack(Task& t, uint64_t ns) {
  t.timer_slack_ns = ns ? ns : t.default_slack_ns;
  return 0;
}

// PR_MCE_KILL: how a memory error kills this thread.
long set_mce_kill(Task& t, SyscallArgs a) {
  if (a[3] || a[4]) return -EINVAL;
  if (a[1] == PR_MCE_KILL_CLEAR) {
    if (a[2]) return -EINVAL;
    t.mce_kill = PR_MCE_KILL_DEFAULT;
    return 0;
  }
  if (a[1] != PR_MCE_KILL_SET) return -EINVAL;
  if (a[2] != PR_MCE_KILL_EARLY && a[2] != PR_MCE_KILL_LATE && a[2] != PR_MCE_KILL_DEFAULT) return -EINVAL;
  t.mce_kill = (int)a[2];
  return 0;
}

// Speculation control: a guest thread is a host thread, with the host's
// mitigations as they were when the kernel started; the kernel may not
// change them (the host filter refuses it), so none is controllable here.
long speculation_ctrl(Task& t, SyscallArgs a, bool set) {
  if (a[1] > PR_SPEC_L1D_FLUSH) return -ENODEV;
  if (set) return -ENXIO;
  if (a[2] || a[3] || a[4]) return -EINVAL;
  long host = t.kernel->cfg.spec_ctrl[a[1]];
  return host < 0 ? host : host & ~(long)PR_SPEC_PRCTL;
}

}  // namespace

long sys_prctl(Task& t, SyscallArgs a) {
  Process& p = *t.proc;
  switch ((int)a[0]) {
    case PR_SET_NAME: return set_name(t, a[1]);
    case PR_GET_NAME: return copy_to_user((void*)a[1], p.comm, sizeof p.comm);
    case PR_GET_DUMPABLE: return p.dumpable;
    case PR_SET_DUMPABLE:
      if (a[1] > 1) return -EINVAL;  // SUID_DUMP_DISABLE or SUID_DUMP_USER
      p.dumpable = (int)a[1];
      return 0;
    case PR_GET_TIMERSLACK: return (long)t.timer_slack_ns;
    case PR_SET_TIMERSLACK: return set_timer_slack(t, a[1]);
    case PR_GET_THP_DISABLE:
      if (a[1] || a[2] || a[3] || a[4]) return -EINVAL;
      return p.thp_disable;
    case PR_SET_THP_DISABLE:
      if (a[2] || a[3] || a[4]) return -EINVAL;
      p.thp_disable = a[1] != 0;
      return 0;
    case PR_MCE_KILL: return set_mce_kill(t, a);
    case PR_MCE_KILL_GET:
      if (a[1] || a[2] || a[3] || a[4]) return -EINVAL;
      return t.mce_kill;
    case PR_GET_TSC: return put_user((void*)a[1], (int)PR_TSC_ENABLE);
    case PR_SET_TSC:
      // rdtsc cannot be made to fault from user space: only "enabled".
      return a[1] == PR_TSC_ENABLE ? 0 : -EINVAL;
    case PR_GET_SPECULATION_CTRL: return speculation_ctrl(t, a, false);
    case PR_SET_SPECULATION_CTRL: return speculation_ctrl(t, a, true);
    case PR_SET_VMA: return set_vma_name(t, a);
    case PR_SET_PDEATHSIG:
      if (a[1] > (uint64_t)_NSIG - 1) return -EINVAL;
      p.pdeath_signal = (int)a[1];
      return 0;
    case PR_GET_PDEATHSIG: return put_user((void*)a[1], p.pdeath_signal);
    case PR_SET_CHILD_SUBREAPER: {
      Guard g(t.kernel->tasks_lock);  // exit reads it while it reparents
      p.child_subreaper = a[1] != 0;
      return 0;
    }
    case PR_GET_CHILD_SUBREAPER: return put_user((void*)a[1], (int)p.child_subreaper);
    case PR_SET_NO_NEW_PRIVS: return set_no_new_privs(t, a);
    case PR_GET_NO_NEW_PRIVS:
      if (a[1] || a[2] || a[3] || a[4]) return -EINVAL;
      return p.no_new_privs ? 1 : 0;
    case PR_CAPBSET_READ: return known_cap(a[1]) ? (p.creds.cap_bset & cap_bit((int)a[1])) != 0 : -EINVAL;
    case PR_CAPBSET_DROP: return caps_bset_drop(p.creds, a[1]);
    case PR_CAP_AMBIENT: return caps_ambient(p.creds, a[1], a[2], a[3], a[4]);
    case PR_GET_SECUREBITS: return p.creds.securebits;
    case PR_SET_SECUREBITS: return caps_set_securebits(p.creds, a[1]);
    case PR_GET_SECCOMP: return seccomp_get_mode(t);
    case PR_SET_SECCOMP:
      // As seccomp(2): strict mode ignores the third argument.
      if (a[1] == SECCOMP_MODE_STRICT) return seccomp_set_mode(t, SECCOMP_SET_MODE_STRICT, 0, 0);
      if (a[1] == SECCOMP_MODE_FILTER) return seccomp_set_mode(t, SECCOMP_SET_MODE_FILTER, 0, a[2]);
      return -EINVAL;
    case PR_GET_KEEPCAPS: return has_securebit(p.creds, SECURE_KEEP_CAPS);
    case PR_SET_KEEPCAPS: return caps_set_keepcaps(p.creds, a[1]);
    default: return -EINVAL;
  }
}

}  // namespace flatux
