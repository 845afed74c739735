// fork() and the madvise calls that shape what a child gets: MADV_DONTFORK
// memory is not in the child at all (its range is free there), MADV_DOFORK
// undoes that, MADV_WIPEONFORK gives the child zeroes. Then fork+exec as
// node's child_process does it: a process with worker threads, blocked
// signals, a large MADV_DONTFORK reservation (V8 marks its heap so), a
// close-on-exec pipe that reports exec's success, and a child that resets
// its signals and execs a PIE program, many times over.
#include "guest_check.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#define MADV_KEEPONFORK 19
#endif

static const size_t kPage = 4096;

// The child's exit code, or 200+ when it did not exit normally.
static int child_code(pid_t pid) {
  int st;
  pid_t r;
  do r = waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (r != pid) return 300;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

// Does /proc/self/maps list a mapping that holds `addr`? Read without
// stdio: a buffer malloc'ed in the child could land in the very hole the
// child is asked about.
static char maps_buf[1 << 20];
static int maps_has(uintptr_t addr) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = 0;
  ssize_t n;
  while (len < sizeof maps_buf - 1 && (n = read(fd, maps_buf + len, sizeof maps_buf - 1 - len)) > 0) len += (size_t)n;
  close(fd);
  maps_buf[len] = 0;
  for (char* line = maps_buf; *line;) {
    unsigned long lo = strtoul(line, &line, 16), hi = strtoul(line + 1, NULL, 16);
    if (lo <= addr && addr < hi) return 1;
    char* nl = strchr(line, '\n');
    if (!nl) break;
    line = nl + 1;
  }
  return 0;
}

static char* map_pages(size_t n, char fill) {
  char* p = mmap(NULL, n * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
  memset(p, fill, n * kPage);
  return p;
}

// Child side of the DONTFORK cases: exit codes name the first failed check.
static int dontfork_child(char* p) {
  char* mid = p + kPage;
  if (maps_has((uintptr_t)p) != 1 || maps_has((uintptr_t)(p + 2 * kPage)) != 1) return 1;
  if (maps_has((uintptr_t)mid) != 0) return 2;
  if (p[0] != 'a' || p[2 * kPage] != 'a') return 3;
  // The range is free in the child: a mapping may be put exactly there.
  char* again = mmap(mid, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (again != mid) return 4;
  if (again[0] != 0) return 5;  // fresh memory, not the parent's page
  again[0] = 'c';
  if (munmap(p, 3 * kPage) != 0) return 6;
  if (maps_has((uintptr_t)mid) != 0) return 7;
  return 0;
}

static void test_dontfork(void) {
  printf("MADV_DONTFORK: the child has no such memory:\n");
  char* p = map_pages(3, 'a');
  CHECK(madvise(p + kPage, kPage, MADV_DONTFORK) == 0, "%s", strerror(errno));
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(dontfork_child(p));
  int code = child_code(pid);
  CHECK(code == 0, "child check %d failed", code);
  CHECK(p[kPage] == 'a' && maps_has((uintptr_t)(p + kPage)) == 1, "the parent lost its own page");
  munmap(p, 3 * kPage);
}

static void test_dofork(void) {
  printf("MADV_DOFORK undoes it; a whole mapping marked and unmarked:\n");
  char* p = map_pages(4, 'b');
  CHECK(madvise(p, 4 * kPage, MADV_DONTFORK) == 0);
  CHECK(madvise(p + kPage, 2 * kPage, MADV_DOFORK) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (maps_has((uintptr_t)p) != 0 || maps_has((uintptr_t)(p + 3 * kPage)) != 0) _exit(1);
    if (p[kPage] != 'b' || p[2 * kPage] != 'b') _exit(2);
    _exit(0);
  }
  CHECK(child_code(pid) == 0, "the child's view of DONTFORK/DOFORK pieces was wrong");
  munmap(p, 4 * kPage);
}

static void test_wipeonfork(void) {
  printf("MADV_WIPEONFORK: the child reads zeroes, the parent keeps its data:\n");
  char* p = map_pages(2, 'w');
  CHECK(madvise(p, kPage, MADV_WIPEONFORK) == 0, "%s", strerror(errno));
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(p[0] == 0 && p[kPage - 1] == 0 && p[kPage] == 'w' ? 0 : 1);
  CHECK(child_code(pid) == 0, "the child did not get zeroes in the wiped page only");
  CHECK(p[0] == 'w', "the parent's page was wiped");
  CHECK(madvise(p, kPage, MADV_KEEPONFORK) == 0);
  pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(p[0] == 'w' ? 0 : 1);
  CHECK(child_code(pid) == 0, "MADV_KEEPONFORK did not undo the wipe");
  // Only private anonymous memory can be wiped (Linux: EINVAL otherwise).
  char* shared = mmap(NULL, kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED);
  CHECK_ERR(madvise(shared, kPage, MADV_WIPEONFORK), EINVAL);
  munmap(shared, kPage);
  munmap(p, 2 * kPage);
}

static volatile int workers_stop;
static void* worker(void* arg) {
  while (!workers_stop) usleep(1000);
  return arg;
}

// One spawn the way libuv's uv_spawn does it: fork, reset every signal's
// action and the mask in the child, exec; the parent learns of exec's
// success from EOF on a close-on-exec pipe.
static int spawn_like_node(const char* self, char* reserve) {
  int status_pipe[2], out_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    for (int sig = 1; sig < 32; sig++)
      if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    dup2(out_pipe[1], 1);
    char* argv[] = {(char*)self, (char*)"--exec-child", NULL};
    execv(self, argv);
    int err = errno;
    if (write(status_pipe[1], &err, sizeof err) < 0) _exit(126);
    _exit(127);
  }
  close(status_pipe[1]);
  close(out_pipe[1]);
  int err = 0;
  ssize_t n = read(status_pipe[0], &err, sizeof err);
  close(status_pipe[0]);
  char buf[16] = {0};
  ssize_t got = read(out_pipe[0], buf, sizeof buf - 1);
  close(out_pipe[0]);
  int code = child_code(pid);
  if (n != 0) return 3;  // exec failed
  if (code != 0) return 4 + code;
  if (got != 3 || memcmp(buf, "ok\n", 3) != 0) return 5;
  return reserve[0] == 0 ? 0 : 6;  // the parent's reservation is untouched
}

static void test_spawn_like_node(const char* self) {
  printf("fork+exec as node's child_process, with a DONTFORK reservation:\n");
  // V8 reserves its heap and marks it MADV_DONTFORK: half a gigabyte.
  size_t len = 512u << 20;
  char* reserve = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(reserve != MAP_FAILED);
  CHECK(mprotect(reserve, 64 * kPage, PROT_READ | PROT_WRITE) == 0);
  CHECK(madvise(reserve, len, MADV_DONTFORK) == 0);
  pthread_t th[4];
  for (int i = 0; i < 4; i++) REQUIRE(pthread_create(&th[i], NULL, worker, NULL) == 0);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int failures = 0, first = 0;
  for (int i = 0; i < 40; i++) {
    int r = spawn_like_node(self, reserve);
    if (r && !failures++) first = r;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  CHECK(failures == 0, "%d of 40 spawns failed (first: %d)", failures, first);
  workers_stop = 1;
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  munmap(reserve, len);
}

int main(int argc, char** argv) {
  guest_name = "fork_madvise";
  if (argc > 1 && strcmp(argv[1], "--exec-child") == 0) {
    fputs("ok\n", stdout);
    return 0;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  test_dontfork();
  test_dofork();
  test_wipeonfork();
  test_spawn_like_node(argv[0]);
  return guest_finish();
}
