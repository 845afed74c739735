// epoll: level-triggered events repeat until drained, EPOLLET reports each
// new arrival once, EPOLLONESHOT disarms, epoll_data comes back verbatim,
// timeouts are honoured, and a signal interrupts epoll_wait with EINTR
// (even with SA_RESTART), with epoll_pwait's mask in force while waiting.
#include "guest_check.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void level_and_edge(void) {
  printf("level-triggered vs EPOLLET:\n");
  int ep = epoll_create1(EPOLL_CLOEXEC);
  REQUIRE(ep >= 0, "epoll_create1: %s", strerror(errno));
  CHECK(fcntl(ep, F_GETFD) == FD_CLOEXEC, "EPOLL_CLOEXEC");
  int lv[2], et[2];
  REQUIRE(pipe2(lv, O_NONBLOCK) == 0 && pipe2(et, O_NONBLOCK) == 0, "pipe2");
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0x1122334455667788ull};
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, lv[0], &ev));
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u64 = 0xfeedfacecafebeefull;
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, et[0], &ev));
  CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, et[0], &ev), EEXIST);
  struct epoll_event out[4];
  CHECK(epoll_wait(ep, out, 4, 0) == 0, "nothing yet");

  CHECK(write(lv[1], "0123456789", 10) == 10 && write(et[1], "0123456789", 10) == 10, "write");
  int n = epoll_wait(ep, out, 4, 1000);
  CHECK(n == 2, "both ready: %d", n);
  int saw_l = 0, saw_e = 0;
  for (int i = 0; i < n; i++) {
    if (out[i].data.u64 == 0x1122334455667788ull) saw_l++;
    if (out[i].data.u64 == 0xfeedfacecafebeefull) saw_e++;
  }
  CHECK(saw_l == 1 && saw_e == 1, "epoll_data comes back as given");
  // Nothing read: the level-triggered one stays ready, the edge one is quiet.
  n = epoll_wait(ep, out, 4, 0);
  CHECK(n == 1 && out[0].data.u64 == 0x1122334455667788ull, "again: only the level one (%d)", n);
  char buf[64];
  CHECK(read(et[0], buf, 4) == 4, "partial read");
  CHECK(epoll_wait(ep, out, 4, 0) == 1, "a partial read does not re-arm the edge");
  CHECK(write(et[1], "x", 1) == 1, "write");
  n = epoll_wait(ep, out, 4, 0);
  CHECK(n == 2, "new data: the edge fires again (%d)", n);
  // Drain both until EAGAIN, as edge-triggered readers must.
  while (read(et[0], buf, sizeof buf) > 0) {}
  CHECK(errno == EAGAIN, "drained to EAGAIN");
  while (read(lv[0], buf, sizeof buf) > 0) {}
  CHECK(epoll_wait(ep, out, 4, 0) == 0, "drained: nothing ready");

  // EPOLLONESHOT: one report until re-armed with EPOLL_CTL_MOD.
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u32 = 7;
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_MOD, lv[0], &ev));
  CHECK(write(lv[1], "a", 1) == 1, "write");
  CHECK(epoll_wait(ep, out, 4, 0) == 1 && out[0].data.u32 == 7, "oneshot fires");
  CHECK(epoll_wait(ep, out, 4, 0) == 0, "then stays quiet");
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_MOD, lv[0], &ev));
  CHECK(epoll_wait(ep, out, 4, 0) == 1, "re-armed");
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_DEL, lv[0], NULL));
  CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, lv[0], NULL), ENOENT);

  // Sockets and eventfds, writable and readable.
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  ev.events = EPOLLOUT;
  ev.data.fd = sv[0];
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev));
  n = epoll_wait(ep, out, 4, 0);
  CHECK(n == 1 && out[0].data.fd == sv[0] && (out[0].events & EPOLLOUT), "socket writable");
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_DEL, sv[0], NULL));
  close(sv[1]);
  ev.events = EPOLLIN | EPOLLRDHUP;
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev));
  n = epoll_wait(ep, out, 4, 0);
  CHECK(n == 1 && (out[0].events & (EPOLLRDHUP | EPOLLHUP)), "peer gone: 0x%x", n ? out[0].events : 0);

  CHECK_ERR(epoll_wait(ep, out, 0, 0), EINVAL);
  CHECK_ERR(syscall(SYS_epoll_wait, ep, 8L, 4, 0), EFAULT);
  CHECK_ERR(epoll_wait(lv[0], out, 4, 0), EINVAL);
  CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
  CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, 0x3ff, &ev), EBADF);
  CHECK_ERR(syscall(SYS_epoll_create, 0), EINVAL);
  CHECK_ERR(epoll_create1(1), EINVAL);
  close(sv[0]);
  close(ep);
  for (int i = 0; i < 2; i++) {
    close(lv[i]);
    close(et[i]);
  }
}

static void timeouts(void) {
  printf("timeouts:\n");
  int ep = epoll_create(1);
  int efd = eventfd(0, 0);
  struct epoll_event ev = {.events = EPOLLIN}, out[2];
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
  double t0 = now_ms();
  CHECK(epoll_wait(ep, out, 2, 150) == 0, "times out");
  double dt = now_ms() - t0;
  CHECK(dt >= 149 && dt < 3000, "waited %.1f ms for 150", dt);
  printf("  epoll_wait(150 ms) took %.1f ms\n", dt);
  struct timespec ts = {0, 80 * 1000000};
  t0 = now_ms();
  long r = syscall(SYS_epoll_pwait2, ep, out, 2, &ts, NULL, 8);
  dt = now_ms() - t0;
  if (r < 0 && errno == ENOSYS) {
    printf("  epoll_pwait2 not in this kernel\n");
  } else {
    CHECK(r == 0 && dt >= 79 && dt < 3000, "epoll_pwait2(80 ms): %ld after %.1f ms", r, dt);
  }
  close(efd);
  close(ep);
}

static volatile int handled;
static void on_sig(int sig) { handled++; }

static void* kill_later(void* p) {
  usleep(100000);
  kill(getpid(), (int)(long)p);
  return NULL;
}

// Until told to stop: a signal sent before the waiter is asleep would be
// handled first and leave it waiting for its timeout.
static volatile int stop_killing;
static void* kill_until_stopped(void* p) {
  for (int i = 0; i < 100 && !stop_killing; i++) {
    usleep(100000);
    if (!stop_killing) kill(getpid(), (int)(long)p);
  }
  return NULL;
}

static void signals(void) {
  printf("signals interrupt epoll_wait:\n");
  int ep = epoll_create1(0);
  int efd = eventfd(0, 0);
  struct epoll_event ev = {.events = EPOLLIN}, out[2];
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
  struct sigaction sa = {0};
  sa.sa_handler = on_sig;
  sa.sa_flags = SA_RESTART;  // epoll_wait is never restarted
  sigaction(SIGUSR1, &sa, NULL);
  handled = 0;
  pthread_t th;
  // The waiting thread is the only one with SIGUSR1 unblocked.
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, &old);
  stop_killing = 0;
  pthread_create(&th, NULL, kill_until_stopped, (void*)(long)SIGUSR1);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  int r;
  double t0 = now_ms();
  do {
    r = epoll_wait(ep, out, 2, 5000);
  } while (r == 0 && now_ms() - t0 < 9000);
  int e = errno;
  stop_killing = 1;
  pthread_join(th, NULL);
  CHECK(r == -1 && e == EINTR && handled >= 1, "epoll_wait: %d %s, handler %d", r, strerror(e), handled);

  // epoll_pwait: SIGUSR1 blocked normally, unblocked only while waiting;
  // the handler runs, then the old mask is back.
  pthread_sigmask(SIG_BLOCK, &usr1, &old);
  handled = 0;
  pthread_create(&th, NULL, kill_later, (void*)(long)SIGUSR1);
  sigset_t during;
  pthread_sigmask(SIG_SETMASK, NULL, &during);
  sigdelset(&during, SIGUSR1);
  r = epoll_pwait(ep, out, 2, 5000, &during);
  e = errno;
  pthread_join(th, NULL);
  CHECK(r == -1 && e == EINTR && handled == 1, "epoll_pwait: %d %s, handler %d", r, strerror(e), handled);
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, NULL, &now);
  CHECK(sigismember(&now, SIGUSR1), "mask restored after epoll_pwait");
  // Blocked and pending while the mask is back: it stays pending.
  handled = 0;
  kill(getpid(), SIGUSR1);
  CHECK(epoll_pwait(ep, out, 2, 50, NULL) == 0 && handled == 0, "blocked during a plain wait");
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  CHECK(handled == 1, "delivered once unblocked");

  // A ready event wins over the timeout and the signal path.
  uint64_t one = 1;
  CHECK(write(efd, &one, 8) == 8, "eventfd write");
  CHECK(epoll_wait(ep, out, 2, 5000) == 1, "ready at once");
  signal(SIGUSR1, SIG_DFL);
  close(efd);
  close(ep);
}

int main(void) {
  guest_name = "epoll";
  level_and_edge();
  timeouts();
  signals();
  return guest_finish();
}
