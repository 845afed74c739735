#include <ctime>
#include <linux/errno.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/task/isys.h"
#include "kernel/kernel.h"
#include "kernel/lib/error_or.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/process.h"
#include "kernel/timer/timer.h"

namespace flatux {
namespace {

// Clocks that mean the same inside the guest as on the host.
bool is_host_clock(int id) {
  switch (id) {
    case CLOCK_REALTIME: case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE: case CLOCK_MONOTONIC_COARSE: case CLOCK_BOOTTIME:
    case CLOCK_TAI: case CLOCK_REALTIME_ALARM: case CLOCK_BOOTTIME_ALARM:
      return true;
    default:
      return false;
  }
}

// CPU-time clocks. The host's would measure the whole flatux process, so
// they are computed from the guest's own host threads. Negative ids are
// Linux's encoding: ~pid << 3 | per-thread (4) | PROF 0, VIRT 1 or SCHED 2;
// pid 0 is the caller. A thread clock names a thread of the caller's own
// process; a process clock any process.
constexpr int kCpuClockPerThread = 4, kCpuClockSched = 2;

long host_thread_cpu_clock(uint32_t host_tid, int which) {
  return ((long)~(uint64_t)host_tid << 3) | kCpuClockPerThread | which;
}

ErrorOr<uint64_t> cpu_clock_ns(Task& t, int id) {
  int which = kCpuClockSched, pid = 0;
  bool thread = id == CLOCK_THREAD_CPUTIME_ID;
  if (id < 0) {
    which = id & 3;
    thread = id & kCpuClockPerThread;
    pid = ~(id >> 3);
    if (which == 3) return kerr(-EINVAL);
  }
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  if (thread) {
    Task* x = pid == 0 ? &t : find_task_locked(k, pid);
    uint32_t host_tid = x ? x->host_tid.load() : 0;
    if (!x || x->proc != t.proc || host_tid <= 1) return kerr(-EINVAL);
    timespec ts;
    long r = host::sys(SYS_clock_gettime, host_thread_cpu_clock(host_tid, which), &ts);
    if (r < 0) return kerr(-EINVAL);  // the thread has just gone
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  Process* p = pid == 0 ? t.proc : find_process_locked(k, pid);
  if (!p) return kerr(-EINVAL);
  return process_cpu_ns_locked(*p, which == 1 ? kCpuVirtual : kCpuProf);
}

bool is_cpu_clock(int id) { return id < 0 || id == CLOCK_PROCESS_CPUTIME_ID || id == CLOCK_THREAD_CPUTIME_ID; }

bool valid_ts(const timespec& ts) { return ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000; }

}  // namespace

long sys_clock_gettime(Task& t, SyscallArgs a) {
  int id = (int)a[0];
  timespec ts;
  if (is_cpu_clock(id)) {
    TRY(ns, cpu_clock_ns(t, id));
    ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  } else if (!is_host_clock(id)) {
    return -EINVAL;
  } else if (long r = host::sys(SYS_clock_gettime, id, &ts); r < 0) {
    return r;
  }
  return copy_to_user((void*)a[1], &ts, sizeof ts);
}

long sys_clock_getres(Task& t, SyscallArgs a) {
  int id = (int)a[0];
  timespec ts;
  if (is_cpu_clock(id)) {
    if (auto r = cpu_clock_ns(t, id); r.is_error()) return r.error();  // the clock must exist
    ts = {0, 1};
  } else if (!is_host_clock(id)) {
    return -EINVAL;
  } else if (long r = host::sys(SYS_clock_getres, id, &ts); r < 0) {
    return r;
  }
  if (!a[1]) return 0;
  return copy_to_user((void*)a[1], &ts, sizeof ts);
}

// The clock is the host's, which guests read straight from the host's
// vDSO: a guest (root included) may ask about it but not set it, as a
// process without CAP_SYS_TIME (EPERM). The arguments are checked first,
// as Linux checks them. Only
// CLOCK_REALTIME and CPU clocks named by id can be set at all on Linux
// (the rest are EINVAL); setting a CPU clock is always EPERM.
long sys_clock_settime(Task& t, SyscallArgs a) {
  int id = (int)a[0];
  if (id != CLOCK_REALTIME && id >= 0) return -EINVAL;
  timespec ts;
  if (copy_from_user(&ts, (const void*)a[1], sizeof ts) < 0) return -EFAULT;
  if (id < 0) {
    if (auto r = cpu_clock_ns(t, id); r.is_error()) return r.error();
    return -EPERM;
  }
  if (!valid_ts(ts)) return -EINVAL;
  return -EPERM;
}

// Linux checks the new time, then CAP_SYS_TIME (which no guest holds over
// the host's clock), and only then the time zone: EPERM even for a change
// of nothing.
long sys_settimeofday(Task&, SyscallArgs a) {
  if (a[0]) {
    timeval tv;
    if (copy_from_user(&tv, (const void*)a[0], sizeof tv) < 0) return -EFAULT;
    if (tv.tv_sec < 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000) return -EINVAL;
  }
  if (a[1]) {
    struct timezone tz;
    if (copy_from_user(&tz, (const void*)a[1], sizeof tz) < 0) return -EFAULT;
  }
  return -EPERM;
}

namespace {

// adjtimex and clock_adjtime on CLOCK_REALTIME: a query (no modes, or
// ADJ_OFFSET_SS_READ) is answered by the host, as Linux lets anyone ask;
// a change needs CAP_SYS_TIME, which the guest does not have over the host.
long adjtime_realtime(uint64_t guest_tx) {
  struct timex tx;
  if (copy_from_user(&tx, (const void*)guest_tx, sizeof tx) < 0) return -EFAULT;
  bool query = tx.modes == 0 || tx.modes == ADJ_OFFSET_SS_READ;
  if (!query) {
    if ((tx.modes & ADJ_OFFSET_SINGLESHOT) == ADJ_OFFSET_SINGLESHOT || !(tx.modes & 0x8000)) return -EPERM;
    return -EINVAL;  // ADJ_ADJTIME without ADJ_OFFSET_SINGLESHOT
  }
  long r = host::sys(SYS_adjtimex, &tx);
  if (r < 0) return r;
  return copy_to_user((void*)guest_tx, &tx, sizeof tx) < 0 ? -EFAULT : r;
}

}  // namespace

long sys_adjtimex(Task&, SyscallArgs a) { return adjtime_realtime(a[0]); }

long sys_clock_adjtime(Task& t, SyscallArgs a) {
  int id = (int)a[0];
  if (id == CLOCK_REALTIME) return adjtime_realtime(a[1]);
  if (is_cpu_clock(id)) {
    if (auto r = cpu_clock_ns(t, id); r.is_error()) return r.error();
    return -EOPNOTSUPP;
  }
  return is_host_clock(id) ? -EOPNOTSUPP : -EINVAL;
}

long sys_gettimeofday(Task&, SyscallArgs a) {
  if (a[0]) {
    timespec ts;
    host::sys(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    timeval tv{ts.tv_sec, ts.tv_nsec / 1000};
    if (copy_to_user((void*)a[0], &tv, sizeof tv) < 0) return -EFAULT;
  }
  if (a[1]) {
    struct timezone tz{0, 0};
    if (copy_to_user((void*)a[1], &tz, sizeof tz) < 0) return -EFAULT;
  }
  return 0;
}

long sys_time(Task&, SyscallArgs a) {
  timespec ts;
  host::sys(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  if (a[0] && put_user((void*)a[0], (int64_t)ts.tv_sec) < 0) return -EFAULT;
  return ts.tv_sec;
}

namespace {

// Sleeps until an absolute time on `clock`, interruptibly. An interrupted
// relative sleep reports what is left and can be resumed by
// restart_syscall; an absolute one is simply restarted.
long sleep_until(Task& t, int clock, uint64_t deadline, uint64_t rem_guest, bool absolute) {
  timespec abs{(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
  long r;
  do {
    r = isys(t, SYS_clock_nanosleep, clock, TIMER_ABSTIME, &abs, 0);
  } while (r == -EINTR && !t.notify.load());  // a kick that was not for us
  if (r != -EINTR) return r;
  if (absolute) return -ERESTARTNOHAND;
  timespec now;
  host::sys(SYS_clock_gettime, clock, &now);
  uint64_t n = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
  uint64_t left = deadline > n ? deadline - n : 0;
  if (rem_guest) {
    timespec rem{(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    if (copy_to_user((void*)rem_guest, &rem, sizeof rem) < 0) return -EFAULT;
  }
  t.restart_deadline_ns = deadline;
  t.restart_clock = clock;
  return -ERESTART_RESTARTBLOCK;
}

long relative_sleep(Task& t, int clock, uint64_t req_guest, uint64_t rem_guest) {
  timespec req;
  if (copy_from_user(&req, (const void*)req_guest, sizeof req) < 0) return -EFAULT;
  if (!valid_ts(req)) return -EINVAL;
  timespec now;
  host::sys(SYS_clock_gettime, clock, &now);
  uint64_t deadline = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec +
                      (uint64_t)req.tv_sec * 1000000000ull + (uint64_t)req.tv_nsec;
  return sleep_until(t, clock, deadline, rem_guest, false);
}

}  // namespace

long sys_nanosleep(Task& t, SyscallArgs a) { return relative_sleep(t, CLOCK_MONOTONIC, a[0], a[1]); }

// Sleeping on a CPU-time clock is not supported: EOPNOTSUPP for the named
// ones (Linux's answer for the thread clock), EINVAL by id (Linux's for a
// thread's); the host refuses the other clocks that cannot sleep.
long sys_clock_nanosleep(Task& t, SyscallArgs a) {
  int c = (int)a[0];
  if (c == CLOCK_THREAD_CPUTIME_ID || c == CLOCK_PROCESS_CPUTIME_ID) return -EOPNOTSUPP;
  if (!is_host_clock(c)) return -EINVAL;
  if (a[1] & ~(uint64_t)TIMER_ABSTIME) return -EINVAL;
  if (!(a[1] & TIMER_ABSTIME)) return relative_sleep(t, c, a[2], a[3]);
  timespec req;
  if (copy_from_user(&req, (const void*)a[2], sizeof req) < 0) return -EFAULT;
  if (!valid_ts(req)) return -EINVAL;
  return sleep_until(t, c, (uint64_t)req.tv_sec * 1000000000ull + (uint64_t)req.tv_nsec, 0, true);
}

// Resumes a sleep interrupted by a signal that ran no handler.
long sys_restart_syscall(Task& t, SyscallArgs) {
  if (!t.restart_deadline_ns) return -EINTR;
  uint64_t deadline = t.restart_deadline_ns;
  t.restart_deadline_ns = 0;
  return sleep_until(t, t.restart_clock, deadline, 0, false);
}

}  // namespace flatux
