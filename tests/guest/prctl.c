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

int main(void) {
  guest_name = "prctl";
  test_pdeathsig();
  test_subreaper();
  test_no_new_privs();
  test_capability_readings();
  return guest_finish();
}
