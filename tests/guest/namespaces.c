// Namespaces and unshare(2). UTS: a process that unshares (or is cloned
// with CLONE_NEWUTS) has host and domain names of its own, seen by uname,
// /proc/sys/kernel and its children, and changed without touching its
// parent's; doing so needs CAP_SYS_ADMIN. unshare's other flags: unknown
// bits are EINVAL; CLONE_FILES and CLONE_FS give the caller its own copy;
// CLONE_THREAD is fine for a single thread. Run as root (natively the
// names change only inside the new namespaces). The namespaces flatux does
// not have yet are not checked here (EPERM under flatux, see
// syscall_notes.txt).
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest_check.h"

// Exits 0 when uname, /proc and a child all say `name`.
static int sees(const char* name) {
  struct utsname u;
  char p[128];
  if (uname(&u) != 0 || strcmp(u.nodename, name) != 0) return 1;
  if (guest_read_line("/proc/sys/kernel/hostname", p, sizeof p) != 0 || strcmp(p, name) != 0) return 2;
  pid_t c = fork();
  if (c == 0) _exit(uname(&u) == 0 && strcmp(u.nodename, name) == 0 ? 0 : 1);
  int st;
  if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 3;
  return 0;
}

static int wait_status(pid_t pid) {
  int st;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void uts_by_unshare(const char* mine) {
  pid_t c = fork();
  REQUIRE(c >= 0);
  if (c == 0) {
    if (unshare(CLONE_NEWUTS) != 0) _exit(10);
    if (sethostname("uts-unshared", 12) != 0 || setdomainname("uts-domain", 10) != 0) _exit(11);
    struct utsname u;
    if (uname(&u) != 0 || strcmp(u.domainname, "uts-domain") != 0) _exit(12);
    _exit(sees("uts-unshared"));
  }
  CHECK(wait_status(c) == 0, "unshare(CLONE_NEWUTS): a name of its own (status %d)", wait_status(c));
  CHECK(sees(mine) == 0, "the parent's name is still %s", mine);
}

static void uts_by_clone(const char* mine) {
  pid_t c = (pid_t)syscall(SYS_clone, CLONE_NEWUTS | SIGCHLD, 0, 0, 0, 0);
  REQUIRE(c >= 0, "clone(CLONE_NEWUTS): %s", strerror(errno));
  if (c == 0) {
    if (sethostname("uts-cloned", 10) != 0) _exit(10);
    _exit(sees("uts-cloned"));
  }
  CHECK(wait_status(c) == 0, "clone(CLONE_NEWUTS): a name of its own");
  CHECK(sees(mine) == 0, "the parent's name is still %s", mine);
}

static void uts_needs_cap(void) {
  pid_t c = fork();
  REQUIRE(c >= 0);
  if (c == 0) {
    if (setresuid(65534, 65534, 65534) != 0) _exit(10);
    if (unshare(CLONE_NEWUTS) != -1 || errno != EPERM) _exit(11);
    if (syscall(SYS_clone, CLONE_NEWUTS | SIGCHLD, 0, 0, 0, 0) != -1 || errno != EPERM) _exit(12);
    _exit(0);
  }
  CHECK(wait_status(c) == 0, "without CAP_SYS_ADMIN: EPERM (status %d)", wait_status(c));
}

static void other_flags(void) {
  CHECK_ERR(unshare(0x1), EINVAL);  // a signal number is no unshare flag
  pid_t c = fork();
  REQUIRE(c >= 0);
  if (c == 0) {
    // A single thread has no thread group, signal handlers or memory to
    // unshare; its table and fs info become its own.
    if (unshare(CLONE_THREAD | CLONE_SIGHAND | CLONE_VM) != 0) _exit(10);
    if (unshare(CLONE_FILES | CLONE_FS) != 0) _exit(11);
    if (chdir("/") != 0 || fcntl(0, F_GETFD) < 0) _exit(12);
    _exit(0);
  }
  CHECK(wait_status(c) == 0, "unshare of a single thread's own things (status %d)", wait_status(c));
}

int main(void) {
  guest_name = "namespaces";
  if (geteuid() != 0) {
    puts("not root (skipped)");
    return 77;
  }
  struct utsname u;
  REQUIRE(uname(&u) == 0);
  uts_by_unshare(u.nodename);
  uts_by_clone(u.nodename);
  uts_needs_cap();
  other_flags();
  return guest_finish();
}
