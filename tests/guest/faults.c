// Hardware faults become signals with the details filled in, and signals
// left at their default action end, stop or continue a process, which the
// parent sees through waitpid() and SIGCHLD.
//
// usage: faults                    (the checks)
//        faults child MODE FD      (a child, run by the checks; it writes one
//                                   byte to FD once it is running)
#include "guest_check.h"

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

extern char** environ;

// --- children ---

// A core file from a child is not wanted. A limit of 1 disables both file
// dumps (smaller than any ELF core) and piped dumps (the kernel's opt-out
// value for core_pattern helpers).
static void no_core_dumps(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_CORE, &rl) != 0) return;
  rl.rlim_cur = rl.rlim_max >= 1 ? 1 : 0;
  setrlimit(RLIMIT_CORE, &rl);
}

static void returning_handler(int sig) {}

static int child_main(int argc, char** argv) {
  if (argc != 4) return 100;
  const char* mode = argv[2];
  int fd = atoi(argv[3]);
  no_core_dumps();
  if (write(fd, "r", 1) != 1) return 101;
  close(fd);
  if (strcmp(mode, "wait") == 0) {
    alarm(30);  // a safety net: a SIGALRM death is a failed check upstairs
    for (;;) pause();
  }
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "abort-handled") == 0) {
    // A handler that returns does not save the process from abort().
    signal(SIGABRT, returning_handler);
    abort();
  }
  if (strcmp(mode, "abort-blocked") == 0) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGABRT);
    sigprocmask(SIG_BLOCK, &s, NULL);
    abort();
  }
  if (strcmp(mode, "segv-blocked") == 0) {
    // A fault while its signal is blocked cannot be deferred: the kernel
    // takes the default action.
    signal(SIGSEGV, returning_handler);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGSEGV);
    sigprocmask(SIG_BLOCK, &s, NULL);
    *(volatile int*)8 = 1;
    return 102;
  }
  if (strcmp(mode, "exit9") == 0) return 9;
  return 103;
}

static const char* self;

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

static pid_t start_child(const char* mode) {
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2");
  REQUIRE(fcntl(p[1], F_SETFD, 0) == 0, "fcntl");
  char fd_arg[16];
  snprintf(fd_arg, sizeof fd_arg, "%d", p[1]);
  char* const args[] = {(char*)self, "child", (char*)mode, fd_arg, NULL};
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
  CHECK(n == 1 && c == 'r', "child '%s' never started (%zd)", mode, n);
  close(p[0]);
  return pid;
}

static int wait_status(pid_t pid, int options) {
  int status = -1;
  pid_t w = waitpid(pid, &status, options);
  CHECK(w == pid, "waitpid(%d, %#x) returned %d: %s", (int)pid, options, (int)w,
        strerror(errno));
  return status;
}

static void expect_killed(int status, int sig, const char* what) {
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig,
        "%s: status %#x, want killed by signal %d (%s)", what, status, sig, strsignal(sig));
  printf("  %-42s -> killed by %s\n", what, WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                                               : "(not signalled)");
}

// --- faults caught in this process ---

static sigjmp_buf fault_jump;
static volatile int fault_signo, fault_code;
static volatile uintptr_t fault_addr, fault_rip;

static void on_fault(int sig, siginfo_t* si, void* ucv) {
  const ucontext_t* uc = ucv;
  fault_signo = si->si_signo;
  fault_code = si->si_code;
  fault_addr = (uintptr_t)si->si_addr;
  fault_rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  siglongjmp(fault_jump, 1);
}

static void catch_faults(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(sig, &sa, NULL) == 0, "sigaction");
}

static void reset_fault(void) {
  fault_signo = fault_code = -1;
  fault_addr = fault_rip = 0;
}

static void segv(void) {
  printf("SIGSEGV:\n");
  catch_faults(SIGSEGV);
  char* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED, "mmap");
  REQUIRE(munmap(page, 4096) == 0, "munmap");
  volatile char* target = page + 123;
  // Twice: siglongjmp must have unblocked SIGSEGV for the second to be
  // caught.
  for (int round = 0; round < 2; round++) {
    reset_fault();
    if (sigsetjmp(fault_jump, 1) == 0) {
      *target = 1;
      CHECK(0, "writing to an unmapped page did not fault");
    }
    CHECK(fault_signo == SIGSEGV && fault_code == SEGV_MAPERR,
          "signal %d code %d, want SIGSEGV SEGV_MAPERR", fault_signo, fault_code);
    CHECK(fault_addr == (uintptr_t)target, "si_addr %p, want %p", (void*)fault_addr,
          (void*)target);
  }
  printf("  write to an unmapped page: SEGV_MAPERR, si_addr exact, caught twice\n");

  char* ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(ro != MAP_FAILED, "mmap");
  target = ro + 4000;
  reset_fault();
  if (sigsetjmp(fault_jump, 1) == 0) {
    *target = 1;
    CHECK(0, "writing to a read-only page did not fault");
  }
  CHECK(fault_signo == SIGSEGV && fault_code == SEGV_ACCERR,
        "signal %d code %d, want SIGSEGV SEGV_ACCERR", fault_signo, fault_code);
  CHECK(fault_addr == (uintptr_t)target, "si_addr %p, want %p", (void*)fault_addr,
        (void*)target);
  munmap(ro, 4096);
  printf("  write to a read-only page: SEGV_ACCERR, si_addr exact\n");
  signal(SIGSEGV, SIG_DFL);
}

// volatile, or the compiler folds the divisions (1 / x even becomes a
// comparison).
static volatile int divisor_zero = 0, divisor_minus1 = -1, dividend_seven = 7,
                    dividend_min = INT_MIN;
static volatile int quotient;

static void fpe(void) {
  printf("SIGFPE:\n");
  catch_faults(SIGFPE);
  reset_fault();
  if (sigsetjmp(fault_jump, 1) == 0) {
    quotient = dividend_seven / divisor_zero;
    CHECK(0, "division by zero did not trap");
  }
  CHECK(fault_signo == SIGFPE && fault_code == FPE_INTDIV,
        "signal %d code %d, want SIGFPE FPE_INTDIV", fault_signo, fault_code);
  CHECK(fault_addr == fault_rip && fault_addr != 0,
        "si_addr %p is not the faulting instruction %p", (void*)fault_addr, (void*)fault_rip);
  printf("  7 / 0: FPE_INTDIV at the dividing instruction\n");

  // x86 raises the same divide error for a quotient that does not fit.
  reset_fault();
  if (sigsetjmp(fault_jump, 1) == 0) {
    quotient = dividend_min / divisor_minus1;
    CHECK(0, "INT_MIN / -1 did not trap");
  }
  CHECK(fault_signo == SIGFPE && fault_code == FPE_INTDIV,
        "signal %d code %d, want SIGFPE FPE_INTDIV", fault_signo, fault_code);
  printf("  INT_MIN / -1: FPE_INTDIV\n");
  signal(SIGFPE, SIG_DFL);
}

static void ill(void) {
  printf("SIGILL:\n");
  catch_faults(SIGILL);
  reset_fault();
  if (sigsetjmp(fault_jump, 1) == 0) {
    __asm__ volatile("ud2");
    CHECK(0, "ud2 did not trap");
  }
  CHECK(fault_signo == SIGILL && fault_code == ILL_ILLOPN,
        "signal %d code %d, want SIGILL ILL_ILLOPN", fault_signo, fault_code);
  CHECK(fault_addr == fault_rip && fault_addr != 0,
        "si_addr %p is not the faulting instruction %p", (void*)fault_addr, (void*)fault_rip);
  printf("  ud2: ILL_ILLOPN at the instruction\n");
  signal(SIGILL, SIG_DFL);
}

// --- default actions, seen from the parent ---

static void terminations(void) {
  printf("default actions that end a child:\n");
  expect_killed(wait_status(start_child("abort"), 0), SIGABRT, "abort()");
  expect_killed(wait_status(start_child("abort-handled"), 0), SIGABRT,
                "abort() with a returning handler");
  expect_killed(wait_status(start_child("abort-blocked"), 0), SIGABRT,
                "abort() with SIGABRT blocked");
  expect_killed(wait_status(start_child("segv-blocked"), 0), SIGSEGV,
                "a fault with SIGSEGV blocked");

  static const int sigs[] = {SIGTERM, SIGQUIT, SIGKILL, SIGUSR1, SIGHUP, SIGINT, SIGPIPE};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    pid_t pid = start_child("wait");
    CHECK(kill(pid, sigs[i]) == 0, "kill: %s", strerror(errno));
    char what[64];
    snprintf(what, sizeof what, "kill(child, %s)", strsignal(sigs[i]));
    expect_killed(wait_status(pid, 0), sigs[i], what);
  }
}

static void shell_status(void) {
  printf("a shell reports an aborted child as 128 + SIGABRT (it may say 'Aborted'):\n");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // The child wants a descriptor to report readiness on: give it stdout's
  // number, after pointing stdout at the pipe.
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  char* const args[] = {"sh", "-c", "\"$0\" child abort 1; exit $?", (char*)self, NULL};
  pid_t pid = -1;
  int r = posix_spawn(&pid, "/bin/sh", &fa, NULL, args, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  CHECK(r == 0, "posix_spawn /bin/sh: %s", strerror(r));
  if (r == 0) {
    char c;
    while (read(p[0], &c, 1) > 0) {
    }
    int status = wait_status(pid, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGABRT,
          "sh status %#x, want exit %d", status, 128 + SIGABRT);
    printf("  sh -c 'faults child abort; exit $?' exited %d\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  close(p[0]);
}

// SIGCHLD is blocked here so each notification can be collected in turn.
static int next_sigchld(siginfo_t* si) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGCHLD);
  struct timespec ts = {5, 0};
  memset(si, 0, sizeof *si);
  return (int)syscall(SYS_rt_sigtimedwait, &s, si, &ts, 8);
}

static void drain_sigchld(void) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGCHLD);
  struct timespec zero = {0, 0};
  siginfo_t si;
  while (syscall(SYS_rt_sigtimedwait, &s, &si, &zero, 8) == SIGCHLD) {
  }
}

static void check_sigchld(pid_t pid, int code, int status, const char* what) {
  siginfo_t si;
  int r = next_sigchld(&si);
  CHECK(r == SIGCHLD, "%s: no SIGCHLD (%d: %s)", what, r, strerror(errno));
  if (r != SIGCHLD) return;
  CHECK(si.si_pid == pid && si.si_code == code && si.si_status == status,
        "%s: SIGCHLD pid %d code %d status %d; want %d, %d, %d", what, (int)si.si_pid,
        si.si_code, si.si_status, (int)pid, code, status);
}

static void stop_continue(void) {
  printf("SIGSTOP and SIGCONT, through waitpid and SIGCHLD:\n");
  sigset_t s, old;
  sigemptyset(&s);
  sigaddset(&s, SIGCHLD);
  sigprocmask(SIG_BLOCK, &s, &old);
  drain_sigchld();

  pid_t pid = start_child("wait");
  CHECK(kill(pid, SIGSTOP) == 0, "kill SIGSTOP: %s", strerror(errno));
  int status = wait_status(pid, WUNTRACED);
  CHECK(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "status %#x, want stopped",
        status);
  check_sigchld(pid, CLD_STOPPED, SIGSTOP, "stop");
  printf("  SIGSTOP: WIFSTOPPED with WUNTRACED, SIGCHLD CLD_STOPPED\n");

  CHECK(kill(pid, SIGCONT) == 0, "kill SIGCONT: %s", strerror(errno));
  status = wait_status(pid, WCONTINUED);
  CHECK(WIFCONTINUED(status), "status %#x, want continued", status);
  check_sigchld(pid, CLD_CONTINUED, SIGCONT, "continue");
  printf("  SIGCONT: WIFCONTINUED with WCONTINUED, SIGCHLD CLD_CONTINUED\n");

  // A stopped process does not act on SIGTERM until it runs again.
  CHECK(kill(pid, SIGSTOP) == 0, "kill SIGSTOP: %s", strerror(errno));
  status = wait_status(pid, WUNTRACED);
  CHECK(WIFSTOPPED(status), "status %#x, want stopped", status);
  CHECK(kill(pid, SIGTERM) == 0, "kill SIGTERM: %s", strerror(errno));
  struct timespec pause_ms = {0, 50 * 1000 * 1000};
  nanosleep(&pause_ms, NULL);
  CHECK(waitpid(pid, &status, WNOHANG) == 0, "a stopped child acted on SIGTERM");
  CHECK(kill(pid, SIGCONT) == 0, "kill SIGCONT: %s", strerror(errno));
  expect_killed(wait_status(pid, 0), SIGTERM, "SIGTERM while stopped, then SIGCONT");
  drain_sigchld();

  pid = start_child("wait");
  kill(pid, SIGTERM);
  wait_status(pid, 0);
  check_sigchld(pid, CLD_KILLED, SIGTERM, "killed");
  pid = start_child("exit9");
  status = wait_status(pid, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 9, "status %#x, want exit 9", status);
  check_sigchld(pid, CLD_EXITED, 9, "exit");
  printf("  SIGCHLD for a killed child: CLD_KILLED; for an exit: CLD_EXITED with the code\n");
  sigprocmask(SIG_SETMASK, &old, NULL);
}

static void ignored_by_default(void) {
  printf("signals ignored by default:\n");
  // Unblocked and at SIG_DFL: if any of these acted, this process would end.
  static const int sigs[] = {SIGCHLD, SIGURG, SIGWINCH, SIGCONT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    signal(sigs[i], SIG_DFL);
    CHECK(raise(sigs[i]) == 0, "raise(%d)", sigs[i]);
  }
  pid_t pid = start_child("exit9");
  int status = wait_status(pid, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 9, "status %#x", status);
  printf("  SIGCHLD (raised and from a real exit), SIGURG, SIGWINCH, SIGCONT: still here\n");
}

int main(int argc, char** argv) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child_main(argc, argv);
  guest_name = "faults";
  self = self_path(argv[0]);
  segv();
  fpe();
  ill();
  terminations();
  shell_status();
  stop_continue();
  ignored_by_default();
  return guest_finish();
}
