// Bad user pointers given to the process, thread, signal and timer calls
// fail with EFAULT (or whatever Linux does instead, noted where it
// differs) and never crash the program. Raw syscall() keeps libc from
// checking or dereferencing the pointers first.
#include "guest_check.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_VM
#define CLONE_VM 0x00000100
#define CLONE_VFORK 0x00004000
#define CLONE_PARENT_SETTID 0x00100000
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

#define KSIGSET 8  // the kernel's sigset_t size on x86_64

static char* hole;  // a page that was mapped and is not any more

// A vfork-style clone whose child exits at once with code 42, written so
// that the child touches no memory: it shares the parent's stack.
static long clone_and_exit42(unsigned long flags, void* ptid) {
  long ret;
  register long r10 __asm__("r10") = 0;  // child_tid
  register long r8 __asm__("r8") = 0;    // tls
  __asm__ volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "mov $60, %%eax\n\t"
      "mov $42, %%edi\n\t"
      "syscall\n\t"
      "1:"
      : "=a"(ret)
      : "0"((long)SYS_clone), "D"(flags), "S"(0L), "d"(ptid), "r"(r10), "r"(r8)
      : "rcx", "r11", "memory");
  return ret;
}

// A child that has already exited, to be waited for.
static pid_t exited_child(void) {
  pid_t pid = vfork();
  if (pid == 0) _exit(5);
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  return pid;
}

static void waits(void) {
  printf("wait4 and waitid:\n");
  pid_t pid = exited_child();
  CHECK_ERR(syscall(SYS_wait4, pid, (int*)1, 0, NULL), EFAULT);
  // Linux reaps the child before it fails to store the status.
  CHECK_ERR(waitpid(pid, NULL, WNOHANG), ECHILD);

  pid = exited_child();
  CHECK_ERR(syscall(SYS_wait4, pid, (int*)hole, 0, NULL), EFAULT);
  CHECK_ERR(waitpid(pid, NULL, WNOHANG), ECHILD);

  pid = exited_child();
  int status = 0;
  CHECK_ERR(syscall(SYS_wait4, pid, &status, 0, (struct rusage*)1), EFAULT);
  CHECK_ERR(waitpid(pid, NULL, WNOHANG), ECHILD);

  pid = exited_child();
  CHECK_ERR(syscall(SYS_waitid, P_PID, pid, (siginfo_t*)1, WEXITED, NULL), EFAULT);
  CHECK_ERR(waitpid(pid, NULL, WNOHANG), ECHILD);

  // With no child to reap, the bad pointer is never reached.
  CHECK_ERR(syscall(SYS_wait4, -1, (int*)1, 0, NULL), ECHILD);
}

static void handler(int sig) {}

static void signal_calls(void) {
  printf("signal calls:\n");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
  char* const bad[] = {(char*)1, hole};
  for (int i = 0; i < 2; i++) {
    void* b = bad[i];
    printf(" %s:\n", i == 0 ? "(void*)1" : "unmapped page");
    CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, b, NULL, KSIGSET), EFAULT);
    CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, NULL, b, KSIGSET), EFAULT);
    CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, b, NULL, KSIGSET), EFAULT);
    CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, b, KSIGSET), EFAULT);
    CHECK_ERR(syscall(SYS_rt_sigpending, b, KSIGSET), EFAULT);
    CHECK_ERR(syscall(SYS_sigaltstack, b, NULL), EFAULT);
    CHECK_ERR(syscall(SYS_sigaltstack, NULL, b), EFAULT);
    struct timespec zero = {0, 0};
    CHECK_ERR(syscall(SYS_rt_sigtimedwait, b, NULL, &zero, KSIGSET), EFAULT);
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_ERR(syscall(SYS_rt_sigtimedwait, &usr2, NULL, b, KSIGSET), EFAULT);
    CHECK_ERR(syscall(SYS_rt_sigsuspend, b, KSIGSET), EFAULT);
    CHECK_ERR(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, b), EFAULT);
    CHECK_ERR(syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGUSR1, b),
              EFAULT);
  }
  // Nothing changed on the way.
  struct sigaction now;
  sigaction(SIGUSR1, NULL, &now);
  CHECK(now.sa_handler == handler, "the SIGUSR1 handler changed");
  sigset_t mask;
  sigprocmask(SIG_BLOCK, NULL, &mask);
  CHECK(!sigismember(&mask, SIGUSR1), "SIGUSR1 became blocked");
  stack_t ss;
  CHECK(sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_DISABLE), "an alt stack appeared");
  signal(SIGUSR1, SIG_DFL);
}

static void futexes(void) {
  printf("futex:\n");
  // Linux checks alignment before the address itself.
  CHECK_ERR(syscall(SYS_futex, (int*)1, FUTEX_WAIT, 0, NULL, NULL, 0), EINVAL);
  CHECK_ERR(syscall(SYS_futex, (int*)1, FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
  CHECK_ERR(syscall(SYS_futex, (int*)hole, FUTEX_WAIT, 0, NULL, NULL, 0), EFAULT);
  CHECK_ERR(syscall(SYS_futex, (int*)hole, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EFAULT);
  // A shared futex is looked up by its page, which is missing.
  CHECK_ERR(syscall(SYS_futex, (int*)hole, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
  // A private wake needs only the address as a key: nothing to fault on.
  long r = syscall(SYS_futex, (int*)hole, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  CHECK(r == 0, "FUTEX_WAKE_PRIVATE on an unmapped page: %ld errno %d", r, errno);
  printf("  %-60s -> 0\n", "FUTEX_WAKE_PRIVATE on an unmapped page");
  static int word = 0;
  CHECK_ERR(syscall(SYS_futex, &word, FUTEX_WAIT, 0, (struct timespec*)1, NULL, 0), EFAULT);
  CHECK_ERR(syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, (struct timespec*)hole, NULL, 0),
            EFAULT);
}

static void pipes(void) {
  printf("pipe2:\n");
  int probe = dup(0);
  REQUIRE(probe >= 0, "dup");
  close(probe);
  CHECK_ERR(syscall(SYS_pipe2, (int*)1, 0), EFAULT);
  CHECK_ERR(syscall(SYS_pipe2, (int*)hole, O_CLOEXEC), EFAULT);
  CHECK_ERR(syscall(SYS_pipe, (int*)1), EFAULT);
  // The descriptors made before the copy failed were closed again.
  int again = dup(0);
  CHECK(again == probe, "lowest free descriptor was %d, now %d: pipe2 leaked", probe, again);
  close(again);
}

static void clones(void) {
  printf("clone and clone3:\n");
  // Linux creates the child and ignores a failed store to parent_tid.
  unsigned long flags = CLONE_VM | CLONE_VFORK | CLONE_PARENT_SETTID | SIGCHLD;
  pid_t ptid = 0;
  long pid = clone_and_exit42(flags, &ptid);
  CHECK(pid > 0 && ptid == pid, "clone with a good parent_tid: %ld, stored %d", pid, (int)ptid);
  if (pid > 0) {
    int status = 0;
    CHECK(waitpid((pid_t)pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42, "status %#x", status);
  }
  void* const bad[] = {(void*)1, hole};
  for (int i = 0; i < 2; i++) {
    errno = 0;
    pid = clone_and_exit42(flags, bad[i]);
    CHECK(pid > 0, "clone with parent_tid %p: %ld (%s), want a child", bad[i], pid,
          strerror(-(int)pid));
    if (pid > 0) {
      int status = 0;
      CHECK(waitpid((pid_t)pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
      CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42, "status %#x", status);
    }
    printf("  %-60s -> child, exit 42\n",
           i == 0 ? "clone(CLONE_PARENT_SETTID, ptid=(void*)1)" : "clone(..., ptid=unmapped)");
  }
  CHECK_ERR(syscall(SYS_clone3, (void*)1, 88), EFAULT);
  CHECK_ERR(syscall(SYS_clone3, (void*)hole, 88), EFAULT);
  CHECK_ERR(waitpid(-1, NULL, WNOHANG), ECHILD);
}

static void execs(void) {
  printf("execve:\n");
  extern char** environ;
  char* const good_argv[] = {"true", NULL};
  char* const bad_arg[] = {"true", (char*)1, NULL};
  CHECK_ERR(syscall(SYS_execve, (char*)1, good_argv, environ), EFAULT);
  CHECK_ERR(syscall(SYS_execve, hole, good_argv, environ), EFAULT);
  CHECK_ERR(syscall(SYS_execve, "/bin/true", (char**)1, environ), EFAULT);
  CHECK_ERR(syscall(SYS_execve, "/bin/true", (char**)hole, environ), EFAULT);
  CHECK_ERR(syscall(SYS_execve, "/bin/true", bad_arg, environ), EFAULT);
  CHECK_ERR(syscall(SYS_execve, "/bin/true", good_argv, (char**)1), EFAULT);
  CHECK_ERR(syscall(SYS_execveat, AT_FDCWD, (char*)1, good_argv, environ, 0), EFAULT);
}

static void timers(void) {
  printf("timers and accounting:\n");
  char* const bad[] = {(char*)1, hole};
  for (int i = 0; i < 2; i++) {
    void* b = bad[i];
    CHECK_ERR(syscall(SYS_setitimer, ITIMER_REAL, b, NULL), EFAULT);
    CHECK_ERR(syscall(SYS_getitimer, ITIMER_REAL, b), EFAULT);
    CHECK_ERR(syscall(SYS_timer_create, CLOCK_MONOTONIC, b, NULL), EFAULT);
    CHECK_ERR(syscall(SYS_getrusage, RUSAGE_SELF, b), EFAULT);
    CHECK_ERR(syscall(SYS_times, b), EFAULT);
    CHECK_ERR(syscall(SYS_clock_getres, CLOCK_MONOTONIC, b), EFAULT);
    CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, b, NULL), EFAULT);
  }
  // A timer created with an unwritable id is not left behind.
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_NONE;
  CHECK_ERR(syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, (int*)1), EFAULT);
  int id = -1;
  CHECK(syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id) == 0 && id >= 0,
        "timer_create: %s", strerror(errno));
  CHECK_ERR(syscall(SYS_timer_settime, id, 0, (void*)1, NULL), EFAULT);
  CHECK_ERR(syscall(SYS_timer_gettime, id, (void*)1), EFAULT);
  struct itimerspec zero;
  memset(&zero, 0, sizeof zero);
  CHECK_ERR(syscall(SYS_timer_settime, id, 0, &zero, (void*)1), EFAULT);
  CHECK_OK(syscall(SYS_timer_delete, id));
}

int main(void) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "efault_proc";
  hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(hole != MAP_FAILED, "mmap: %s", strerror(errno));
  REQUIRE(munmap(hole, 4096) == 0, "munmap: %s", strerror(errno));
  waits();
  signal_calls();
  futexes();
  pipes();
  clones();
  execs();
  timers();
  return guest_finish();
}
