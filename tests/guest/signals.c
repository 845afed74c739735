// Signal handling within one process and across a process group:
// siginfo contents, masks and pending sets, handler flags, alternate
// stacks, interrupted and restarted system calls, waiting for signals,
// queued real-time signals, and kill() of a process group.
//
// usage: signals                     (the checks)
//        signals pgchild FD PGID     (a process-group member, run by the checks)
#include "guest_check.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

// This program's own path, for re-running itself in a child role: an
// absolute path, because a shell or a chdir'd child would read a relative
// one (or /proc/self/exe) differently.
static char self_buf[4096];
static const char* self_path(const char* argv0) {
  if (strchr(argv0, '/') && realpath(argv0, self_buf)) return self_buf;
  ssize_t n = readlink("/proc/self/exe", self_buf, sizeof self_buf - 1);
  if (n > 0) {
    self_buf[n] = 0;
    return self_buf;
  }
  return argv0;
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void install(int sig, void (*fn)(int, siginfo_t*, void*), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  sa.sa_flags = SA_SIGINFO | flags;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(sig, &sa, NULL) == 0, "sigaction(%d): %s", sig, strerror(errno));
}

static void set_default(int sig) { signal(sig, SIG_DFL); }

static void block(int sig, int how) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  REQUIRE(sigprocmask(how, &s, NULL) == 0, "sigprocmask: %s", strerror(errno));
}

static int is_blocked(int sig) {
  sigset_t s;
  sigprocmask(SIG_BLOCK, NULL, &s);
  return sigismember(&s, sig);
}

// glibc's sigtimedwait() reports SI_TKILL as SI_USER; the raw call shows
// what the kernel said.
static int raw_sigtimedwait(const sigset_t* set, siginfo_t* si, const struct timespec* ts) {
  return (int)syscall(SYS_rt_sigtimedwait, set, si, ts, 8);
}

static int is_pending(int sig) {
  sigset_t s;
  sigemptyset(&s);
  sigpending(&s);
  return sigismember(&s, sig);
}

// --- siginfo from raise() and kill() ---

static volatile sig_atomic_t got_count;
static volatile int got_signo, got_code, got_pid, got_uid, got_blocked_inside;
static volatile int got_usr2_blocked_inside;

static void record(int sig, siginfo_t* si, void* uc) {
  got_signo = si->si_signo;
  got_code = si->si_code;
  got_pid = si->si_pid;
  got_uid = (int)si->si_uid;
  got_blocked_inside = is_blocked(sig);
  got_usr2_blocked_inside = is_blocked(SIGUSR2);
  got_count++;
}

static void reset_record(void) {
  got_count = 0;
  got_signo = got_code = got_pid = got_uid = -1;
  got_blocked_inside = got_usr2_blocked_inside = 0;
}

static void siginfo_basics(void) {
  printf("SA_SIGINFO: raise and kill:\n");
  install(SIGUSR1, record, 0);
  install(SIGUSR2, record, 0);

  reset_record();
  CHECK(raise(SIGUSR1) == 0, "raise: %s", strerror(errno));
  CHECK(got_count == 1, "handler ran %d times", (int)got_count);
  CHECK(got_signo == SIGUSR1, "si_signo %d", got_signo);
  CHECK(got_code == SI_TKILL, "si_code %d, want SI_TKILL (%d)", got_code, SI_TKILL);
  CHECK(got_pid == getpid(), "si_pid %d, want %d", got_pid, (int)getpid());
  CHECK(got_uid == (int)getuid(), "si_uid %d, want %d", got_uid, (int)getuid());
  CHECK(got_blocked_inside, "SIGUSR1 was not blocked inside its own handler");
  CHECK(!is_blocked(SIGUSR1), "SIGUSR1 still blocked after the handler returned");
  printf("  raise(SIGUSR1): si_signo, si_code SI_TKILL, si_pid, si_uid; blocked while "
         "handled\n");

  reset_record();
  CHECK(kill(getpid(), SIGUSR2) == 0, "kill: %s", strerror(errno));
  CHECK(got_count == 1, "handler ran %d times", (int)got_count);
  CHECK(got_signo == SIGUSR2, "si_signo %d", got_signo);
  CHECK(got_code == SI_USER, "si_code %d, want SI_USER (%d)", got_code, SI_USER);
  CHECK(got_pid == getpid(), "si_pid %d, want %d", got_pid, (int)getpid());
  printf("  kill(getpid(), SIGUSR2): si_code SI_USER, si_pid\n");

  // sa_mask is added while the handler runs.
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = record;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR2);
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
  struct sigaction back;
  REQUIRE(sigaction(SIGUSR1, NULL, &back) == 0, "sigaction query");
  CHECK(back.sa_sigaction == record && (back.sa_flags & SA_SIGINFO) &&
            sigismember(&back.sa_mask, SIGUSR2),
        "sigaction did not read back what was set");
  reset_record();
  raise(SIGUSR1);
  CHECK(got_count == 1, "handler ran %d times", (int)got_count);
  CHECK(got_usr2_blocked_inside, "sa_mask's SIGUSR2 was not blocked inside the handler");
  CHECK(!is_blocked(SIGUSR2), "SIGUSR2 still blocked after the handler returned");
  printf("  sigaction reads back handler, flags and mask; sa_mask applies inside\n");

  set_default(SIGUSR1);
  set_default(SIGUSR2);
}

// --- blocking, pending, and delivery at unblock ---

static void mask_and_pending(void) {
  printf("sigprocmask and sigpending:\n");
  install(SIGUSR1, record, 0);
  reset_record();
  block(SIGUSR1, SIG_BLOCK);
  raise(SIGUSR1);
  CHECK(got_count == 0, "a blocked signal was delivered");
  CHECK(is_pending(SIGUSR1), "a blocked signal is not pending");
  // A standard signal is not queued: three sends, one delivery.
  raise(SIGUSR1);
  raise(SIGUSR1);
  block(SIGUSR1, SIG_UNBLOCK);
  // Delivery happens before sigprocmask returns.
  CHECK(got_count == 1, "raise x3: delivered %d times at unblock, want 1", (int)got_count);
  CHECK(!is_pending(SIGUSR1), "still pending after delivery");
  reset_record();
  block(SIGUSR1, SIG_BLOCK);
  for (int i = 0; i < 3; i++) kill(getpid(), SIGUSR1);
  block(SIGUSR1, SIG_UNBLOCK);
  CHECK(got_count == 1, "kill x3: delivered %d times at unblock, want 1", (int)got_count);
  // raise() targets the thread and kill() the process; the two pending
  // sets are separate, so one of each is two deliveries.
  reset_record();
  block(SIGUSR1, SIG_BLOCK);
  raise(SIGUSR1);
  kill(getpid(), SIGUSR1);
  block(SIGUSR1, SIG_UNBLOCK);
  CHECK(got_count == 2, "raise + kill: delivered %d times at unblock, want 2",
        (int)got_count);
  printf("  blocked -> pending -> delivered once at unblock (twice for thread + process)\n");

  // SIGKILL and SIGSTOP cannot be blocked; asking is not an error.
  sigset_t all, cur;
  sigfillset(&all);
  sigset_t old;
  REQUIRE(sigprocmask(SIG_SETMASK, &all, &old) == 0, "block all");
  sigprocmask(SIG_SETMASK, NULL, &cur);
  CHECK(!sigismember(&cur, SIGKILL) && !sigismember(&cur, SIGSTOP),
        "SIGKILL or SIGSTOP ended up blocked");
  sigprocmask(SIG_SETMASK, &old, NULL);
  CHECK_ERR(sigprocmask(12345, &all, NULL), EINVAL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  CHECK_ERR(sigaction(SIGKILL, &sa, NULL), EINVAL);
  CHECK_ERR(sigaction(SIGSTOP, &sa, NULL), EINVAL);
  CHECK_ERR(sigaction(0, &sa, NULL), EINVAL);
  CHECK_ERR(sigaction(65, &sa, NULL), EINVAL);
  set_default(SIGUSR1);
}

// --- SA_RESETHAND and SA_NODEFER ---

static volatile int depth, max_depth, nested_calls;

static void reenter(int sig, siginfo_t* si, void* uc) {
  depth++;
  if (depth > max_depth) max_depth = depth;
  nested_calls++;
  if (nested_calls == 1) raise(sig);
  depth--;
}

static void handler_flags(void) {
  printf("SA_RESETHAND and SA_NODEFER:\n");
  install(SIGUSR1, record, SA_RESETHAND);
  reset_record();
  raise(SIGUSR1);
  CHECK(got_count == 1, "handler ran %d times", (int)got_count);
  struct sigaction now;
  sigaction(SIGUSR1, NULL, &now);
  CHECK(now.sa_handler == SIG_DFL, "SA_RESETHAND left the handler installed");
  printf("  SA_RESETHAND: one delivery, then SIG_DFL\n");

  install(SIGUSR1, reenter, SA_NODEFER);
  depth = max_depth = nested_calls = 0;
  raise(SIGUSR1);
  CHECK(nested_calls == 2 && max_depth == 2,
        "SA_NODEFER: %d calls, max depth %d; want 2 nested", nested_calls, max_depth);
  printf("  SA_NODEFER: the handler re-entered itself (depth %d)\n", max_depth);

  install(SIGUSR1, reenter, 0);
  depth = max_depth = nested_calls = 0;
  raise(SIGUSR1);
  CHECK(nested_calls == 2 && max_depth == 1,
        "without SA_NODEFER: %d calls, max depth %d; want 2 in sequence", nested_calls,
        max_depth);
  printf("  without SA_NODEFER: the second delivery waited for the first to return\n");
  set_default(SIGUSR1);
}

// --- alternate signal stacks ---

#define ALT_SIZE (256 * 1024)
static char* alt_base;
static volatile uintptr_t handler_local;
static volatile int handler_onstack_flag;

static void where_am_i(int sig, siginfo_t* si, void* uc) {
  volatile char local = 0;
  handler_local = (uintptr_t)&local;
  stack_t ss;
  handler_onstack_flag = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
}

static int on_alt(uintptr_t a) {
  return a >= (uintptr_t)alt_base && a < (uintptr_t)alt_base + ALT_SIZE;
}

static void alt_stack(void) {
  printf("sigaltstack and SA_ONSTACK:\n");
  alt_base = malloc(ALT_SIZE);
  REQUIRE(alt_base, "malloc");
  stack_t ss = {.ss_sp = alt_base, .ss_size = ALT_SIZE, .ss_flags = 0};
  REQUIRE(sigaltstack(&ss, NULL) == 0, "sigaltstack: %s", strerror(errno));
  stack_t back;
  REQUIRE(sigaltstack(NULL, &back) == 0, "sigaltstack query");
  CHECK(back.ss_sp == alt_base && back.ss_size == ALT_SIZE && back.ss_flags == 0,
        "sigaltstack reads back sp %p size %zu flags %d", back.ss_sp, back.ss_size,
        back.ss_flags);

  install(SIGUSR1, where_am_i, SA_ONSTACK);
  handler_local = 0;
  raise(SIGUSR1);
  CHECK(on_alt(handler_local), "SA_ONSTACK handler's local at %p, alt stack %p..%p",
        (void*)handler_local, (void*)alt_base, (void*)(alt_base + ALT_SIZE));
  CHECK(handler_onstack_flag, "sigaltstack inside the handler did not report SS_ONSTACK");
  REQUIRE(sigaltstack(NULL, &back) == 0, "sigaltstack query");
  CHECK(!(back.ss_flags & SS_ONSTACK), "SS_ONSTACK still set after the handler");
  printf("  SA_ONSTACK handler ran on the alternate stack and saw SS_ONSTACK\n");

  install(SIGUSR1, where_am_i, 0);
  raise(SIGUSR1);
  CHECK(!on_alt(handler_local), "a handler without SA_ONSTACK ran on the alternate stack");
  printf("  without SA_ONSTACK: the ordinary stack\n");

  stack_t tiny = {.ss_sp = alt_base, .ss_size = 512, .ss_flags = 0};
  CHECK_ERR(sigaltstack(&tiny, NULL), ENOMEM);
  set_default(SIGUSR1);
}

// A stack overflow raises SIGSEGV with no stack left to run a handler on;
// only the alternate stack makes it catchable.
static sigjmp_buf overflow_jump;
static volatile int overflow_depth;
static volatile uintptr_t overflow_lowest, overflow_fault, overflow_handler_local;
static volatile int stop_recursing;

static void overflow_handler(int sig, siginfo_t* si, void* uc) {
  volatile char local = 0;
  overflow_handler_local = (uintptr_t)&local;
  overflow_fault = (uintptr_t)si->si_addr;
  siglongjmp(overflow_jump, 1);
}

static int recurse(int n) {
  volatile char frame[512];
  frame[0] = (char)n;
  overflow_depth = n;
  overflow_lowest = (uintptr_t)frame;
  if (stop_recursing) return 0;
  return recurse(n + 1) + frame[0];
}

static void stack_overflow(void) {
  printf("stack overflow caught on the alternate stack:\n");
  // A bounded stack keeps the overflow quick and the memory small.
  struct rlimit rl;
  REQUIRE(getrlimit(RLIMIT_STACK, &rl) == 0, "getrlimit");
  struct rlimit saved = rl;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1024 * 1024) {
    rl.rlim_cur = 1024 * 1024;
    CHECK_OK(setrlimit(RLIMIT_STACK, &rl));
  }
  install(SIGSEGV, overflow_handler, SA_ONSTACK);
  for (int round = 0; round < 2; round++) {
    overflow_depth = 0;
    overflow_fault = overflow_handler_local = 0;
    if (sigsetjmp(overflow_jump, 1) == 0) {
      recurse(1);
      CHECK(0, "the recursion returned");
    }
    CHECK(overflow_depth > 100, "only %d frames deep", overflow_depth);
    CHECK(on_alt(overflow_handler_local), "the SIGSEGV handler ran at %p, off the alt stack",
          (void*)overflow_handler_local);
    uintptr_t dist = overflow_lowest > overflow_fault ? overflow_lowest - overflow_fault
                                                      : overflow_fault - overflow_lowest;
    CHECK(dist < 64 * 1024, "si_addr %p is far from the deepest frame %p",
          (void*)overflow_fault, (void*)overflow_lowest);
    CHECK(!is_blocked(SIGSEGV), "SIGSEGV still blocked after siglongjmp");
    printf("  round %d: %d frames, SIGSEGV at %p handled on the alternate stack\n", round + 1,
           overflow_depth, (void*)overflow_fault);
  }
  set_default(SIGSEGV);
  setrlimit(RLIMIT_STACK, &saved);
  stack_t off = {.ss_flags = SS_DISABLE};
  CHECK_OK(sigaltstack(&off, NULL));
  free(alt_base);
}

// --- SA_RESTART against EINTR ---

static int restart_pipe[2];
static volatile sig_atomic_t alarms;
static volatile int feed_pipe;

static void on_alarm(int sig, siginfo_t* si, void* uc) {
  alarms++;
  if (feed_pipe) {
    int saved = errno;
    (void)!write(restart_pipe[1], "x", 1);
    errno = saved;
  }
}

static void arm_repeating(long ms) {
  // Repeating, in case the first expiry lands before read() blocks.
  struct itimerval it = {{0, ms * 1000}, {0, ms * 1000}};
  REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer: %s", strerror(errno));
}

static void disarm(void) {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

static void restart_vs_eintr(void) {
  printf("a blocking read interrupted by SIGALRM:\n");
  REQUIRE(pipe(restart_pipe) == 0, "pipe");
  char c;

  install(SIGALRM, on_alarm, 0);
  alarms = 0;
  feed_pipe = 0;
  long long t0 = now_ms();
  arm_repeating(50);
  errno = 0;
  ssize_t n = read(restart_pipe[0], &c, 1);
  int e = errno;
  disarm();
  CHECK(n == -1 && e == EINTR, "without SA_RESTART: read returned %zd errno %d (%s)", n, e,
        strerror(e));
  CHECK(alarms >= 1, "no SIGALRM");
  printf("  without SA_RESTART: -1 EINTR after %lld ms\n", now_ms() - t0);

  install(SIGALRM, on_alarm, SA_RESTART);
  alarms = 0;
  feed_pipe = 1;
  arm_repeating(50);
  errno = 0;
  n = read(restart_pipe[0], &c, 1);
  e = errno;
  disarm();
  feed_pipe = 0;
  CHECK(n == 1 && c == 'x', "with SA_RESTART: read returned %zd errno %d (%s)", n, e,
        strerror(e));
  CHECK(alarms >= 1, "no SIGALRM");
  printf("  with SA_RESTART: the read went on and got the byte the handler wrote\n");
  set_default(SIGALRM);
  close(restart_pipe[0]);
  close(restart_pipe[1]);
}

// --- sigsuspend and sigtimedwait ---

static void waiting(void) {
  printf("sigsuspend:\n");
  install(SIGUSR1, record, 0);
  reset_record();
  sigset_t old;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  sigprocmask(SIG_BLOCK, &s, &old);
  raise(SIGUSR1);
  CHECK(got_count == 0, "delivered while blocked");
  sigset_t during = old;
  sigdelset(&during, SIGUSR1);
  errno = 0;
  int r = sigsuspend(&during);
  CHECK(r == -1 && errno == EINTR, "sigsuspend returned %d errno %d", r, errno);
  CHECK(got_count == 1, "handler ran %d times", (int)got_count);
  CHECK(is_blocked(SIGUSR1), "sigsuspend did not restore the mask");
  printf("  a pending signal: delivered inside, mask restored after\n");

  install(SIGALRM, record, 0);
  block(SIGALRM, SIG_BLOCK);
  reset_record();
  struct itimerval it = {{0, 0}, {0, 30 * 1000}};
  REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
  sigset_t none;
  sigemptyset(&none);
  long long t0 = now_ms();
  errno = 0;
  r = sigsuspend(&none);
  CHECK(r == -1 && errno == EINTR, "sigsuspend returned %d errno %d", r, errno);
  CHECK(got_count == 1 && got_signo == SIGALRM, "handler ran %d times for %d", (int)got_count,
        got_signo);
  CHECK(is_blocked(SIGALRM), "sigsuspend did not restore the mask");
  printf("  a later SIGALRM woke it after %lld ms\n", now_ms() - t0);
  block(SIGALRM, SIG_UNBLOCK);
  set_default(SIGALRM);

  printf("sigtimedwait:\n");
  reset_record();
  raise(SIGUSR1);
  siginfo_t si;
  memset(&si, 0, sizeof si);
  struct timespec one_s = {1, 0};
  r = raw_sigtimedwait(&s, &si, &one_s);
  CHECK(r == SIGUSR1, "rt_sigtimedwait returned %d errno %d", r, errno);
  CHECK(si.si_signo == SIGUSR1 && si.si_code == SI_TKILL && si.si_pid == getpid(),
        "siginfo signo %d code %d pid %d", si.si_signo, si.si_code, (int)si.si_pid);
  CHECK(got_count == 0, "the handler ran for a signal taken by sigtimedwait");
  CHECK(!is_pending(SIGUSR1), "still pending after sigtimedwait took it");
  printf("  took a pending SIGUSR1 with its siginfo; no handler ran\n");

  struct timespec short_wait = {0, 100 * 1000 * 1000};
  t0 = now_ms();
  errno = 0;
  r = sigtimedwait(&s, &si, &short_wait);
  int e = errno;
  long long took = now_ms() - t0;
  CHECK(r == -1 && e == EAGAIN, "sigtimedwait with nothing pending: %d errno %d (%s)", r, e,
        strerror(e));
  CHECK(took >= 95 && took < 3000, "the 100 ms wait took %lld ms", took);
  printf("  nothing pending: -1 EAGAIN after %lld ms\n", took);

  struct timespec zero = {0, 0};
  errno = 0;
  r = sigtimedwait(&s, &si, &zero);
  CHECK(r == -1 && errno == EAGAIN, "a zero timeout: %d errno %d", r, errno);
  sigprocmask(SIG_SETMASK, &old, NULL);
  set_default(SIGUSR1);
}

// --- queued real-time signals ---

struct rt_seen {
  int signo, value, code;
};
static struct rt_seen rt_log[8];
static volatile int rt_count;

static void rt_record(int sig, siginfo_t* si, void* uc) {
  if (rt_count < 8) {
    rt_log[rt_count].signo = sig;
    rt_log[rt_count].value = si->si_value.sival_int;
    rt_log[rt_count].code = si->si_code;
  }
  rt_count++;
}

static void realtime(void) {
  printf("real-time signals queued while blocked:\n");
  int lo = SIGRTMIN, hi = SIGRTMIN + 1;
  CHECK(SIGRTMAX - SIGRTMIN >= 8, "SIGRTMIN %d SIGRTMAX %d", SIGRTMIN, SIGRTMAX);
  sigset_t s, old;
  sigemptyset(&s);
  sigaddset(&s, lo);
  sigaddset(&s, hi);
  // Each handler blocks both, so one handler finishes before the next
  // delivery and the log shows the kernel's order. (Otherwise the second
  // signal's frame would be stacked on the first and run first.)
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = rt_record;
  sa.sa_flags = SA_SIGINFO;
  sa.sa_mask = s;
  REQUIRE(sigaction(lo, &sa, NULL) == 0 && sigaction(hi, &sa, NULL) == 0, "sigaction");
  const struct rt_seen want[4] = {{lo, 1, SI_QUEUE}, {lo, 2, SI_QUEUE}, {lo, 3, SI_QUEUE},
                                  {hi, 4, SI_QUEUE}};

  for (int how = 0; how < 2; how++) {
    sigprocmask(SIG_BLOCK, &s, &old);
    rt_count = 0;
    // The higher-numbered one goes first: delivery order is by number,
    // then by arrival.
    union sigval v;
    v.sival_int = 4;
    CHECK_OK(sigqueue(getpid(), hi, v));
    for (int i = 1; i <= 3; i++) {
      v.sival_int = i;
      CHECK_OK(sigqueue(getpid(), lo, v));
    }
    CHECK(rt_count == 0, "delivered while blocked");
    if (how == 0) {
      sigprocmask(SIG_SETMASK, &old, NULL);
    } else {
      // The same order from rt_sigtimedwait, one at a time.
      struct timespec one_s = {1, 0};
      for (int i = 0; i < 4; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int r = raw_sigtimedwait(&s, &si, &one_s);
        CHECK(r == si.si_signo, "rt_sigtimedwait returned %d for signal %d", r, si.si_signo);
        rt_record(r, &si, NULL);
      }
      sigprocmask(SIG_SETMASK, &old, NULL);
    }
    CHECK(rt_count == 4, "%d deliveries, want 4", rt_count);
    for (int i = 0; i < 4 && i < rt_count; i++)
      CHECK(rt_log[i].signo == want[i].signo && rt_log[i].value == want[i].value &&
                rt_log[i].code == want[i].code,
            "%s %d: signal %d value %d code %d; want %d value %d SI_QUEUE",
            how ? "rt_sigtimedwait" : "delivery", i, rt_log[i].signo, rt_log[i].value,
            rt_log[i].code, want[i].signo, want[i].value);
    printf("  %s: SIGRTMIN x3 (values 1,2,3 in order), then SIGRTMIN+1 (value 4)\n",
           how ? "rt_sigtimedwait" : "handlers");
  }
  set_default(lo);
  set_default(hi);
}

// --- kill() of a process group ---

static volatile int pg_code, pg_pid;

static void pg_record(int sig, siginfo_t* si, void* uc) {
  pg_code = si->si_code;
  pg_pid = si->si_pid;
  got_count++;
}

// Joins (or forms) the group, says it is ready, and waits for SIGUSR1.
// Exit 0: received from the parent by kill(); 1: wrong siginfo; 100+:
// setup failed. The alarm stops it if nothing comes.
static int pgchild_main(int argc, char** argv) {
  if (argc != 4) return 100;
  int fd = atoi(argv[2]);
  pid_t pgid = (pid_t)atoi(argv[3]);
  sigset_t s, old;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  sigprocmask(SIG_BLOCK, &s, &old);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = pg_record;
  sa.sa_flags = SA_SIGINFO;
  if (sigaction(SIGUSR1, &sa, NULL) != 0) return 101;
  if (setpgid(0, pgid) != 0) return 102;
  if (write(fd, "r", 1) != 1) return 103;
  close(fd);
  alarm(10);
  sigdelset(&old, SIGUSR1);
  while (got_count == 0) sigsuspend(&old);
  return pg_code == SI_USER && pg_pid == getppid() ? 0 : 1;
}

static pid_t start_pgchild(const char* self, pid_t pgid) {
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2");
  // The child's end must survive the exec.
  REQUIRE(fcntl(p[1], F_SETFD, 0) == 0, "fcntl");
  char fd_arg[16], pg_arg[16];
  snprintf(fd_arg, sizeof fd_arg, "%d", p[1]);
  snprintf(pg_arg, sizeof pg_arg, "%d", (int)pgid);
  char* const args[] = {(char*)self, "pgchild", fd_arg, pg_arg, NULL};
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    execve(self, args, environ);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  close(p[1]);
  char c = 0;
  ssize_t n = read(p[0], &c, 1);
  CHECK(n == 1 && c == 'r', "child %d never became ready (%zd)", (int)pid, n);
  close(p[0]);
  return pid;
}

static void process_group(const char* self) {
  printf("kill() of a process group:\n");
  pid_t my_pgid = getpgrp();
  pid_t a = start_pgchild(self, 0);
  pid_t b = start_pgchild(self, a);
  CHECK(getpgid(a) == a, "first child's group %d, want %d", (int)getpgid(a), (int)a);
  CHECK(getpgid(b) == a, "second child's group %d, want %d", (int)getpgid(b), (int)a);
  CHECK(getpgrp() == my_pgid, "the parent's group changed");
  // Were the parent in the group, the default action would end it here.
  CHECK(kill(-a, SIGUSR1) == 0, "kill(-%d): %s", (int)a, strerror(errno));
  pid_t kids[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    int status = 0;
    CHECK(waitpid(kids[i], &status, 0) == kids[i], "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "group member %d: status 0x%x (exit 0 = got SIGUSR1 with SI_USER from us)", i,
          status);
  }
  printf("  both members of group %d got SIGUSR1 from one kill(-pgid)\n", (int)a);
  CHECK_ERR(kill(-a, SIGUSR1), ESRCH);
}

int main(int argc, char** argv) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && strcmp(argv[1], "pgchild") == 0) return pgchild_main(argc, argv);
  guest_name = "signals";
  const char* self = self_path(argv[0]);
  siginfo_basics();
  mask_and_pending();
  handler_flags();
  alt_stack();
  stack_overflow();
  restart_vs_eintr();
  waiting();
  realtime();
  process_group(self);
  return guest_finish();
}
