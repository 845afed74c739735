// CPU-time clocks (per thread, per process, by id as pthread_getcpuclockid
// and clock_getcpuclockid make them) and setting the time: clock_settime,
// settimeofday and adjtimex with Linux's errnos.
#include "guest_check.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define NSEC 1000000000LL

static long long ns(const struct timespec* t) { return t->tv_sec * NSEC + t->tv_nsec; }
static long long clock_ns(clockid_t c) {
  struct timespec ts;
  if (syscall(SYS_clock_gettime, c, &ts) != 0) return -1;
  return ns(&ts);
}

static int under_flatux(void) {
  struct utsname u;
  return uname(&u) == 0 && strstr(u.release, "flatux") != NULL;
}

// What a leap-second test reads: the clock's state, its time and its TAI
// offset agree with CLOCK_REALTIME and CLOCK_TAI as read (guests read the
// host's clocks, so a leap second the host inserts is theirs too). Tried
// a few times: a second may end between the reads.
static void leap_second_view(void) {
  int agree = 0;
  long long rt_s = 0, tai_s = 0, tx_s = 0, tx_tai = 0;
  for (int i = 0; i < 5 && !agree; i++) {
    struct timespec rt, tai, vdso_rt;
    struct timex q;
    memset(&q, 0, sizeof q);
    clock_gettime(CLOCK_REALTIME, &vdso_rt);
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &rt);
    long st = syscall(SYS_adjtimex, &q);
    syscall(SYS_clock_gettime, CLOCK_TAI, &tai);
    CHECK(st >= 0 && st <= 5, "adjtimex state %ld", st);
    rt_s = rt.tv_sec, tai_s = tai.tv_sec, tx_s = q.time.tv_sec, tx_tai = q.tai;
    agree = tai_s - rt_s == tx_tai && tx_s == rt_s && rt.tv_sec - vdso_rt.tv_sec <= 1 && rt.tv_sec >= vdso_rt.tv_sec;
  }
  CHECK(agree, "realtime %lld, adjtimex time %lld, tai %lld (offset %lld)", rt_s, tx_s, tai_s, tx_tai);
}

static void spin_ms(int ms) {
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  while (ns(&b) - ns(&a) < ms * 1000000LL);
}

static volatile int spinning_done, stop_thread;
static pid_t spinner_tid;
static void* spinner(void* arg) {
  (void)arg;
  spinner_tid = (pid_t)syscall(SYS_gettid);
  spin_ms(200);
  spinning_done = 1;
  while (!stop_thread) usleep(1000);
  return NULL;
}

static void thread_clocks(void) {
  printf("thread and process CPU clocks:\n");
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, spinner, NULL) == 0);
  while (!spinning_done) usleep(1000);
  clockid_t tc;
  REQUIRE(pthread_getcpuclockid(th, &tc) == 0);
  long long other = clock_ns(tc);
  long long mine = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  long long self_by_id = clock_ns((clockid_t)((~(unsigned)0 << 3) | 4 | 2));  // MAKE_THREAD_CPUCLOCK(0, SCHED)
  printf("  spinner %lld ns, main %lld ns\n", other, mine);
  CHECK(other >= 200000000LL && other < 5 * NSEC, "spinner thread clock %lld", other);
  CHECK(mine >= 0 && mine < other, "main thread clock %lld", mine);
  CHECK(self_by_id >= mine && self_by_id < other, "own thread clock by id %lld", self_by_id);
  // The same thread by tid (VIRT: user time only, no more than SCHED).
  clockid_t by_tid = (clockid_t)((~(unsigned)spinner_tid << 3) | 4 | 1);
  long long virt = clock_ns(by_tid);
  CHECK(virt >= 0 && virt <= clock_ns(tc) + 20000000LL, "VIRT %lld", virt);

  clockid_t pc;
  REQUIRE(clock_getcpuclockid(getpid(), &pc) == 0);
  long long proc = clock_ns(pc);
  long long proc0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  CHECK(proc >= other + mine - 20000000LL, "process clock %lld < threads %lld + %lld", proc, other, mine);
  CHECK(proc0 >= other, "CLOCK_PROCESS_CPUTIME_ID %lld", proc0);

  struct timespec res;
  CHECK(syscall(SYS_clock_getres, tc, &res) == 0 && res.tv_sec == 0 && res.tv_nsec >= 1);
  stop_thread = 1;
  pthread_join(th, NULL);

  // A thread clock names a thread of the caller's own process; WHICH 3 is
  // no clock; a process that does not exist has none.
  struct timespec ts;
  if (getppid() > 0)
    CHECK_ERR(syscall(SYS_clock_gettime, (clockid_t)((~(unsigned)getppid() << 3) | 4 | 2), &ts), EINVAL);
  CHECK_ERR(syscall(SYS_clock_gettime, (clockid_t)((~(unsigned)0x7ffffff0 << 3) | 4 | 2), &ts), EINVAL);
  CHECK_ERR(syscall(SYS_clock_gettime, (clockid_t)((~(unsigned)0 << 3) | 4 | 3), &ts), EINVAL);
  CHECK_ERR(syscall(SYS_clock_gettime, (clockid_t)((~(unsigned)0x7ffffff0 << 3) | 2), &ts), EINVAL);
  CHECK_ERR(syscall(SYS_clock_getres, (clockid_t)((~(unsigned)0x7ffffff0 << 3) | 2), &res), EINVAL);
  CHECK_ERR(syscall(SYS_clock_gettime, 100, &ts), EINVAL);
  CHECK_ERR(syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (void*)8), EFAULT);
  // A thread clock cannot be slept on: EOPNOTSUPP for the named one,
  // EINVAL by id.
  struct timespec tiny = {0, 1000};
  CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, &tiny, NULL), EOPNOTSUPP);
  CHECK_ERR(syscall(SYS_clock_nanosleep, (clockid_t)((~(unsigned)0 << 3) | 4 | 2), 0, &tiny, NULL), EINVAL);
}

static void setting_time(void) {
  printf("setting the time:\n");
  struct timespec now;
  CHECK(clock_gettime(CLOCK_REALTIME, &now) == 0);
  struct timespec bad = {now.tv_sec, 1000000000L};
  CHECK_ERR(syscall(SYS_clock_settime, CLOCK_MONOTONIC, &now), EINVAL);
  CHECK_ERR(syscall(SYS_clock_settime, CLOCK_BOOTTIME, &now), EINVAL);
  CHECK_ERR(syscall(SYS_clock_settime, 100, &now), EINVAL);
  CHECK_ERR(syscall(SYS_clock_settime, CLOCK_REALTIME, (void*)8), EFAULT);
  CHECK_ERR(syscall(SYS_clock_settime, CLOCK_REALTIME, &bad), EINVAL);
  // CPU clocks cannot be set, by anyone: EINVAL for the named ones, EPERM
  // by id.
  CHECK_ERR(syscall(SYS_clock_settime, CLOCK_PROCESS_CPUTIME_ID, &now), EINVAL);
  CHECK_ERR(syscall(SYS_clock_settime, CLOCK_THREAD_CPUTIME_ID, &now), EINVAL);
  CHECK_ERR(syscall(SYS_clock_settime, (clockid_t)((~(unsigned)0 << 3) | 2), &now), EPERM);
  CHECK_ERR(syscall(SYS_clock_settime, (clockid_t)((~(unsigned)0x7ffffff0 << 3) | 2), &now), EINVAL);
  struct timeval tv = {now.tv_sec, 1000000};
  CHECK_ERR(syscall(SYS_settimeofday, &tv, NULL), EINVAL);
  CHECK_ERR(syscall(SYS_settimeofday, (void*)8, NULL), EFAULT);
  // Setting the real time needs CAP_SYS_TIME: the guest never has it over
  // the host's clock. Natively only an unprivileged run asks (root would
  // really set it). Linux asks for the capability before it looks at the
  // time zone, and even for a change of nothing.
  struct timezone tz = {16 * 60, 0};
  struct timeval tv_now = {now.tv_sec, 0};
  int may_set_time = !under_flatux() && geteuid() == 0;
  if (may_set_time) {
    CHECK_ERR(syscall(SYS_settimeofday, NULL, &tz), EINVAL);
    CHECK(syscall(SYS_settimeofday, NULL, NULL) == 0, "a change of nothing: %s", strerror(errno));
  } else {
    CHECK_ERR(syscall(SYS_settimeofday, NULL, &tz), EPERM);
    CHECK_ERR(syscall(SYS_settimeofday, NULL, NULL), EPERM);
    CHECK_ERR(syscall(SYS_clock_settime, CLOCK_REALTIME, &now), EPERM);
    CHECK_ERR(syscall(SYS_settimeofday, &tv_now, NULL), EPERM);
    struct timex tx = {.modes = ADJ_OFFSET};
    CHECK_ERR(syscall(SYS_adjtimex, &tx), EPERM);
    // Nor may a guest schedule a leap second (a leap-second test's first
    // step): that changes the host's clock for everyone.
    struct timex ins = {.modes = ADJ_STATUS, .status = STA_INS};
    CHECK_ERR(syscall(SYS_adjtimex, &ins), EPERM);
  }
  leap_second_view();
  // Anyone may read the clock's state.
  struct timex q;
  memset(&q, 0, sizeof q);
  long st = syscall(SYS_adjtimex, &q);
  CHECK(st >= 0 && st <= 5, "adjtimex state %ld: %s", st, strerror(errno));
  CHECK(q.tick > 0, "tick %ld", (long)q.tick);
  memset(&q, 0, sizeof q);
  CHECK(syscall(SYS_clock_adjtime, CLOCK_REALTIME, &q) >= 0);
  CHECK_ERR(syscall(SYS_clock_adjtime, CLOCK_MONOTONIC, &q), EOPNOTSUPP);
  CHECK_ERR(syscall(SYS_clock_adjtime, 100, &q), EINVAL);
  CHECK_ERR(syscall(SYS_adjtimex, (void*)8), EFAULT);
}

int main(void) {
  guest_name = "cpuclock";
  thread_clocks();
  setting_time();
  return guest_finish();
}
