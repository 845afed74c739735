// alarm, setitimer/getitimer (ITIMER_REAL), POSIX timers, times, getrusage.
#include <cstring>
#include <ctime>
#include <linux/errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"
#include "kernel/task/process.h"
#include "kernel/timer/timer.h"

namespace flatux {
namespace {

// The three itimers are timers with reserved negative ids.
int itimer_id(uint64_t which) { return -1 - (int)which; }
int itimer_signal(uint64_t which) {
  return which == ITIMER_REAL ? SIGALRM : which == ITIMER_VIRTUAL ? SIGVTALRM : SIGPROF;
}
constexpr int kMaxTimersPerProcess = 4096;

uint64_t tv_ns(const timeval& tv) { return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000; }
uint64_t ts_ns(const timespec& ts) { return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec; }
timeval ns_tv(uint64_t ns) { return {(time_t)(ns / 1000000000ull), (suseconds_t)(ns % 1000000000ull / 1000)}; }
timespec ns_ts(uint64_t ns) { return {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)}; }
bool valid_tv(const timeval& tv) { return tv.tv_sec >= 0 && tv.tv_usec >= 0 && tv.tv_usec < 1000000; }
bool valid_ts(const timespec& ts) { return ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000; }

uint64_t clock_now(int clock) {
  timespec ts;
  host::sys(SYS_clock_gettime, clock, &ts);
  return ts_ns(ts);
}

KTimer* itimer_of(Task& t, uint64_t which, bool create) {
  Kernel& k = *t.kernel;
  {
    Guard g(k.timers->lock);
    if (KTimer* x = timer_find_locked(k, *t.proc, itimer_id(which))) return x;
  }
  if (!create) return nullptr;
  KTimer* x = timer_add(k, *t.proc, itimer_id(which));
  if (x) {
    x->sig = itimer_signal(which);
    x->cpu = which == ITIMER_VIRTUAL ? kCpuVirtual : which == ITIMER_PROF ? kCpuProf : 0;
  }
  return x;
}

// "Now" on a timer's own time line: wall clock, or its process's CPU time.
uint64_t timer_now(Kernel& k, KTimer* x) {
  if (!x || !x->cpu) return monotonic_ns();
  Guard g(k.tasks_lock);
  return process_cpu_ns_locked(*x->proc, x->cpu);
}

// Remaining time and interval of a timer, in ns.
void timer_state(Kernel& k, KTimer* x, uint64_t* left, uint64_t* interval) {
  uint64_t now = timer_now(k, x);
  Guard g(k.timers->lock);
  *left = x && x->expires_ns > now ? x->expires_ns - now : (x && x->expires_ns ? 1 : 0);
  *interval = x ? x->interval_ns : 0;
}

// The calling process's POSIX timer `id`, or nullptr.
KTimer* posix_timer(Task& t, uint64_t id) {
  Guard g(t.kernel->timers->lock);
  return timer_find_locked(*t.kernel, *t.proc, (int)id);
}

}  // namespace

long sys_setitimer(Task& t, SyscallArgs a) {
  if (a[0] > ITIMER_PROF) return -EINVAL;
  itimerval nv{};
  if (a[1] && copy_from_user(&nv, (const void*)a[1], sizeof nv) < 0) return -EFAULT;
  if (!valid_tv(nv.it_value) || !valid_tv(nv.it_interval)) return -EINVAL;
  Kernel& k = *t.kernel;
  KTimer* x = itimer_of(t, a[0], true);
  if (!x) return -ENOMEM;
  uint64_t left, interval;
  timer_state(k, x, &left, &interval);
  if (a[2]) {
    itimerval ov{ns_tv(interval), ns_tv(left)};
    if (copy_to_user((void*)a[2], &ov, sizeof ov) < 0) return -EFAULT;
  }
  uint64_t v = tv_ns(nv.it_value);
  return timer_arm(k, x, v ? timer_now(k, x) + v : 0, tv_ns(nv.it_interval));
}

long sys_getitimer(Task& t, SyscallArgs a) {
  if (a[0] > ITIMER_PROF) return -EINVAL;
  uint64_t left, interval;
  timer_state(*t.kernel, itimer_of(t, a[0], false), &left, &interval);
  itimerval ov{ns_tv(interval), ns_tv(left)};
  return copy_to_user((void*)a[1], &ov, sizeof ov);
}

long sys_alarm(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  KTimer* x = itimer_of(t, ITIMER_REAL, true);
  if (!x) return -ENOMEM;
  uint64_t left, interval;
  timer_state(k, x, &left, &interval);
  uint64_t secs = (uint32_t)a[0];
  timer_arm(k, x, secs ? monotonic_ns() + secs * 1000000000ull : 0, 0);
  // Rounded to the nearest second, and never 0 for a pending alarm.
  uint64_t old = (left + 500000000ull) / 1000000000ull;
  return (long)(left && !old ? 1 : old);
}

long sys_timer_create(Task& t, SyscallArgs a) {
  int clock = (int)a[0];
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC && clock != CLOCK_BOOTTIME) return -EINVAL;
  struct {
    sigval value;
    int signo;
    int notify;
    int tid;
  } ev{};
  if (a[1]) {
    if (copy_from_user(&ev, (const void*)a[1], sizeof ev) < 0) return -EFAULT;
    if (ev.notify != SIGEV_NONE && ev.notify != SIGEV_SIGNAL && ev.notify != (SIGEV_SIGNAL | SIGEV_THREAD_ID))
      return -EINVAL;
    if (ev.notify != SIGEV_NONE && (ev.signo < 1 || ev.signo > kNSig)) return -EINVAL;
  } else {
    ev.notify = SIGEV_SIGNAL;
    ev.signo = SIGALRM;
  }
  if (!access_ok((void*)a[2], sizeof(int))) return -EFAULT;
  Kernel& k = *t.kernel;
  if (ev.notify == (SIGEV_SIGNAL | SIGEV_THREAD_ID)) {
    Guard g(k.tasks_lock);
    Task* target = find_task_locked(k, ev.tid);
    if (!target || target->proc != t.proc) return -EINVAL;  // must be one of ours
  }
  int id = -1;
  {
    Guard g(k.timers->lock);
    for (int i = 0; i < kMaxTimersPerProcess && id < 0; i++)
      if (!timer_find_locked(k, *t.proc, i)) id = i;
  }
  if (id < 0) return -EAGAIN;
  KTimer* x = timer_add(k, *t.proc, id);
  if (!x) return -EAGAIN;
  x->clock = clock;
  x->notify = ev.notify;
  x->sig = ev.signo;
  x->target_tid = ev.tid;
  if (a[1]) x->value = ev.value;
  else x->value.sival_int = id;
  if (put_user((void*)a[2], id) < 0) {
    timer_remove(k, x);
    return -EFAULT;
  }
  return 0;
}

long sys_timer_settime(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  itimerspec nv;
  if (copy_from_user(&nv, (const void*)a[2], sizeof nv) < 0) return -EFAULT;
  if (!valid_ts(nv.it_value) || !valid_ts(nv.it_interval)) return -EINVAL;
  if (a[1] & ~(uint64_t)TIMER_ABSTIME) return -EINVAL;
  KTimer* x = posix_timer(t, a[0]);
  if (!x) return -EINVAL;
  uint64_t left, interval;
  timer_state(k, x, &left, &interval);
  if (a[3]) {
    itimerspec ov{ns_ts(interval), ns_ts(left)};
    if (copy_to_user((void*)a[3], &ov, sizeof ov) < 0) return -EFAULT;
  }
  uint64_t v = ts_ns(nv.it_value);
  uint64_t expires = 0;
  if (v) {
    uint64_t mono = monotonic_ns();
    if (a[1] & TIMER_ABSTIME) {
      uint64_t now = clock_now(x->clock);
      expires = v > now ? mono + (v - now) : mono;  // past: fires at once
    } else {
      expires = mono + v;
    }
  }
  return timer_arm(k, x, expires, ts_ns(nv.it_interval));
}

long sys_timer_gettime(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  KTimer* x = posix_timer(t, a[0]);
  if (!x) return -EINVAL;
  uint64_t left, interval;
  timer_state(k, x, &left, &interval);
  itimerspec ov{ns_ts(interval), ns_ts(left)};
  return copy_to_user((void*)a[1], &ov, sizeof ov);
}

long sys_timer_getoverrun(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  Guard g(k.timers->lock);
  KTimer* x = timer_find_locked(k, *t.proc, (int)a[0]);
  return x ? x->overrun : -EINVAL;
}

long sys_timer_delete(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  KTimer* x = posix_timer(t, a[0]);
  if (!x) return -EINVAL;
  timer_remove(k, x);
  return 0;
}

long sys_times(Task& t, SyscallArgs a) {
  timespec ts;
  host::sys(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
  uint64_t self = t.proc->cpu_ns + ts_ns(ts);
  constexpr uint64_t kTick = 10000000ull;  // 100 Hz, AT_CLKTCK
  struct tms tm{};
  tm.tms_utime = (clock_t)(self / kTick);
  tm.tms_cutime = (clock_t)(t.proc->children_cpu_ns / kTick);
  if (a[0] && copy_to_user((void*)a[0], &tm, sizeof tm) < 0) return -EFAULT;
  return (long)((monotonic_ns() - t.kernel->boot_ns) / kTick + 100);
}

long sys_getrusage(Task& t, SyscallArgs a) {
  int who = (int)a[0];
  uint64_t ns;
  timespec ts;
  if (who == RUSAGE_SELF || who == RUSAGE_THREAD) {
    host::sys(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
    ns = ts_ns(ts) + (who == RUSAGE_SELF ? t.proc->cpu_ns : 0);
  } else if (who == RUSAGE_CHILDREN) {
    ns = t.proc->children_cpu_ns;
  } else {
    return -EINVAL;
  }
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  ru.ru_utime = ns_tv(ns);
  return copy_to_user((void*)a[1], &ru, sizeof ru);
}

}  // namespace flatux
