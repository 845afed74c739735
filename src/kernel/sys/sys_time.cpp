#include <ctime>
#include <linux/errno.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "host/entry.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/task.h"

namespace flatux {
namespace {

// Clocks that mean the same inside the guest as on the host. The CPU-time
// clocks would measure the whole flatux process, so they are per-thread here.
long map_clock(uint64_t id) {
  switch (id) {
    case CLOCK_REALTIME: case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE: case CLOCK_MONOTONIC_COARSE: case CLOCK_BOOTTIME:
    case CLOCK_TAI:
      return (long)id;
    case CLOCK_PROCESS_CPUTIME_ID: case CLOCK_THREAD_CPUTIME_ID:
      return CLOCK_THREAD_CPUTIME_ID;
    default:
      return -EINVAL;
  }
}

bool valid_ts(const timespec& ts) { return ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000; }

}  // namespace


long sys_clock_gettime(Task&, SyscallArgs a) {
  long c = map_clock(a[0]);
  if (c < 0) return c;
  timespec ts;
  long r = host::sys(SYS_clock_gettime, c, &ts);
  if (r < 0) return r;
  return copy_to_user((void*)a[1], &ts, sizeof ts);
}

long sys_clock_getres(Task&, SyscallArgs a) {
  long c = map_clock(a[0]);
  if (c < 0) return c;
  timespec ts;
  long r = host::sys(SYS_clock_getres, c, &ts);
  if (r < 0 || !a[1]) return r;
  return copy_to_user((void*)a[1], &ts, sizeof ts);
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

long sys_clock_nanosleep(Task& t, SyscallArgs a) {
  long c = map_clock(a[0]);
  if (c < 0 || c == CLOCK_THREAD_CPUTIME_ID) return c < 0 ? c : -EINVAL;
  if (a[1] & ~(uint64_t)TIMER_ABSTIME) return -EINVAL;
  if (!(a[1] & TIMER_ABSTIME)) return relative_sleep(t, (int)c, a[2], a[3]);
  timespec req;
  if (copy_from_user(&req, (const void*)a[2], sizeof req) < 0) return -EFAULT;
  if (!valid_ts(req)) return -EINVAL;
  return sleep_until(t, (int)c, (uint64_t)req.tv_sec * 1000000000ull + (uint64_t)req.tv_nsec, 0, true);
}

// Resumes a sleep interrupted by a signal that ran no handler.
long sys_restart_syscall(Task& t, SyscallArgs) {
  if (!t.restart_deadline_ns) return -EINTR;
  uint64_t deadline = t.restart_deadline_ns;
  t.restart_deadline_ns = 0;
  return sleep_until(t, t.restart_clock, deadline, 0, false);
}

// The clock is the host's, read by guests straight from the host's vDSO:
// a guest (root included) may ask about it but not set it, as a process
// without CAP_SYS_TIME (EPERM). The argument checks come first, as Linux's.
namespace {

constexpr unsigned kAdjOffsetSsRead = 0xa001;  // ADJ_OFFSET_SS_READ: adjtime(3)'s read

long adjtime_query(uint64_t guest) {
  struct timex tx;
  if (copy_from_user(&tx, (const void*)guest, sizeof tx) < 0) return -EFAULT;
  if (tx.modes != 0 && tx.modes != kAdjOffsetSsRead) return -EPERM;
  tx.modes = 0;  // only ever a query to the host
  long r = host::sys(SYS_adjtimex, &tx);
  if (r < 0) return r;
  return copy_to_user((void*)guest, &tx, sizeof tx) < 0 ? -EFAULT : r;
}

}  // namespace

long sys_adjtimex(Task&, SyscallArgs a) { return adjtime_query(a[0]); }

long sys_clock_adjtime(Task&, SyscallArgs a) {
  long c = map_clock(a[0]);
  if (c < 0) return c;
  if (a[0] != CLOCK_REALTIME) return -EOPNOTSUPP;
  return adjtime_query(a[1]);
}

long sys_settimeofday(Task&, SyscallArgs a) {
  if (a[0]) {
    timeval tv;
    if (copy_from_user(&tv, (const void*)a[0], sizeof tv) < 0) return -EFAULT;
    if (tv.tv_usec < 0 || tv.tv_usec >= 1000000) return -EINVAL;
  }
  if (a[1]) {
    struct timezone tz;
    if (copy_from_user(&tz, (const void*)a[1], sizeof tz) < 0) return -EFAULT;
    if (tz.tz_minuteswest > 15 * 60 || tz.tz_minuteswest < -15 * 60) return -EINVAL;
  }
  return a[0] || a[1] ? -EPERM : 0;
}

long sys_clock_settime(Task&, SyscallArgs a) {
  long c = map_clock(a[0]);
  if (c < 0) return c;
  timespec ts;
  if (copy_from_user(&ts, (const void*)a[1], sizeof ts) < 0) return -EFAULT;
  if (a[0] != CLOCK_REALTIME) return -EINVAL;  // the only settable clock
  if (!valid_ts(ts)) return -EINVAL;
  return -EPERM;
}

}  // namespace flatux
