#include <ctime>
#include <linux/errno.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
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

// Sleeps on the host with the guest's request copied into kernel memory.
// (Interruption by guest signals arrives with signal delivery.)
long sys_nanosleep(Task&, SyscallArgs a) {
  timespec req, rem{};
  if (copy_from_user(&req, (const void*)a[0], sizeof req) < 0) return -EFAULT;
  if (!valid_ts(req)) return -EINVAL;
  long r = host::sys(SYS_nanosleep, &req, &rem);
  if (r == -EINTR && a[1]) copy_to_user((void*)a[1], &rem, sizeof rem);
  return r;
}

long sys_clock_nanosleep(Task&, SyscallArgs a) {
  long c = map_clock(a[0]);
  if (c < 0 || c == CLOCK_THREAD_CPUTIME_ID) return c < 0 ? c : -EINVAL;
  if (a[1] & ~(uint64_t)TIMER_ABSTIME) return -EINVAL;
  timespec req, rem{};
  if (copy_from_user(&req, (const void*)a[2], sizeof req) < 0) return -EFAULT;
  if (!valid_ts(req)) return -EINVAL;
  long r = host::sys(SYS_clock_nanosleep, c, a[1], &req, &rem);
  if (r == -EINTR && a[3] && !(a[1] & TIMER_ABSTIME)) copy_to_user((void*)a[3], &rem, sizeof rem);
  return r;
}

}  // namespace flatux
