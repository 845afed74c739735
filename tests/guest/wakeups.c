// A signal wakes a thread that is blocked in the kernel: the call fails
// with EINTR (the handler has no SA_RESTART) long before it would have
// returned on its own, and the handler runs on that thread.
//
// usage: wakeups           (the checks)
//        wakeups sleeper   (a child that sleeps, run by the checks)
#include "guest_check.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static volatile pid_t handler_tid;
static volatile int handler_runs;

static void on_signal(int sig) {
  handler_tid = gettid_();
  handler_runs++;
}

// --- the blocking calls, each returning -1 with errno when interrupted ---

static int empty_pipe[2];
static int futex_word;
static pid_t sleeper_pid;
static struct timespec nanosleep_rem;

static long op_read(void) {
  char c;
  return read(empty_pipe[0], &c, 1);
}

static long op_poll(void) {
  struct pollfd p = {.fd = empty_pipe[0], .events = POLLIN};
  return poll(&p, 1, -1);
}

static long op_futex(void) {
  return syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static long op_futex_timed(void) {
  struct timespec ten = {10, 0};
  return syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ten, NULL, 0);
}

static long op_nanosleep(void) {
  struct timespec ten = {10, 0};
  nanosleep_rem.tv_sec = nanosleep_rem.tv_nsec = -1;
  return nanosleep(&ten, &nanosleep_rem);
}

static long op_clock_nanosleep(void) {
  struct timespec ten = {10, 0};
  // Raw, because the libc function returns the error instead of setting
  // errno.
  return syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ten, NULL);
}

static long op_wait4(void) {
  int status;
  return wait4(sleeper_pid, &status, 0, NULL);
}

static long op_pause(void) { return pause(); }

// --- running one of them on a thread and interrupting it ---

struct blocker {
  long (*op)(void);
  volatile int started, done;
  pid_t tid;
  long result;
  int err;
  long long took_ms;
};

static void* blocker_main(void* arg) {
  struct blocker* b = arg;
  // The creating thread may be blocking the signal; this one must not.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
  b->tid = gettid_();
  __atomic_store_n(&b->started, 1, __ATOMIC_RELEASE);
  long long t0 = now_ms();
  errno = 0;
  b->result = b->op();
  b->err = errno;
  b->took_ms = now_ms() - t0;
  __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

// process_directed: kill() the whole process, with this thread blocking
// the signal, so the kernel has to pick the blocked thread.
static void interrupt(const char* name, long (*op)(void), int process_directed) {
  // On the heap: a thread that cannot be woken is left behind, still
  // pointing at it.
  struct blocker* b = calloc(1, sizeof *b);
  REQUIRE(b, "calloc");
  b->op = op;
  handler_tid = 0;
  handler_runs = 0;
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  if (process_directed) pthread_sigmask(SIG_BLOCK, &usr1, &old);

  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, blocker_main, b) == 0, "pthread_create");
  while (!__atomic_load_n(&b->started, __ATOMIC_ACQUIRE)) sleep_ms(1);
  // Time to get into the call. If a signal still comes too early it is
  // simply handled, and the next one, 50 ms later, does the interrupting.
  sleep_ms(100);
  long long start = now_ms();
  int sent = 0;
  while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) && now_ms() - start < 3000) {
    if (process_directed)
      kill(getpid(), SIGUSR1);
    else
      pthread_kill(t, SIGUSR1);
    sent++;
    sleep_ms(50);
  }
  if (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) {
    CHECK(0, "%s: still blocked 3 s after the first signal (%d sent)", name, sent);
    // Unstick it by other means where there are any.
    if (op == op_read || op == op_poll) (void)!write(empty_pipe[1], "x", 1);
    if (op == op_futex || op == op_futex_timed) {
      futex_word = 1;
      syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    if (op == op_wait4) kill(sleeper_pid, SIGKILL);
    for (int i = 0; i < 20 && !__atomic_load_n(&b->done, __ATOMIC_ACQUIRE); i++) sleep_ms(50);
    if (op == op_read || op == op_poll) {
      char c;
      fcntl(empty_pipe[0], F_SETFL, O_NONBLOCK);
      while (read(empty_pipe[0], &c, 1) > 0) {
      }
      fcntl(empty_pipe[0], F_SETFL, 0);
    }
    futex_word = 0;
  }
  if (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) {
    // Left blocked; exit_group() ends it with the program.
    pthread_detach(t);
    if (process_directed) pthread_sigmask(SIG_SETMASK, &old, NULL);
    printf("  %-38s -> still blocked, abandoned\n", name);
    return;
  }
  pthread_join(t, NULL);
  if (process_directed) pthread_sigmask(SIG_SETMASK, &old, NULL);

  CHECK(b->result == -1 && b->err == EINTR, "%s: returned %ld errno %d (%s), want -1 EINTR",
        name, b->result, b->err, strerror(b->err));
  CHECK(b->took_ms < 3000, "%s: took %lld ms", name, b->took_ms);
  CHECK(handler_runs >= 1 && handler_tid == b->tid, "%s: handler ran %d times, last on %d, "
        "want the blocked thread %d", name, handler_runs, (int)handler_tid, (int)b->tid);
  printf("  %-38s -> %s after %lld ms (%d signal%s)\n", name,
         b->result == -1 && b->err == EINTR ? "-1 EINTR" : "wrong result", b->took_ms, sent,
         sent == 1 ? "" : "s");
  free(b);
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
  if (argc > 1 && strcmp(argv[1], "sleeper") == 0) {
    alarm(60);
    for (;;) sleep(10);
  }
  guest_name = "wakeups";
  const char* self = self_path(argv[0]);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = 0;  // no SA_RESTART: interrupted calls fail with EINTR
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
  REQUIRE(pipe(empty_pipe) == 0, "pipe");

  printf("blocked threads woken by pthread_kill:\n");
  interrupt("read() on an empty pipe", op_read, 0);
  interrupt("poll() on an empty pipe, no timeout", op_poll, 0);
  interrupt("futex(FUTEX_WAIT), no timeout", op_futex, 0);
  interrupt("futex(FUTEX_WAIT), 10 s timeout", op_futex_timed, 0);
  interrupt("nanosleep(10 s)", op_nanosleep, 0);
  CHECK(nanosleep_rem.tv_sec >= 5 && nanosleep_rem.tv_sec < 10 && nanosleep_rem.tv_nsec >= 0 &&
            nanosleep_rem.tv_nsec < 1000000000L,
        "nanosleep's remaining time %ld.%09ld, want 5..10 s", (long)nanosleep_rem.tv_sec,
        nanosleep_rem.tv_nsec);
  interrupt("clock_nanosleep(MONOTONIC, 10 s)", op_clock_nanosleep, 0);
  interrupt("pause()", op_pause, 0);

  char* const args[] = {(char*)self, "sleeper", NULL};
  fflush(stdout);
  sleeper_pid = vfork();
  if (sleeper_pid == 0) {
    execve(self, args, environ);
    _exit(127);
  }
  REQUIRE(sleeper_pid > 0, "vfork: %s", strerror(errno));
  interrupt("wait4() on a sleeping child", op_wait4, 0);
  kill(sleeper_pid, SIGKILL);
  int status = 0;
  CHECK(waitpid(sleeper_pid, &status, 0) == sleeper_pid, "waitpid: %s", strerror(errno));
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
        "the sleeper's status %#x, want SIGKILL", status);

  printf("a process-directed kill() finds the one thread not blocking it:\n");
  interrupt("read() on an empty pipe", op_read, 1);
  interrupt("futex(FUTEX_WAIT), no timeout", op_futex, 1);
  return guest_finish();
}
