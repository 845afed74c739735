// posix_spawn and posix_spawnp: file actions run in the child in order
// before the exec, attributes set its signal mask and dispositions, the
// search for posix_spawnp follows PATH, and exec failures come back as the
// return value.
//
// usage: spawn                      (the checks)
//        spawn child CLOSED_FD      (the spawned side, run by the checks)
#include "guest_check.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

// The spawned program checks what the file actions and attributes should
// have done, says so on stdout (wherever that now goes) and exits 5.
static int child_main(int argc, char** argv) {
  if (argc != 3) return 100;
  int closed = atoi(argv[2]);
  errno = 0;
  if (fcntl(closed, F_GETFD) != -1 || errno != EBADF) return 101;
  sigset_t mask;
  if (sigprocmask(SIG_BLOCK, NULL, &mask) != 0) return 102;
  if (!sigismember(&mask, SIGUSR1) || sigismember(&mask, SIGUSR2)) return 103;
  struct sigaction sa;
  if (sigaction(SIGUSR2, NULL, &sa) != 0 || sa.sa_handler != SIG_DFL) return 104;
  const char* v = getenv("SPAWN_VAR");
  if (!v || strcmp(v, "from-envp") != 0) return 105;
  printf("spawned child ok\n");
  fflush(stdout);
  return 5;
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

static int wait_for(pid_t pid) {
  int status = -1;
  pid_t w = waitpid(pid, &status, 0);
  CHECK(w == pid, "waitpid(%d) returned %d: %s", (int)pid, (int)w, strerror(errno));
  return status;
}

static void read_file(const char* path, char* buf, size_t size) {
  memset(buf, 0, size);
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
  if (fd < 0) return;
  ssize_t n = read(fd, buf, size - 1);
  CHECK(n >= 0, "read %s: %s", path, strerror(errno));
  close(fd);
}

static void echo_to_file(void) {
  printf("posix_spawn /bin/echo, stdout opened onto a file:\n");
  char path[] = "/tmp/flatux-spawn-XXXXXX";
  int tmp = mkstemp(path);
  REQUIRE(tmp >= 0, "mkstemp: %s", strerror(errno));
  close(tmp);

  posix_spawn_file_actions_t fa;
  REQUIRE(posix_spawn_file_actions_init(&fa) == 0, "file_actions_init");
  REQUIRE(posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, path,
                                           O_WRONLY | O_CREAT | O_TRUNC, 0644) == 0,
          "addopen");
  char* const args[] = {"echo", "hello", "from", "spawn", NULL};
  pid_t pid = -1;
  int r = posix_spawn(&pid, "/bin/echo", &fa, NULL, args, environ);
  CHECK(r == 0, "posix_spawn /bin/echo: %s", strerror(r));
  posix_spawn_file_actions_destroy(&fa);
  if (r == 0) {
    int status = wait_for(pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "echo status 0x%x", status);
    char buf[128];
    read_file(path, buf, sizeof buf);
    CHECK(strcmp(buf, "hello from spawn\n") == 0, "file holds '%s'", buf);
    printf("  file holds the echoed line, exit 0\n");
  }
  unlink(path);
}

static void self_with_actions(const char* self) {
  printf("posix_spawn of this program: adddup2, addclose, sigmask, sigdefault, envp:\n");
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe: %s", strerror(errno));
  // A descriptor that would be inherited, to be closed by a file action.
  int extra = dup(p[0]);
  REQUIRE(extra >= 0, "dup: %s", strerror(errno));

  posix_spawn_file_actions_t fa;
  REQUIRE(posix_spawn_file_actions_init(&fa) == 0, "file_actions_init");
  // The order matters: dup2 first, then close the originals.
  CHECK(posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO) == 0, "adddup2");
  CHECK(posix_spawn_file_actions_addclose(&fa, p[0]) == 0, "addclose read end");
  CHECK(posix_spawn_file_actions_addclose(&fa, p[1]) == 0, "addclose write end");
  CHECK(posix_spawn_file_actions_addclose(&fa, extra) == 0, "addclose extra");

  posix_spawnattr_t attr;
  REQUIRE(posix_spawnattr_init(&attr) == 0, "spawnattr_init");
  sigset_t child_mask, defaults;
  sigemptyset(&child_mask);
  sigaddset(&child_mask, SIGUSR1);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGUSR2);
  CHECK(posix_spawnattr_setsigmask(&attr, &child_mask) == 0, "setsigmask");
  CHECK(posix_spawnattr_setsigdefault(&attr, &defaults) == 0, "setsigdefault");
  CHECK(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) == 0,
        "setflags");
  // Ignored here: only POSIX_SPAWN_SETSIGDEF makes it default in the child.
  // (An ignored signal would stay ignored across exec.)
  signal(SIGUSR2, SIG_IGN);

  char closed_arg[16];
  snprintf(closed_arg, sizeof closed_arg, "%d", extra);
  char* const args[] = {(char*)self, "child", closed_arg, NULL};
  char* const envs[] = {"SPAWN_VAR=from-envp", NULL};
  pid_t pid = -1;
  int r = posix_spawn(&pid, self, &fa, &attr, args, envs);
  CHECK(r == 0, "posix_spawn self: %s", strerror(r));
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  signal(SIGUSR2, SIG_DFL);
  close(p[1]);
  close(extra);

  // The parent's own descriptors are untouched by the child's actions.
  CHECK(fcntl(p[0], F_GETFD) >= 0, "the parent's read end was closed");
  if (r == 0) {
    char buf[128] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(p[0], buf + got, sizeof buf - 1 - got)) > 0)
      got += (size_t)n;
    CHECK(strcmp(buf, "spawned child ok\n") == 0, "child wrote '%s'", buf);
    int status = wait_for(pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 5,
          "child status 0x%x, want exit 5 (100+ = a failed check in the child)", status);
    printf("  child's output came through the pipe; exit %d\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  close(p[0]);
}

static void search_path(void) {
  printf("posix_spawnp through PATH:\n");
  // The first entry does not exist; the search must go on past it.
  const char* old = getenv("PATH");
  char* saved = old ? strdup(old) : NULL;
  setenv("PATH", "/nonexistent-flatux-dir:/usr/bin:/bin", 1);

  int p[2];
  REQUIRE(pipe(p) == 0, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  REQUIRE(posix_spawn_file_actions_init(&fa) == 0, "file_actions_init");
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, p[0]);
  char* const args[] = {"echo", "found", "on", "PATH", NULL};
  pid_t pid = -1;
  int r = posix_spawnp(&pid, "echo", &fa, NULL, args, environ);
  CHECK(r == 0, "posix_spawnp echo: %s", strerror(r));
  close(p[1]);
  if (r == 0) {
    char buf[64] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(p[0], buf + got, sizeof buf - 1 - got)) > 0)
      got += (size_t)n;
    CHECK(strcmp(buf, "found on PATH\n") == 0, "echo wrote '%s'", buf);
    int status = wait_for(pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
    printf("  echo found and run\n");
  }
  close(p[0]);
  posix_spawn_file_actions_destroy(&fa);

  // Exec failures come back as the return value, and the libc has reaped
  // the failed child itself.
  pid = -1;
  r = posix_spawnp(&pid, "flatux-no-such-program-anywhere", NULL, NULL, args, environ);
  CHECK(r == ENOENT, "posix_spawnp of a missing program returned %d (%s), want ENOENT", r,
        strerror(r));
  r = posix_spawn(&pid, "/nonexistent-flatux-dir/echo", NULL, NULL, args, environ);
  CHECK(r == ENOENT, "posix_spawn of a missing path returned %d (%s), want ENOENT", r,
        strerror(r));
  printf("  missing programs: ENOENT from posix_spawn and posix_spawnp\n");
  CHECK_ERR(waitpid(-1, NULL, WNOHANG), ECHILD);

  if (saved) {
    setenv("PATH", saved, 1);
    free(saved);
  }
}

static void failing_file_action(void) {
  printf("posix_spawn with a file action that fails:\n");
  posix_spawn_file_actions_t fa;
  REQUIRE(posix_spawn_file_actions_init(&fa) == 0, "file_actions_init");
  posix_spawn_file_actions_addopen(&fa, 3, "/nonexistent-flatux-dir/file", O_RDONLY, 0);
  char* const args[] = {"echo", "never", NULL};
  pid_t pid = -1;
  int r = posix_spawn(&pid, "/bin/echo", &fa, NULL, args, environ);
  posix_spawn_file_actions_destroy(&fa);
  CHECK(r == ENOENT, "returned %d (%s), want ENOENT from the open", r, strerror(r));
  CHECK_ERR(waitpid(-1, NULL, WNOHANG), ECHILD);
  printf("  the open's ENOENT is the return value\n");
}

int main(int argc, char** argv) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && strcmp(argv[1], "child") == 0) return child_main(argc, argv);
  guest_name = "spawn";
  echo_to_file();
  self_with_actions(self_path(argv[0]));
  search_path();
  failing_file_action();
  return guest_finish();
}
