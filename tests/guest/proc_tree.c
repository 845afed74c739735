// Corners of the process tree that a fuzzer found:
// - a process whose first thread has exited while others run on is still
//   a process: kill() by pid and by process group reach it, and /proc
//   lists it;
// - a child made with CLONE_PARENT tells its new parent of its death with
//   the caller's exit signal, not one it chose (which could kill);
// - an orphan's new parent hears SIGCHLD, whatever its first parent asked;
// - vfork with CLONE_THREAD: the parent sleeps until that thread exits.
//
// usage: proc_tree                  (the checks)
//        proc_tree lone-thread FD   (child: its first thread exits, a second
//                                    one writes to FD and waits)
//        proc_tree orphan FD        (child: makes a grandchild that reports
//                                    SIGUSR1 to its parent, and exits)
//        proc_tree sibling FD       (child: makes a CLONE_PARENT sibling that
//                                    asks for SIGUSR1)
//        proc_tree wait FD          (grandchild: writes its pid to FD, exits
//                                    6 after 300 ms)
#include "guest_check.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static const char* self;
static char self_buf[4096];

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

// --- children ---

static int report_fd;

static void* second_thread(void* arg) {
  pid_t me = getpid();
  if (write(report_fd, &me, sizeof me) != sizeof me) _exit(101);
  for (;;) pause();
  return NULL;
}

static int lone_thread(int fd) {
  report_fd = fd;
  pthread_t t;
  if (pthread_create(&t, NULL, second_thread, NULL) != 0) return 102;
  syscall(SYS_exit, 0);  // this thread only
  return 103;
}

// Its own stack for a CLONE_VM child (a plain fork is not to be had
// everywhere): the child execs at once.
static char clone_stack[65536] __attribute__((aligned(16)));
static char* const* orphan_args;

static int exec_orphan(void* arg) {
  execve(self, orphan_args, environ);
  _exit(127);
}

// A child that asks for SIGUSR1 as its exit signal (CLONE_PARENT: a
// sibling, whose parent is ours) and execs `wait`.
static int make_child(int fd, int extra_flags) {
  char fd_arg[16];
  snprintf(fd_arg, sizeof fd_arg, "%d", fd);
  char* const args[] = {(char*)self, "wait", fd_arg, NULL};
  orphan_args = args;
  pid_t pid = clone(exec_orphan, clone_stack + sizeof clone_stack,
                    CLONE_VM | CLONE_VFORK | extra_flags | SIGUSR1, NULL);
  return pid > 0 ? 0 : 104;
}

static int wait_mode(int fd) {
  pid_t me = getpid();
  if (write(fd, &me, sizeof me) != sizeof me) return 105;
  sleep_ms(300);
  return 6;
}

// --- the checks ---

static pid_t spawn(const char* mode, int fd) {
  char fd_arg[16];
  snprintf(fd_arg, sizeof fd_arg, "%d", fd);
  char* const args[] = {(char*)self, (char*)mode, fd_arg, NULL};
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    setpgid(0, 0);
    execve(self, args, environ);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  return pid;
}

static int listed_in_proc(pid_t pid) {
  DIR* d = opendir("/proc");
  struct dirent* e;
  int found = 0;
  while (d && (e = readdir(d)))
    if (atoi(e->d_name) == pid) found = 1;
  if (d) closedir(d);
  return found;
}

static void expect_killed_by(pid_t pid, int sig, const char* what) {
  int status = 0;
  pid_t w = -1;
  for (int i = 0; i < 500 && (w = waitpid(pid, &status, WNOHANG)) == 0; i++) sleep_ms(10);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK(0, "%s: not killed within 5 s", what);
    return;
  }
  CHECK(w == pid && WIFSIGNALED(status) && WTERMSIG(status) == sig, "%s: status %#x", what, status);
  printf("  %-52s -> %s\n", what, WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "?");
}

static void lone_thread_checks(void) {
  printf("a process whose first thread exited:\n");
  for (int how = 0; how < 2; how++) {
    int p[2];
    REQUIRE(pipe(p) == 0, "pipe");
    pid_t pid = spawn("lone-thread", p[1]);
    close(p[1]);
    pid_t reported = 0;
    CHECK(read(p[0], &reported, sizeof reported) == sizeof reported && reported == pid,
          "the second thread reported %d", (int)reported);
    close(p[0]);
    sleep_ms(50);  // the first thread is gone by now
    if (how == 0) CHECK(listed_in_proc(pid), "/proc does not list %d", (int)pid);
    const char* what = how == 0 ? "kill(pid, SIGTERM)" : "kill(-pgid, SIGTERM)";
    CHECK(kill(how == 0 ? pid : -pid, SIGTERM) == 0, "%s: %s", what, strerror(errno));
    expect_killed_by(pid, SIGTERM, what);
  }
}

static volatile sig_atomic_t got_usr1, got_chld;
static void on_usr1(int sig) { got_usr1++; }
static void on_chld(int sig) { got_chld++; }

static void exit_signal_checks(void) {
  printf("exit signals:\n");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = on_chld;
  sigaction(SIGCHLD, &sa, NULL);

  // "orphan": our child makes a grandchild reporting SIGUSR1 to it, then
  // exits, and we (its subreaper, or init) adopt the grandchild.
  // "sibling": our child makes a CLONE_PARENT child, ours to wait for.
  for (int sibling = 0; sibling < 2; sibling++) {
    int p[2];
    REQUIRE(pipe(p) == 0, "pipe");
    pid_t child = spawn(sibling ? "sibling" : "orphan", p[1]);
    close(p[1]);
    pid_t gc = 0;
    CHECK(read(p[0], &gc, sizeof gc) == sizeof gc && gc > 0, "no grandchild");
    close(p[0]);
    int status;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child: status %#x", status);
    got_usr1 = got_chld = 0;
    CHECK(waitpid(gc, &status, __WALL) == gc && WIFEXITED(status) && WEXITSTATUS(status) == 6,
          "the grandchild: status %#x", status);
    sleep_ms(20);
    CHECK(got_usr1 == 0 && got_chld >= 1, "%s: SIGUSR1 %d times, SIGCHLD %d times",
          sibling ? "sibling" : "orphan", (int)got_usr1, (int)got_chld);
    printf("  %s made asking for SIGUSR1: we hear SIGCHLD\n",
           sibling ? "a CLONE_PARENT sibling" : "an orphan");
  }
}

static int thread_child(void* arg) {
  sleep_ms(100);
  *(volatile int*)arg = 1;
  return 0;  // the thread ends: vfork() in the parent returns
}

static void vfork_thread_check(void) {
  printf("vfork with CLONE_THREAD:\n");
  static volatile int done;
  static char stack[65536] __attribute__((aligned(16)));
  done = 0;
  int flags = CLONE_VM | CLONE_VFORK | CLONE_THREAD | CLONE_SIGHAND | CLONE_FS | CLONE_FILES;
  int tid = clone(thread_child, stack + sizeof stack, flags, (void*)&done);
  CHECK(tid > 0, "clone: %s", strerror(errno));
  CHECK(done == 1, "vfork returned before the thread ended");
  printf("  the parent slept until its thread child ended\n");
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  self = realpath(argv[0], self_buf) ? self_buf : argv[0];
  if (argc == 3 && strcmp(argv[1], "lone-thread") == 0) return lone_thread(atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "orphan") == 0) return make_child(atoi(argv[2]), 0);
  if (argc == 3 && strcmp(argv[1], "sibling") == 0) return make_child(atoi(argv[2]), CLONE_PARENT);
  if (argc == 3 && strcmp(argv[1], "wait") == 0) return wait_mode(atoi(argv[2]));
  guest_name = "proc_tree";
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  lone_thread_checks();
  exit_signal_checks();
  vfork_thread_check();
  return guest_finish();
}
