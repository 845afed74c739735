// A signalfd in poll, select and epoll_wait is woken by a signal sent while
// the caller waits (process-directed kill and thread-directed tgkill), with
// no timeout: a lost wake-up shows as the 5 s safety timeout. The wake-up
// latency from kill() to the wait's return is printed, not checked.
#include "guest_check.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kRounds = 50, kSafetyMs = 5000 };
enum Waiter { kPoll, kSelect, kEpoll };

static int go_pipe[2];
static _Atomic uint64_t sent_ns;
static pid_t waiter_tid;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// For each byte on go_pipe: give the waiter 2 ms to block, then signal it
// ('p': the process, 't': the waiting thread).
static void* sender(void* arg) {
  char how;
  while (read(go_pipe[0], &how, 1) == 1) {
    struct timespec d = {0, 2000000};
    nanosleep(&d, NULL);
    atomic_store(&sent_ns, now_ns());
    if (how == 'p') kill(getpid(), SIGUSR1);
    else syscall(SYS_tgkill, getpid(), waiter_tid, SIGUSR1);
  }
  return NULL;
}

static int wait_on(enum Waiter w, int sfd, int ep) {
  if (w == kPoll) {
    struct pollfd p = {sfd, POLLIN, 0};
    return poll(&p, 1, kSafetyMs) == 1 && (p.revents & POLLIN);
  }
  if (w == kSelect) {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(sfd, &r);
    struct timeval tv = {kSafetyMs / 1000, 0};
    return select(sfd + 1, &r, NULL, NULL, &tv) == 1 && FD_ISSET(sfd, &r);
  }
  struct epoll_event ev;
  return epoll_wait(ep, &ev, 1, kSafetyMs) == 1 && (ev.events & EPOLLIN) && ev.data.fd == sfd;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static void rounds(enum Waiter w, const char* name, char how, int sfd, int ep) {
  uint64_t lat[kRounds];
  int ok = 0;
  for (int i = 0; i < kRounds; i++) {
    REQUIRE(write(go_pipe[1], &how, 1) == 1, "go");
    int woke = wait_on(w, sfd, ep);
    uint64_t t1 = now_ns();
    CHECK(woke, "%s round %d: woken by the signal (not the %d ms timeout)", name, i, kSafetyMs);
    if (!woke) break;
    lat[ok++] = t1 - atomic_load(&sent_ns);
    struct signalfd_siginfo si;
    CHECK(read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR1, "read the signal");
  }
  if (!ok) return;
  qsort(lat, (size_t)ok, sizeof lat[0], cmp_u64);
  printf("  %-6s %s: median %.1f us, max %.1f us (%d rounds)\n", name,
         how == 'p' ? "kill  " : "tgkill", lat[ok / 2] / 1000.0, lat[ok - 1] / 1000.0, ok);
}

int main(void) {
  guest_name = "signalfd_wake";
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  REQUIRE(sigprocmask(SIG_BLOCK, &set, NULL) == 0, "sigprocmask");  // threads inherit it
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  REQUIRE(sfd >= 0, "signalfd: %s", strerror(errno));
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = sfd};
  REQUIRE(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev) == 0, "epoll: %s", strerror(errno));
  REQUIRE(pipe(go_pipe) == 0, "pipe");
  waiter_tid = (pid_t)syscall(SYS_gettid);
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, sender, NULL) == 0, "pthread_create");
  printf("wake-up latency, kill() to the wait's return:\n");
  const char* names[] = {"poll", "select", "epoll"};
  for (int w = kPoll; w <= kEpoll; w++) {
    rounds((enum Waiter)w, names[w], 'p', sfd, ep);
    rounds((enum Waiter)w, names[w], 't', sfd, ep);
  }
  close(go_pipe[1]);
  pthread_join(th, NULL);
  return guest_finish();
}
