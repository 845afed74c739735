// RLIMIT_SIGPENDING: real-time signals queued by sigqueue() stop at the
// limit with EAGAIN; kill() still delivers one (without its value); the
// count is per user, across processes, and a process's exit gives its
// queued signals back. Many queued signals keep their order, and queueing
// them does not slow down with their number (the drain is timed only to
// be printed).
#include "guest_check.h"

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int queue_until_full(pid_t pid, int sig, int most) {
  int n = 0;
  union sigval v;
  for (; n < most; n++) {
    v.sival_int = n;
    if (sigqueue(pid, sig, v) != 0) break;
  }
  return n;
}

static const struct timespec zero = {0, 0};

static int take(int sig, siginfo_t* si) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  return sigtimedwait(&s, si, &zero);
}

static void limit_holds(void) {
  // Natively the count is the whole user's, other processes' queued
  // signals too (a busy machine's can be many): the limit is what is checked.
  const int lim = 1000;
  struct rlimit rl;
  REQUIRE(getrlimit(RLIMIT_SIGPENDING, &rl) == 0, "getrlimit");
  printf("RLIMIT_SIGPENDING: %llu/%llu\n", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
  CHECK(rl.rlim_cur > 0 && rl.rlim_cur != RLIM_INFINITY, "no limit by default");
  rl.rlim_cur = lim;
  REQUIRE(setrlimit(RLIMIT_SIGPENDING, &rl) == 0, "setrlimit: %s", strerror(errno));

  int n = queue_until_full(getpid(), SIGRTMIN, 5 * lim);
  int err = errno;
  printf("queued %d of SIGRTMIN under a limit of %d\n", n, lim);
  CHECK(n <= lim && n > lim / 2, "queued %d, limit %d", n, lim);
  CHECK(err == EAGAIN, "errno %d, want EAGAIN", err);
  // kill() over the limit: delivered, without a queue entry.
  CHECK(kill(getpid(), SIGRTMIN + 1) == 0, "kill over the limit: %s", strerror(errno));
  siginfo_t si;
  CHECK(take(SIGRTMIN + 1, &si) == SIGRTMIN + 1, "the killed signal is not pending");
  CHECK(si.si_code == SI_USER, "si_code %d", si.si_code);
  for (int i = 0; i < n; i++) {
    if (take(SIGRTMIN, &si) != SIGRTMIN) {
      CHECK(0, "signal %d of %d missing", i, n);
      break;
    }
    CHECK(si.si_value.sival_int == i && si.si_code == SI_QUEUE, "signal %d: value %d code %d", i,
          si.si_value.sival_int, si.si_code);
  }
  CHECK(take(SIGRTMIN, &si) < 0 && errno == EAGAIN, "more SIGRTMIN than queued");

  // Per user: a child's queued signals count against its parent's too,
  // until the child ends.
  int ready[2];
  REQUIRE(pipe(ready) == 0, "pipe");
  pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  REQUIRE(child > 0, "fork: %s", strerror(errno));
  close(ready[1]);
  char c;
  REQUIRE(read(ready[0], &c, 1) == 1, "child not ready");
  int to_child = queue_until_full(child, SIGRTMIN, 5 * lim);
  CHECK(to_child <= lim && to_child > lim / 2, "queued %d to the child, limit %d", to_child, lim);
  union sigval v = {.sival_int = 7};
  errno = 0;
  CHECK(sigqueue(getpid(), SIGRTMIN, v) != 0 && errno == EAGAIN,
        "the child's queued signals do not count for its user (errno %d)", errno);
  kill(child, SIGKILL);
  int status;
  CHECK(waitpid(child, &status, 0) == child, "waitpid");
  CHECK(sigqueue(getpid(), SIGRTMIN, v) == 0, "the dead child's signals still count: %s", strerror(errno));
  CHECK(take(SIGRTMIN, &si) == SIGRTMIN && si.si_value.sival_int == 7, "the value");
  close(ready[0]);
}

static void many_in_order(void) {
  struct rlimit rl;
  REQUIRE(getrlimit(RLIMIT_SIGPENDING, &rl) == 0, "getrlimit");
  int want = 12000;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)want + 100) want = (int)rl.rlim_max - 100;
  rl.rlim_cur = rl.rlim_max;
  REQUIRE(setrlimit(RLIMIT_SIGPENDING, &rl) == 0, "setrlimit: %s", strerror(errno));
  double t0 = now_s();
  int n = queue_until_full(getpid(), SIGRTMAX, want);
  double t1 = now_s();
  CHECK(n == want, "queued %d of %d: %s", n, want, strerror(errno));
  siginfo_t si;
  int in_order = 1;
  for (int i = 0; i < n; i++)
    if (take(SIGRTMAX, &si) != SIGRTMAX || si.si_value.sival_int != i) in_order = 0;
  CHECK(in_order, "the queued signals came out of order or short");
  printf("%d signals queued in %.3f s, taken in %.3f s\n", n, t1 - t0, now_s() - t1);
}

// clone()'s exit signal is any byte; one beyond the last signal is not
// sent (Linux's do_notify_parent), and the child is still reaped.
static void exit_signal_out_of_range(void) {
  long pid = syscall(SYS_clone, 100 /* exit signal */, 0, 0, 0, 0);
  if (pid == 0) _exit(9);
  REQUIRE(pid > 0, "clone: %s", strerror(errno));
  int status;
  CHECK(waitpid((pid_t)pid, &status, __WALL) == pid, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 9, "status %#x", status);
  // Signal 36 still queues with its value (flatux once filed the
  // out-of-range signal past its per-signal queues, over signal 36's).
  union sigval v = {.sival_int = 42};
  CHECK(sigqueue(getpid(), 36, v) == 0, "sigqueue 36: %s", strerror(errno));
  siginfo_t si;
  CHECK(take(36, &si) == 36 && si.si_code == SI_QUEUE && si.si_value.sival_int == 42,
        "signal 36 came back as code %d value %d", si.si_code, si.si_value.sival_int);
  printf("a child with exit signal 100: reaped, status %d\n", WEXITSTATUS(status));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "sigpending";
  sigset_t all;
  sigemptyset(&all);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++) sigaddset(&all, s);
  sigprocmask(SIG_BLOCK, &all, NULL);  // the child inherits it
  limit_holds();
  many_in_order();
  exit_signal_out_of_range();
  return guest_finish();
}
