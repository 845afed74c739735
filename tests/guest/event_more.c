// Event files together with the waiting calls: a timerfd armed with
// TFD_TIMER_ABSTIME (monotonic and realtime, periodic, already-expired),
// eventfd semaphore mode waking blocked readers one count each, and a
// signalfd in poll/select/epoll next to a pipe: readable only for
// signals in its mask, and only while they are pending.
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static double now_ms(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct timespec plus_ms(int clock, long ms) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  ts.tv_nsec += ms * 1000000L;
  ts.tv_sec += ts.tv_nsec / 1000000000L;
  ts.tv_nsec %= 1000000000L;
  return ts;
}

static void abstime(int clock, const char* name) {
  printf("timerfd ABSTIME on %s:\n", name);
  int tfd = timerfd_create(clock, TFD_CLOEXEC);
  REQUIRE(tfd >= 0, "timerfd_create: %s", strerror(errno));
  struct itimerspec its = {.it_value = plus_ms(clock, 80), .it_interval = {0, 20 * 1000000}};
  double t0 = now_ms(clock);
  double due = its.it_value.tv_sec * 1e3 + its.it_value.tv_nsec / 1e6;
  CHECK_OK(timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL));
  struct itimerspec cur;
  CHECK(timerfd_gettime(tfd, &cur) == 0 && cur.it_interval.tv_nsec == 20 * 1000000 &&
            cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0,
        "gettime is relative: %ld.%09ld", (long)cur.it_value.tv_sec, cur.it_value.tv_nsec);
  struct pollfd pf = {tfd, POLLIN, 0};
  CHECK(poll(&pf, 1, 5000) == 1, "poll sees it expire");
  double at = now_ms(clock);
  CHECK(at >= due - 1, "not before the absolute time: %.1f ms early", due - at);
  printf("  fired %.1f ms after arming (due at +%.1f)\n", at - t0, due - t0);
  usleep(70000);
  uint64_t n = 0;
  CHECK(read(tfd, &n, 8) == 8 && n >= 3, "periodic expirations counted: %llu",
        (unsigned long long)n);
  // A time already past expires at once.
  its.it_value = plus_ms(clock, 0);
  its.it_value.tv_sec -= 1;
  its.it_interval = (struct timespec){0, 0};
  CHECK_OK(timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL));
  CHECK(read(tfd, &n, 8) == 8 && n == 1, "past time: one expiration (%llu)", (unsigned long long)n);
  CHECK_ERR(timerfd_settime(tfd, 0x80, &its, NULL), EINVAL);
  close(tfd);
}

struct sem_reader {
  int fd;
  volatile int got;
};

static void* read_one(void* p) {
  struct sem_reader* r = p;
  uint64_t v = 0;
  if (read(r->fd, &v, 8) == 8) r->got = (int)v;
  return NULL;
}

static void semaphore(void) {
  printf("eventfd semaphore, blocked readers:\n");
  int efd = eventfd(0, EFD_SEMAPHORE);
  enum { kReaders = 3 };
  struct sem_reader r[kReaders];
  pthread_t th[kReaders];
  for (int i = 0; i < kReaders; i++) {
    r[i] = (struct sem_reader){efd, 0};
    pthread_create(&th[i], NULL, read_one, &r[i]);
  }
  usleep(50000);
  uint64_t three = 3;
  CHECK(write(efd, &three, 8) == 8, "write 3");
  int total = 0;
  for (int i = 0; i < kReaders; i++) {
    pthread_join(th[i], NULL);
    total += r[i].got;
    CHECK(r[i].got == 1, "reader %d got %d", i, r[i].got);
  }
  CHECK(total == 3, "three counts handed out one by one");
  struct pollfd pf = {efd, POLLIN | POLLOUT, 0};
  CHECK(poll(&pf, 1, 0) == 1 && pf.revents == POLLOUT, "empty: writable only (0x%x)", pf.revents);
  uint64_t max = 0xfffffffffffffffeull;
  int nb = eventfd(0, EFD_NONBLOCK);
  CHECK(write(nb, &max, 8) == 8, "fill to the maximum");
  uint64_t one = 1;
  CHECK_ERR(write(nb, &one, 8), EAGAIN);
  pf.fd = nb;
  CHECK(poll(&pf, 1, 0) == 1 && pf.revents == POLLIN, "full: readable only (0x%x)", pf.revents);
  uint64_t all = ~0ull;
  CHECK_ERR(write(nb, &all, 8), EINVAL);
  close(nb);
  close(efd);
}

static void* kill_later(void* p) {
  usleep(50000);
  kill(getpid(), (int)(long)p);
  return NULL;
}

static void signalfd_waits(void) {
  printf("signalfd in poll, select and epoll:\n");
  sigset_t usr1, usr2;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigset_t both = usr1;
  sigaddset(&both, SIGUSR2);
  sigprocmask(SIG_BLOCK, &both, NULL);
  int sfd = signalfd(-1, &usr1, SFD_NONBLOCK);
  REQUIRE(sfd >= 0, "signalfd: %s", strerror(errno));
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe");
  struct pollfd pf[2] = {{sfd, POLLIN, 0}, {p[0], POLLIN, 0}};
  CHECK(poll(pf, 2, 0) == 0, "nothing pending");
  raise(SIGUSR2);
  CHECK(poll(pf, 2, 50) == 0, "a signal outside its mask: not readable");
  raise(SIGUSR1);
  CHECK(poll(pf, 2, 1000) == 1 && pf[0].revents == POLLIN, "SIGUSR1 pending: readable (0x%x)",
        pf[0].revents);
  fd_set r;
  FD_ZERO(&r);
  FD_SET(sfd, &r);
  FD_SET(p[0], &r);
  struct timeval tv = {1, 0};
  CHECK(select((p[0] > sfd ? p[0] : sfd) + 1, &r, NULL, NULL, &tv) == 1 && FD_ISSET(sfd, &r),
        "select agrees");
  struct signalfd_siginfo si;
  CHECK(read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR1, "read SIGUSR1");
  CHECK(poll(pf, 2, 0) == 0, "consumed: quiet again");
  // Changing the mask makes the pending SIGUSR2 visible.
  CHECK(signalfd(sfd, &usr2, 0) == sfd, "new mask");
  CHECK(poll(pf, 2, 1000) == 1, "SIGUSR2 now readable");
  CHECK(read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR2, "read SIGUSR2");
  // A signal arriving while poll and epoll_wait sleep wakes them.
  pthread_t th;
  pthread_create(&th, NULL, kill_later, (void*)(long)SIGUSR2);
  double t0 = now_ms(CLOCK_MONOTONIC);
  CHECK(poll(pf, 2, 5000) == 1 && pf[0].revents == POLLIN, "poll woken by the signal");
  pthread_join(th, NULL);
  printf("  poll woke %.1f ms after it started (signal sent at +50)\n",
         now_ms(CLOCK_MONOTONIC) - t0);
  CHECK(read(sfd, &si, sizeof si) == sizeof si, "consume");
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 77}, out[2];
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev));
  CHECK(epoll_wait(ep, out, 2, 0) == 0, "epoll: nothing pending");
  pthread_create(&th, NULL, kill_later, (void*)(long)SIGUSR2);
  int n = epoll_wait(ep, out, 2, 5000);
  pthread_join(th, NULL);
  CHECK(n == 1 && out[0].data.u32 == 77 && (out[0].events & EPOLLIN), "epoll woken: %d", n);
  CHECK(read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR2, "read");
  CHECK(epoll_wait(ep, out, 2, 0) == 0, "epoll: consumed");
  close(ep);
  close(p[0]);
  close(p[1]);
  close(sfd);
  sigprocmask(SIG_UNBLOCK, &both, NULL);
}

int main(void) {
  guest_name = "event_more";
  abstime(CLOCK_MONOTONIC, "CLOCK_MONOTONIC");
  abstime(CLOCK_REALTIME, "CLOCK_REALTIME");
  semaphore();
  signalfd_waits();
  return guest_finish();
}
