#include "kernel/seccomp/seccomp.h"

#include <csignal>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/errno.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "kernel/heap.h"
#include "kernel/kernel.h"
#include "kernel/mm/usercopy.h"
#include "kernel/seccomp/cbpf.h"
#include "kernel/signal/signal.h"
#include "kernel/task/caps.h"
#include "kernel/task/exit.h"
#include "kernel/task/process.h"

namespace flatux {
namespace {

constexpr uint32_t kMaxInsnsPerPath = 32768;  // Linux's MAX_INSNS_PER_PATH
constexpr uint32_t kFilterPenalty = 4;        // what each filter adds to a path
constexpr unsigned kKnownFlags = SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_LOG |
                                 SECCOMP_FILTER_FLAG_SPEC_ALLOW | SECCOMP_FILTER_FLAG_TSYNC_ESRCH;

// Linux's ACTION_ONLY: the action part, signed, so that a smaller value
// takes precedence (KILL_PROCESS is negative).
int32_t action_only(uint32_t ret) { return (int32_t)(ret & SECCOMP_RET_ACTION_FULL); }

void filter_put(SeccompFilter* f) {
  while (f && f->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    SeccompFilter* prev = f->prev;
    f->heap->free(f);
    f = prev;
  }
}

// Is `older` (or none) in the chain that ends at `newer`?
bool is_ancestor(const SeccompFilter* older, const SeccompFilter* newer) {
  if (!older) return true;
  for (; newer; newer = newer->prev)
    if (newer == older) return true;
  return false;
}

bool strict_allows(uint64_t nr) {
  return nr == SYS_read || nr == SYS_write || nr == SYS_exit || nr == SYS_rt_sigreturn;
}

[[noreturn]] void kill_for(Task& t, uint32_t action) {
  bool alone;
  {
    Guard g(t.kernel->tasks_lock);
    alone = t.proc->nthreads <= 1;
  }
  // KILL_THREAD ends the thread, or the process when it is the last one.
  if (action == SECCOMP_RET_KILL_THREAD && !alone) do_exit(t, SIGSYS);
  do_group_exit(t, SIGSYS);
}

// SECCOMP_RET_TRAP: SIGSYS forced on the thread, with the call's number,
// address and the filter's data; the call is not made, and the handler
// sees the number in RAX (Linux's syscall_rollback).
void trap(Task& t, uint64_t nr, uint64_t ip, uint32_t data) {
  siginfo_t si{};
  si.si_signo = SIGSYS;
  si.si_code = 1;  // SYS_SECCOMP
  si.si_errno = (int)data;
  si.si_call_addr = (void*)ip;
  si.si_syscall = (int)nr;
  si.si_arch = AUDIT_ARCH_X86_64;
  guest_fault(t, SIGSYS, &si);
}

uint32_t run_filters(const SeccompFilter* f, const seccomp_data& d) {
  uint32_t verdict = SECCOMP_RET_ALLOW;
  for (; f; f = f->prev) {
    uint32_t cur = cbpf_run(f->insns, f->len, d);
    if (action_only(cur) < action_only(verdict)) verdict = cur;
  }
  return verdict;
}

long set_strict(Task& t) {
  uint8_t mode = t.seccomp_mode.load(std::memory_order_relaxed);
  if (mode && mode != SECCOMP_MODE_STRICT) return -EINVAL;
  t.seccomp_mode.store(SECCOMP_MODE_STRICT, std::memory_order_release);
  return 0;
}

// The filter the caller gave, copied and checked.
long prepare_filter(Task& t, uint64_t uargs, SeccompFilter** out) {
  sock_fprog prog;
  if (copy_from_user(&prog, (const void*)uargs, sizeof prog) < 0) return -EFAULT;
  if (prog.len == 0 || prog.len > kBpfMaxInsns) return -EINVAL;
  if (!t.proc->no_new_privs && !capable(t.proc->creds, CAP_SYS_ADMIN)) return -EACCES;
  Heap* heap = t.kernel->heap;
  auto* f = static_cast<SeccompFilter*>(heap->alloc(sizeof(SeccompFilter) + prog.len * sizeof(sock_filter)));
  if (!f) return -ENOMEM;
  new (f) SeccompFilter;
  f->heap = heap;
  f->len = prog.len;
  long r = copy_from_user(f->insns, prog.filter, prog.len * sizeof(sock_filter)) < 0 ? -EFAULT : 0;
  if (r == 0) r = cbpf_check_seccomp(f->insns, prog.len);
  if (r < 0) {
    heap->free(f);
    return r;
  }
  *out = f;
  return 0;
}

// Can every other thread take the caller's filters with TSYNC? 0, or the
// tid of one that cannot (its filters are not an ancestor of the caller's,
// or it is in strict mode). tasks_lock held.
long tsync_blocker_locked(Task& t) {
  const SeccompFilter* mine = t.seccomp_filter.load(std::memory_order_relaxed);
  for (Task* x = t.proc->threads; x; x = x->next_thread) {
    if (x == &t) continue;
    uint8_t mode = x->seccomp_mode.load(std::memory_order_relaxed);
    if (mode == SECCOMP_MODE_DISABLED) continue;
    if (mode == SECCOMP_MODE_FILTER && is_ancestor(x->seccomp_filter.load(std::memory_order_relaxed), mine)) continue;
    return x->tid;
  }
  return 0;
}

void install_on(Task& x, SeccompFilter* f) {
  f->refs.fetch_add(1, std::memory_order_relaxed);
  SeccompFilter* old = x.seccomp_filter.exchange(f, std::memory_order_acq_rel);
  filter_put(old);  // f's chain holds it still: nothing is freed
  x.seccomp_mode.store(SECCOMP_MODE_FILTER, std::memory_order_release);
}

long set_filter(Task& t, unsigned flags, uint64_t uargs) {
  if (flags & ~kKnownFlags) return -EINVAL;
  SeccompFilter* f;
  if (long r = prepare_filter(t, uargs, &f)) return r;
  f->log = flags & SECCOMP_FILTER_FLAG_LOG;
  Guard g(t.kernel->tasks_lock);
  long r = 0;
  uint8_t mode = t.seccomp_mode.load(std::memory_order_relaxed);
  SeccompFilter* mine = t.seccomp_filter.load(std::memory_order_relaxed);
  uint32_t total = f->len;
  for (const SeccompFilter* p = mine; p; p = p->prev) total += p->len + kFilterPenalty;
  if (mode && mode != SECCOMP_MODE_FILTER) r = -EINVAL;
  else if (total > kMaxInsnsPerPath) r = -ENOMEM;
  else if ((flags & SECCOMP_FILTER_FLAG_TSYNC) && (r = tsync_blocker_locked(t)))
    r = (flags & SECCOMP_FILTER_FLAG_TSYNC_ESRCH) ? -ESRCH : r;
  if (r) {
    t.kernel->heap->free(f);
    return r;
  }
  f->prev = mine;  // the caller's reference to its old chain moves here
  t.seccomp_filter.store(f, std::memory_order_release);
  t.seccomp_mode.store(SECCOMP_MODE_FILTER, std::memory_order_release);
  if (flags & SECCOMP_FILTER_FLAG_TSYNC)
    for (Task* x = t.proc->threads; x; x = x->next_thread)
      if (x != &t) install_on(*x, f);
  return 0;
}

long action_avail(uint64_t uargs) {
  uint32_t action;
  if (copy_from_user(&action, (const void*)uargs, sizeof action) < 0) return -EFAULT;
  switch (action) {
    case SECCOMP_RET_KILL_PROCESS:
    case SECCOMP_RET_KILL_THREAD:
    case SECCOMP_RET_TRAP:
    case SECCOMP_RET_ERRNO:
    case SECCOMP_RET_TRACE:
    case SECCOMP_RET_LOG:
    case SECCOMP_RET_ALLOW:
      return 0;
    default:
      return -EOPNOTSUPP;  // SECCOMP_RET_USER_NOTIF among them
  }
}

}  // namespace

bool seccomp_permits(Task& t, uint64_t nr, SyscallArgs a, long* ret) {
  uint8_t mode = t.seccomp_mode.load(std::memory_order_acquire);
  if (mode == SECCOMP_MODE_STRICT) {
    if (strict_allows(nr)) return true;
    do_exit(t, SIGKILL);  // as Linux's __secure_computing_strict
  }
  uint64_t ip = t.regs ? (uint64_t)t.regs->uc_mcontext.gregs[REG_RIP] : 0;
  seccomp_data d{};
  d.nr = (int)nr;
  d.arch = AUDIT_ARCH_X86_64;
  d.instruction_pointer = ip;
  for (int i = 0; i < 6; i++) d.args[i] = a[i];
  uint32_t verdict = run_filters(t.seccomp_filter.load(std::memory_order_acquire), d);
  uint32_t data = verdict & SECCOMP_RET_DATA;
  switch (verdict & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ALLOW:
    case SECCOMP_RET_LOG:
      return true;
    case SECCOMP_RET_ERRNO:
      *ret = -(long)(data > 4095 ? 4095 : data);  // MAX_ERRNO
      return false;
    case SECCOMP_RET_TRAP:
      trap(t, nr, ip, data);
      *ret = (long)nr;
      return false;
    case SECCOMP_RET_TRACE:       // no tracer can be attached
    case SECCOMP_RET_USER_NOTIF:  // no listener can exist
      *ret = -ENOSYS;
      return false;
    default:  // KILL_THREAD, KILL_PROCESS, and any unknown action
      kill_for(t, verdict & SECCOMP_RET_ACTION_FULL);
  }
}

void seccomp_inherit(Task& child, const Task& parent) {
  SeccompFilter* f = parent.seccomp_filter.load(std::memory_order_acquire);
  if (f) f->refs.fetch_add(1, std::memory_order_relaxed);
  child.seccomp_filter.store(f, std::memory_order_relaxed);
  child.seccomp_mode.store(parent.seccomp_mode.load(std::memory_order_relaxed), std::memory_order_release);
}

void seccomp_release(Task& t) { filter_put(t.seccomp_filter.exchange(nullptr)); }

long seccomp_set_mode(Task& t, unsigned op, unsigned flags, uint64_t uargs) {
  switch (op) {
    case SECCOMP_SET_MODE_STRICT:
      if (flags || uargs) return -EINVAL;
      return set_strict(t);
    case SECCOMP_SET_MODE_FILTER: return set_filter(t, flags, uargs);
    case SECCOMP_GET_ACTION_AVAIL:
      if (flags) return -EINVAL;
      return action_avail(uargs);
    default: return -EINVAL;  // SECCOMP_GET_NOTIF_SIZES among them: no user notification
  }
}

long seccomp_get_mode(Task& t) { return t.seccomp_mode.load(std::memory_order_relaxed); }

int seccomp_filter_count(const Task& t) {
  int n = 0;
  for (const SeccompFilter* f = t.seccomp_filter.load(std::memory_order_acquire); f; f = f->prev) n++;
  return n;
}

long sys_seccomp(Task& t, SyscallArgs a) { return seccomp_set_mode(t, (unsigned)a[0], (unsigned)a[1], a[2]); }

}  // namespace flatux
