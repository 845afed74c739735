// POSIX message queues (mq_overview(7)): mq_open with attributes and
// O_EXCL, priorities (highest first, oldest first within one), the size
// and priority errors, O_NONBLOCK and mq_setattr, timed waits, a sender
// and a receiver in two processes, mq_notify with a signal, names, and
// the mqueue filesystem (mounted where the program may: a queue shows
// there as a file whose contents are its state).
#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"

#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char name[64];

static mqd_t make(int maxmsg, int msgsize, int extra_flags) {
  struct mq_attr a = {0};
  a.mq_maxmsg = maxmsg;
  a.mq_msgsize = msgsize;
  return mq_open(name, O_RDWR | O_CREAT | O_EXCL | extra_flags, 0600, &a);
}

static void test_basics(void) {
  printf("mq_open, attributes, priorities:\n");
  mq_unlink(name);
  mqd_t q = make(4, 64, 0);
  REQUIRE(q != (mqd_t)-1, "mq_open: %s", strerror(errno));
  CHECK_ERR(make(4, 64, 0), EEXIST);
  struct mq_attr a;
  CHECK(mq_getattr(q, &a) == 0 && a.mq_maxmsg == 4 && a.mq_msgsize == 64 && a.mq_curmsgs == 0 && a.mq_flags == 0,
        "%ld %ld %ld %ld", a.mq_maxmsg, a.mq_msgsize, a.mq_curmsgs, a.mq_flags);
  CHECK_OK(mq_send(q, "a", 1, 1));
  CHECK_OK(mq_send(q, "bb", 2, 5));
  CHECK_OK(mq_send(q, "c", 1, 1));
  CHECK(mq_getattr(q, &a) == 0 && a.mq_curmsgs == 3);
  char buf[64];
  unsigned prio = 99;
  CHECK(mq_receive(q, buf, sizeof buf, &prio) == 2 && memcmp(buf, "bb", 2) == 0 && prio == 5, "first %u", prio);
  CHECK(mq_receive(q, buf, sizeof buf, &prio) == 1 && buf[0] == 'a' && prio == 1);
  CHECK(mq_receive(q, buf, sizeof buf, &prio) == 1 && buf[0] == 'c' && prio == 1);
  CHECK_ERR(mq_receive(q, buf, 63, NULL), EMSGSIZE);
  char big[65] = {0};
  CHECK_ERR(mq_send(q, big, 65, 0), EMSGSIZE);
  CHECK_ERR(mq_send(q, "x", 1, 32768), EINVAL);
  CHECK_OK(mq_send(q, "", 0, 0));
  CHECK(mq_receive(q, buf, sizeof buf, NULL) == 0, "an empty message");
  printf("O_NONBLOCK, mq_setattr, timed waits:\n");
  struct mq_attr nb = {0}, old;
  nb.mq_flags = O_NONBLOCK;
  CHECK(mq_setattr(q, &nb, &old) == 0 && old.mq_flags == 0);
  CHECK_ERR(mq_receive(q, buf, sizeof buf, NULL), EAGAIN);
  for (int i = 0; i < 4; i++) CHECK_OK(mq_send(q, "m", 1, 0));
  CHECK_ERR(mq_send(q, "m", 1, 0), EAGAIN);
  CHECK(mq_getattr(q, &a) == 0 && a.mq_flags == O_NONBLOCK && a.mq_curmsgs == 4);
  nb.mq_flags = 0;
  CHECK(mq_setattr(q, &nb, NULL) == 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 50 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
  CHECK_ERR(mq_timedsend(q, "m", 1, 0, &ts), ETIMEDOUT);
  struct timespec bad = {0, 1000000000};
  CHECK_ERR(mq_timedsend(q, "m", 1, 0, &bad), EINVAL);
  for (int i = 0; i < 4; i++) mq_receive(q, buf, sizeof buf, NULL);
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 50 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
  CHECK_ERR(mq_timedreceive(q, buf, sizeof buf, NULL, &ts), ETIMEDOUT);
  CHECK_ERR(mq_getattr((mqd_t)-1, &a), EBADF);
  mq_close(q);
  CHECK_OK(mq_unlink(name));
  CHECK_ERR(mq_unlink(name), ENOENT);
  CHECK_ERR(mq_open(name, O_RDWR), ENOENT);
}

static void test_attr_limits(void) {
  printf("attribute limits, names:\n");
  CHECK_ERR(make(0, 64, 0), EINVAL);
  CHECK_ERR(make(4, 0, 0), EINVAL);
  CHECK_ERR(make(100000, 64, 0), EINVAL);
  CHECK_ERR(mq_open("/a/b", O_RDWR | O_CREAT, 0600, NULL), EACCES);
  // O_RDWR|O_WRONLY makes a queue (Linux checks it only of one that
  // exists), on a descriptor that neither sends nor receives.
  mqd_t odd = mq_open(name, O_RDWR | O_WRONLY | O_CREAT, 0600, NULL);
  REQUIRE(odd != (mqd_t)-1, "default attributes: %s", strerror(errno));
  char one[16384];
  CHECK_ERR(mq_send(odd, "x", 1, 0), EBADF);
  CHECK_ERR(mq_receive(odd, one, sizeof one, NULL), EBADF);
  mq_close(odd);
  CHECK_ERR(mq_open(name, O_RDWR | O_WRONLY), EINVAL);
  mqd_t q = mq_open(name, O_RDWR);
  REQUIRE(q != (mqd_t)-1, "%s", strerror(errno));
  struct mq_attr a;
  CHECK(mq_getattr(q, &a) == 0 && a.mq_maxmsg > 0 && a.mq_msgsize > 0);
  mqd_t w = mq_open(name, O_WRONLY);
  char buf[16];
  CHECK(w != (mqd_t)-1);
  CHECK_ERR(mq_receive(w, buf, sizeof buf, NULL), EBADF);
  mq_close(w);
  mq_close(q);
  mq_unlink(name);
}

static void test_two_processes(void) {
  printf("a receiver waits for a sender in another process:\n");
  mqd_t q = make(2, 32, 0);
  REQUIRE(q != (mqd_t)-1, "%s", strerror(errno));
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    usleep(100 * 1000);
    mqd_t c = mq_open(name, O_WRONLY);
    for (int i = 0; i < 5; i++) {  // more than fit: the sender waits for the receiver too
      char m[8];
      snprintf(m, sizeof m, "n%d", i);
      if (c == (mqd_t)-1 || mq_send(c, m, strlen(m), 0) != 0) _exit(1);
    }
    _exit(0);
  }
  char buf[32];
  int ok = 1;
  for (int i = 0; i < 5; i++) {
    char want[8];
    snprintf(want, sizeof want, "n%d", i);
    ssize_t n = mq_receive(q, buf, sizeof buf, NULL);
    ok &= n == (ssize_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0;
  }
  CHECK(ok, "five messages in order");
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  mq_close(q);
  mq_unlink(name);
}

static volatile sig_atomic_t got_code, got_value, got_pid;

static void on_usr1(int sig, siginfo_t* si, void* ctx) {
  got_code = si->si_code;
  got_value = si->si_value.sival_int;
  got_pid = si->si_pid;
}

static void test_notify(void) {
  printf("mq_notify:\n");
  struct sigaction sa = {0};
  sa.sa_sigaction = on_usr1;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &sa, NULL);
  mqd_t q = make(4, 16, 0);
  REQUIRE(q != (mqd_t)-1, "%s", strerror(errno));
  struct sigevent ev = {0};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGUSR1;
  ev.sigev_value.sival_int = 42;
  CHECK_OK(mq_notify(q, &ev));
  CHECK_ERR(mq_notify(q, &ev), EBUSY);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    mqd_t c = mq_open(name, O_WRONLY);
    _exit(c != (mqd_t)-1 && mq_send(c, "hi", 2, 0) == 0 ? 0 : 1);
  }
  int st;
  waitpid(pid, &st, 0);
  for (int i = 0; i < 100 && !got_code; i++) usleep(10 * 1000);
  CHECK(got_code == SI_MESGQ && got_value == 42 && got_pid == pid, "code %d value %d pid %d (child %d)",
        (int)got_code, (int)got_value, (int)got_pid, (int)pid);
  CHECK_OK(mq_notify(q, &ev));  // the registration went with the signal
  CHECK_OK(mq_notify(q, NULL));
  CHECK_OK(mq_notify(q, &ev));
  mq_close(q);
  mq_unlink(name);
}

static void test_filesystem(void) {
  printf("the mqueue filesystem:\n");
  if (geteuid() != 0) {
    printf("  (not root: no mount)\n");
    return;
  }
  // A folder of its own: the four builds of this test run side by side
  // (and under flatux each is pid 1 of its own run).
  char dir[PATH_MAX], folder[] = "/tmp/guest-mqueue-XXXXXX";
  REQUIRE(mkdtemp(folder) && realpath(folder, dir));
  if (unshare(CLONE_NEWNS) == 0) REQUIRE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  REQUIRE(mount("mqueue", dir, "mqueue", 0, NULL) == 0, "mount: %s", strerror(errno));
  mqd_t q = make(4, 16, 0);
  REQUIRE(q != (mqd_t)-1, "%s", strerror(errno));
  CHECK_OK(mq_send(q, "hello", 5, 0));
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s%s", dir, name);
  struct stat st;
  CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600, "mode %o", st.st_mode);
  CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 01777, "folder mode %o", st.st_mode);
  char text[128] = {0};
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0 && read(fd, text, sizeof text - 1) > 0 && strncmp(text, "QSIZE:5 ", 8) == 0, "%s", text);
  if (fd >= 0) close(fd);
  char made[PATH_MAX + 64];
  snprintf(made, sizeof made, "%s/guest-mq-made-%d", dir, (int)getpid());
  fd = open(made, O_RDWR | O_CREAT | O_EXCL, 0644);
  CHECK(fd >= 0, "open(O_CREAT) makes a queue: %s", strerror(errno));
  if (fd >= 0) close(fd);
  char qname[64];
  snprintf(qname, sizeof qname, "/guest-mq-made-%d", (int)getpid());
  mqd_t m = mq_open(qname, O_RDONLY);
  CHECK(m != (mqd_t)-1, "the file's queue opens by name");
  if (m != (mqd_t)-1) mq_close(m);
  CHECK_ERR(mkdir(path, 0700), EEXIST);
  CHECK_OK(unlink(made));
  CHECK_ERR(mq_open(qname, O_RDONLY), ENOENT);
  mq_close(q);
  CHECK_OK(mq_unlink(name));
  CHECK(stat(path, &st) == -1 && errno == ENOENT);
  umount(dir);
  rmdir(dir);
}

int main(void) {
  guest_name = "mqueue";
  snprintf(name, sizeof name, "/guest-mq-%d", (int)getpid());
  test_basics();
  test_attr_limits();
  test_two_processes();
  test_notify();
  test_filesystem();
  return guest_finish();
}
