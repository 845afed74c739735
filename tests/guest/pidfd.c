// pidfds (pidfd_open, pidfd_send_signal, pidfd_getfd, readiness at exit,
// /proc/PID directories as pidfds) and close_range.
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char** environ;

static long pidfd_open(pid_t pid, unsigned flags) { return syscall(SYS_pidfd_open, pid, flags); }
static long pidfd_send_signal(int fd, int sig, siginfo_t* info, unsigned flags) {
  return syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig) { (void)sig; got_usr1++; }

static pid_t spawn_sleeper(void) {
  pid_t pid;
  char* argv[] = {"sleep", "30", NULL};
  int r = posix_spawnp(&pid, "sleep", NULL, NULL, argv, environ);
  REQUIRE(r == 0, "posix_spawnp: %s", strerror(r));
  return pid;
}

static int readable(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void check_pidfds(void) {
  printf("pidfds:\n");
  CHECK_ERR(pidfd_open(0, 0), EINVAL);
  CHECK_ERR(pidfd_open(-1, 0), EINVAL);
  CHECK_ERR(pidfd_open(getpid(), 1), EINVAL);
  CHECK_ERR(pidfd_open(0x7ffffff0, 0), ESRCH);

  int self = (int)pidfd_open(getpid(), 0);
  REQUIRE(self >= 0, "pidfd_open(self): %s", strerror(errno));
  CHECK(fcntl(self, F_GETFD) == FD_CLOEXEC, "pidfds are close-on-exec");
  char c;
  CHECK_ERR(read(self, &c, 1), EINVAL);
  CHECK(!readable(self, 0), "a live process's pidfd is not readable");

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
  CHECK(pidfd_send_signal(self, SIGUSR1, NULL, 0) == 0, "%s", strerror(errno));
  CHECK(got_usr1 == 1, "SIGUSR1 delivered %d times", (int)got_usr1);
  CHECK(pidfd_send_signal(self, 0, NULL, 0) == 0);
  CHECK_ERR(pidfd_send_signal(self, SIGUSR1, NULL, 8), EINVAL);
  CHECK_ERR(pidfd_send_signal(self, SIGUSR1, NULL, 3), EINVAL);  // one scope at most
  CHECK(pidfd_send_signal(self, SIGUSR1, NULL, 2 /*PIDFD_SIGNAL_THREAD_GROUP*/) == 0, "%s", strerror(errno));
  CHECK(got_usr1 == 2, "SIGUSR1 delivered %d times", (int)got_usr1);
  got_usr1 = 1;
  CHECK_ERR(pidfd_send_signal(self, 65, NULL, 0), EINVAL);
  CHECK_ERR(pidfd_send_signal(0x3fff, SIGUSR1, NULL, 0), EBADF);
  int devnull = open("/dev/null", O_RDONLY);
  CHECK_ERR(pidfd_send_signal(devnull, SIGUSR1, NULL, 0), EBADF);
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = SIGUSR2;
  si.si_code = SI_QUEUE;
  CHECK_ERR(pidfd_send_signal(self, SIGUSR1, &si, 0), EINVAL);  // si_signo differs
  si.si_signo = SIGUSR1;
  CHECK(pidfd_send_signal(self, SIGUSR1, &si, 0) == 0);
  CHECK(got_usr1 == 2);
  CHECK_ERR(pidfd_send_signal(self, SIGUSR1, (siginfo_t*)8, 0), EFAULT);

  // A /proc/PID directory serves as a pidfd for sending.
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/%d", (int)getpid());
  int dirfd = open(proc, O_RDONLY | O_DIRECTORY);
  REQUIRE(dirfd >= 0);
  CHECK(pidfd_send_signal(dirfd, SIGUSR1, NULL, 0) == 0, "%s", strerror(errno));
  CHECK(got_usr1 == 3);
  int procroot = open("/proc", O_RDONLY | O_DIRECTORY);
  CHECK_ERR(pidfd_send_signal(procroot, SIGUSR1, NULL, 0), EBADF);
  close(procroot);
  close(dirfd);

  // pidfd_getfd: a duplicate of another process's descriptor (here our own).
  int dup = (int)syscall(SYS_pidfd_getfd, self, devnull, 0);
  CHECK(dup >= 0 && fcntl(dup, F_GETFD) == FD_CLOEXEC, "pidfd_getfd: %s", strerror(errno));
  struct stat a, b;
  CHECK(fstat(dup, &a) == 0 && fstat(devnull, &b) == 0 && a.st_rdev == b.st_rdev);
  close(dup);
  CHECK_ERR(syscall(SYS_pidfd_getfd, self, 0x3ff0, 0), EBADF);
  CHECK_ERR(syscall(SYS_pidfd_getfd, self, devnull, 1), EINVAL);
  CHECK_ERR(syscall(SYS_pidfd_getfd, devnull, 0, 0), EBADF);
  close(devnull);

  // A child: not readable while it runs, readable once it exits (also
  // through epoll), ESRCH once reaped.
  pid_t child = spawn_sleeper();
  int cfd = (int)pidfd_open(child, O_NONBLOCK);
  REQUIRE(cfd >= 0, "pidfd_open(child): %s", strerror(errno));
  CHECK(fcntl(cfd, F_GETFL) & O_NONBLOCK);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev) == 0);
  CHECK(!readable(cfd, 50));
  siginfo_t wi;
  CHECK_ERR(syscall(SYS_waitid, P_PIDFD, cfd, &wi, WEXITED, NULL), EAGAIN);  // O_NONBLOCK pidfd
  CHECK_ERR(syscall(SYS_waitid, P_PIDFD, self, &wi, WEXITED | WNOHANG, NULL), ECHILD);  // not a child
  CHECK_ERR(syscall(SYS_waitid, P_PIDFD, 0x3ff0, &wi, WEXITED, NULL), EBADF);
  CHECK(pidfd_send_signal(cfd, SIGTERM, NULL, 0) == 0);
  CHECK(readable(cfd, 5000), "pidfd readable after the child's exit");
  struct epoll_event out;
  CHECK(epoll_wait(ep, &out, 1, 1000) == 1 && out.data.u64 == 7);
  CHECK(pidfd_send_signal(cfd, 0, NULL, 0) == 0, "a zombie can still be named: %s", strerror(errno));
  memset(&wi, 0, sizeof wi);
  CHECK(syscall(SYS_waitid, P_PIDFD, cfd, &wi, WEXITED, NULL) == 0 && wi.si_pid == child &&
            wi.si_code == CLD_KILLED && wi.si_status == SIGTERM,
        "waitid(P_PIDFD): %s", strerror(errno));
  CHECK_ERR(pidfd_send_signal(cfd, SIGTERM, NULL, 0), ESRCH);
  CHECK_ERR(pidfd_open(child, 0), ESRCH);
  close(ep);
  close(cfd);
  close(self);
}

static void check_close_range(void) {
  printf("close_range:\n");
  int fds[6];
  for (int i = 0; i < 6; i++) REQUIRE((fds[i] = open("/dev/null", O_RDONLY)) >= 0);
  int lo = fds[0], hi = fds[5];
  CHECK_ERR(syscall(SYS_close_range, hi, lo, 0), EINVAL);
  CHECK_ERR(syscall(SYS_close_range, lo, hi, 1), EINVAL);
  CHECK(syscall(SYS_close_range, lo, lo + 1, CLOSE_RANGE_CLOEXEC) == 0);
  CHECK(fcntl(lo, F_GETFD) == FD_CLOEXEC && fcntl(lo + 1, F_GETFD) == FD_CLOEXEC);
  CHECK(fcntl(lo + 2, F_GETFD) == 0);
  CHECK(syscall(SYS_close_range, lo + 2, lo + 3, 0) == 0);
  CHECK_ERR(fcntl(lo + 2, F_GETFD), EBADF);
  CHECK_ERR(fcntl(lo + 3, F_GETFD), EBADF);
  CHECK(fcntl(lo + 4, F_GETFD) == 0);
  CHECK(syscall(SYS_close_range, lo, ~0U, CLOSE_RANGE_UNSHARE) == 0);
  for (int i = 0; i < 6; i++) CHECK_ERR(fcntl(fds[i], F_GETFD), EBADF);
  CHECK(fcntl(0, F_GETFD) >= 0 && fcntl(2, F_GETFD) >= 0, "stdio untouched");
  CHECK(syscall(SYS_close_range, 5000, 6000, 0) == 0);
}

int main(void) {
  guest_name = "pidfd";
  check_pidfds();
  check_close_range();
  return guest_finish();
}
