// prctl options a process keeps for itself: the parent-death signal (sent
// when the parent exits, not inherited by fork), the child subreaper
// (orphans below it come to it, not to init), no_new_privs (set once,
// inherited, arguments checked), the capability bounding set's reading
// and securebits' reading.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "guest_check.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef PR_SPEC_L1D_FLUSH
#define PR_SPEC_L1D_FLUSH 2
#endif
#include <sys/syscall.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <pthread.h>

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig) { (void)sig; got_usr1 = 1; }

// A grandchild asks for SIGUSR1 on its parent's death; the parent exits.
static void test_pdeathsig(void) {
  int ready[2], report[2];
  REQUIRE(pipe(ready) == 0 && pipe(report) == 0);
  pid_t mid = fork();
  REQUIRE(mid >= 0);
  if (mid == 0) {
    pid_t leaf = fork();
    if (leaf == 0) {
      signal(SIGUSR1, on_usr1);
      int sig = -1;
      char c = 'r';
      if (prctl(PR_SET_PDEATHSIG, SIGUSR1) != 0 || prctl(PR_GET_PDEATHSIG, &sig) != 0 || sig != SIGUSR1) {
        c = 'e';  // the refusal is the report
        (void)!write(report[1], &c, 1);
        (void)!write(ready[1], &c, 1);
        _exit(2);
      }
      (void)!write(ready[1], &c, 1);
      for (int i = 0; i < 500 && !got_usr1; i++) usleep(10000);
      c = got_usr1 ? 'y' : 'n';
      (void)!write(report[1], &c, 1);
      _exit(0);
    }
    char c;
    (void)!read(ready[0], &c, 1);
    _exit(0);  // the leaf's parent dies
  }
  int status;
  REQUIRE(waitpid(mid, &status, 0) == mid);
  char c = 0;
  CHECK(read(report[0], &c, 1) == 1 && c == 'y', "the orphan heard SIGUSR1: '%c'", c);
  int sig = -1;
  CHECK(prctl(PR_GET_PDEATHSIG, &sig) == 0 && sig == 0, "this process asked for nothing: %d", sig);
  CHECK_ERR(prctl(PR_SET_PDEATHSIG, 65), EINVAL);
  close(ready[0]); close(ready[1]); close(report[0]); close(report[1]);
}

// Orphans below a subreaper are its children: it waits for them.
static void test_subreaper(void) {
  int v = -1;
  CHECK(prctl(PR_GET_CHILD_SUBREAPER, &v) == 0 && v == 0, "subreaper at first: %d", v);
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  CHECK(prctl(PR_GET_CHILD_SUBREAPER, &v) == 0 && v == 1, "subreaper: %d", v);
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  pid_t mid = fork();
  if (mid == 0) {
    pid_t mid_self = getpid();
    pid_t leaf = fork();
    if (leaf == 0) {
      close(pipefd[0]);
      for (int i = 0; i < 500 && getppid() == mid_self; i++) usleep(10000);
      pid_t pp = getppid();
      (void)!write(pipefd[1], &pp, sizeof pp);
      _exit(7);
    }
    (void)!write(pipefd[1], &leaf, sizeof leaf);
    _exit(0);
  }
  close(pipefd[1]);
  pid_t leaf = -1, leaf_parent = -1;
  REQUIRE(read(pipefd[0], &leaf, sizeof leaf) == sizeof leaf);
  int status;
  REQUIRE(waitpid(mid, &status, 0) == mid);
  CHECK(read(pipefd[0], &leaf_parent, sizeof leaf_parent) == sizeof leaf_parent && leaf_parent == getpid(),
        "the orphan's parent is %d, not this subreaper %d", leaf_parent, getpid());
  CHECK(waitpid(leaf, &status, 0) == leaf && WIFEXITED(status) && WEXITSTATUS(status) == 7,
        "the subreaper waits for the orphan");
  close(pipefd[0]);
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 0) == 0);
}

static void test_no_new_privs(void) {
  CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0, "no_new_privs at first");
  CHECK_ERR(prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0), EINVAL);
  CHECK_ERR(prctl(PR_SET_NO_NEW_PRIVS, 1, 1, 0, 0), EINVAL);
  CHECK_ERR(prctl(PR_GET_NO_NEW_PRIVS, 1, 0, 0, 0), EINVAL);
  pid_t child = fork();
  if (child == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) _exit(1);
    pid_t grand = fork();
    if (grand == 0) _exit(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : 2);
    int st;
    waitpid(grand, &st, 0);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 3);
  }
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "set in a child and inherited by its child: %d", WEXITSTATUS(status));
  CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0, "the parent's is still clear");
}

static void test_capability_readings(void) {
  int r = prctl(PR_CAPBSET_READ, CAP_CHOWN);
  CHECK(r == 0 || r == 1, "PR_CAPBSET_READ(CAP_CHOWN): %d", r);
  CHECK_ERR(prctl(PR_CAPBSET_READ, 1000), EINVAL);
  CHECK(prctl(PR_GET_SECUREBITS) >= 0, "PR_GET_SECUREBITS: %s", strerror(errno));
}

static void test_dumpable(void) {
  puts("dumpable");
  CHECK(prctl(PR_GET_DUMPABLE) == 1);
  CHECK_ERR(prctl(PR_SET_DUMPABLE, 2), EINVAL);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    if (prctl(PR_SET_DUMPABLE, 0) != 0 || prctl(PR_GET_DUMPABLE) != 0) _exit(1);
    pid_t grand = fork();  // inherited over fork
    if (grand == 0) _exit(prctl(PR_GET_DUMPABLE) == 0 ? 0 : 2);
    int st;
    waitpid(grand, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) _exit(3);
    if (geteuid() == 0 && syscall(SYS_setresuid, 0, 0, 0) == 0) {
      prctl(PR_SET_DUMPABLE, 1);
      if (syscall(SYS_setresuid, -1, 65534, -1) != 0) _exit(4);
      if (prctl(PR_GET_DUMPABLE) != 0) _exit(5);  // changing the effective uid clears it
    }
    _exit(0);
  }
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}

static volatile unsigned long thread_slack;

static void* slack_thread(void* arg) {
  thread_slack = (unsigned long)prctl(PR_GET_TIMERSLACK);
  prctl(PR_SET_TIMERSLACK, 0);  // back to the default: its creator's slack when made
  if ((unsigned long)prctl(PR_GET_TIMERSLACK) != thread_slack) thread_slack = 1;
  return NULL;
}

static void test_thread_options(void) {
  puts("timer slack, MCE kill, THP, TSC");
  unsigned long base = (unsigned long)prctl(PR_GET_TIMERSLACK);
  CHECK(base > 0, "the default slack: %lu", base);
  CHECK_OK(prctl(PR_SET_TIMERSLACK, 123456));
  CHECK(prctl(PR_GET_TIMERSLACK) == 123456);
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, slack_thread, NULL) == 0);
  pthread_join(th, NULL);
  CHECK(thread_slack == 123456, "a new thread takes its creator's slack as its default: %lu", thread_slack);
  CHECK_OK(prctl(PR_SET_TIMERSLACK, 0));
  CHECK((unsigned long)prctl(PR_GET_TIMERSLACK) == base, "0 sets the default again");

  CHECK(prctl(PR_MCE_KILL_GET, 0, 0, 0, 0) == PR_MCE_KILL_DEFAULT);
  CHECK_OK(prctl(PR_MCE_KILL, PR_MCE_KILL_SET, PR_MCE_KILL_EARLY, 0, 0));
  CHECK(prctl(PR_MCE_KILL_GET, 0, 0, 0, 0) == PR_MCE_KILL_EARLY);
  CHECK_ERR(prctl(PR_MCE_KILL, PR_MCE_KILL_SET, 7, 0, 0), EINVAL);
  CHECK_OK(prctl(PR_MCE_KILL, PR_MCE_KILL_CLEAR, 0, 0, 0));
  CHECK(prctl(PR_MCE_KILL_GET, 0, 0, 0, 0) == PR_MCE_KILL_DEFAULT);

  CHECK(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0);
  CHECK_OK(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0));
  CHECK(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1);
  CHECK_ERR(prctl(PR_GET_THP_DISABLE, 1, 0, 0, 0), EINVAL);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) _exit(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1 ? 0 : 1);
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "THP kept by a child");
  CHECK_OK(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0));

  int tsc = 0;
  CHECK_OK(prctl(PR_GET_TSC, &tsc));
  CHECK(tsc == PR_TSC_ENABLE, "%d", tsc);
  CHECK_OK(prctl(PR_SET_TSC, PR_TSC_ENABLE));
  CHECK_ERR(prctl(PR_SET_TSC, 99), EINVAL);

  for (int kind = PR_SPEC_STORE_BYPASS; kind <= PR_SPEC_L1D_FLUSH; kind++) {
    int r = prctl(PR_GET_SPECULATION_CTRL, kind, 0, 0, 0);
    CHECK(r >= 0 || errno == ENODEV || errno == EINVAL, "speculation %d: %d %s", kind, r, strerror(errno));
  }
  CHECK_ERR(prctl(PR_GET_SPECULATION_CTRL, 99, 0, 0, 0), ENODEV);
  CHECK_ERR(prctl(PR_SET_SPECULATION_CTRL, 99, PR_SPEC_ENABLE, 0, 0), ENODEV);
}

static int maps_mention(const char* what) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[512];
  int found = 0;
  while (f && fgets(line, sizeof line, f)) found |= strstr(line, what) != NULL;
  if (f) fclose(f);
  return found;
}

static void test_vma_names(void) {
  puts("anonymous memory names");
  char* m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 2 * 4096, "my heap") != 0) {
    printf("PR_SET_VMA: %s: skipped (a kernel without CONFIG_ANON_VMA_NAME)\n", strerror(errno));
    munmap(m, 4 * 4096);
    return;
  }
  CHECK(maps_mention("[anon:my heap]"), "/proc/self/maps shows the name");
  CHECK_ERR(prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4096, "bad[name]"), EINVAL);
  CHECK_ERR(prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m + 1, 4096, "x"), EINVAL);
  CHECK_ERR(prctl(PR_SET_VMA, 99, m, 4096, "x"), EINVAL);
  char longname[100];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  CHECK_ERR(prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4096, longname), EINVAL);
  munmap(m + 3 * 4096, 4096);
  CHECK_ERR(prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4 * 4096, "x"), ENOMEM);
  CHECK_OK(prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 2 * 4096, NULL));
  CHECK(!maps_mention("[anon:my heap]"), "NULL takes the name off");
  int fd = open("/proc/self/exe", O_RDONLY);
  char* file = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  REQUIRE(file != MAP_FAILED);
  CHECK_ERR(prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, file, 4096, "x"), EBADF);
  munmap(file, 4096);
  close(fd);
  munmap(m, 3 * 4096);
}

int main(void) {
  guest_name = "prctl";
  test_dumpable();
  test_thread_options();
  test_vma_names();
  test_pdeathsig();
  test_subreaper();
  test_no_new_privs();
  test_capability_readings();
  return guest_finish();
}
