// vfork() and execve(): the child borrows the parent's memory until it
// execs or exits, the parent sleeps meanwhile, and the exit status of the
// new program comes back through waitpid().
//
// usage: vfork_exec                    (the checks)
//        vfork_exec child FD PPID VAR  (the exec'd side, run by the checks)
#include "guest_check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

// Written by the vfork child, read by the parent: volatile so the compiler
// cannot assume the parent's copy is still in a register.
static volatile int shared_word;
static volatile int child_errno;

// The exec'd program: reports over an inherited descriptor who it is and
// who its parent is, then exits 7. Anything unexpected exits 100+.
static int child_main(int argc, char** argv) {
  guest_name = "vfork_exec(child)";
  if (argc != 5) return 100;
  int fd = atoi(argv[2]);
  pid_t want_ppid = (pid_t)atoi(argv[3]);
  printf("  child: pid %d running after exec, parent %d\n", (int)getpid(), (int)getppid());
  fflush(stdout);
  if (getppid() != want_ppid) return 101;
  const char* var = getenv("VFORK_EXEC_VAR");
  if (!var || strcmp(var, argv[4]) != 0) return 102;
  char msg[64];
  int n = snprintf(msg, sizeof msg, "pid=%d", (int)getpid());
  if (write(fd, msg, (size_t)n) != n) return 103;
  return 7;
}

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

static void exec_with_status(const char* self) {
  printf("vfork + execve of this program:\n");
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe: %s", strerror(errno));
  // The read end must not leak into the child, or the parent's read below
  // could never see EOF if the child misbehaved.
  REQUIRE(fcntl(p[0], F_SETFD, FD_CLOEXEC) == 0, "FD_CLOEXEC: %s", strerror(errno));

  char fd_arg[16], ppid_arg[16];
  snprintf(fd_arg, sizeof fd_arg, "%d", p[1]);
  snprintf(ppid_arg, sizeof ppid_arg, "%d", (int)getpid());
  char* const args[] = {(char*)self, "child", fd_arg, ppid_arg, "marker-42", NULL};
  char* const envs[] = {"VFORK_EXEC_VAR=marker-42", NULL};

  shared_word = 0;
  child_errno = 0;
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    shared_word = 42;
    execve(self, args, envs);
    child_errno = errno;
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  close(p[1]);
  CHECK(shared_word == 42, "the child's write before exec is not visible: %d", shared_word);
  CHECK(child_errno == 0, "execve in the child failed: %s", strerror(child_errno));
  printf("  parent sees the child's pre-exec write: %d\n", shared_word);

  char buf[64] = {0};
  ssize_t n = read(p[0], buf, sizeof buf - 1);
  CHECK(n > 0, "nothing from the child: %zd %s", n, strerror(errno));
  char want[64];
  snprintf(want, sizeof want, "pid=%d", (int)pid);
  CHECK(strcmp(buf, want) == 0, "child wrote '%s', want '%s'", buf, want);
  close(p[0]);

  int status = 0;
  pid_t w = waitpid(pid, &status, 0);
  CHECK(w == pid, "waitpid returned %d: %s", (int)w, strerror(errno));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7, "child status 0x%x, want exit 7",
        status);
  printf("  waitpid: exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  CHECK_ERR(waitpid(pid, &status, WNOHANG), ECHILD);
}

static void exit_without_exec(void) {
  printf("vfork + _exit without exec:\n");
  shared_word = 0;
  pid_t parent = getpid();
  pid_t pid = vfork();
  if (pid == 0) {
    // The child is a different process even though it shares memory.
    shared_word = (getpid() != parent && getppid() == parent) ? 1 : -1;
    _exit(3);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  CHECK(shared_word == 1, "child saw itself as pid==parent or a wrong ppid (%d)", shared_word);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status 0x%x, want exit 3", status);
  printf("  child %d exited %d; parent memory shows its write\n", (int)pid,
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void failed_exec(void) {
  printf("vfork + execve of a missing file:\n");
  child_errno = 0;
  char* const args[] = {"/nonexistent/flatux-no-such-program", NULL};
  pid_t pid = vfork();
  if (pid == 0) {
    execve(args[0], args, environ);
    child_errno = errno;
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  CHECK(child_errno == ENOENT, "child's execve errno %d (%s), want ENOENT", child_errno,
        strerror(child_errno));
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 127, "status 0x%x, want exit 127",
        status);
  printf("  errno ENOENT reached the parent through shared memory; exit 127\n");
}

static void several_children(void) {
  printf("three children alive at once, reaped in any order:\n");
  pid_t pids[3];
  for (int i = 0; i < 3; i++) {
    pid_t pid = vfork();
    if (pid == 0) _exit(20 + i);
    REQUIRE(pid > 0, "vfork: %s", strerror(errno));
    pids[i] = pid;
  }
  CHECK(pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2], "pids repeat");
  int seen = 0;
  for (int k = 0; k < 3; k++) {
    int status = 0;
    pid_t w = waitpid(-1, &status, 0);
    int idx = -1;
    for (int i = 0; i < 3; i++)
      if (w == pids[i]) idx = i;
    CHECK(idx >= 0, "waitpid(-1) returned %d: %s", (int)w, strerror(errno));
    if (idx < 0) continue;
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 20 + idx, "child %d status 0x%x", idx,
          status);
    seen |= 1 << idx;
  }
  CHECK(seen == 7, "not every child was reaped (mask %d)", seen);
  CHECK_ERR(waitpid(-1, NULL, 0), ECHILD);
}

int main(int argc, char** argv) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child_main(argc, argv);
  guest_name = "vfork_exec";
  const char* self = self_path(argv[0]);
  exec_with_status(self);
  exit_without_exec();
  failed_exec();
  several_children();
  return guest_finish();
}
