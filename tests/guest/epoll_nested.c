// An epoll instance inside another, watching files the host cannot poll
// for it: a signalfd, and /proc/self/mountinfo, whose change (a mount) an
// epoll sees as EPOLLPRI. libmount's monitor is such an instance, and
// systemd's event loop watches it: a mount unit waits for the mount to
// show there. Also the nesting rules: an instance cannot hold itself, and
// a cycle is ELOOP.
#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

static int add(int ep, int fd, unsigned events) {
  struct epoll_event ev = {0};
  ev.events = events;
  ev.data.fd = fd;
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void test_signalfd_inside(void) {
  printf("a signalfd in an epoll in an epoll:\n");
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  int inner = epoll_create1(EPOLL_CLOEXEC), outer = epoll_create1(EPOLL_CLOEXEC);
  REQUIRE(sfd >= 0 && inner >= 0 && outer >= 0);
  CHECK_OK(add(inner, sfd, EPOLLIN));
  CHECK_OK(add(outer, inner, EPOLLIN));
  struct epoll_event got[4];
  CHECK(epoll_wait(outer, got, 4, 50) == 0, "nothing yet");
  raise(SIGUSR1);
  int n = epoll_wait(outer, got, 4, 1000);
  CHECK(n == 1 && got[0].data.fd == inner && (got[0].events & EPOLLIN), "outer: %d", n);
  n = epoll_wait(inner, got, 4, 0);
  CHECK(n == 1 && got[0].data.fd == sfd && (got[0].events & EPOLLIN), "inner: %d", n);
  struct signalfd_siginfo si;
  CHECK(read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR1);
  CHECK(epoll_wait(outer, got, 4, 50) == 0, "nothing after the read");
  printf("nesting rules:\n");
  CHECK_ERR(add(inner, inner, EPOLLIN), EINVAL);
  CHECK_ERR(add(inner, outer, EPOLLIN), ELOOP);
  close(outer);
  close(inner);
  close(sfd);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void test_mountinfo_inside(void) {
  printf("/proc/self/mountinfo in an epoll in an epoll, as libmount's monitor:\n");
  if (geteuid() != 0) {
    printf("  (not root: no mount)\n");
    return;
  }
  // A folder of its own: the four builds of this test run side by side
  // (and under flatux each is pid 1 of its own run).
  char dir[PATH_MAX], made[] = "/tmp/guest-epoll-nested-XXXXXX";
  REQUIRE(mkdtemp(made));
  if (unshare(CLONE_NEWNS) == 0) REQUIRE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  REQUIRE(realpath(made, dir));
  int mi = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  int inner = epoll_create1(EPOLL_CLOEXEC), outer = epoll_create1(EPOLL_CLOEXEC);
  REQUIRE(mi >= 0 && inner >= 0 && outer >= 0);
  CHECK_OK(add(inner, mi, EPOLLIN | EPOLLET));  // as libmount's monitor: readable, a new event each change
  CHECK_OK(add(outer, inner, EPOLLIN));
  struct epoll_event got[4];
  epoll_wait(inner, got, 4, 0);  // the first look: readable
  CHECK(epoll_wait(outer, got, 4, 50) == 0, "no change yet");
  REQUIRE(mount("none", dir, "tmpfs", 0, "size=64k") == 0, "%s", strerror(errno));
  int n = epoll_wait(outer, got, 4, 1000);
  CHECK(n == 1 && got[0].data.fd == inner, "the mount shows through the outer instance: %d", n);
  n = epoll_wait(inner, got, 4, 0);
  CHECK(n == 1 && got[0].data.fd == mi && (got[0].events & EPOLLIN), "and the inner has it: %d %x", n,
        n > 0 ? got[0].events : 0);
  CHECK(epoll_wait(outer, got, 4, 50) == 0, "reported once");
  umount(dir);
  rmdir(dir);
  close(outer);
  close(inner);
  close(mi);
}

int main(void) {
  guest_name = "epoll_nested";
  test_signalfd_inside();
  test_mountinfo_inside();
  return guest_finish();
}
