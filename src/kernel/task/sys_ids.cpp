#include <asm/prctl.h>
#include <linux/errno.h>
#include <linux/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/mm/mm.h"
#include "kernel/syscalls.h"
#include "kernel/task/process.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

long put_ids(uint64_t a, uint64_t b, uint64_t c, uint32_t x, uint32_t y, uint32_t z) {
  if (put_user((void*)a, x) < 0 || put_user((void*)b, y) < 0 || put_user((void*)c, z) < 0)
    return -EFAULT;
  return 0;
}


}  // namespace

long sys_getpid(Task& t, SyscallArgs) { return t.proc->pid; }
long sys_gettid(Task& t, SyscallArgs) { return t.tid; }
long sys_getppid(Task& t, SyscallArgs) {
  Guard g(t.kernel->tasks_lock);
  return t.proc->parent ? t.proc->parent->pid : 0;
}
long sys_getuid(Task& t, SyscallArgs) { return t.proc->creds.uid; }
long sys_geteuid(Task& t, SyscallArgs) { return t.proc->creds.euid; }
long sys_getgid(Task& t, SyscallArgs) { return t.proc->creds.gid; }
long sys_getegid(Task& t, SyscallArgs) { return t.proc->creds.egid; }
long sys_getpgrp(Task& t, SyscallArgs) { return t.proc->pgid; }

long sys_getresuid(Task& t, SyscallArgs a) {
  const Creds& c = t.proc->creds;
  return put_ids(a[0], a[1], a[2], c.uid, c.euid, c.suid);
}

long sys_getresgid(Task& t, SyscallArgs a) {
  const Creds& c = t.proc->creds;
  return put_ids(a[0], a[1], a[2], c.gid, c.egid, c.sgid);
}

long sys_getpgid(Task& t, SyscallArgs a) {
  Guard g(t.kernel->tasks_lock);
  Process* p = a[0] == 0 ? t.proc : find_process_locked(*t.kernel, (int)a[0]);
  return p ? p->pgid : -ESRCH;
}

long sys_getsid(Task& t, SyscallArgs a) {
  Guard g(t.kernel->tasks_lock);
  Process* p = a[0] == 0 ? t.proc : find_process_locked(*t.kernel, (int)a[0]);
  return p ? p->sid : -ESRCH;
}

// setpgid(2): the caller or one of its children, within one session; a
// group to join must already exist in that session.
long sys_setpgid(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  int pid = (int)a[0], pgid = (int)a[1];
  if (pgid < 0) return -EINVAL;
  Guard g(k.tasks_lock);
  Process* p = pid == 0 ? t.proc : find_process_locked(k, pid);
  if (!p || (p != t.proc && p->parent != t.proc)) return -ESRCH;
  if (p->sid != t.proc->sid) return -EPERM;
  if (p->pid == p->sid) return -EPERM;  // a session leader stays put
  if (pgid == 0) pgid = p->pid;
  if (pgid != p->pid) {
    bool exists = false;
    for (Task* x : k.live_tasks())
      if (x && x->proc->pgid == pgid && x->proc->sid == t.proc->sid) exists = true;
    if (!exists) return -EPERM;
  }
  p->pgid = pgid;
  return 0;
}

long sys_setsid(Task& t, SyscallArgs) {
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Process& p = *t.proc;
  for (Task* x : k.live_tasks())
    if (x && x->proc->pgid == p.pid) return -EPERM;  // already a group leader
  p.sid = p.pgid = p.pid;
  p.ctty = nullptr;  // a new session starts without a controlling terminal
  return p.pid;
}

long sys_umask(Task& t, SyscallArgs a) {
  uint32_t old = t.proc->fs->umask;
  t.proc->fs->umask = (uint32_t)a[0] & 0777;
  return old;
}

long sys_set_tid_address(Task& t, SyscallArgs a) {
  t.clear_child_tid = a[0];
  return t.tid;
}

long sys_set_robust_list(Task& t, SyscallArgs a) {
  if (a[1] != 24) return -EINVAL;  // sizeof(struct robust_list_head)
  t.robust_list = a[0];
  t.robust_len = a[1];
  return 0;
}

long sys_get_robust_list(Task& t, SyscallArgs a) {
  if (a[0] != 0 && (int)a[0] != t.tid) return -ESRCH;
  if (put_user((void*)a[1], t.robust_list) < 0 || put_user((void*)a[2], t.robust_len) < 0)
    return -EFAULT;
  return 0;
}

long sys_prlimit64(Task& t, SyscallArgs a) {
  if (a[0] != 0 && (int)a[0] != t.proc->pid) return -ESRCH;
  if (a[1] >= kNumRlimits) return -EINVAL;
  uint64_t* lim = t.proc->rlimits[a[1]];
  uint64_t nw[2];
  if (a[2]) {
    if (copy_from_user(nw, (const void*)a[2], sizeof nw) < 0) return -EFAULT;
    if (nw[0] > nw[1]) return -EINVAL;
    // Linux's do_prlimit: no file limit above fs.nr_open, for root too.
    if (a[1] == RLIMIT_NOFILE && nw[1] > t.kernel->sysctl.nr_open.load()) return -EPERM;
    if (nw[1] > lim[1] && !capable(t.proc->creds, CAP_SYS_RESOURCE)) return -EPERM;
  }
  if (a[3] && copy_to_user((void*)a[3], lim, 16) < 0) return -EFAULT;
  if (a[2]) {
    lim[0] = nw[0];
    lim[1] = nw[1];
    if (a[1] == RLIMIT_NOFILE) t.proc->files->set_limit(nw[0] > (uint64_t)FdTable::kMaxFds ? FdTable::kMaxFds : (int)nw[0]);
    if (a[1] == RLIMIT_AS || a[1] == RLIMIT_DATA) {
      Guard g(t.proc->mm->lock);
      mm_set_rlimits(*t.proc->mm, t.proc->rlimits);
    }
    if (a[1] == RLIMIT_STACK && t.regs) {
      Mm& mm = *t.proc->mm;
      Guard g(mm.lock);
      mm_set_stack_limit(mm, nw[0], (uintptr_t)t.regs->uc_mcontext.gregs[REG_RSP]);
    }
  }
  return 0;
}

long sys_getrlimit(Task& t, SyscallArgs a) {
  const uint64_t args[6] = {0, a[0], 0, a[1], 0, 0};
  return sys_prlimit64(t, args);
}

long sys_setrlimit(Task& t, SyscallArgs a) {
  const uint64_t args[6] = {0, a[0], a[1], 0, 0, 0};
  return sys_prlimit64(t, args);
}

long sys_arch_prctl(Task& t, SyscallArgs a) {
  switch ((int)a[0]) {
    case ARCH_SET_FS: {
      if (a[1] >= kGuestMaxAddr) return -EPERM;
      // The real FS register: guest code reads its TLS through it directly.
      long r = host::sys(SYS_arch_prctl, ARCH_SET_FS, a[1]);
      if (r == 0) t.guest_fs = a[1];
      return r;
    }
    case ARCH_GET_FS: return put_user((void*)a[1], t.guest_fs);
    case ARCH_SET_GS: return -EPERM;  // GS is not the guest's to change
    case ARCH_GET_GS: return put_user((void*)a[1], (uint64_t)0);
    case ARCH_GET_CPUID: return 1;
    case ARCH_SET_CPUID: return -ENODEV;
    default: return -EINVAL;
  }
}

// personality(2): the old value; 0xffffffff only asks. The domain is
// kept as given; PER_LINUX32 shows in uname, READ_IMPLIES_EXEC in mmap.
long sys_personality(Task& t, SyscallArgs a) {
  uint32_t old = t.proc->personality;
  if ((uint32_t)a[0] != 0xffffffffu) t.proc->personality = (uint32_t)a[0];
  return old;
}

}  // namespace flatux
