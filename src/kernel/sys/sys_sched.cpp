// Scheduling: nice values (getpriority/setpriority), I/O priorities
// (ioprio_get/set: kept per task, as the guest's own; flatux's host I/O is
// not reordered by them), policies and parameters, affinity, yield, getcpu. Guest tasks are host threads and the
// host schedules them. Policies, parameters and affinity live in the host
// thread (the guest's rules on who may change whom are checked here first;
// a real-time policy needs the host's own privilege). A nice value is the
// task's own (Task::nice, per thread as on Linux, checked against the
// guest's credentials and RLIMIT_NICE) and is passed on to the host
// thread; where the host will not lower its thread's nice value (flatux
// lacks CAP_SYS_NICE there), the thread stays at the lowest it may have.
#include <cstring>
#include <ctime>
#include <linux/errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/error_or.h"
#include "kernel/syscalls.h"
#include "kernel/task/process.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

constexpr int kMinNice = -20, kMaxNice = 19;
constexpr int kSchedDeadline = 6;
constexpr uint64_t kResetOnFork = 0x40000000;  // SCHED_RESET_ON_FORK

// A guest task as the host knows it, with what permission checks need.
struct HostThread {
  int host_tid;
  uint32_t uid, euid;
  int nice;
  uint64_t nice_limit, rtprio_limit;  // RLIMIT_NICE and RLIMIT_RTPRIO (soft) of its process
};

HostThread host_view_locked(Task& x) {
  const Process& p = *x.proc;
  return {(int)x.host_tid.load(), p.creds.uid, p.creds.euid, x.nice, p.rlimits[RLIMIT_NICE][0],
          p.rlimits[RLIMIT_RTPRIO][0]};
}

// The host thread running guest task `tid` (0: the caller); ESRCH when
// there is no such live task (Linux's find_task_by_vpid: any thread id).
ErrorOr<HostThread> host_thread_of(Task& t, uint64_t tid) {
  if (tid > 0x7fffffff) return kerr(-ESRCH);
  Guard g(t.kernel->tasks_lock);
  Task* x = tid == 0 ? &t : find_task_locked(*t.kernel, (int)tid);
  if (!x || x->proc->state != ProcState::kRunning || x->host_tid.load() <= 1) return kerr(-ESRCH);
  return host_view_locked(*x);
}

bool capable_sys_nice(const Task& t) { return capable(t.proc->creds, CAP_SYS_NICE); }

// Linux's check_same_owner (or CAP_SYS_NICE): may t change x's scheduling?
bool may_change(const Task& t, const HostThread& x) {
  uint32_t euid = t.proc->creds.euid;
  return capable_sys_nice(t) || euid == x.uid || euid == x.euid;
}

// Calls fn(Task&) for every live task `which`/`who` names, under
// tasks_lock (the host calls it makes do not block). Returns how many.
template <typename Fn>
long for_each_target(Task& t, int which, uint64_t who, Fn&& fn) {
  if (which < PRIO_PROCESS || which > PRIO_USER) return -EINVAL;
  if (who > 0x7fffffff) return 0;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  long n = 0;
  if (which == PRIO_PROCESS) {
    Task* x = who == 0 ? &t : find_task_locked(k, (int)who);
    if (x && x->proc->state == ProcState::kRunning) {
      fn(*x);
      n++;
    }
    return n;
  }
  uint32_t id = which == PRIO_PGRP ? (who ? (uint32_t)who : (uint32_t)t.proc->pgid)
                                   : (who ? (uint32_t)who : t.proc->creds.uid);
  for (Task* x : k.live_tasks()) {
    if (!x || x->proc->state != ProcState::kRunning) continue;
    uint32_t key = which == PRIO_PGRP ? (uint32_t)x->proc->pgid : x->proc->creds.uid;
    if (key != id) continue;
    fn(*x);
    n++;
  }
  return n;
}

bool valid_policy(int policy) {
  return policy == SCHED_OTHER || policy == SCHED_FIFO || policy == SCHED_RR || policy == SCHED_BATCH ||
         policy == SCHED_IDLE;
}

bool is_rt(int policy) { return policy == SCHED_FIFO || policy == SCHED_RR; }

bool valid_priority(int policy, int prio) {
  if (is_rt(policy)) return prio >= 1 && prio <= 99;
  return prio == 0;
}

// can_nice: may x's nice value become `nice` (RLIMIT_NICE, or CAP_SYS_NICE)?
bool can_nice(const Task& t, const HostThread& x, int nice) {
  return (uint64_t)(20 - nice) <= x.nice_limit || capable_sys_nice(t);
}

// __sched_setscheduler's rules for a caller without CAP_SYS_NICE: a
// real-time policy within RLIMIT_RTPRIO, leaving SCHED_IDLE as RLIMIT_NICE
// allows, and only one's own tasks.
long may_set_policy(Task& t, const HostThread& x, int policy, int prio) {
  if (capable_sys_nice(t)) return 0;
  long cur = host::sys(SYS_sched_getscheduler, x.host_tid);
  if (cur < 0) return cur;
  int cur_policy = (int)(cur & ~kResetOnFork);
  if (is_rt(policy)) {
    if (policy != cur_policy && x.rtprio_limit == 0) return -EPERM;
    struct sched_param cp{};
    if (long r = host::sys(SYS_sched_getparam, x.host_tid, &cp); r < 0) return r;
    if (prio > cp.sched_priority && (uint64_t)prio > x.rtprio_limit) return -EPERM;
  }
  if (cur_policy == SCHED_IDLE && policy != SCHED_IDLE && !can_nice(t, x, x.nice)) return -EPERM;
  if (!may_change(t, x)) return -EPERM;
  return 0;
}

}  // namespace

// getpriority's result is 20 - nice, so that it is never negative.
long sys_getpriority(Task& t, SyscallArgs a) {
  long best = -ESRCH;
  long n = for_each_target(t, (int)a[0], a[1], [&](Task& x) {
    if (20 - x.nice > best) best = 20 - x.nice;
  });
  return n < 0 ? n : best;
}

// Linux's set_one_prio for each task: an error replaces the result, a
// success only replaces "no such task".
long sys_setpriority(Task& t, SyscallArgs a) {
  int nice = (int)a[2];
  if (nice < kMinNice) nice = kMinNice;
  if (nice > kMaxNice) nice = kMaxNice;
  long error = -ESRCH;
  long n = for_each_target(t, (int)a[0], a[1], [&](Task& x) {
    long r = 0;
    HostThread h = host_view_locked(x);
    if (!may_change(t, h)) {
      r = -EPERM;
    } else if (nice < x.nice && !can_nice(t, h, nice)) {
      r = -EACCES;
    } else {
      x.nice = nice;
      if (h.host_tid > 1) host::sys(SYS_setpriority, PRIO_PROCESS, h.host_tid, nice);
    }
    if (r < 0) error = r;
    else if (error == -ESRCH) error = 0;
  });
  return n < 0 ? n : error;
}

namespace {

// I/O priorities: class in bits 13-15, level in the low bits (Linux 6.1's
// ioprio_check_cap): a real-time class needs CAP_SYS_NICE or
// CAP_SYS_ADMIN; real-time and best-effort levels are 0-7; "none" has
// level 0; idle any.
constexpr int kIoprioClassShift = 13;
constexpr int kIoprioNone = 0, kIoprioRt = 1, kIoprioBe = 2, kIoprioIdle = 3;

long check_ioprio(const Task& t, int ioprio) {
  int cls = (ioprio >> kIoprioClassShift) & 7, data = ioprio & ((1 << kIoprioClassShift) - 1);
  switch (cls) {
    case kIoprioRt:
      if (!capable(t.proc->creds, CAP_SYS_NICE) && !capable(t.proc->creds, CAP_SYS_ADMIN)) return -EPERM;
      [[fallthrough]];
    case kIoprioBe: return data >= 8 ? -EINVAL : 0;
    case kIoprioIdle: return 0;
    case kIoprioNone: return data ? -EINVAL : 0;
    default: return -EINVAL;
  }
}

// A task's priority as a group's or user's reading counts it: "none" is
// best effort at the level its nice value gives (Linux's
// task_nice_ioprio), and the more urgent of two wins (lower class, then
// lower level).
int effective_ioprio(const Task& x) {
  if ((x.ioprio >> kIoprioClassShift) != kIoprioNone) return x.ioprio;
  return kIoprioBe << kIoprioClassShift | (x.nice + 20) / 5;
}

// IOPRIO_WHO_PROCESS, _PGRP, _USER are setpriority's which + 1.
int prio_which(uint64_t ioprio_which) { return ioprio_which >= 1 && ioprio_which <= 3 ? (int)ioprio_which - 1 : -1; }

}  // namespace

long sys_ioprio_set(Task& t, SyscallArgs a) {
  int which = prio_which(a[0]), ioprio = (int)a[2];
  if (which < 0) return -EINVAL;
  if (long r = check_ioprio(t, ioprio)) return r;
  long error = -ESRCH;
  const Creds& me = t.proc->creds;
  long n = for_each_target(t, which, a[1], [&](Task& x) {
    // Linux's set_task_ioprio: one's own tasks (by real uid), or CAP_SYS_NICE.
    uint32_t owner = x.proc->creds.uid;
    if (owner != me.euid && owner != me.uid && !capable(me, CAP_SYS_NICE)) {
      error = -EPERM;
      return;
    }
    x.ioprio = ioprio;
    if (error == -ESRCH) error = 0;
  });
  return n < 0 ? n : error;
}

long sys_ioprio_get(Task& t, SyscallArgs a) {
  int which = prio_which(a[0]);
  if (which < 0) return -EINVAL;
  long best = -ESRCH;
  long n = for_each_target(t, which, a[1], [&](Task& x) {
    if (which == PRIO_PROCESS) best = x.ioprio;
    else if (best == -ESRCH || effective_ioprio(x) < best) best = effective_ioprio(x);
  });
  return n < 0 ? n : best;
}

long sys_sched_get_priority_max(Task&, SyscallArgs a) {
  int policy = (int)a[0];
  if (policy == SCHED_FIFO || policy == SCHED_RR) return 99;
  if (policy == SCHED_OTHER || policy == SCHED_BATCH || policy == SCHED_IDLE || policy == kSchedDeadline) return 0;
  return -EINVAL;
}

long sys_sched_get_priority_min(Task&, SyscallArgs a) {
  int policy = (int)a[0];
  if (policy == SCHED_FIFO || policy == SCHED_RR) return 1;
  if (policy == SCHED_OTHER || policy == SCHED_BATCH || policy == SCHED_IDLE || policy == kSchedDeadline) return 0;
  return -EINVAL;
}

long sys_sched_rr_get_interval(Task& t, SyscallArgs a) {
  if ((int64_t)a[0] < 0 || (int)a[0] < 0) return -EINVAL;
  TRY(x, host_thread_of(t, a[0]));
  timespec ts;
  long r = host::sys(SYS_sched_rr_get_interval, x.host_tid, &ts);
  if (r < 0) return r;
  return copy_to_user((void*)a[1], &ts, sizeof ts) < 0 ? -EFAULT : 0;
}

long sys_sched_getscheduler(Task& t, SyscallArgs a) {
  if ((int)a[0] < 0) return -EINVAL;
  TRY(x, host_thread_of(t, a[0]));
  return host::sys(SYS_sched_getscheduler, x.host_tid);
}

long sys_sched_getparam(Task& t, SyscallArgs a) {
  if ((int)a[0] < 0 || !a[1]) return -EINVAL;
  TRY(x, host_thread_of(t, a[0]));
  struct sched_param p{};
  long r = host::sys(SYS_sched_getparam, x.host_tid, &p);
  if (r < 0) return r;
  return copy_to_user((void*)a[1], &p, sizeof p) < 0 ? -EFAULT : 0;
}

// A real-time policy needs CAP_SYS_NICE on the host as well, which flatux
// does not have: the host's EPERM is what the guest sees.
long sys_sched_setscheduler(Task& t, SyscallArgs a) {
  if ((int)a[0] < 0 || !a[2]) return -EINVAL;
  struct sched_param p;
  if (copy_from_user(&p, (const void*)a[2], sizeof p) < 0) return -EFAULT;
  int policy = (int)(a[1] & ~kResetOnFork);
  if ((int)a[1] < 0 || !valid_policy(policy) || !valid_priority(policy, p.sched_priority)) return -EINVAL;
  TRY(x, host_thread_of(t, a[0]));
  TRY_LONG(may_set_policy(t, x, policy, p.sched_priority));
  return host::sys(SYS_sched_setscheduler, x.host_tid, a[1], &p);
}

long sys_sched_setparam(Task& t, SyscallArgs a) {
  if ((int)a[0] < 0 || !a[1]) return -EINVAL;
  struct sched_param p;
  if (copy_from_user(&p, (const void*)a[1], sizeof p) < 0) return -EFAULT;
  TRY(x, host_thread_of(t, a[0]));
  long policy = host::sys(SYS_sched_getscheduler, x.host_tid);
  if (policy < 0) return policy;
  if (!valid_priority((int)(policy & ~kResetOnFork), p.sched_priority)) return -EINVAL;
  TRY_LONG(may_set_policy(t, x, (int)(policy & ~kResetOnFork), p.sched_priority));
  return host::sys(SYS_sched_setparam, x.host_tid, &p);
}

// Guest tasks are host threads: their affinity is their host thread's.
long sys_sched_getaffinity(Task& t, SyscallArgs a) {
  if (a[1] < 8 || (a[1] & 7)) return -EINVAL;
  TRY(x, host_thread_of(t, a[0]));
  uint8_t mask[128];
  size_t n = a[1] < sizeof mask ? a[1] : sizeof mask;
  long r = host::sys(SYS_sched_getaffinity, x.host_tid, n, mask);
  if (r < 0) return r;
  if (copy_to_user((void*)a[2], mask, (size_t)r) < 0) return -EFAULT;
  return r;
}

long sys_sched_setaffinity(Task& t, SyscallArgs a) {
  uint8_t mask[128] = {};
  size_t n = a[1] < sizeof mask ? a[1] : sizeof mask;
  if (copy_from_user(mask, (const void*)a[2], n) < 0) return -EFAULT;
  TRY(x, host_thread_of(t, a[0]));
  if (!may_change(t, x)) return -EPERM;
  return host::sys(SYS_sched_setaffinity, x.host_tid, n, mask);
}

long sys_sched_yield(Task&, SyscallArgs) { return host::sys(SYS_sched_yield); }

long sys_getcpu(Task&, SyscallArgs a) {
  unsigned cpu = 0, node = 0;
  long r = host::sys(SYS_getcpu, &cpu, &node, 0);
  if (r < 0) return r;
  if (a[0] && put_user((void*)a[0], cpu) < 0) return -EFAULT;
  if (a[1] && put_user((void*)a[1], node) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
