// flock(2), POSIX record locks and OFD locks between open files of one
// process and between processes (children started with posix_spawn of
// this program). argv[1]: a scratch folder; children get a mode word.
#include "guest_check.h"

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;
static char path[PATH_MAX];
static char self[PATH_MAX];

static int set_lock(int fd, int cmd, short type, off_t start, off_t len) {
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
  return fcntl(fd, cmd, &fl);
}

// Child modes: exit status 0 = every expectation held, else the step.
static int child(const char* mode, const char* file, pid_t parent) {
  int fd = open(file, O_RDWR);
  if (fd < 0) return 1;
  if (strcmp(mode, "probe") == 0) {  // parent holds a write lock on [0,10)
    if (set_lock(fd, F_SETLK, F_WRLCK, 5, 1) != -1 || (errno != EAGAIN && errno != EACCES)) return 2;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1};
    if (fcntl(fd, F_GETLK, &fl) || fl.l_type != F_WRLCK || fl.l_pid != parent || fl.l_start != 0 ||
        fl.l_len != 10)
      return 3;
    if (set_lock(fd, F_SETLK, F_WRLCK, 20, 10)) return 4;
    if (flock(fd, LOCK_EX | LOCK_NB)) return 5;  // flock locks are another family
    return 0;
  }
  if (strcmp(mode, "split") == 0) {  // parent holds [0,40) and [60,100)
    if (set_lock(fd, F_SETLK, F_WRLCK, 50, 1)) return 10;
    if (set_lock(fd, F_SETLK, F_RDLCK, 10, 1) != -1) return 11;
    return 0;
  }
  if (strcmp(mode, "wait") == 0) {  // blocks until the parent closes its descriptor
    if (set_lock(fd, F_SETLKW, F_WRLCK, 0, 1)) return 20;
    return 0;
  }
  if (strcmp(mode, "flock") == 0) {  // parent holds LOCK_SH
    if (flock(fd, LOCK_SH | LOCK_NB)) return 30;
    if (flock(fd, LOCK_EX | LOCK_NB) != -1 || errno != EWOULDBLOCK) return 31;
    return 0;
  }
  return 99;
}

static int run_child(const char* mode) {
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  char* argv[] = {self, (char*)mode, path, pid, NULL};
  pid_t p;
  if (posix_spawn(&p, self, NULL, NULL, argv, environ)) return -1;
  return p;
}

static int wait_child(pid_t p) {
  int st = 0;
  if (waitpid(p, &st, 0) != p || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

static void test_posix(void) {
  printf("POSIX record locks\n");
  int fd = open(path, O_RDWR);
  REQUIRE(fd >= 0);
  CHECK_OK(set_lock(fd, F_SETLK, F_WRLCK, 0, 10));
  CHECK_OK(set_lock(fd, F_SETLK, F_RDLCK, 0, 10));  // our own: never a conflict
  CHECK_OK(set_lock(fd, F_SETLK, F_WRLCK, 0, 10));
  int st = wait_child(run_child("probe"));
  CHECK(st == 0, "probe child failed at step %d", st);
  CHECK_OK(set_lock(fd, F_SETLK, F_UNLCK, 0, 0));
  CHECK_OK(set_lock(fd, F_SETLK, F_WRLCK, 0, 100));
  CHECK_OK(set_lock(fd, F_SETLK, F_UNLCK, 40, 20));  // splits it in two
  st = wait_child(run_child("split"));
  CHECK(st == 0, "split child failed at step %d", st);
  CHECK_OK(set_lock(fd, F_SETLK, F_WRLCK, 0, 1));
  pid_t w = run_child("wait");
  struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  int other = open(path, O_RDONLY);
  close(other);  // closing any descriptor of the file drops our POSIX locks
  st = wait_child(w);
  CHECK(st == 0, "waiting child failed at step %d", st);
  close(fd);
  int ro = open(path, O_RDONLY);
  CHECK_ERR(set_lock(ro, F_SETLK, F_WRLCK, 0, 1), EBADF);
  struct flock bad = {.l_type = F_WRLCK, .l_whence = 7};
  CHECK_ERR(fcntl(ro, F_SETLK, &bad), EINVAL);
  struct flock badtype = {.l_type = 9, .l_whence = SEEK_SET};
  CHECK_ERR(fcntl(ro, F_SETLK, &badtype), EINVAL);
  close(ro);
}

static void test_ofd(void) {
  printf("OFD locks\n");
  int a = open(path, O_RDWR), b = open(path, O_RDWR);
  REQUIRE(a >= 0 && b >= 0);
  CHECK_OK(set_lock(a, F_OFD_SETLK, F_WRLCK, 0, 10));
  CHECK_ERR(set_lock(b, F_OFD_SETLK, F_WRLCK, 5, 1), EAGAIN);
  struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  CHECK_OK(fcntl(b, F_OFD_GETLK, &fl));
  CHECK(fl.l_type == F_WRLCK && fl.l_pid == -1, "type %d pid %d", fl.l_type, (int)fl.l_pid);
  struct flock withpid = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_pid = 1};
  CHECK_ERR(fcntl(b, F_OFD_SETLK, &withpid), EINVAL);
  int dup_a = dup(a);
  close(a);  // the description lives on through the duplicate
  CHECK_ERR(set_lock(b, F_OFD_SETLK, F_WRLCK, 5, 1), EAGAIN);
  close(dup_a);  // now it is gone, and its locks with it
  CHECK_OK(set_lock(b, F_OFD_SETLK, F_WRLCK, 5, 1));
  close(b);
}

static void test_flock(void) {
  printf("flock\n");
  int a = open(path, O_RDWR), b = open(path, O_RDWR);
  REQUIRE(a >= 0 && b >= 0);
  CHECK_OK(flock(a, LOCK_EX));
  CHECK_ERR(flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
  CHECK_ERR(flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
  CHECK_OK(flock(a, LOCK_SH));  // converted
  CHECK_OK(flock(b, LOCK_SH | LOCK_NB));
  CHECK_OK(flock(b, LOCK_UN));
  CHECK_OK(flock(a, LOCK_UN));
  CHECK_OK(flock(a, LOCK_SH));
  int st = wait_child(run_child("flock"));
  CHECK(st == 0, "flock child failed at step %d", st);
  CHECK_ERR(flock(a, 77), EINVAL);
  CHECK_ERR(flock(-1, LOCK_SH), EBADF);
  close(a);
  CHECK_OK(flock(b, LOCK_EX | LOCK_NB));  // a's lock went with its last descriptor
  close(b);
}

int main(int argc, char** argv) {
  guest_name = "locks";
  if (argc == 4) return child(argv[1], argv[2], (pid_t)atoi(argv[3]));
  REQUIRE(argc == 2, "usage: locks SCRATCH_DIR");
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = 0;
  snprintf(path, sizeof path, "%s/locked-file", argv[1]);
  int fd = open(path, O_CREAT | O_RDWR, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "0123456789", 10) == 10);
  close(fd);
  test_posix();
  test_ofd();
  test_flock();
  return guest_finish();
}
