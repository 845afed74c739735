// Sleeping, alarms, interval timers, POSIX timers (to the process, to one
// thread, and through a libc notification thread), and CPU time
// accounting. Sleeps are checked to last at least what was asked; upper
// bounds are loose, for loaded machines.
//
// usage: timers          (the checks)
//        timers burn MS  (a child that uses MS ms of CPU, run by the checks)
#include "guest_check.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

extern char** environ;

#define MS 1000000LL

static long long ns_of(const struct timespec* t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

static long long clock_ns(clockid_t id) {
  struct timespec t;
  if (clock_gettime(id, &t) != 0) return -1;
  return ns_of(&t);
}

static long long mono_ms(void) { return clock_ns(CLOCK_MONOTONIC) / MS; }

static struct timespec ts_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * MS};
  return t;
}

static long long tv_us(const struct timeval* t) { return t->tv_sec * 1000000LL + t->tv_usec; }

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

// Spins until this thread has used ms more of CPU time, nearly all of it
// in user mode: reading the clock is a system call, so it is done rarely.
static void burn_cpu(long ms) {
  long long until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ms * MS;
  volatile unsigned long x = 1;
  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
    for (int i = 0; i < 200000; i++) x = x * 6364136223846793005UL + 1;
}

// --- sleeping ---

static void sleeps(void) {
  printf("nanosleep and clock_nanosleep:\n");
  struct timespec req = ts_ms(50);
  long long t0 = clock_ns(CLOCK_MONOTONIC);
  CHECK(nanosleep(&req, NULL) == 0, "nanosleep: %s", strerror(errno));
  long long took = clock_ns(CLOCK_MONOTONIC) - t0;
  CHECK(took >= 50 * MS && took < 3000 * MS, "nanosleep(50 ms) took %lld ns", took);
  printf("  nanosleep(50 ms): %lld ms\n", took / MS);

  t0 = clock_ns(CLOCK_MONOTONIC);
  int r = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL);
  took = clock_ns(CLOCK_MONOTONIC) - t0;
  CHECK(r == 0, "clock_nanosleep relative: %s", strerror(r));
  CHECK(took >= 50 * MS && took < 3000 * MS, "clock_nanosleep(50 ms) took %lld ns", took);
  printf("  clock_nanosleep(MONOTONIC, 50 ms): %lld ms\n", took / MS);

  static const clockid_t abs_clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME};
  static const char* const abs_names[] = {"MONOTONIC", "REALTIME", "BOOTTIME"};
  for (int i = 0; i < 3; i++) {
    clockid_t c = abs_clocks[i];
    struct timespec target;
    clock_gettime(c, &target);
    target.tv_nsec += 50 * MS;
    if (target.tv_nsec >= 1000 * MS) {
      target.tv_sec++;
      target.tv_nsec -= 1000 * MS;
    }
    r = clock_nanosleep(c, TIMER_ABSTIME, &target, NULL);
    CHECK(r == 0, "clock_nanosleep %s TIMER_ABSTIME: %s", abs_names[i], strerror(r));
    long long now = clock_ns(c);
    CHECK(now >= ns_of(&target), "%s TIMER_ABSTIME woke %lld ns early", abs_names[i],
          ns_of(&target) - now);
    printf("  clock_nanosleep(%s, TIMER_ABSTIME, now + 50 ms): woke after the target\n",
           abs_names[i]);
  }

  struct timespec past;
  clock_gettime(CLOCK_MONOTONIC, &past);
  past.tv_sec -= 10;
  t0 = mono_ms();
  r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL);
  CHECK(r == 0 && mono_ms() - t0 < 1000, "a deadline in the past: %d after %lld ms", r,
        mono_ms() - t0);
  printf("  a TIMER_ABSTIME deadline in the past returns at once\n");

  struct timespec bad = {0, 1000 * MS};
  CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &bad, NULL), EINVAL);
  // Sleeping on a thread's CPU clock is refused: EINVAL on older kernels,
  // EOPNOTSUPP on newer ones.
  errno = 0;
  long rr = syscall(SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, &req, NULL);
  CHECK(rr == -1 && (errno == EINVAL || errno == EOPNOTSUPP),
        "clock_nanosleep on CLOCK_THREAD_CPUTIME_ID: %ld errno %d (%s)", rr, errno,
        strerror(errno));
  bad.tv_sec = -1;
  bad.tv_nsec = 0;
  CHECK_ERR(syscall(SYS_nanosleep, &bad, NULL), EINVAL);
}

// --- alarm and interval timers ---

static volatile sig_atomic_t alarms, vtalarms, profs;

static void on_alarm(int sig) {
  if (sig == SIGALRM) alarms++;
  if (sig == SIGVTALRM) vtalarms++;
  if (sig == SIGPROF) profs++;
}

static void install_plain(int sig, void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(sig, &sa, NULL) == 0, "sigaction");
}

// Short sleeps rather than sigsuspend, so a signal that never comes costs
// limit_ms instead of a hang.
static int wait_for_count(volatile sig_atomic_t* counter, int want, long limit_ms) {
  long long start = mono_ms();
  while (*counter < want && mono_ms() - start < limit_ms) {
    struct timespec tick = ts_ms(5);
    nanosleep(&tick, NULL);
  }
  return *counter >= want;
}

static void alarms_and_itimers(void) {
  printf("alarm:\n");
  install_plain(SIGALRM, on_alarm);
  CHECK(alarm(0) == 0, "an alarm was already set");
  alarms = 0;
  long long t0 = mono_ms();
  alarm(1);
  wait_for_count(&alarms, 1, 5000);
  long long took = mono_ms() - t0;
  CHECK(alarms == 1, "alarm(1): %d SIGALRMs", (int)alarms);
  CHECK(took >= 990 && took < 3000, "alarm(1) fired after %lld ms", took);
  printf("  alarm(1): SIGALRM after %lld ms\n", took);
  alarm(5);
  unsigned left = alarm(0);
  CHECK(left == 5 || left == 4, "alarm(0) right after alarm(5) returned %u", left);
  struct itimerval it;
  CHECK(getitimer(ITIMER_REAL, &it) == 0 && tv_us(&it.it_value) == 0,
        "alarm(0) left ITIMER_REAL armed");
  printf("  alarm(5) then alarm(0): %u s were left, timer disarmed\n", left);

  printf("setitimer and getitimer:\n");
  struct itimerval one = {{0, 0}, {0, 300 * 1000}}, old;
  CHECK_OK(setitimer(ITIMER_REAL, &one, NULL));
  CHECK_OK(getitimer(ITIMER_REAL, &it));
  CHECK(tv_us(&it.it_value) > 0 && tv_us(&it.it_value) <= 300 * 1000 &&
            tv_us(&it.it_interval) == 0,
        "getitimer: value %lld us interval %lld us", tv_us(&it.it_value),
        tv_us(&it.it_interval));
  struct itimerval off = {{0, 0}, {0, 0}};
  CHECK_OK(setitimer(ITIMER_REAL, &off, &old));
  CHECK(tv_us(&old.it_value) > 0 && tv_us(&old.it_value) <= 300 * 1000,
        "setitimer's old value %lld us", tv_us(&old.it_value));
  printf("  a 300 ms one-shot reads back between 0 and 300 ms, and as the old value\n");

  alarms = 0;
  struct itimerval periodic = {{0, 20 * 1000}, {0, 20 * 1000}};
  t0 = mono_ms();
  CHECK_OK(setitimer(ITIMER_REAL, &periodic, NULL));
  CHECK_OK(getitimer(ITIMER_REAL, &it));
  CHECK(tv_us(&it.it_interval) == 20 * 1000, "interval reads back as %lld us",
        tv_us(&it.it_interval));
  int ok = wait_for_count(&alarms, 5, 3000);
  took = mono_ms() - t0;
  setitimer(ITIMER_REAL, &off, NULL);
  CHECK(ok, "only %d SIGALRMs from a 20 ms interval timer in 3 s", (int)alarms);
  CHECK(took >= 95, "5 periods of 20 ms took %lld ms", took);
  CHECK_OK(getitimer(ITIMER_REAL, &it));
  CHECK(tv_us(&it.it_value) == 0 && tv_us(&it.it_interval) == 0, "not disarmed");
  printf("  a 20 ms interval timer: 5 SIGALRMs in %lld ms, then disarmed\n", took);

  // The CPU-time timers only advance while this process runs.
  install_plain(SIGVTALRM, on_alarm);
  install_plain(SIGPROF, on_alarm);
  vtalarms = profs = 0;
  struct itimerval cpu50 = {{0, 0}, {0, 50 * 1000}};
  CHECK_OK(setitimer(ITIMER_VIRTUAL, &cpu50, NULL));
  CHECK_OK(setitimer(ITIMER_PROF, &cpu50, NULL));
  t0 = mono_ms();
  while ((vtalarms == 0 || profs == 0) && mono_ms() - t0 < 3000) burn_cpu(5);
  CHECK(vtalarms == 1, "ITIMER_VIRTUAL: %d SIGVTALRMs", (int)vtalarms);
  CHECK(profs == 1, "ITIMER_PROF: %d SIGPROFs", (int)profs);
  printf("  ITIMER_VIRTUAL and ITIMER_PROF fired after 50 ms of CPU\n");
  setitimer(ITIMER_VIRTUAL, &off, NULL);
  setitimer(ITIMER_PROF, &off, NULL);
  CHECK_ERR(syscall(SYS_setitimer, 7, &off, NULL), EINVAL);
  signal(SIGALRM, SIG_DFL);
  signal(SIGVTALRM, SIG_DFL);
  signal(SIGPROF, SIG_DFL);
}

// --- POSIX timers ---

static volatile sig_atomic_t timer_hits;
static volatile int timer_code, timer_value, timer_overrun_si, timer_overrun_call;
static volatile pid_t timer_tid;
static timer_t current_timer;

static void on_timer(int sig, siginfo_t* si, void* uc) {
  timer_code = si->si_code;
  timer_value = si->si_value.sival_int;
  if (timer_hits == 0) {
    timer_overrun_si = si->si_overrun;
    timer_overrun_call = timer_getoverrun(current_timer);
  }
  timer_tid = gettid_();
  timer_hits++;
}

static void install_info(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_timer;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(sig, &sa, NULL) == 0, "sigaction");
}

static void posix_timers(void) {
  printf("timer_create (CLOCK_MONOTONIC, SIGEV_SIGNAL):\n");
  int sig = SIGRTMIN + 2;
  install_info(sig);
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_SIGNAL;
  sev.sigev_signo = sig;
  sev.sigev_value.sival_int = 1234;
  timer_t t;
  REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &t) == 0, "timer_create: %s", strerror(errno));
  current_timer = t;

  struct itimerspec spec, got;
  memset(&spec, 0, sizeof spec);
  spec.it_value = ts_ms(50);
  timer_hits = 0;
  long long t0 = mono_ms();
  CHECK_OK(timer_settime(t, 0, &spec, NULL));
  CHECK_OK(timer_gettime(t, &got));
  CHECK(ns_of(&got.it_value) > 0 && ns_of(&got.it_value) <= 50 * MS &&
            ns_of(&got.it_interval) == 0,
        "timer_gettime: value %lld ns interval %lld ns", ns_of(&got.it_value),
        ns_of(&got.it_interval));
  int ok = wait_for_count(&timer_hits, 1, 3000);
  long long took = mono_ms() - t0;
  CHECK(ok, "the 50 ms timer never fired");
  CHECK(took >= 49, "fired after %lld ms", took);
  CHECK(timer_code == SI_TIMER && timer_value == 1234, "si_code %d si_value %d", timer_code,
        timer_value);
  CHECK_OK(timer_gettime(t, &got));
  CHECK(ns_of(&got.it_value) == 0, "a fired one-shot still has %lld ns", ns_of(&got.it_value));
  printf("  one-shot 50 ms: fired after %lld ms, SI_TIMER, si_value 1234, then disarmed\n",
         took);

  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  memset(&spec, 0, sizeof spec);
  spec.it_value = now;
  spec.it_value.tv_nsec += 30 * MS;
  if (spec.it_value.tv_nsec >= 1000 * MS) {
    spec.it_value.tv_sec++;
    spec.it_value.tv_nsec -= 1000 * MS;
  }
  timer_hits = 0;
  CHECK_OK(timer_settime(t, TIMER_ABSTIME, &spec, NULL));
  ok = wait_for_count(&timer_hits, 1, 3000);
  CHECK(ok && clock_ns(CLOCK_MONOTONIC) >= ns_of(&spec.it_value),
        "the TIMER_ABSTIME timer fired %d times, or early", (int)timer_hits);
  printf("  TIMER_ABSTIME now + 30 ms: fired, not early\n");

  // Expirations while the signal waits are counted, not queued.
  sigset_t s, old;
  sigemptyset(&s);
  sigaddset(&s, sig);
  sigprocmask(SIG_BLOCK, &s, &old);
  memset(&spec, 0, sizeof spec);
  spec.it_value = ts_ms(10);
  spec.it_interval = ts_ms(10);
  timer_hits = 0;
  CHECK_OK(timer_settime(t, 0, &spec, NULL));
  struct timespec wait = ts_ms(120);
  nanosleep(&wait, NULL);
  CHECK(timer_hits == 0, "delivered while blocked");
  // Unblocked while still armed: newer kernels drop a pending signal of a
  // timer that has been re-armed or disarmed since.
  sigprocmask(SIG_SETMASK, &old, NULL);
  memset(&spec, 0, sizeof spec);
  CHECK_OK(timer_settime(t, 0, &spec, &got));
  CHECK(ns_of(&got.it_interval) == 10 * MS, "old interval %lld ns", ns_of(&got.it_interval));
  CHECK(timer_hits >= 1, "a periodic timer's signal was not delivered at unblock");
  CHECK(timer_overrun_si >= 5 && timer_overrun_call == timer_overrun_si,
        "overrun: si_overrun %d, timer_getoverrun %d; want >= 5 and equal", timer_overrun_si,
        timer_overrun_call);
  printf("  10 ms periodic, blocked for 120 ms: one signal, overrun %d\n", timer_overrun_si);

  CHECK_OK(timer_delete(t));
  signal(sig, SIG_DFL);

  // Raw calls for the kernel's own timer ids.
  int kid = -1;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_NONE;
  CHECK_OK(syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &kid));
  memset(&spec, 0, sizeof spec);
  spec.it_value = ts_ms(1000);
  CHECK_OK(syscall(SYS_timer_settime, kid, 0, &spec, NULL));
  CHECK_OK(syscall(SYS_timer_gettime, kid, &got));
  CHECK(ns_of(&got.it_value) > 0 && ns_of(&got.it_value) <= 1000 * MS,
        "SIGEV_NONE timer reads %lld ns", ns_of(&got.it_value));
  CHECK_OK(syscall(SYS_timer_delete, kid));
  CHECK_ERR(syscall(SYS_timer_gettime, kid, &got), EINVAL);
  CHECK_ERR(syscall(SYS_timer_delete, kid), EINVAL);
  CHECK_ERR(syscall(SYS_timer_create, (clockid_t)1000, &sev, &kid), EINVAL);
  printf("  SIGEV_NONE timer counts down; deleted ids are EINVAL\n");
}

// The kernel's struct sigevent, so SIGEV_THREAD_ID needs no libc support.
struct ksigevent {
  union sigval value;
  int signo;
  int notify;
  int tid;
  int pad[11];
};
_Static_assert(sizeof(struct ksigevent) == 64, "the kernel's sigevent is 64 bytes");

static volatile int worker_stop;
static volatile pid_t worker_tid;

static void* worker(void* arg) {
  worker_tid = gettid_();
  while (!worker_stop) {
    struct timespec t = ts_ms(2);
    nanosleep(&t, NULL);
  }
  return arg;
}

static void thread_timers(void) {
  printf("timer_create SIGEV_THREAD_ID (raw syscall):\n");
  install_info(SIGUSR2);
  worker_stop = 0;
  worker_tid = 0;
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, worker, NULL) == 0, "pthread_create");
  while (worker_tid == 0) {
    struct timespec t = ts_ms(1);
    nanosleep(&t, NULL);
  }
  struct ksigevent ks;
  memset(&ks, 0, sizeof ks);
  ks.notify = SIGEV_THREAD_ID;
  ks.signo = SIGUSR2;
  ks.value.sival_int = 77;
  ks.tid = worker_tid;
  int kid = -1;
  CHECK_OK(syscall(SYS_timer_create, CLOCK_MONOTONIC, &ks, &kid));
  struct itimerspec spec;
  memset(&spec, 0, sizeof spec);
  spec.it_value = ts_ms(30);
  timer_hits = 0;
  timer_tid = 0;
  CHECK_OK(syscall(SYS_timer_settime, kid, 0, &spec, NULL));
  // This thread sleeps too, so a process-wide signal could land here.
  long long t0 = mono_ms();
  while (timer_hits == 0 && mono_ms() - t0 < 3000) {
    struct timespec t = ts_ms(2);
    nanosleep(&t, NULL);
  }
  CHECK(timer_hits == 1, "the timer fired %d times", (int)timer_hits);
  CHECK(timer_tid == worker_tid, "the signal went to thread %d, not the target %d",
        (int)timer_tid, (int)worker_tid);
  CHECK(timer_code == SI_TIMER && timer_value == 77, "si_code %d si_value %d", timer_code,
        timer_value);
  CHECK_OK(syscall(SYS_timer_delete, kid));
  printf("  delivered to the chosen thread %d with SI_TIMER and si_value 77\n",
         (int)worker_tid);

  // A thread outside this process (none has this id) is refused.
  ks.tid = 0x3fffffff;
  CHECK_ERR(syscall(SYS_timer_create, CLOCK_MONOTONIC, &ks, &kid), EINVAL);
  worker_stop = 1;
  pthread_join(th, NULL);
  signal(SIGUSR2, SIG_DFL);
}

static volatile int notified;
static volatile pid_t notified_tid;
static void* volatile notified_ptr;

static void notify_fn(union sigval v) {
  notified_ptr = v.sival_ptr;
  notified_tid = gettid_();
  __atomic_store_n(&notified, 1, __ATOMIC_RELEASE);
}

static void libc_thread_timer(void) {
  printf("timer_create SIGEV_THREAD (libc's notification thread):\n");
  static int cookie;
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD;
  sev.sigev_notify_function = notify_fn;
  sev.sigev_value.sival_ptr = &cookie;
  timer_t t;
  int r = timer_create(CLOCK_MONOTONIC, &sev, &t);
  CHECK(r == 0, "timer_create SIGEV_THREAD: %s", strerror(errno));
  if (r != 0) return;
  struct itimerspec spec;
  memset(&spec, 0, sizeof spec);
  spec.it_value = ts_ms(20);
  CHECK_OK(timer_settime(t, 0, &spec, NULL));
  long long t0 = mono_ms();
  while (!__atomic_load_n(&notified, __ATOMIC_ACQUIRE) && mono_ms() - t0 < 3000) {
    struct timespec w = ts_ms(2);
    nanosleep(&w, NULL);
  }
  CHECK(notified, "the notification function never ran");
  CHECK(notified_ptr == &cookie, "sival_ptr %p, want %p", notified_ptr, (void*)&cookie);
  CHECK(notified_tid != gettid_() && notified_tid > 0, "it ran on thread %d (main is %d)",
        (int)notified_tid, (int)gettid_());
  CHECK_OK(timer_delete(t));
  printf("  the function ran on another thread with the given sival_ptr\n");
}

// --- CPU time accounting ---

static pid_t start_burner(const char* self, int ms) {
  char arg[16];
  snprintf(arg, sizeof arg, "%d", ms);
  char* const args[] = {(char*)self, "burn", arg, NULL};
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    execve(self, args, environ);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  return pid;
}

static void accounting(const char* self) {
  printf("CPU time: times, getrusage, CPU clocks:\n");
  long tck = sysconf(_SC_CLK_TCK);
  CHECK(tck > 0, "_SC_CLK_TCK %ld", tck);
  struct tms a, b;
  struct rusage ra, rb, rta, rtb;
  clock_t w0 = times(&a);
  CHECK(w0 != (clock_t)-1, "times: %s", strerror(errno));
  CHECK_OK(getrusage(RUSAGE_SELF, &ra));
  CHECK_OK(getrusage(RUSAGE_THREAD, &rta));
  long long p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), th0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  burn_cpu(300);
  long long p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), th1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  CHECK_OK(getrusage(RUSAGE_SELF, &rb));
  CHECK_OK(getrusage(RUSAGE_THREAD, &rtb));
  clock_t w1 = times(&b);

  CHECK(th1 - th0 >= 300 * MS, "thread CPU clock grew %lld ns", th1 - th0);
  CHECK(p1 - p0 >= 300 * MS, "process CPU clock grew %lld ns", p1 - p0);
  long long utime = tv_us(&rb.ru_utime) - tv_us(&ra.ru_utime);
  long long tutime = tv_us(&rtb.ru_utime) - tv_us(&rta.ru_utime);
  // Generous: the split between user and system time may be sampled.
  CHECK(utime >= 150 * 1000, "RUSAGE_SELF utime grew %lld us over 300 ms of CPU", utime);
  CHECK(tutime >= 150 * 1000, "RUSAGE_THREAD utime grew %lld us over 300 ms of CPU", tutime);
  long tms_grew = (long)(b.tms_utime + b.tms_stime - a.tms_utime - a.tms_stime);
  CHECK(tms_grew >= 15 * tck / 100, "times() user+system grew %ld ticks of %ld/s", tms_grew,
        tck);
  CHECK(w1 - w0 >= 20 * tck / 100, "times() return value grew %ld ticks over >= 300 ms",
        (long)(w1 - w0));
  printf("  300 ms of CPU: utime +%lld ms (thread +%lld ms), times() +%ld ticks\n",
         utime / 1000, tutime / 1000, tms_grew);

  struct rusage rc0, rc1;
  CHECK_OK(getrusage(RUSAGE_CHILDREN, &rc0));
  pid_t pid = start_burner(self, 200);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "burner status %#x", status);
  CHECK_OK(getrusage(RUSAGE_CHILDREN, &rc1));
  long long child = tv_us(&rc1.ru_utime) + tv_us(&rc1.ru_stime) - tv_us(&rc0.ru_utime) -
                    tv_us(&rc0.ru_stime);
  CHECK(child >= 100 * 1000, "RUSAGE_CHILDREN grew %lld us after a child used 200 ms", child);
  struct tms c;
  times(&c);
  CHECK(c.tms_cutime + c.tms_cstime >= 10 * tck / 100, "times() child time %ld ticks",
        (long)(c.tms_cutime + c.tms_cstime));
  printf("  a reaped child's 200 ms of CPU: RUSAGE_CHILDREN +%lld ms\n", child / 1000);
  CHECK_ERR(syscall(SYS_getrusage, 12345, &rc1), EINVAL);
}

static void resolutions(void) {
  printf("clock_getres:\n");
  static const clockid_t fine[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME,
                                   CLOCK_MONOTONIC_RAW, CLOCK_PROCESS_CPUTIME_ID,
                                   CLOCK_THREAD_CPUTIME_ID};
  static const char* const fine_names[] = {"REALTIME", "MONOTONIC", "BOOTTIME",
                                           "MONOTONIC_RAW", "PROCESS_CPUTIME_ID",
                                           "THREAD_CPUTIME_ID"};
  for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
    struct timespec res = {-1, -1};
    CHECK(clock_getres(fine[i], &res) == 0, "clock_getres %s: %s", fine_names[i],
          strerror(errno));
    CHECK(res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 1 * MS,
          "%s resolution %ld.%09ld", fine_names[i], (long)res.tv_sec, res.tv_nsec);
    printf("  %-20s %ld ns\n", fine_names[i], res.tv_nsec);
  }
  static const clockid_t coarse[] = {CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE};
  for (size_t i = 0; i < 2; i++) {
    struct timespec res = {-1, -1};
    CHECK_OK(clock_getres(coarse[i], &res));
    CHECK(res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 20 * MS,
          "coarse clock %d resolution %ld.%09ld", (int)coarse[i], (long)res.tv_sec,
          res.tv_nsec);
    printf("  %-20s %ld ns\n", i ? "MONOTONIC_COARSE" : "REALTIME_COARSE", res.tv_nsec);
  }
  CHECK_OK(syscall(SYS_clock_getres, CLOCK_MONOTONIC, NULL));
  CHECK_ERR(syscall(SYS_clock_getres, (clockid_t)1000, NULL), EINVAL);
}

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

int main(int argc, char** argv) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 3 && strcmp(argv[1], "burn") == 0) {
    burn_cpu(atoi(argv[2]));
    return 0;
  }
  guest_name = "timers";
  sleeps();
  alarms_and_itimers();
  posix_timers();
  thread_timers();
  libc_thread_timer();
  accounting(self_path(argv[0]));
  resolutions();
  return guest_finish();
}
