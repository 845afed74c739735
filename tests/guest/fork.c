// fork(): the child gets a copy-on-write copy of the parent's memory
// (private memory diverges both ways, MAP_SHARED memory stays shared), the
// same open file descriptions (one offset), and only the calling thread.
// Also: fork in a signal handler and three levels deep, wait statuses,
// kill, pthread_atfork, clone3 without CLONE_VM, vfork from a forked child.
#include "guest_check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

static int global_word = 1;

// Waits for `pid` and returns its wait status (-1 on error).
static int wait_status(pid_t pid) {
  int st;
  pid_t r;
  do r = waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  return r == pid ? st : -1;
}

// The child's exit code, or 200+ when it did not exit normally.
static int child_code(pid_t pid) {
  int st = wait_status(pid);
  if (st == -1) return 300;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void test_copy_on_write(void) {
  printf("copy-on-write both ways:\n");
  int stack_word = 10;
  char* heap = malloc(64);
  REQUIRE(heap);
  strcpy(heap, "parent");
  int p2c[2], c2p[2];
  REQUIRE(pipe(p2c) == 0 && pipe(c2p) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    // The child sees the parent's values at the fork...
    int bad = global_word != 1 || stack_word != 10 || strcmp(heap, "parent") != 0;
    global_word = 2;
    stack_word = 20;
    strcpy(heap, "child");
    if (write(c2p[1], "w", 1) != 1) _exit(90);  // the child has written
    char c;
    if (read(p2c[0], &c, 1) != 1) _exit(91);    // the parent has written
    // ...and never the parent's later writes.
    bad |= (global_word != 2 || stack_word != 20 || strcmp(heap, "child") != 0) << 1;
    _exit(bad);
  }
  char c;
  REQUIRE(read(c2p[0], &c, 1) == 1);
  CHECK(global_word == 1 && stack_word == 10 && strcmp(heap, "parent") == 0,
        "the parent sees the child's writes: %d %d %s", global_word, stack_word, heap);
  global_word = 3;
  stack_word = 30;
  strcpy(heap, "parent2");
  REQUIRE(write(p2c[1], "w", 1) == 1);
  CHECK(child_code(pid) == 0, "the child saw the wrong values (%d)", child_code(pid));
  CHECK(pid != getpid());
  close(p2c[0]); close(p2c[1]); close(c2p[0]); close(c2p[1]);
  free(heap);
}

static void test_shared_mappings(void) {
  printf("MAP_SHARED memory stays shared:\n");
  volatile int* anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(anon != MAP_FAILED);
  char path[] = "/tmp/flatux-fork-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0, "mkstemp: %s", strerror(errno));
  unlink(path);
  REQUIRE(ftruncate(fd, 4096) == 0);
  volatile int* file = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(file != MAP_FAILED);
  volatile int* priv = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(priv != MAP_FAILED);
  anon[0] = file[0] = priv[0] = 1;
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    anon[0] = 2;
    file[0] = 2;
    priv[0] = 2;
    // Wait for the parent's answer through the shared page.
    for (int i = 0; i < 5000 && anon[1] != 7; i++) usleep(1000);
    _exit(anon[1] == 7 && file[1] == 8 ? 0 : 1);
  }
  for (int i = 0; i < 5000 && (anon[0] != 2 || file[0] != 2); i++) usleep(1000);
  CHECK(anon[0] == 2, "shared anonymous: %d", anon[0]);
  CHECK(file[0] == 2, "shared file mapping: %d", file[0]);
  CHECK(priv[0] == 1, "a private mapping changed in the parent: %d", priv[0]);
  file[1] = 8;
  anon[1] = 7;
  CHECK(child_code(pid) == 0, "the child did not see the parent's writes");
  int on_disk = 0;
  CHECK(pread(fd, &on_disk, sizeof on_disk, 0) == sizeof on_disk && on_disk == 2,
        "the file holds %d", on_disk);
  close(fd);
}

static void test_shared_offset_and_pipe(void) {
  printf("one file offset, pipes both ways:\n");
  char path[] = "/tmp/flatux-fork-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  unlink(path);
  int to_child[2], to_parent[2];
  REQUIRE(pipe(to_child) == 0 && pipe(to_parent) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    if (write(fd, "child:", 6) != 6) _exit(1);
    char buf[32];
    ssize_t n = read(to_child[0], buf, sizeof buf);
    if (n != 5 || memcmp(buf, "ping\n", 5) != 0) _exit(2);
    if (write(to_parent[1], "pong\n", 5) != 5) _exit(3);
    n = read(to_child[0], buf, sizeof buf);  // EOF once the parent closes
    _exit(n == 0 ? 0 : 4);
  }
  close(to_child[0]);
  close(to_parent[1]);
  REQUIRE(write(to_child[1], "ping\n", 5) == 5);
  char buf[32];
  CHECK(read(to_parent[0], buf, sizeof buf) == 5 && memcmp(buf, "pong\n", 5) == 0);
  close(to_child[1]);
  CHECK(child_code(pid) == 0, "child: %d", child_code(pid));
  CHECK(lseek(fd, 0, SEEK_CUR) == 6, "the child's write did not move the shared offset");
  REQUIRE(write(fd, "parent", 6) == 6);
  char all[16] = "";
  CHECK(pread(fd, all, 12, 0) == 12 && memcmp(all, "child:parent", 12) == 0, "file: %.12s", all);
  close(fd);
  close(to_parent[0]);
}

static volatile int spin_count;
static volatile int spin_stop;
static void* spinner(void* arg) {
  while (!spin_stop) spin_count++;
  return arg;
}

static void test_threads(void) {
  printf("fork in a threaded process keeps only the caller:\n");
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, spinner, NULL) == 0);
  while (spin_count < 1000) sched_yield();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // No thread is counting in the child; and a new thread works.
    int before = spin_count;
    usleep(50000);
    if (spin_count != before) _exit(1);
    pthread_t t2;
    spin_stop = 0;
    if (pthread_create(&t2, NULL, spinner, NULL) != 0) _exit(2);
    while (spin_count == before) sched_yield();
    spin_stop = 1;
    pthread_join(t2, NULL);
    _exit(0);
  }
  CHECK(child_code(pid) == 0, "child: %d", child_code(pid));
  spin_stop = 1;
  pthread_join(th, NULL);
}

static volatile pid_t handler_child;
static void fork_in_handler(int sig) {
  (void)sig;
  pid_t pid = fork();
  if (pid == 0) _exit(42);
  handler_child = pid;
}

static void test_signal_handler(void) {
  printf("fork inside a signal handler:\n");
  signal(SIGUSR1, fork_in_handler);
  raise(SIGUSR1);
  REQUIRE(handler_child > 0, "fork in the handler failed");
  CHECK(child_code(handler_child) == 42);
  signal(SIGUSR1, SIG_DFL);
}

static void test_three_levels(void) {
  printf("fork of a forked child, three levels deep:\n");
  int p[2];
  REQUIRE(pipe(p) == 0);
  pid_t top = getpid();
  pid_t a = fork();
  REQUIRE(a >= 0);
  if (a == 0) {
    if (getppid() != top) _exit(10);
    pid_t me = getpid();
    pid_t b = fork();
    if (b < 0) _exit(11);
    if (b == 0) {
      if (getppid() != me) _exit(20);
      pid_t me2 = getpid();
      pid_t c = fork();
      if (c < 0) _exit(21);
      if (c == 0) {
        if (getppid() != me2) _exit(30);
        global_word = 333;
        char msg[32];
        int n = snprintf(msg, sizeof msg, "%d", (int)getpid());
        _exit(write(p[1], msg, (size_t)n) == n ? 33 : 31);
      }
      _exit(child_code(c) == 33 ? 22 : 23);
    }
    _exit(child_code(b) == 22 ? 12 : 13);
  }
  CHECK(child_code(a) == 12, "levels: %d", child_code(a));
  char buf[32] = "";
  close(p[1]);
  CHECK(read(p[0], buf, sizeof buf - 1) > 0 && atoi(buf) > 0);
  close(p[0]);
  CHECK(global_word != 333);
}

static void test_wait_statuses_and_kill(void) {
  printf("wait statuses and kill:\n");
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) for (;;) pause();
  REQUIRE(kill(pid, SIGSTOP) == 0);
  int st;
  CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
  REQUIRE(kill(pid, SIGCONT) == 0);
  CHECK(waitpid(pid, &st, WCONTINUED) == pid && WIFCONTINUED(st));
  REQUIRE(kill(pid, SIGTERM) == 0);
  st = wait_status(pid);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);

  // A child busy in its own code is killed all the same.
  pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) for (volatile long i = 0;; i++) {}
  usleep(20000);
  REQUIRE(kill(pid, SIGKILL) == 0);
  st = wait_status(pid);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);

  // An exit status and SIGCHLD.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, &old);
  pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(3);
  siginfo_t si;
  memset(&si, 0, sizeof si);
  CHECK(sigwaitinfo(&set, &si) == SIGCHLD && si.si_pid == pid && si.si_code == CLD_EXITED && si.si_status == 3);
  CHECK(waitid(P_PID, (id_t)pid, &si, WEXITED) == 0 && si.si_status == 3);
  sigprocmask(SIG_SETMASK, &old, NULL);
}

static size_t read_file(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  size_t n = 0;
  ssize_t r;
  while (n < cap && (r = read(fd, buf + n, cap - n)) > 0) n += (size_t)r;
  close(fd);
  return n;
}

static void test_proc_of_child(void) {
  printf("/proc/PID of a forked child:\n");
  int p[2];
  REQUIRE(pipe(p) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(p[1]);
    char c;
    _exit(read(p[0], &c, 1) == 0 ? 0 : 1);  // until the parent closes its end
  }
  close(p[0]);
  char mine[4096], theirs[4096], path[64];
  size_t n1 = read_file("/proc/self/cmdline", mine, sizeof mine);
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  size_t n2 = read_file(path, theirs, sizeof theirs);
  CHECK(n1 > 0 && n1 == n2 && memcmp(mine, theirs, n1) == 0, "cmdline of the child: %zu vs %zu bytes", n2, n1);
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  CHECK(read_file(path, theirs, sizeof theirs) > 0 && atoi(theirs) == pid);
  close(p[1]);
  CHECK(child_code(pid) == 0);
}

static volatile sig_atomic_t got_prof;
static void on_prof(int sig) { (void)sig; got_prof = 1; }

static void test_cpu_timer_in_child(void) {
  printf("ITIMER_PROF in a forked child:\n");
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGPROF, on_prof);
    struct itimerval it = {{0, 0}, {0, 20000}};
    if (setitimer(ITIMER_PROF, &it, NULL) != 0) _exit(1);
    // 20 ms of CPU time; give up after 5 s of wall time.
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
      for (volatile int i = 0; i < 100000; i++) {}
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!got_prof && now.tv_sec - t0.tv_sec < 5);
    _exit(got_prof ? 0 : 2);
  }
  CHECK(child_code(pid) == 0, "no SIGPROF in the child (%d)", child_code(pid));
}

static int atfork_log[3], atfork_n;
static void at_prepare(void) { atfork_log[0] = ++atfork_n; }
static void at_parent(void) { atfork_log[1] = ++atfork_n; }
static void at_child(void) { atfork_log[2] = ++atfork_n; }

static void test_atfork(void) {
  printf("pthread_atfork handlers:\n");
  REQUIRE(pthread_atfork(at_prepare, at_parent, at_child) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(atfork_log[0] == 1 && atfork_log[1] == 0 && atfork_log[2] == 2 ? 0 : 1);
  CHECK(atfork_log[0] == 1 && atfork_log[1] == 2 && atfork_log[2] == 0);
  CHECK(child_code(pid) == 0);
}

struct clone_args_v0 {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void test_clone3(void) {
  printf("clone3 without CLONE_VM:\n");
  struct clone_args_v0 ca;
  memset(&ca, 0, sizeof ca);
  ca.exit_signal = SIGCHLD;
  global_word = 5;
  long r = syscall(SYS_clone3, &ca, sizeof ca);
  REQUIRE(r >= 0, "clone3: %s", strerror(errno));
  if (r == 0) {
    global_word = 6;
    syscall(SYS_exit, global_word == 6 ? 0 : 1);
  }
  CHECK(child_code((pid_t)r) == 0);
  CHECK(global_word == 5);
  // clone with CLONE_VFORK but no CLONE_VM: the parent waits, memory is copied.
  r = syscall(SYS_clone, CLONE_VFORK | SIGCHLD, 0, 0, 0, 0);
  REQUIRE(r >= 0);
  if (r == 0) {
    global_word = 7;
    syscall(SYS_exit, 0);
  }
  CHECK(child_code((pid_t)r) == 0);
  CHECK(global_word == 5);
}

static void test_vfork_in_forked_child(void) {
  printf("vfork from a forked child:\n");
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    volatile int shared = 0;
    pid_t v = vfork();
    if (v < 0) _exit(1);
    if (v == 0) {
      shared = 1;  // the vfork child borrows the forked child's memory
      _exit(9);
    }
    if (shared != 1) _exit(2);
    _exit(child_code(v) == 9 ? 0 : 3);
  }
  CHECK(child_code(pid) == 0, "child: %d", child_code(pid));
}

int main(void) {
  guest_name = "fork";
  setvbuf(stdout, NULL, _IONBF, 0);
  test_copy_on_write();
  test_shared_mappings();
  test_shared_offset_and_pipe();
  test_threads();
  test_signal_handler();
  test_three_levels();
  test_wait_statuses_and_kill();
  test_proc_of_child();
  test_cpu_timer_in_child();
  test_atfork();
  test_clone3();
  test_vfork_in_forked_child();
  return guest_finish();
}
