// Clocks and sleeping, through libc (which may use the vDSO) and through
// raw syscalls (which always reach the kernel).
#include "guest_check.h"

#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NSEC 1000000000LL
#define Y2020 1577836800LL  // 2020-01-01T00:00:00Z
#define Y2100 4102444800LL

static long long ns(const struct timespec* t) { return t->tv_sec * NSEC + t->tv_nsec; }

static int raw_gettime(clockid_t id, struct timespec* t) {
  return (int)syscall(SYS_clock_gettime, id, t);
}

static void monotonic(const char* how, int (*get)(clockid_t, struct timespec*)) {
  struct timespec prev, cur;
  REQUIRE(get(CLOCK_MONOTONIC, &prev) == 0, "%s CLOCK_MONOTONIC: %s", how, strerror(errno));
  long long first = ns(&prev);
  int bad = 0;
  for (int i = 0; i < 100000; i++) {
    if (get(CLOCK_MONOTONIC, &cur) != 0 || cur.tv_nsec < 0 || cur.tv_nsec >= NSEC ||
        ns(&cur) < ns(&prev)) {
      if (bad++ < 5)
        CHECK(0, "%s: call %d went from %lld.%09ld to %lld.%09ld", how, i,
              (long long)prev.tv_sec, prev.tv_nsec, (long long)cur.tv_sec, cur.tv_nsec);
    }
    prev = cur;
  }
  printf("  %s: 100000 CLOCK_MONOTONIC readings non-decreasing over %lld ns\n", how,
         ns(&prev) - first);
}

static void sleeping(void) {
  struct timespec a, b, req = {0, 10 * 1000 * 1000}, rem = {7, 7};
  REQUIRE(clock_gettime(CLOCK_MONOTONIC, &a) == 0, "clock_gettime");
  CHECK_OK(syscall(SYS_nanosleep, &req, &rem));
  REQUIRE(clock_gettime(CLOCK_MONOTONIC, &b) == 0, "clock_gettime");
  long long slept = ns(&b) - ns(&a);
  printf("  nanosleep(10 ms) took %lld ns\n", slept);
  CHECK(slept >= 10 * 1000 * 1000LL, "nanosleep(10 ms) returned after %lld ns", slept);
  CHECK(slept < 5 * NSEC, "nanosleep(10 ms) took %lld ns", slept);

  REQUIRE(clock_gettime(CLOCK_MONOTONIC, &a) == 0, "clock_gettime");
  CHECK_OK(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &req, NULL));
  REQUIRE(clock_gettime(CLOCK_MONOTONIC, &b) == 0, "clock_gettime");
  slept = ns(&b) - ns(&a);
  printf("  clock_nanosleep(MONOTONIC, 10 ms) took %lld ns\n", slept);
  CHECK(slept >= 10 * 1000 * 1000LL, "clock_nanosleep(10 ms) returned after %lld ns", slept);

  // An absolute deadline already passed returns at once.
  REQUIRE(clock_gettime(CLOCK_MONOTONIC, &a) == 0, "clock_gettime");
  CHECK_OK(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &a, NULL));

  struct timespec bad = {0, NSEC};
  CHECK_ERR(syscall(SYS_nanosleep, &bad, NULL), EINVAL);
  bad.tv_nsec = -1;
  CHECK_ERR(syscall(SYS_nanosleep, &bad, NULL), EINVAL);
  bad.tv_sec = -1;
  bad.tv_nsec = 0;
  CHECK_ERR(syscall(SYS_nanosleep, &bad, NULL), EINVAL);
}

static void realtime(void) {
  struct timespec rt, raw;
  REQUIRE(clock_gettime(CLOCK_REALTIME, &rt) == 0, "CLOCK_REALTIME: %s", strerror(errno));
  REQUIRE(raw_gettime(CLOCK_REALTIME, &raw) == 0, "raw CLOCK_REALTIME: %s", strerror(errno));
  struct tm tm;
  time_t secs = rt.tv_sec;
  gmtime_r(&secs, &tm);
  printf("  CLOCK_REALTIME %lld.%09ld = %04d-%02d-%02d %02d:%02d:%02d UTC\n",
         (long long)rt.tv_sec, rt.tv_nsec, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
         tm.tm_hour, tm.tm_min, tm.tm_sec);
  CHECK(rt.tv_sec > Y2020 && rt.tv_sec < Y2100, "CLOCK_REALTIME %lld is not between 2020 and 2100",
        (long long)rt.tv_sec);
  CHECK(rt.tv_nsec >= 0 && rt.tv_nsec < NSEC, "tv_nsec=%ld", rt.tv_nsec);
  CHECK(raw.tv_sec - rt.tv_sec <= 1 && raw.tv_sec >= rt.tv_sec,
        "raw syscall CLOCK_REALTIME %lld vs libc %lld", (long long)raw.tv_sec,
        (long long)rt.tv_sec);

  struct timeval tv;
  CHECK_OK(gettimeofday(&tv, NULL));
  time_t t = time(NULL);
  long raw_t = syscall(SYS_time, NULL);
  struct timeval raw_tv;
  CHECK_OK(syscall(SYS_gettimeofday, &raw_tv, NULL));
  struct timespec after;
  REQUIRE(clock_gettime(CLOCK_REALTIME, &after) == 0, "CLOCK_REALTIME");
  printf("  gettimeofday %lld.%06ld, time() %lld, raw time %ld, raw gettimeofday %lld\n",
         (long long)tv.tv_sec, (long)tv.tv_usec, (long long)t, raw_t, (long long)raw_tv.tv_sec);
  // All were read between rt and after.
  CHECK(tv.tv_sec >= rt.tv_sec && tv.tv_sec <= after.tv_sec, "gettimeofday %lld outside [%lld, %lld]",
        (long long)tv.tv_sec, (long long)rt.tv_sec, (long long)after.tv_sec);
  CHECK(tv.tv_usec >= 0 && tv.tv_usec < 1000000, "tv_usec=%ld", (long)tv.tv_usec);
  // time() may read the coarse clock, which trails by up to a tick.
  CHECK(t >= rt.tv_sec - 1 && t <= after.tv_sec, "time() %lld outside [%lld, %lld]",
        (long long)t, (long long)rt.tv_sec - 1, (long long)after.tv_sec);
  CHECK(raw_t >= rt.tv_sec - 1 && raw_t <= after.tv_sec, "raw time %ld outside [%lld, %lld]",
        raw_t, (long long)rt.tv_sec - 1, (long long)after.tv_sec);
  CHECK(raw_tv.tv_sec >= rt.tv_sec && raw_tv.tv_sec <= after.tv_sec,
        "raw gettimeofday %lld outside [%lld, %lld]", (long long)raw_tv.tv_sec,
        (long long)rt.tv_sec, (long long)after.tv_sec);
  time_t stored = 0;
  CHECK(syscall(SYS_time, &stored) == stored && stored >= rt.tv_sec - 1,
        "time(&t) did not store");
}

static void resolution(void) {
  struct timespec res;
  CHECK_OK(clock_getres(CLOCK_MONOTONIC, &res));
  printf("  clock_getres(MONOTONIC) %lld.%09ld\n", (long long)res.tv_sec, res.tv_nsec);
  CHECK(res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 1000000,
        "CLOCK_MONOTONIC resolution %lld.%09ld", (long long)res.tv_sec, res.tv_nsec);
  CHECK_OK(syscall(SYS_clock_getres, CLOCK_REALTIME, &res));
  CHECK(res.tv_sec == 0 && res.tv_nsec > 0, "CLOCK_REALTIME resolution");

  struct timespec t;
  CHECK_ERR(syscall(SYS_clock_gettime, 12345, &t), EINVAL);
  CHECK_ERR(syscall(SYS_clock_gettime, -1000, &t), EINVAL);

  // The other common clocks exist and the CPU-time ones are small.
  static const struct { clockid_t id; const char* name; } ids[] = {
      {CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW"}, {CLOCK_BOOTTIME, "BOOTTIME"},
      {CLOCK_REALTIME_COARSE, "REALTIME_COARSE"}, {CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE"},
      {CLOCK_PROCESS_CPUTIME_ID, "PROCESS_CPUTIME_ID"}, {CLOCK_THREAD_CPUTIME_ID, "THREAD_CPUTIME_ID"},
  };
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    int r = raw_gettime(ids[i].id, &t);
    CHECK(r == 0, "CLOCK_%s: %s", ids[i].name, strerror(errno));
    if (r == 0) printf("  CLOCK_%-20s %lld.%09ld\n", ids[i].name, (long long)t.tv_sec, t.tv_nsec);
  }
}

int main(void) {
  guest_name = "clock";
  printf("monotonic:\n");
  monotonic("libc", clock_gettime);
  monotonic("raw syscall", raw_gettime);
  printf("sleeping:\n");
  sleeping();
  printf("realtime:\n");
  realtime();
  printf("resolution and clock ids:\n");
  resolution();
  return guest_finish();
}
