// epoll beyond the basics: with fewer event slots than ready files every
// file is still reported (edge-triggered draining and level-triggered
// round robin starve nobody), EPOLLONESHOT re-armed with data waiting,
// EPOLLEXCLUSIVE's rules and wake-up, an epoll instance inside another
// (and the loop it must refuse), and closing a watched descriptor.
#include "guest_check.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

enum { kFiles = 16, kSlots = 3 };

static int make_pipes(int rd[], int wr[], int n) {
  for (int i = 0; i < n; i++) {
    int p[2];
    if (pipe2(p, O_NONBLOCK) != 0) return -1;
    rd[i] = p[0];
    wr[i] = p[1];
  }
  return 0;
}

static void close_pipes(int rd[], int wr[], int n) {
  for (int i = 0; i < n; i++) {
    close(rd[i]);
    close(wr[i]);
  }
}

// Every ready file shows up within ceil(n / slots) calls, and none twice
// before all have been seen (level-triggered ones come round again).
static int distinct_within(int ep, int n, int* seen_twice) {
  char seen[kFiles] = {0};
  int distinct = 0;
  *seen_twice = 0;
  for (int round = 0; round < (n + kSlots - 1) / kSlots; round++) {
    struct epoll_event out[kSlots];
    int got = epoll_wait(ep, out, kSlots, 1000);
    for (int i = 0; i < got; i++) {
      uint32_t k = out[i].data.u32;
      if (k >= kFiles) continue;
      if (seen[k] && distinct < n) (*seen_twice)++;
      else if (!seen[k]) distinct++;
      seen[k] = 1;
    }
  }
  return distinct;
}

static void no_starvation(uint32_t mode, const char* name) {
  printf("%s, %d ready files, %d slots:\n", name, kFiles, kSlots);
  int rd[kFiles], wr[kFiles];
  REQUIRE(make_pipes(rd, wr, kFiles) == 0, "pipes");
  int ep = epoll_create1(0);
  for (int i = 0; i < kFiles; i++) {
    struct epoll_event ev = {.events = EPOLLIN | mode, .data.u32 = (uint32_t)i};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, rd[i], &ev));
    CHECK(write(wr[i], "0123456789", 10) == 10, "write");
  }
  int twice;
  int distinct = distinct_within(ep, kFiles, &twice);
  CHECK(distinct == kFiles && twice == 0, "%d of %d reported, %d repeats", distinct, kFiles, twice);
  if (mode & EPOLLET) {
    struct epoll_event out[kSlots];
    CHECK(epoll_wait(ep, out, kSlots, 0) == 0, "each edge reported once");
    // Drain a chunk at a time, as servers do, re-queueing on our side:
    // new data on a partly drained file is a new edge.
    char buf[4];
    for (int i = 0; i < kFiles; i++) CHECK(read(rd[i], buf, 4) == 4, "partial read");
    for (int i = 0; i < kFiles; i += 2) CHECK(write(wr[i], "more", 4) == 4, "write");
    distinct = distinct_within(ep, kFiles / 2, &twice);
    CHECK(distinct == kFiles / 2 && twice == 0, "new edges: %d, repeats %d", distinct, twice);
    int total = 0;
    ssize_t r;
    for (int i = 0; i < kFiles; i++)
      while ((r = read(rd[i], buf, sizeof buf)) > 0) total += (int)r;
    CHECK(total == kFiles * 6 + kFiles / 2 * 4, "drained %d bytes", total);
    CHECK(epoll_wait(ep, out, kSlots, 0) == 0, "drained: quiet");
  } else {
    // Level-triggered: still ready, and the next pass covers them all again.
    distinct = distinct_within(ep, kFiles, &twice);
    CHECK(distinct == kFiles && twice == 0, "second pass: %d, repeats %d", distinct, twice);
  }
  close(ep);
  close_pipes(rd, wr, kFiles);
}

static void oneshot_rearm(void) {
  printf("EPOLLONESHOT | EPOLLET re-armed while data waits:\n");
  int p[2];
  REQUIRE(pipe2(p, O_NONBLOCK) == 0, "pipe");
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLET | EPOLLONESHOT, .data.u32 = 5}, out[2];
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
  CHECK(write(p[1], "ab", 2) == 2, "write");
  CHECK(epoll_wait(ep, out, 2, 1000) == 1, "fires");
  CHECK(write(p[1], "c", 1) == 1, "write");
  CHECK(epoll_wait(ep, out, 2, 0) == 0, "disarmed: a new edge is not reported");
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
  CHECK(epoll_wait(ep, out, 2, 0) == 1 && out[0].data.u32 == 5, "re-armed with data waiting");
  close(ep);
  close(p[0]);
  close(p[1]);
}

struct waiter {
  int ep;
  volatile int woke;
};

static void* wait_once(void* p) {
  struct waiter* w = p;
  struct epoll_event out[1];
  if (epoll_wait(w->ep, out, 1, 5000) == 1) w->woke = 1;
  return NULL;
}

static void exclusive(void) {
  printf("EPOLLEXCLUSIVE:\n");
  int efd = eventfd(0, EFD_NONBLOCK);
  int ep = epoll_create1(0), other = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE};
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
  CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev), EINVAL);
  ev.events = EPOLLIN;
  CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev), EINVAL);
  ev.events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT;
  CHECK_ERR(epoll_ctl(other, EPOLL_CTL_ADD, efd, &ev), EINVAL);
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  CHECK_ERR(epoll_ctl(other, EPOLL_CTL_ADD, ep, &ev), EINVAL);
  close(other);
  // Several instances each with an exclusive waiter: one write wakes at
  // least one of them (Linux promises "one or more").
  enum { kWaiters = 4 };
  struct waiter w[kWaiters];
  pthread_t th[kWaiters];
  for (int i = 0; i < kWaiters; i++) {
    w[i].ep = i == 0 ? ep : epoll_create1(0);
    w[i].woke = 0;
    if (i) CHECK_OK(epoll_ctl(w[i].ep, EPOLL_CTL_ADD, efd, &ev));
    pthread_create(&th[i], NULL, wait_once, &w[i]);
  }
  usleep(100000);
  uint64_t one = 1;
  CHECK(write(efd, &one, 8) == 8, "eventfd write");
  for (int i = 0; i < kWaiters; i++) pthread_join(th[i], NULL);
  int woke = 0;
  for (int i = 0; i < kWaiters; i++) woke += w[i].woke;
  CHECK(woke >= 1, "woken: %d", woke);
  printf("  %d of %d exclusive waiters woke\n", woke, kWaiters);
  for (int i = 0; i < kWaiters; i++) close(w[i].ep);
  close(efd);
}

static void nested(void) {
  printf("nested epoll:\n");
  int p[2];
  REQUIRE(pipe2(p, O_NONBLOCK) == 0, "pipe");
  int inner = epoll_create1(0), outer = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1}, out[2];
  CHECK_OK(epoll_ctl(inner, EPOLL_CTL_ADD, p[0], &ev));
  ev.data.u32 = 2;
  CHECK_OK(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev));
  CHECK(epoll_wait(outer, out, 2, 0) == 0, "nothing yet");
  CHECK(write(p[1], "n", 1) == 1, "write");
  int n = epoll_wait(outer, out, 2, 1000);
  CHECK(n == 1 && out[0].data.u32 == 2 && (out[0].events & EPOLLIN), "outer sees inner: %d", n);
  n = epoll_wait(inner, out, 2, 0);
  CHECK(n == 1 && out[0].data.u32 == 1, "inner sees the pipe: %d", n);
  ev.data.u32 = 3;
  CHECK_ERR(epoll_ctl(inner, EPOLL_CTL_ADD, outer, &ev), ELOOP);
  char c;
  CHECK(read(p[0], &c, 1) == 1, "read");
  CHECK(epoll_wait(outer, out, 2, 0) == 0, "drained: outer quiet");
  close(outer);
  close(inner);
  close(p[0]);
  close(p[1]);
}

static void closing(void) {
  printf("closing a watched descriptor:\n");
  int p[2], q[2];
  REQUIRE(pipe2(p, O_NONBLOCK) == 0 && pipe2(q, O_NONBLOCK) == 0, "pipes");
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1}, out[4];
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
  ev.data.u32 = 2;
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &ev));
  // The last descriptor of the file: it leaves the set.
  close(p[0]);
  CHECK(write(q[1], "q", 1) == 1, "write");
  int n = epoll_wait(ep, out, 4, 1000);
  CHECK(n == 1 && out[0].data.u32 == 2, "only the open one: %d", n);
  CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), EBADF);
  // Another descriptor of the same file keeps it watched.
  int keep = dup(q[0]);
  close(q[0]);
  n = epoll_wait(ep, out, 4, 1000);
  CHECK(n == 1 && out[0].data.u32 == 2, "still watched through the dup: %d", n);
  char c;
  CHECK(read(keep, &c, 1) == 1, "read");
  CHECK(epoll_wait(ep, out, 4, 0) == 0, "drained");
  close(keep);
  close(p[1]);
  close(q[1]);
  close(ep);
}

int main(void) {
  guest_name = "epoll_more";
  no_starvation(EPOLLET, "edge-triggered");
  no_starvation(0, "level-triggered");
  oneshot_rearm();
  exclusive();
  nested();
  closing();
  return guest_finish();
}
