#include "kernel/timer/timer.h"

#include <cstring>
#include <linux/errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>

#include "host/kstack.h"
#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/task/process.h"
#include "kernel/time.h"

extern "C" long flatux_clone_thread(unsigned long flags, void* stack_top, void* ctid,
                                    unsigned long tls, void (*fn)(void*), void* arg);

namespace flatux {
namespace {

void fire(Kernel& k, KTimer& t) {
  if (t.notify == SIGEV_NONE) return;
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
  }
  t.pending_overrun = 0;
  Guard g(k.tasks_lock);
  if (t.proc->state != ProcState::kRunning) return;
  Task* target = nullptr;
  if (t.notify == (SIGEV_SIGNAL | SIGEV_THREAD_ID)) {
    target = find_task_locked(k, t.target_tid);
    if (target && target->proc != t.proc) target = nullptr;
  }
  send_signal(*t.proc, target, t.sig, si);
}

// Fires what has expired; returns the next expiry (0 if none).
uint64_t run_expired(Kernel& k) {
  TimerService& ts = *k.timers;
  KTimer* due[64];
  int n = 0;
  uint64_t next = 0;
  {
    Guard g(ts.lock);
    uint64_t now = monotonic_ns();
    for (KTimer* t = ts.timers; t; t = t->next) {
      if (!t->expires_ns) continue;
      if (t->expires_ns <= now && n < 64) {
        due[n++] = t;
        if (t->interval_ns) {
          uint64_t missed = (now - t->expires_ns) / t->interval_ns;
          t->pending_overrun += (int)missed;
          t->overrun = (int)missed;
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

void timer_thread(void* arg) {
  Kernel& k = *static_cast<Kernel*>(arg);
  TimerService& ts = *k.timers;
  for (;;) {
    uint32_t seq = ts.seq.load();
    uint64_t next = run_expired(k);
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
  void* stack = k.heap->alloc_kstack();
  if (!stack) return -EAGAIN;
  auto* h = static_cast<KStackHeader*>(stack);
  h->task = nullptr;  // a kernel thread: no guest task
  h->magic = kKStackMagic;
  unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
  long r = flatux_clone_thread(flags, (char*)stack + kKernelStackSize, nullptr, 0, timer_thread, &k);
  if (r < 0) {
    k.heap->free_kstack(stack);
    return r;
  }
  ts.stack = stack;
  ts.started = true;
  return 0;
}

}  // namespace

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
