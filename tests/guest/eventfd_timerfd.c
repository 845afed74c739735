// eventfd (counter and semaphore modes, blocking and non-blocking) and
// timerfd (one-shot, periodic with expiration counts, absolute times,
// gettime).
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static double now_ms(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rd(int fd) {
  uint64_t v = 0;
  return read(fd, &v, sizeof v) == sizeof v ? v : (uint64_t)-1;
}

static void* add_later(void* p) {
  usleep(100000);
  uint64_t v = 5;
  if (write((int)(long)p, &v, sizeof v) != sizeof v) return (void*)1;
  return NULL;
}

static void eventfds(void) {
  printf("eventfd:\n");
  int e = eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(e >= 0, "eventfd: %s", strerror(errno));
  CHECK(fcntl(e, F_GETFD) == FD_CLOEXEC && (fcntl(e, F_GETFL) & O_NONBLOCK), "flags");
  for (int i = 0; i < 3; i++) CHECK(rd(e) == 1, "semaphore read %d gives 1", i);
  uint64_t v;
  CHECK_ERR(read(e, &v, sizeof v), EAGAIN);
  v = 2;
  CHECK(write(e, &v, sizeof v) == 8, "write 2");
  CHECK(rd(e) == 1 && rd(e) == 1, "two more");
  CHECK_ERR(read(e, &v, sizeof v), EAGAIN);
  CHECK_ERR(read(e, &v, 4), EINVAL);
  v = UINT64_MAX;
  CHECK_ERR(write(e, &v, sizeof v), EINVAL);
  close(e);

  e = eventfd(0, 0);
  v = 4;
  CHECK(write(e, &v, 8) == 8 && write(e, &v, 8) == 8, "write twice");
  CHECK(rd(e) == 8, "counter mode returns the sum");
  struct pollfd p = {e, POLLIN, 0};
  CHECK(poll(&p, 1, 0) == 0, "zero counter: not readable");
  pthread_t th;
  pthread_create(&th, NULL, add_later, (void*)(long)e);
  CHECK(rd(e) == 5, "a blocking read waits for the writer");
  pthread_join(th, NULL);
  close(e);
  CHECK_ERR(syscall(SYS_eventfd2, 0, 0x10), EINVAL);
}

static void timerfds(void) {
  printf("timerfd:\n");
  int t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  REQUIRE(t >= 0, "timerfd_create: %s", strerror(errno));
  struct itimerspec its = {{0, 20 * 1000000}, {0, 50 * 1000000}}, cur;
  double t0 = now_ms(CLOCK_MONOTONIC);
  CHECK_OK(timerfd_settime(t, 0, &its, NULL));
  CHECK(timerfd_gettime(t, &cur) == 0 && cur.it_interval.tv_nsec == 20 * 1000000 &&
            cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0,
        "gettime: interval %ld ns, value %ld ns", cur.it_interval.tv_nsec, cur.it_value.tv_nsec);
  uint64_t n = rd(t);
  double dt = now_ms(CLOCK_MONOTONIC) - t0;
  CHECK(n >= 1 && dt >= 49, "first expiry after %.1f ms (%llu)", dt, (unsigned long long)n);
  usleep(200000);
  n = rd(t);
  // 200 ms at a 20 ms period: about 10; allow for a slow machine.
  CHECK(n >= 5 && n <= 20, "periodic: %llu expirations in 200 ms", (unsigned long long)n);
  printf("  %llu expirations in 200 ms at a 20 ms period\n", (unsigned long long)n);
  struct itimerspec off = {{0, 0}, {0, 0}}, old;
  CHECK_OK(timerfd_settime(t, 0, &off, &old));
  CHECK(old.it_interval.tv_nsec == 20 * 1000000, "old setting returned");
  CHECK_OK(fcntl(t, F_SETFL, O_NONBLOCK));
  uint64_t v;
  CHECK_ERR(read(t, &v, 8), EAGAIN);
  close(t);

  // Absolute, on the realtime clock, seen through poll.
  t = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
  struct timespec nowts;
  clock_gettime(CLOCK_REALTIME, &nowts);
  nowts.tv_nsec += 60 * 1000000;
  if (nowts.tv_nsec >= 1000000000) {
    nowts.tv_sec++;
    nowts.tv_nsec -= 1000000000;
  }
  struct itimerspec abs = {{0, 0}, nowts};
  CHECK_OK(timerfd_settime(t, TFD_TIMER_ABSTIME, &abs, NULL));
  struct pollfd p = {t, POLLIN, 0};
  t0 = now_ms(CLOCK_MONOTONIC);
  CHECK(poll(&p, 1, 5000) == 1, "poll sees the expiry");
  dt = now_ms(CLOCK_MONOTONIC) - t0;
  CHECK(dt >= 30 && dt < 4000, "after %.1f ms", dt);
  CHECK(rd(t) == 1, "one expiry");
  close(t);

  t = timerfd_create(CLOCK_BOOTTIME, 0);
  CHECK(t >= 0, "CLOCK_BOOTTIME: %s", strerror(errno));
  close(t);
  CHECK_ERR(timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
  CHECK_ERR(timerfd_create(CLOCK_MONOTONIC, 0x40), EINVAL);
  CHECK_ERR(timerfd_settime(0x3ff, 0, &its, NULL), EBADF);
  CHECK_ERR(syscall(SYS_timerfd_settime, t, 0, 8L, 0L), EFAULT);
}

int main(void) {
  guest_name = "eventfd_timerfd";
  eventfds();
  timerfds();
  return guest_finish();
}
