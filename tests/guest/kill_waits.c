// A fatal signal ends a process wherever it waits: in vfork() for its
// child (Linux's wait there is killable: the child runs on), opening a
// FIFO nobody opens at the other end, reading an empty pipe, taking a
// lock someone holds. A signal with a handler does not end a vfork()
// wait: the handler runs once the child has exec'd or exited.
//
// usage: kill_waits                     (the checks)
//        kill_waits vfork FD            (child: vfork; the grandchild writes
//                                        its pid to FD, then reads FD+1)
//        kill_waits fifo PATH FD        (child: open PATH for reading)
//        kill_waits pipe FD             (child: read an empty pipe)
//        kill_waits flock PATH FD       (child: flock a locked file)
#include "guest_check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static const char* self;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t usr1_seen;
static void on_usr1(int sig) { usr1_seen = 1; }

// --- children ---

// Writes "ready" (its pid) to `ready_fd` and then blocks however `mode` says.
static int child(int argc, char** argv) {
  const char* mode = argv[1];
  int ready_fd = atoi(argv[argc - 1]);
  if (strcmp(mode, "vfork") == 0) {
    // The grandchild reports its pid and blocks reading the other pipe;
    // we sleep in vfork() meanwhile. A SIGUSR1 handler must not end that.
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    int release_fd = ready_fd + 1;
    pid_t pid = vfork();
    if (pid == 0) {
      pid_t me = (pid_t)syscall(SYS_getpid);
      if (write(ready_fd, &me, sizeof me) != sizeof me) _exit(101);
      char c;
      ssize_t n = read(release_fd, &c, 1);
      _exit(n == 1 ? 5 : 6);
    }
    if (pid < 0) return 102;
    int status;
    if (waitpid(pid, &status, 0) != pid) return 103;
    // Back from vfork: exit with the grandchild's code, plus 16 if the
    // handler ran (it must, now).
    return (WIFEXITED(status) ? WEXITSTATUS(status) : 99) + (usr1_seen ? 16 : 0);
  }
  pid_t me = getpid();
  if (strcmp(mode, "fifo") == 0) {
    if (write(ready_fd, &me, sizeof me) != sizeof me) return 101;
    open(argv[2], O_RDONLY);  // no writer ever comes
    return 104;
  }
  if (strcmp(mode, "pipe") == 0) {
    int p[2];
    if (pipe(p) != 0) return 105;
    if (write(ready_fd, &me, sizeof me) != sizeof me) return 101;
    char c;
    read(p[0], &c, 1);
    return 106;
  }
  if (strcmp(mode, "flock") == 0) {
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) return 107;
    if (write(ready_fd, &me, sizeof me) != sizeof me) return 101;
    flock(fd, LOCK_EX);
    return 108;
  }
  return 100;
}

// --- the checks ---

// Starts `kill_waits MODE [ARG] FD` with a pipe on FD (and one on FD+1 for
// vfork); returns its pid and the pid it reported (its own, or the
// grandchild's for vfork) once it is about to block.
static pid_t start(const char* mode, const char* arg, pid_t* reported, int* release_w) {
  int ready[2], release[2];
  REQUIRE(pipe(ready) == 0 && pipe(release) == 0, "pipe");
  // The child's FD and FD+1: fixed numbers above anything open.
  REQUIRE(dup2(ready[1], 40) == 40 && dup2(release[0], 41) == 41, "dup2");
  close(ready[1]);
  close(release[0]);
  char* args[5];
  int n = 0;
  args[n++] = (char*)self;
  args[n++] = (char*)mode;
  if (arg) args[n++] = (char*)arg;
  args[n++] = "40";
  args[n] = NULL;
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    close(ready[0]);
    close(release[1]);
    execve(self, args, environ);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  close(40);
  close(41);
  *reported = 0;
  CHECK(read(ready[0], reported, sizeof *reported) == sizeof *reported, "%s: no report", mode);
  close(ready[0]);
  if (release_w) *release_w = release[1];
  else close(release[1]);
  // Let it reach its wait (a signal before that proves nothing).
  struct timespec settle = {0, 100 * 1000 * 1000};
  nanosleep(&settle, NULL);
  return pid;
}

// Sends `sig` and expects the process dead of it within a few seconds.
static void expect_dies(pid_t pid, int sig, const char* what) {
  double t0 = now_s();
  CHECK(kill(pid, sig) == 0, "kill: %s", strerror(errno));
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_s() - t0 < 5) {
    struct timespec tick = {0, 10 * 1000 * 1000};
    nanosleep(&tick, NULL);
  }
  if (w == 0) {
    CHECK(0, "%s: still alive 5 s after %s", what, strsignal(sig));
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return;
  }
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig, "%s: status %#x, want killed by %s",
        what, status, strsignal(sig));
  printf("  %-44s -> %s\n", what, WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
}

// The grandchild of a killed vfork parent runs on until it is released;
// it belongs to init (or to us when we are init) by then.
static void end_grandchild(pid_t gc, int release_w) {
  if (write(release_w, "x", 1) != 1) CHECK(0, "releasing the grandchild");
  close(release_w);
  int status;
  if (waitpid(gc, &status, 0) == gc) {  // ours: we are its subreaper, or init
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 5, "grandchild status %#x", status);
    return;
  }
  double t0 = now_s();
  while (kill(gc, 0) == 0 && now_s() - t0 < 5) {
    waitpid(gc, NULL, WNOHANG);
    struct timespec tick = {0, 10 * 1000 * 1000};
    nanosleep(&tick, NULL);
  }
  CHECK(kill(gc, 0) != 0, "the grandchild did not finish");
}

static void vfork_parent(void) {
  printf("a parent sleeping in vfork():\n");
  int sigs[] = {SIGKILL, SIGTERM};
  for (int i = 0; i < 2; i++) {
    pid_t gc;
    int release_w;
    pid_t pid = start("vfork", NULL, &gc, &release_w);
    CHECK(gc > 0 && kill(gc, 0) == 0, "the vfork child is not running");
    char what[64];
    snprintf(what, sizeof what, "%s while its child blocks", strsignal(sigs[i]));
    expect_dies(pid, sigs[i], what);
    CHECK(kill(gc, 0) == 0, "the vfork child died with its parent");
    end_grandchild(gc, release_w);
  }
  // A handled signal waits for the child.
  pid_t gc;
  int release_w;
  pid_t pid = start("vfork", NULL, &gc, &release_w);
  CHECK(kill(pid, SIGUSR1) == 0, "kill SIGUSR1");
  struct timespec settle = {0, 100 * 1000 * 1000};
  nanosleep(&settle, NULL);
  int status;
  CHECK(waitpid(pid, &status, WNOHANG) == 0, "a handled SIGUSR1 ended the vfork wait");
  CHECK(write(release_w, "x", 1) == 1, "release");
  close(release_w);
  CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 5 + 16,
        "status %#x, want exit 21 (the child's 5, the handler after vfork returned)", status);
  printf("  %-44s -> waits; handler after the child exits\n", "SIGUSR1 (handled)");
}

static void other_waits(void) {
  printf("other waits:\n");
  char fifo[] = "/tmp/kill_waits.XXXXXX";
  REQUIRE(mkdtemp(fifo) != NULL, "mkdtemp");
  char path[64];
  snprintf(path, sizeof path, "%s/fifo", fifo);
  REQUIRE(mkfifo(path, 0600) == 0, "mkfifo: %s", strerror(errno));
  pid_t me;
  expect_dies(start("fifo", path, &me, NULL), SIGKILL, "opening a FIFO with no writer");
  expect_dies(start("fifo", path, &me, NULL), SIGTERM, "opening a FIFO with no writer");
  unlink(path);
  expect_dies(start("pipe", NULL, &me, NULL), SIGKILL, "reading an empty pipe");
  snprintf(path, sizeof path, "%s/lock", fifo);
  int fd = open(path, O_CREAT | O_RDWR, 0600);
  REQUIRE(fd >= 0 && flock(fd, LOCK_EX) == 0, "flock");
  expect_dies(start("flock", path, &me, NULL), SIGKILL, "flock on a locked file");
  close(fd);
  unlink(path);
  rmdir(fifo);
}

static char self_buf[4096];

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 3) return child(argc, argv);
  guest_name = "kill_waits";
  self = realpath(argv[0], self_buf) ? self_buf : argv[0];
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned grandchildren come to us
  vfork_parent();
  other_waits();
  return guest_finish();
}
