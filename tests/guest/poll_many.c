// select, poll and epoll over 1000 descriptors (500 pipes); timeouts are
// honoured (never early, not grossly late); EBADF/POLLNVAL/EINVAL; a signal
// interrupts poll and select with EINTR even under SA_RESTART; the masks of
// ppoll and pselect6 are in force only while they wait. Regular files,
// directories and /dev/null are always readable and writable (POLLPRI never):
// a wait that includes one returns at once, with the time left reported.
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { kPipes = 500 };
static int rd[kPipes], wr[kPipes];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void open_pipes(void) {
  struct rlimit rl;
  REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
  if (rl.rlim_cur < 1024 && rl.rlim_max >= 1024) {
    rl.rlim_cur = 1024;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  for (int i = 0; i < kPipes; i++) {
    int p[2];
    REQUIRE(pipe2(p, O_NONBLOCK) == 0, "pipe %d: %s", i, strerror(errno));
    rd[i] = p[0];
    wr[i] = p[1];
    REQUIRE(p[1] < FD_SETSIZE, "descriptor %d beyond FD_SETSIZE", p[1]);
  }
}

static void poll_1000(void) {
  printf("poll on %d descriptors:\n", 2 * kPipes);
  static struct pollfd pf[2 * kPipes];
  for (int i = 0; i < kPipes; i++) {
    pf[2 * i] = (struct pollfd){rd[i], POLLIN, 0};
    pf[2 * i + 1] = (struct pollfd){wr[i], POLLOUT, 0};
  }
  int n = poll(pf, 2 * kPipes, 0);
  CHECK(n == kPipes, "only the write ends are ready: %d", n);
  for (int i = 0; i < kPipes; i++)
    if (pf[2 * i].revents || pf[2 * i + 1].revents != POLLOUT) {
      CHECK(0, "pipe %d: revents 0x%x/0x%x", i, pf[2 * i].revents, pf[2 * i + 1].revents);
      break;
    }
  int some[] = {0, 137, 499};
  for (int k = 0; k < 3; k++) CHECK(write(wr[some[k]], "x", 1) == 1, "write");
  n = poll(pf, 2 * kPipes, 1000);
  CHECK(n == kPipes + 3, "three more readable: %d", n);
  int readable = 0;
  for (int i = 0; i < kPipes; i++)
    if (pf[2 * i].revents == POLLIN) readable += (i == 0 || i == 137 || i == 499) ? 1 : 100;
  CHECK(readable == 3, "exactly the written pipes are readable (%d)", readable);
  // The write ends only: nothing to wait for but the readable ones.
  for (int i = 0; i < kPipes; i++) pf[2 * i + 1].fd = -1;
  n = poll(pf, 2 * kPipes, 1000);
  CHECK(n == 3, "negative fds are skipped: %d", n);
  char c;
  for (int k = 0; k < 3; k++) CHECK(read(rd[some[k]], &c, 1) == 1, "read");
  double t0 = now_ms();
  n = poll(pf, 2 * kPipes, 60);
  double dt = now_ms() - t0;
  CHECK(n == 0 && dt >= 59 && dt < 3000, "poll timeout: %d after %.1f ms", n, dt);
  printf("  poll(1000 fds, 60 ms) took %.1f ms\n", dt);
}

static void select_1000(void) {
  printf("select on %d descriptors:\n", 2 * kPipes);
  fd_set r, w;
  int maxfd = 0;
  FD_ZERO(&r);
  FD_ZERO(&w);
  for (int i = 0; i < kPipes; i++) {
    FD_SET(rd[i], &r);
    FD_SET(wr[i], &w);
    if (wr[i] > maxfd) maxfd = wr[i];
    if (rd[i] > maxfd) maxfd = rd[i];
  }
  fd_set r2 = r, w2 = w;
  struct timeval tv = {0, 0};
  int n = select(maxfd + 1, &r2, &w2, NULL, &tv);
  CHECK(n == kPipes, "write ends ready: %d", n);
  int bad = 0;
  for (int i = 0; i < kPipes; i++) bad += FD_ISSET(rd[i], &r2) || !FD_ISSET(wr[i], &w2);
  CHECK(bad == 0, "%d descriptors reported wrongly", bad);
  CHECK(write(wr[321], "y", 1) == 1, "write");
  r2 = r;
  tv = (struct timeval){1, 0};
  n = select(maxfd + 1, &r2, NULL, NULL, &tv);
  CHECK(n == 1 && FD_ISSET(rd[321], &r2), "one readable: %d", n);
  char c;
  CHECK(read(rd[321], &c, 1) == 1, "read");
  r2 = r;
  tv = (struct timeval){0, 60000};
  double t0 = now_ms();
  // Raw: musl's select keeps the caller's timeval, the kernel reports the time left.
  n = (int)syscall(SYS_select, maxfd + 1, &r2, NULL, NULL, &tv);
  double dt = now_ms() - t0;
  CHECK(n == 0 && dt >= 59 && dt < 3000, "select timeout: %d after %.1f ms", n, dt);
  CHECK(tv.tv_sec == 0 && tv.tv_usec < 10000, "time left reported: %ld.%06ld", (long)tv.tv_sec,
        (long)tv.tv_usec);
  printf("  select(1000 fds, 60 ms) took %.1f ms\n", dt);
  struct timespec ts = {0, 30 * 1000000};
  r2 = r;
  n = (int)syscall(SYS_pselect6, maxfd + 1, &r2, NULL, NULL, &ts, NULL);
  CHECK(n == 0 && ts.tv_sec == 0 && ts.tv_nsec < 10000000, "pselect6 time left: %ld.%09ld",
        (long)ts.tv_sec, ts.tv_nsec);
  // A closed descriptor in the set: EBADF, for select only.
  int spare = dup(rd[0]);
  close(spare);
  FD_ZERO(&r2);
  FD_SET(spare, &r2);
  tv = (struct timeval){0, 0};
  CHECK_ERR(select(spare + 1, &r2, NULL, NULL, &tv), EBADF);
  struct pollfd pf = {spare, POLLIN, 0};
  CHECK(poll(&pf, 1, 0) == 1 && pf.revents == POLLNVAL, "poll: POLLNVAL 0x%x", pf.revents);
  CHECK_ERR(select(-1, NULL, NULL, NULL, &tv), EINVAL);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  CHECK_ERR(syscall(SYS_poll, &pf, (long)rl.rlim_cur + 1, 0), EINVAL);
  CHECK_ERR(syscall(SYS_poll, 8L, 1L, 0), EFAULT);
}

static void epoll_1000(void) {
  printf("epoll on %d descriptors:\n", 2 * kPipes);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  REQUIRE(ep >= 0, "epoll_create1");
  for (int i = 0; i < kPipes; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, rd[i], &ev));
    ev = (struct epoll_event){.events = EPOLLOUT | EPOLLET, .data.u32 = 100000u + i};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, wr[i], &ev));
  }
  static struct epoll_event out[2 * kPipes];
  int n = epoll_wait(ep, out, 2 * kPipes, 1000);
  CHECK(n == kPipes, "write ends first: %d", n);
  CHECK(epoll_wait(ep, out, 2 * kPipes, 0) == 0, "edge-triggered: reported once");
  for (int i = 0; i < kPipes; i += 50) CHECK(write(wr[i], "z", 1) == 1, "write");
  n = epoll_wait(ep, out, 2 * kPipes, 1000);
  int reads = 0, writes = 0;
  for (int i = 0; i < n; i++) {
    if (out[i].data.u32 < 100000u) {
      CHECK(out[i].data.u32 % 50 == 0, "pipe %u readable", out[i].data.u32);
      reads++;
    } else {
      writes++;
    }
  }
  // Each write is a new edge on its write end too, as Linux's pipe wakes it.
  CHECK(reads == kPipes / 50, "readable: %d of %d (%d events)", reads, kPipes / 50, n);
  char c;
  for (int i = 0; i < kPipes; i += 50) CHECK(read(rd[i], &c, 1) == 1, "read");
  while (epoll_wait(ep, out, 2 * kPipes, 0) > 0) {}
  double t0 = now_ms();
  n = epoll_wait(ep, out, 2 * kPipes, 60);
  double dt = now_ms() - t0;
  CHECK(n == 0 && dt >= 59 && dt < 3000, "epoll timeout: %d after %.1f ms", n, dt);
  printf("  epoll_wait(1000 fds, 60 ms) took %.1f ms\n", dt);
  close(ep);
}

static volatile int handled;
static void on_sig(int sig) { handled++; }

// Sends `sig` to the waiter every 50 ms until it is told to stop: one sent
// before the waiter sleeps would be handled early and leave it waiting.
static volatile int stop_killing;
static pthread_t waiter;
static void* keep_signalling(void* p) {
  for (int i = 0; i < 200 && !stop_killing; i++) {
    usleep(50000);
    if (!stop_killing) pthread_kill(waiter, (int)(long)p);
  }
  return NULL;
}

typedef int (*waitfn)(int fd, int ms);
static int wait_poll(int fd, int ms) {
  struct pollfd pf = {fd, POLLIN, 0};
  return poll(&pf, 1, ms);
}
static int wait_select(int fd, int ms) {
  fd_set r;
  FD_ZERO(&r);
  FD_SET(fd, &r);
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  return select(fd + 1, &r, NULL, NULL, ms < 0 ? NULL : &tv);
}

static void interrupted(const char* name, waitfn fn) {
  handled = 0;
  stop_killing = 0;
  waiter = pthread_self();
  pthread_t th;
  pthread_create(&th, NULL, keep_signalling, (void*)(long)SIGUSR1);
  int r = fn(rd[7], -1);
  int e = errno;
  stop_killing = 1;
  pthread_join(th, NULL);
  CHECK(r == -1 && e == EINTR && handled >= 1, "%s: %d %s, handler %d", name, r, strerror(e),
        handled);
  printf("  %s -> EINTR after the handler\n", name);
}

// A pending blocked signal that the call's mask unblocks: EINTR at once.
// A signal that the call's mask blocks: the call times out and the
// handler runs after it returns.
static void masks(void) {
  printf("ppoll and pselect6 masks:\n");
  sigset_t usr1, old, none;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigemptyset(&none);
  pthread_sigmask(SIG_BLOCK, &usr1, &old);
  struct pollfd pf = {rd[9], POLLIN, 0};
  struct timespec five = {5, 0};
  fd_set r;

  handled = 0;
  raise(SIGUSR1);
  double t0 = now_ms();
  int n = ppoll(&pf, 1, &five, &none);
  CHECK(n == -1 && errno == EINTR && handled == 1 && now_ms() - t0 < 4000,
        "ppoll unblocks a pending signal: %d handler %d", n, handled);
  handled = 0;
  raise(SIGUSR1);
  FD_ZERO(&r);
  FD_SET(rd[9], &r);
  n = pselect(rd[9] + 1, &r, NULL, NULL, &five, &none);
  CHECK(n == -1 && errno == EINTR && handled == 1, "pselect unblocks a pending signal: %d handler %d",
        n, handled);
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, NULL, &now);
  CHECK(sigismember(&now, SIGUSR1), "mask restored");

  // Unblocked normally, blocked by the call's mask.
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  handled = 0;
  stop_killing = 0;
  waiter = pthread_self();
  pthread_t th;
  pthread_create(&th, NULL, keep_signalling, (void*)(long)SIGUSR1);
  struct timespec brief = {0, 300 * 1000000};
  n = ppoll(&pf, 1, &brief, &usr1);
  stop_killing = 1;
  pthread_join(th, NULL);
  // The handler runs on the way out, once the old mask is back.
  CHECK(n == 0, "ppoll's mask blocks it: %d %s", n, n < 0 ? strerror(errno) : "");
  CHECK(handled >= 1, "delivered after ppoll returned");
  handled = 0;
  stop_killing = 0;
  pthread_create(&th, NULL, keep_signalling, (void*)(long)SIGUSR1);
  FD_ZERO(&r);
  FD_SET(rd[9], &r);
  n = pselect(rd[9] + 1, &r, NULL, NULL, &brief, &usr1);
  stop_killing = 1;
  pthread_join(th, NULL);
  CHECK(n == 0 && handled >= 1, "pselect's mask blocks it: %d, handler %d", n, handled);
  CHECK_ERR(syscall(SYS_ppoll, &pf, 1L, &five, &none, 4L), EINVAL);
}

static void signals(void) {
  printf("signals interrupt poll and select:\n");
  struct sigaction sa = {0};
  sa.sa_handler = on_sig;
  sa.sa_flags = SA_RESTART;  // poll and select are never restarted
  sigaction(SIGUSR1, &sa, NULL);
  interrupted("poll", wait_poll);
  interrupted("select", wait_select);
  masks();
  signal(SIGUSR1, SIG_DFL);
}

static void always_ready_files(void) {
  char path[] = "/tmp/poll_many.XXXXXX";
  int file = mkstemp(path);
  REQUIRE(file >= 0, "mkstemp: %s", strerror(errno));
  unlink(path);
  int null = open("/dev/null", O_RDWR), dir = open("/", O_RDONLY | O_DIRECTORY);
  REQUIRE(null >= 0 && dir >= 0, "open /dev/null, /");
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe");
  struct pollfd pf[4] = {{file, POLLIN | POLLOUT | POLLPRI, 0}, {null, POLLOUT, 0}, {dir, POLLIN, 0},
                         {p[0], POLLIN, 0}};
  double t0 = now_ms();
  CHECK(poll(pf, 4, -1) == 3, "poll on a file, /dev/null, a dir, an empty pipe: 3 ready");
  CHECK(now_ms() - t0 < 1000, "poll with ready files returned at once");
  CHECK(pf[0].revents == (POLLIN | POLLOUT), "file revents %#x", pf[0].revents);
  CHECK(pf[1].revents == POLLOUT, "/dev/null revents %#x", pf[1].revents);
  CHECK(pf[2].revents == POLLIN, "dir revents %#x", pf[2].revents);
  CHECK(pf[3].revents == 0, "empty pipe revents %#x", pf[3].revents);
  struct pollfd pri = {file, POLLPRI, 0};
  t0 = now_ms();
  CHECK(poll(&pri, 1, 50) == 0 && pri.revents == 0, "POLLPRI on a file: never");
  CHECK(now_ms() - t0 >= 49, "POLLPRI on a file waited for the timeout");
  fd_set r, w;
  FD_ZERO(&r);
  FD_ZERO(&w);
  FD_SET(file, &r);
  FD_SET(null, &r);
  FD_SET(p[0], &r);
  FD_SET(file, &w);
  struct timeval tv = {5, 0};
  long n = syscall(SYS_select, FD_SETSIZE, &r, &w, NULL, &tv);
  CHECK(n == 3, "select: %ld ready, want 3", n);
  CHECK(FD_ISSET(file, &r) && FD_ISSET(null, &r) && !FD_ISSET(p[0], &r) && FD_ISSET(file, &w),
        "select sets");
  CHECK(tv.tv_sec >= 4 && tv.tv_sec <= 5, "select's time left %ld.%06ld", (long)tv.tv_sec,
        (long)tv.tv_usec);
  struct timeval zero = {0, 0};
  FD_ZERO(&r);
  FD_SET(p[0], &r);
  FD_SET(null, &r);
  CHECK(syscall(SYS_select, FD_SETSIZE, &r, NULL, NULL, &zero) == 1 && FD_ISSET(null, &r), "zero timeout");
  CHECK(zero.tv_sec == 0 && zero.tv_usec == 0, "zero timeout left as zero");
  // A generated /proc file has no poll method of its own: always ready.
  int proc = open("/proc/self/status", O_RDONLY);
  REQUIRE(proc >= 0, "open /proc/self/status");
  struct pollfd ppf = {proc, POLLIN | POLLOUT, 0};
  CHECK(poll(&ppf, 1, 2000) == 1 && ppf.revents == (POLLIN | POLLOUT), "/proc file revents %#x",
        ppf.revents);
  FD_ZERO(&r);
  FD_SET(proc, &r);
  struct timeval two = {2, 0};
  CHECK(syscall(SYS_select, FD_SETSIZE, &r, NULL, NULL, &two) == 1 && FD_ISSET(proc, &r),
        "select on a /proc file");
  close(proc);
  close(file);
  close(null);
  close(dir);
  close(p[0]);
  close(p[1]);
}

int main(void) {
  guest_name = "poll_many";
  always_ready_files();
  open_pipes();
  poll_1000();
  select_1000();
  epoll_1000();
  signals();
  return guest_finish();
}
