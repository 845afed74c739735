// Guest timers (alarm, setitimer ITIMER_REAL, POSIX timers): one kernel
// thread sleeps until the earliest expiry and sends the signals.
#pragma once
#include <csignal>
#include <cstdint>

#include "kernel/task/task.h"

namespace flatux {

struct KTimer {
  Process* proc;
  int target_tid;        // SIGEV_THREAD_ID target, 0 for the process
  int id;                // POSIX timer id; -1 for the ITIMER_REAL timer
  int notify;            // SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID
  int sig;
  sigval value;
  int clock;
  int cpu;               // 0: wall-clock timer; kCpuVirtual/kCpuProf: process CPU time
  uint64_t expires_ns;   // CLOCK_MONOTONIC time (or process CPU time); 0 when disarmed
  uint64_t interval_ns;
  int overrun;
  int pending_overrun;   // overruns since the last delivery (timer_getoverrun)
  KTimer* next;
};

constexpr int kCpuVirtual = 1;  // user time (ITIMER_VIRTUAL)
constexpr int kCpuProf = 2;     // user + system time (ITIMER_PROF)

// CPU time used by p's threads, living and exited (tasks_lock held).
uint64_t process_cpu_ns_locked(Process& p, int kind);

struct TimerService {
  KMutex lock;
  KTimer* timers = nullptr;
  std::atomic<uint32_t> seq{0};  // bumped on every change: wakes the thread
  bool started = false;
  void* stack = nullptr;
  // A periodic job of the kernel's own (the memory cgroup's watch), run by
  // the service thread with no lock held; nullptr: none.
  void (*tick)(Kernel&) = nullptr;
  uint64_t tick_period_ns = 0, tick_next_ns = 0;
};

// Arms or disarms t (expires 0); the service thread starts on first use.
long timer_arm(Kernel& k, KTimer* t, uint64_t expires_ns, uint64_t interval_ns);
// Adds a new timer to the service (not armed); returns it or nullptr.
KTimer* timer_add(Kernel& k, Process& p, int id);
KTimer* timer_find_locked(Kernel& k, Process& p, int id);
void timer_remove(Kernel& k, KTimer* t);
// Runs fn(k) every period_ns from now on (nullptr: no more), on the
// service thread (started now if it is not). 0 or -errno.
long timer_set_tick(Kernel& k, void (*fn)(Kernel&), uint64_t period_ns);
// Starts the service thread now, in the calling host process (the first
// one: forked host processes come and go, the timers must not).
long timers_start(Kernel& k);
// Every timer of a process that is going away.
void timers_release_process(Kernel& k, Process& p);

}  // namespace flatux
