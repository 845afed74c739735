// signalfd: a blocked SIGUSR1 read as a signalfd_siginfo record (sender,
// code, sigqueue value), non-blocking EAGAIN, a blocking read woken by
// another thread's kill, poll/select readiness, thread-directed signals,
// changing the mask, and several records in one read.
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void* kill_later(void* p) {
  usleep(100000);
  kill(getpid(), (int)(long)p);
  return NULL;
}

int main(void) {
  guest_name = "signalfd";
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGRTMIN);
  REQUIRE(sigprocmask(SIG_BLOCK, &set, NULL) == 0, "sigprocmask");

  printf("reading a blocked SIGUSR1:\n");
  int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  REQUIRE(sfd >= 0, "signalfd: %s", strerror(errno));
  CHECK(fcntl(sfd, F_GETFD) == FD_CLOEXEC && (fcntl(sfd, F_GETFL) & O_NONBLOCK), "flags");
  struct signalfd_siginfo si;
  CHECK_ERR(read(sfd, &si, sizeof si), EAGAIN);
  CHECK_ERR(read(sfd, &si, sizeof si - 1), EINVAL);
  struct pollfd p = {sfd, POLLIN, 0};
  CHECK(poll(&p, 1, 0) == 0, "nothing pending: not readable");
  kill(getpid(), SIGUSR1);
  CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN), "pending: POLLIN");
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(sfd, &rs);
  struct timeval tv = {1, 0};
  CHECK(select(sfd + 1, &rs, NULL, NULL, &tv) == 1 && FD_ISSET(sfd, &rs), "select agrees");
  memset(&si, 0, sizeof si);
  CHECK(read(sfd, &si, sizeof si) == sizeof si, "read: %s", strerror(errno));
  CHECK(si.ssi_signo == SIGUSR1 && si.ssi_code == SI_USER && si.ssi_pid == (uint32_t)getpid() &&
            si.ssi_uid == getuid(),
        "record: signo %u code %d pid %u uid %u", si.ssi_signo, si.ssi_code, si.ssi_pid, si.ssi_uid);
  CHECK_ERR(read(sfd, &si, sizeof si), EAGAIN);
  sigset_t pend;
  sigpending(&pend);
  CHECK(!sigismember(&pend, SIGUSR1), "consumed: no longer pending");

  printf("sigqueue values, several records per read:\n");
  union sigval val = {.sival_int = 4242};
  CHECK_OK(sigqueue(getpid(), SIGRTMIN, val));
  val.sival_int = 4343;
  CHECK_OK(sigqueue(getpid(), SIGRTMIN, val));
  kill(getpid(), SIGUSR1);
  struct signalfd_siginfo many[4];
  ssize_t r = read(sfd, many, sizeof many);
  CHECK(r == 3 * (ssize_t)sizeof many[0], "three records in one read (%zd bytes)", r);
  if (r == 3 * (ssize_t)sizeof many[0]) {
    CHECK(many[0].ssi_signo == SIGUSR1, "lowest number first: %u", many[0].ssi_signo);
    CHECK(many[1].ssi_signo == (uint32_t)SIGRTMIN && many[1].ssi_code == SI_QUEUE &&
              many[1].ssi_int == 4242 && many[2].ssi_int == 4343,
          "queued in order with their values: %d %d", many[1].ssi_int, many[2].ssi_int);
  }

  printf("a blocking read woken by another thread:\n");
  CHECK_OK(fcntl(sfd, F_SETFL, 0));
  pthread_t th;
  pthread_create(&th, NULL, kill_later, (void*)(long)SIGUSR1);
  double t0 = now_ms();
  r = read(sfd, &si, sizeof si);
  double dt = now_ms() - t0;
  pthread_join(th, NULL);
  CHECK(r == sizeof si && si.ssi_signo == SIGUSR1, "woken with SIGUSR1 (%zd)", r);
  CHECK(dt >= 50 && dt < 4000, "after %.0f ms", dt);
  printf("  woken after %.0f ms\n", dt);

  printf("thread-directed, and a new mask:\n");
  syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1);
  CHECK(read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR1 && si.ssi_code == SI_TKILL,
        "tgkill to this thread: code %d", si.ssi_code);
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigprocmask(SIG_BLOCK, &usr2, NULL);
  CHECK(signalfd(sfd, &usr2, 0) == sfd, "signalfd on the same fd changes its mask");
  CHECK_OK(fcntl(sfd, F_SETFL, O_NONBLOCK));
  kill(getpid(), SIGUSR1);
  CHECK_ERR(read(sfd, &si, sizeof si), EAGAIN);
  kill(getpid(), SIGUSR2);
  CHECK(read(sfd, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR2, "SIGUSR2 now");
  sigpending(&pend);
  CHECK(sigismember(&pend, SIGUSR1), "SIGUSR1 left pending");
  int other = signalfd(-1, &set, SFD_NONBLOCK);
  CHECK(read(other, &si, sizeof si) == sizeof si && si.ssi_signo == SIGUSR1, "a second signalfd takes it");
  close(other);

  int pfd[2];
  REQUIRE(pipe(pfd) == 0, "pipe");
  CHECK_ERR(signalfd(pfd[0], &set, 0), EINVAL);
  CHECK_ERR(syscall(SYS_signalfd4, -1, &set, 4, 0), EINVAL);
  CHECK_ERR(syscall(SYS_signalfd4, -1, &set, 8, 0x1), EINVAL);
  CHECK_ERR(syscall(SYS_signalfd4, -1, 8L, 8, 0), EFAULT);
  close(sfd);
  return guest_finish();
}
