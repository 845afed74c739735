// The first process is init: the signals other processes send it while
// its action is the default one are dropped (Linux's SIGNAL_UNKILLABLE
// init of a pid namespace), whatever the route: kill, tgkill, sigqueue,
// pidfd_send_signal, a file owner set with F_SETOWN/F_SETSIG, an exit
// signal. Blocked ones stay pending until unblocked, then go. Handlers still
// run. A real fault still ends it.
//
//   initsig         every route; exit 0 when init survived them all
//   initsig fault   survives a SIGTERM, then dereferences a null pointer:
//                   must end by SIGSEGV
//
// Under flatux the program is pid 1. Natively it is not, so it makes
// itself a user and pid namespace, runs the same code as that namespace's
// pid 1, and ends as that init ended (its exit status, or the same signal).
// Without user namespaces the native run is skipped (77).
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest_check.h"

// musl refuses signals 32-34 in its own calls, so they go raw.
enum { kSig32 = 32 };

static volatile sig_atomic_t usr1_seen;
static void on_usr1(int sig) { usr1_seen++; }
static void on_alarm(int sig) {
  static const char msg[] = "initsig: watchdog: stuck (stopped, or a signal wait that never ends)\n";
  write(2, msg, sizeof msg - 1);
  _exit(3);
}

static void set_default(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigaction(sig, &sa, NULL);
}

static void set_handler(int sig, void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, NULL);
}

static uint64_t pending_mask(void) {
  uint64_t set = 0;
  syscall(SYS_rt_sigpending, &set, 8);
  return set;
}

static uint64_t bit(int sig) { return 1ull << (sig - 1); }

// Runs fn in a child and waits for it; the child's exit status.
static int in_child(void (*fn)(void)) {
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    fn();
    _exit(guest_failures ? 1 : 0);
  }
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void sigqueue_raw(int pid, int sig) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
  si.si_uid = getuid();
  CHECK_OK(syscall(SYS_rt_sigqueueinfo, pid, sig, &si));
}

static void send_by_kill(void) {
  const int sigs[] = {SIGTERM, SIGINT, SIGUSR2, SIGHUP, SIGQUIT, kSig32, 40, SIGKILL, SIGSTOP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    CHECK_OK(syscall(SYS_kill, 1, sigs[i]));
  CHECK_OK(syscall(SYS_tgkill, 1, 1, SIGTERM));
  CHECK_OK(syscall(SYS_tkill, 1, kSig32));
  sigqueue_raw(1, kSig32);
  sigqueue_raw(1, SIGTERM);
  int pidfd = (int)syscall(SYS_pidfd_open, 1, 0);
  CHECK(pidfd >= 0, "pidfd_open(1): %s", strerror(errno));
  if (pidfd >= 0) {
    CHECK_OK(syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0));
    CHECK_OK(syscall(SYS_pidfd_send_signal, pidfd, kSig32, NULL, 0));
    close(pidfd);
  }
  // The whole group, init's: the child ignores it itself.
  signal(SIGUSR2, SIG_IGN);
  CHECK_OK(syscall(SYS_kill, 0, SIGUSR2));
}

static void send_usr1(void) { CHECK_OK(syscall(SYS_kill, 1, SIGUSR1)); }

static void send_blocked(void) {
  CHECK_OK(syscall(SYS_kill, 1, SIGTERM));
  CHECK_OK(syscall(SYS_kill, 1, SIGUSR2));
}

static void kill_and_handled(void) {
  usr1_seen = 0;
  REQUIRE(in_child(send_by_kill) == 0, "the sending child failed");
  CHECK(pending_mask() == 0, "left pending: %#llx", (unsigned long long)pending_mask());
  // A handler still runs for what another process sends.
  CHECK(in_child(send_usr1) == 0);
  for (int i = 0; i < 1000 && !usr1_seen; i++) usleep(1000);
  CHECK(usr1_seen == 1, "SIGUSR1 handler ran %d times", (int)usr1_seen);
  printf("kill, tgkill, tkill, sigqueue, pidfd_send_signal, kill(0): init survived; a handler still runs\n");
}

static void blocked_then_unblocked(void) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR2);
  sigprocmask(SIG_BLOCK, &set, &old);
  REQUIRE(in_child(send_blocked) == 0);
  uint64_t p = pending_mask();
  CHECK(p == (bit(SIGTERM) | bit(SIGUSR2)), "blocked ones pending: %#llx", (unsigned long long)p);
  sigprocmask(SIG_SETMASK, &old, NULL);  // taken now, and dropped
  CHECK(pending_mask() == 0, "left pending: %#llx", (unsigned long long)pending_mask());
  printf("blocked SIGTERM/SIGUSR2: pending while blocked, dropped once unblocked\n");
}

static char scratch[64];

// F_NOTIFY on a folder, its owner set to init by the child: a file the
// child creates there signals init with the F_SETSIG signal.
static int notify_sig;
static void notify_owner_route(void) {
  int dfd = open(scratch, O_RDONLY | O_DIRECTORY);
  REQUIRE(dfd >= 0, "open %s: %s", scratch, strerror(errno));
  // F_NOTIFY first: older kernels make its caller the owner.
  CHECK_OK(fcntl(dfd, F_NOTIFY, DN_CREATE));
  CHECK_OK(fcntl(dfd, F_SETOWN, 1));
  CHECK_OK(fcntl(dfd, F_SETSIG, notify_sig));
  char path[96];
  snprintf(path, sizeof path, "%s/f%d", scratch, notify_sig);
  int fd = open(path, O_CREAT | O_WRONLY, 0600);
  CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
  if (fd >= 0) close(fd);
  unlink(path);
  close(dfd);
}

static void file_owner(void) {
  snprintf(scratch, sizeof scratch, "/tmp/initsig-XXXXXX");
  REQUIRE(mkdtemp(scratch), "mkdtemp: %s", strerror(errno));
  // The route works: with a handler, init hears it.
  usr1_seen = 0;
  notify_sig = SIGUSR1;
  { int st = in_child(notify_owner_route); CHECK(st == 0, "child status %d", st); }
  for (int i = 0; i < 1000 && !usr1_seen; i++) usleep(1000);
  CHECK(usr1_seen == 1, "F_SETSIG SIGUSR1 to init: handler ran %d times", (int)usr1_seen);
  // Without one, init does not die of it.
  notify_sig = kSig32;
  { int st = in_child(notify_owner_route); CHECK(st == 0, "child status %d", st); }
  notify_sig = SIGTERM;
  { int st = in_child(notify_owner_route); CHECK(st == 0, "child status %d", st); }
  usleep(20000);
  CHECK(pending_mask() == 0, "left pending: %#llx", (unsigned long long)pending_mask());
  rmdir(scratch);
  printf("F_SETOWN 1 + F_SETSIG 32/SIGTERM + F_NOTIFY: init survived; SIGUSR1 reached its handler\n");
}

// A child of init whose exit signal is `sig` (raw clone, no CLONE_VM).
static void exit_signal_child(int sig) {
  long pid = syscall(SYS_clone, (unsigned long)sig, 0, 0, 0, 0);
  REQUIRE(pid >= 0, "clone: %s", strerror(errno));
  if (pid == 0) syscall(SYS_exit_group, 0);
  int status;
  CHECK(waitpid((pid_t)pid, &status, __WALL) == pid, "waitpid: %s", strerror(errno));
}

static void exit_signals(void) {
  usr1_seen = 0;
  exit_signal_child(SIGUSR1);
  for (int i = 0; i < 1000 && !usr1_seen; i++) usleep(1000);
  CHECK(usr1_seen == 1, "exit signal SIGUSR1: handler ran %d times", (int)usr1_seen);
  exit_signal_child(kSig32);
  exit_signal_child(SIGTERM);
  usleep(20000);
  CHECK(pending_mask() == 0, "left pending: %#llx", (unsigned long long)pending_mask());
  printf("children with exit signal 32 and SIGTERM: init survived their exits\n");
}

// Linux refuses CLONE_PARENT from init: the sibling would have no parent
// to reap it (copy_process's SIGNAL_UNKILLABLE check).
static void clone_parent_refused(void) {
  errno = 0;
  long pid = syscall(SYS_clone, (unsigned long)(CLONE_PARENT | SIGCHLD), 0, 0, 0, 0);
  if (pid == 0) syscall(SYS_exit_group, 0);
  CHECK(pid == -1 && errno == EINVAL, "clone(CLONE_PARENT) from init: %ld (%s), want EINVAL", pid,
        strerror(errno));
  if (pid > 0) waitpid((pid_t)pid, NULL, __WALL);
  else printf("clone(CLONE_PARENT) from init: EINVAL\n");
}

static void send_term(void) { CHECK_OK(syscall(SYS_kill, 1, SIGTERM)); }

static int run_as_init(int fault) {
  REQUIRE(getpid() == 1, "not pid 1 but %d", (int)getpid());
  setpgid(0, 0);  // kill(0) from a child reaches init's group, and only it
  // Watchdog: a stopped init, or a wait that never ends, fails in time.
  set_handler(SIGALRM, on_alarm);
  alarm(30);
  set_handler(SIGUSR1, on_usr1);
  set_default(SIGTERM);
  set_default(SIGINT);
  set_default(SIGUSR2);
  set_default(SIGHUP);
  set_default(SIGQUIT);
  if (fault) {
    REQUIRE(in_child(send_term) == 0);
    printf("survived SIGTERM from a child; now a null pointer dereference\n");
    fflush(stdout);
    set_default(SIGSEGV);
    prctl(PR_SET_DUMPABLE, 0);  // no core file, whatever the host's core settings
    *(volatile int*)(uintptr_t)0 = 1;
    printf("still alive after the fault\n");
    return 1;
  }
  kill_and_handled();
  blocked_then_unblocked();
  file_owner();
  exit_signals();
  clone_parent_refused();
  return guest_finish();
}

// Natively: pid 1 of a new pid namespace (in a new user namespace, mapped
// to our ids, so no privilege is needed).
static int run_natively(int fault) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0) {
    printf("SKIP: no user and pid namespaces here (%s)\n", strerror(errno));
    return 77;
  }
  char map[64];
  int fd = open("/proc/self/setgroups", O_WRONLY);
  if (fd >= 0) {
    write(fd, "deny", 4);
    close(fd);
  }
  snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
  fd = open("/proc/self/uid_map", O_WRONLY);
  REQUIRE(fd >= 0 && write(fd, map, strlen(map)) > 0, "uid_map: %s", strerror(errno));
  close(fd);
  snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
  fd = open("/proc/self/gid_map", O_WRONLY);
  REQUIRE(fd >= 0 && write(fd, map, strlen(map)) > 0, "gid_map: %s", strerror(errno));
  close(fd);
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) exit(run_as_init(fault));
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  // End as init did.
  int sig = WTERMSIG(status);
  set_default(sig);
  raise(sig);
  return 1;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "initsig";
  int fault = argc > 1 && !strcmp(argv[1], "fault");
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (getpid() == 1) return run_as_init(fault);
  return run_natively(fault);
}
