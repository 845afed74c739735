#include "kernel/timer/timer.h"

#include <cstring>
#include <linux/errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>

#include "kernel/task/hostproc.h"
#include "host/kstack.h"
#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/task/kthread.h"
#include "kernel/task/process.h"
#include "kernel/time.h"


namespace flatux {
namespace {

// A POSIX timer whose previous signal is still queued only counts an
// overrun (Linux keeps one queued signal per timer).
bool bump_queued_overrun(Process& p, KTimer& t) {
  Guard g(p.siglock);
  auto scan = [&](SigPending& q) {
    for (SigQueued* e = q.head[t.sig - 1]; e; e = e->next) {
      if (e->info.si_code == SI_TIMER && e->info.si_timerid == t.id) {
        e->info.si_overrun++;
        t.overrun = e->info.si_overrun;
        return true;
      }
    }
    return false;
  };
  if (scan(p.shared_pending)) return true;
  for (Task* x = p.threads; x; x = x->next_thread)
    if (scan(x->pending)) return true;
  return false;
}

// (tasks_lock and the service lock held)
void fire(Kernel& k, KTimer& t) {
  if (t.notify == SIGEV_NONE) return;
  if (t.id >= 0 && t.proc->state == ProcState::kRunning && bump_queued_overrun(*t.proc, t)) return;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = t.sig;
  if (t.id < 0) {
    si.si_code = SI_KERNEL;  // what Linux reports for ITIMER_REAL's SIGALRM
  } else {
    si.si_code = SI_TIMER;
    si.si_timerid = t.id;
    si.si_overrun = t.pending_overrun;
    si.si_value = t.value;
    t.overrun = t.pending_overrun;
  }
  t.pending_overrun = 0;
  if (t.proc->state != ProcState::kRunning) return;
  Task* target = nullptr;
  if (t.notify == (SIGEV_SIGNAL | SIGEV_THREAD_ID)) {
    target = find_task_locked(k, t.target_tid);
    if (target && target->proc != t.proc) target = nullptr;
  }
  send_signal(*t.proc, target, t.sig, si, sent_by(*t.proc));
}

// When to look at a CPU timer again: CPU time cannot run faster than wall
// time times the number of threads.
uint64_t cpu_timer_check(Kernel& k, KTimer& t, uint64_t now, bool* due) {
  if (t.proc->state != ProcState::kRunning) return 0;
  uint64_t used = process_cpu_ns_locked(*t.proc, t.cpu);
  if (used >= t.expires_ns) {
    *due = true;
    uint64_t next = t.interval_ns ? used + t.interval_ns : 0;
    t.expires_ns = next;
    return next ? now + t.interval_ns / (t.proc->nthreads ? t.proc->nthreads : 1) : 0;
  }
  return now + (t.expires_ns - used) / (t.proc->nthreads ? t.proc->nthreads : 1) + 100000;
}

// Fires what has expired; returns the next time to look (0 if never).
// Lock order: tasks_lock, then the service lock (as process exit takes them).
uint64_t run_expired(Kernel& k) {
  TimerService& ts = *k.timers;
  KTimer* due[64];
  int n = 0;
  uint64_t next = 0;
  {
    Guard tl(k.tasks_lock);
    Guard g(ts.lock);
    uint64_t now = monotonic_ns();
    for (KTimer* t = ts.timers; t; t = t->next) {
      if (!t->expires_ns) continue;
      if (t->cpu) {
        bool is_due = false;
        uint64_t check = cpu_timer_check(k, *t, now, &is_due);
        if (is_due && n < 64) due[n++] = t;
        if (check && (!next || check < next)) next = check;
        continue;
      }
      if (t->expires_ns <= now && n < 64) {
        due[n++] = t;
        if (t->interval_ns) {
          uint64_t missed = (now - t->expires_ns) / t->interval_ns;
          t->pending_overrun += (int)missed;
          t->expires_ns += (missed + 1) * t->interval_ns;
        } else {
          t->expires_ns = 0;
        }
      }
      if (t->expires_ns && (!next || t->expires_ns < next)) next = t->expires_ns;
    }
    // Fire under the service lock so no timer is freed meanwhile.
    for (int i = 0; i < n; i++) fire(k, *due[i]);
  }
  return next;
}

// Runs the kernel's tick if it is due; returns when it is next (0: none).
uint64_t run_tick(Kernel& k) {
  TimerService& ts = *k.timers;
  void (*fn)(Kernel&);
  uint64_t next;
  {
    Guard g(ts.lock);
    fn = ts.tick;
    if (!fn) return 0;
    uint64_t now = monotonic_ns();
    if (now < ts.tick_next_ns) return ts.tick_next_ns;
    next = ts.tick_next_ns = now + ts.tick_period_ns;
  }
  fn(k);
  return next;
}

void timer_thread(void* arg) {
  Kernel& k = *static_cast<Kernel*>(arg);
  TimerService& ts = *k.timers;
  for (;;) {
    uint32_t seq = ts.seq.load();
    uint64_t next = run_expired(k);
    uint64_t tick = run_tick(k);
    if (tick && (!next || tick < next)) next = tick;
    if (!next) {
      host::sys(SYS_futex, &ts.seq, FUTEX_WAIT, seq, 0, 0, 0);
      continue;
    }
    uint64_t now = monotonic_ns();
    if (next <= now) continue;
    timespec rel{(time_t)((next - now) / 1000000000ull), (long)((next - now) % 1000000000ull)};
    host::sys(SYS_futex, &ts.seq, FUTEX_WAIT, seq, &rel, 0, 0);
  }
}

long start_locked(Kernel& k) {
  TimerService& ts = *k.timers;
  if (ts.started) return 0;
  long r = start_kernel_thread(k, timer_thread, &k, &ts.stack);
  if (r < 0) return r;
  ts.started = true;
  return 0;
}

}  // namespace

uint64_t process_cpu_ns_locked(Process& p, int kind) {
  uint64_t total = kind == kCpuVirtual ? p.cpu_user_ns : p.cpu_ns;
  int clock_kind = kind == kCpuVirtual ? 1 : 2;  // CPUCLOCK_VIRT or CPUCLOCK_SCHED
  for (Task* t = p.threads; t; t = t->next_thread) {
    uint32_t tid = t->host_tid.load();
    if (tid <= 1) continue;
    // The host's per-thread CPU clocks: MAKE_THREAD_CPUCLOCK(tid, kind).
    long clock = ((long)~(uint64_t)tid << 3) | 4 | clock_kind;
    timespec ts;
    if (host::sys(SYS_clock_gettime, clock, &ts) != 0) {
      // A thread of another host process (a forked guest) has no thread
      // clock here: its host process's clock (MAKE_PROCESS_CPUCLOCK) counts
      // the whole process, once.
      clock = ((long)~(uint64_t)task_host_pid(*t) << 3) | clock_kind;
      if (host::sys(SYS_clock_gettime, clock, &ts) == 0)
        total += (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
      break;
    }
    total += (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  return total;
}

KTimer* timer_add(Kernel& k, Process& p, int id) {
  KTimer* t = k.heap->make<KTimer>();
  if (!t) return nullptr;
  t->proc = &p;
  t->id = id;
  t->notify = SIGEV_SIGNAL;
  t->sig = SIGALRM;
  t->clock = CLOCK_MONOTONIC;
  Guard g(k.timers->lock);
  t->next = k.timers->timers;
  k.timers->timers = t;
  return t;
}

KTimer* timer_find_locked(Kernel& k, Process& p, int id) {
  for (KTimer* t = k.timers->timers; t; t = t->next)
    if (t->proc == &p && t->id == id) return t;
  return nullptr;
}

long timer_set_tick(Kernel& k, void (*fn)(Kernel&), uint64_t period_ns) {
  TimerService& ts = *k.timers;
  {
    Guard g(ts.lock);
    if (fn) {
      if (long r = start_locked(k)) return r;
    }
    ts.tick = fn;
    ts.tick_period_ns = period_ns;
    ts.tick_next_ns = monotonic_ns() + period_ns;
  }
  ts.seq.fetch_add(1);
  futex_wake(&ts.seq, 1);
  return 0;
}

long timer_arm(Kernel& k, KTimer* t, uint64_t expires_ns, uint64_t interval_ns) {
  TimerService& ts = *k.timers;
  {
    Guard g(ts.lock);
    if (expires_ns) {
      long r = start_locked(k);
      if (r < 0) return r;
    }
    t->expires_ns = expires_ns;
    t->interval_ns = expires_ns ? interval_ns : 0;
    t->overrun = t->pending_overrun = 0;
  }
  ts.seq.fetch_add(1);
  futex_wake(&ts.seq, 1);
  return 0;
}

void timer_remove(Kernel& k, KTimer* t) {
  Guard g(k.timers->lock);
  KTimer** link = &k.timers->timers;
  while (*link && *link != t) link = &(*link)->next;
  if (*link) *link = t->next;
  k.heap->destroy_obj(t);
}

long timers_start(Kernel& k) {
  Guard g(k.timers->lock);
  return start_locked(k);
}

void timers_release_process(Kernel& k, Process& p) {
  if (!k.timers) return;
  Guard g(k.timers->lock);
  KTimer** link = &k.timers->timers;
  while (KTimer* t = *link) {
    if (t->proc == &p) {
      *link = t->next;
      k.heap->destroy_obj(t);
    } else {
      link = &t->next;
    }
  }
}

}  // namespace flatux
