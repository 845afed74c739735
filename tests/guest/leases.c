// File leases (F_SETLEASE/F_GETLEASE) and file owners (F_SETOWN(_EX),
// F_GETOWN(_EX), F_SETSIG): who may take which lease, and a break by
// another process's open or truncate, signalled to the holder, waiting
// until the holder lets go.
//
// Usage: leases SCRATCH_DIR            (the test)
//        leases --open PATH FLAGS      (the spawned breaker: open and exit)
//        leases --truncate PATH
#include "guest_check.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static char dir[4096], path[4200], self[4096];

static volatile sig_atomic_t got_sig, got_fd, got_code;

static void on_lease(int sig, siginfo_t* si, void* ctx) {
  got_sig = sig;
  got_fd = si->si_fd;
  got_code = si->si_code;
}

static pid_t spawn(char* const argv[]) {
  pid_t pid;
  fflush(stdout);
  int r = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
  return r ? -1 : pid;
}

static int wait_status(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits (up to 10 s) for the lease signal.
static int wait_for_signal(void) {
  for (int i = 0; i < 10000 && !got_sig; i++) usleep(1000);
  return got_sig;
}

static void test_owners(void) {
  puts("file owners");
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  struct f_owner_ex o = {-1, -1};
  CHECK_OK(fcntl(fd, F_GETOWN_EX, &o));
  CHECK(o.type == F_OWNER_TID && o.pid == 0, "no owner yet: type %d pid %d", o.type, o.pid);
  CHECK(fcntl(fd, F_GETOWN) == 0);
  CHECK_OK(fcntl(fd, F_SETOWN, 0));
  CHECK_OK(fcntl(fd, F_GETOWN_EX, &o));
  CHECK(o.type == F_OWNER_PID && o.pid == 0, "F_SETOWN 0: type %d pid %d", o.type, o.pid);
  CHECK_OK(fcntl(fd, F_SETOWN, getpid()));
  CHECK(fcntl(fd, F_GETOWN) == getpid());
  CHECK_OK(fcntl(fd, F_GETOWN_EX, &o));
  CHECK(o.type == F_OWNER_PID && o.pid == getpid(), "type %d pid %d", o.type, o.pid);
  o.type = F_OWNER_PGRP;
  o.pid = getpgrp();
  CHECK_OK(fcntl(fd, F_SETOWN_EX, &o));
  CHECK(fcntl(fd, F_GETOWN) == -getpgrp(), "F_GETOWN of a group: %d", fcntl(fd, F_GETOWN));
  o.type = F_OWNER_TID;
  o.pid = (pid_t)syscall(SYS_gettid);
  CHECK_OK(fcntl(fd, F_SETOWN_EX, &o));
  struct f_owner_ex back;
  CHECK_OK(fcntl(fd, F_GETOWN_EX, &back));
  CHECK(back.type == F_OWNER_TID && back.pid == o.pid, "type %d pid %d", back.type, back.pid);
  o.type = 7;
  CHECK_ERR(fcntl(fd, F_SETOWN_EX, &o), EINVAL);
  o.type = F_OWNER_PID;
  o.pid = 999999;
  CHECK_ERR(fcntl(fd, F_SETOWN_EX, &o), ESRCH);
  CHECK_ERR(fcntl(fd, F_SETOWN_EX, (void*)8), EFAULT);
  CHECK_ERR(fcntl(fd, F_SETSIG, 65), EINVAL);
  CHECK_OK(fcntl(fd, F_SETSIG, SIGUSR1));
  CHECK(fcntl(fd, F_GETSIG) == SIGUSR1);
  close(fd);
}

static void test_taking(void) {
  puts("taking leases");
  int rd = open(path, O_RDONLY);
  int rw = open(path, O_RDWR);
  REQUIRE(rd >= 0 && rw >= 0);
  CHECK(fcntl(rd, F_GETLEASE) == F_UNLCK);
  CHECK_ERR(fcntl(rd, F_SETLEASE, F_RDLCK), EAGAIN);  // open for writing elsewhere
  CHECK_ERR(fcntl(rw, F_SETLEASE, F_RDLCK), EAGAIN);
  CHECK_ERR(fcntl(rd, F_SETLEASE, 7), EINVAL);
  close(rw);
  CHECK_OK(fcntl(rd, F_SETLEASE, F_RDLCK));
  CHECK(fcntl(rd, F_GETLEASE) == F_RDLCK);
  int dup_fd = dup(rd);
  CHECK(fcntl(dup_fd, F_GETLEASE) == F_RDLCK, "a dup shares the open file's lease");
  close(dup_fd);
  int rd2 = open(path, O_RDONLY);  // a reader does not break a read lease
  CHECK(rd2 >= 0);
  CHECK(fcntl(rd, F_GETLEASE) == F_RDLCK);
  CHECK_ERR(fcntl(rd, F_SETLEASE, F_WRLCK), EAGAIN);  // not the only open
  close(rd2);
  CHECK_OK(fcntl(rd, F_SETLEASE, F_WRLCK));
  CHECK(fcntl(rd, F_GETLEASE) == F_WRLCK);
  CHECK_OK(fcntl(rd, F_SETLEASE, F_UNLCK));
  CHECK(fcntl(rd, F_GETLEASE) == F_UNLCK);
  CHECK_ERR(fcntl(rd, F_SETLEASE, F_UNLCK), EAGAIN);  // none to drop
  close(rd);
  int d = open(dir, O_RDONLY | O_DIRECTORY);
  CHECK_ERR(fcntl(d, F_SETLEASE, F_RDLCK), EINVAL);
  close(d);
  int p[2];
  REQUIRE(pipe(p) == 0);
  CHECK_ERR(fcntl(p[0], F_SETLEASE, F_RDLCK), EINVAL);
  close(p[0]);
  close(p[1]);
  int op = open(path, O_PATH);
  CHECK_ERR(fcntl(op, F_SETLEASE, F_RDLCK), EBADF);
  close(op);
  if (geteuid() == 0) {
    // Another's file: only its owner (or CAP_LEASE) takes a lease.
    REQUIRE(syscall(SYS_setresuid, -1, 65534, 0) == 0);
    rd = open(path, O_RDONLY);
    CHECK(rd >= 0);
    CHECK_ERR(fcntl(rd, F_SETLEASE, F_RDLCK), EACCES);
    close(rd);
    REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);
  }
}

// A lease held here, broken by `argv` run in another process: the holder
// is signalled (F_SETSIG's signal with si_fd), sees the lease it is being
// broken to, and the breaker finishes only after the holder lets go.
static void break_by(const char* what, int lease, char* const argv[], int want_target) {
  printf("a %s lease broken by %s\n", lease == F_WRLCK ? "write" : "read", what);
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK_OK(fcntl(fd, F_SETSIG, SIGRTMIN + 1));
  CHECK_OK(fcntl(fd, F_SETLEASE, lease));
  got_sig = got_fd = got_code = 0;
  pid_t pid = spawn(argv);
  REQUIRE(pid > 0, "posix_spawn: %s", strerror(errno));
  CHECK(wait_for_signal() == SIGRTMIN + 1, "lease signal %d", (int)got_sig);
  CHECK(got_fd == fd && got_code == POLL_MSG, "si_fd %d (want %d), si_code %d", (int)got_fd, fd, (int)got_code);
  CHECK(fcntl(fd, F_GETLEASE) == want_target, "while broken: %d, want %d", fcntl(fd, F_GETLEASE), want_target);
  usleep(100000);
  int status;
  CHECK(waitpid(pid, &status, WNOHANG) == 0, "the breaker waits for the holder");
  CHECK_OK(fcntl(fd, F_SETLEASE, F_UNLCK));
  CHECK(wait_status(pid) == 0, "the breaker finished");
  close(fd);
}

static void test_breaking(void) {
  struct sigaction sa = {0};
  sa.sa_sigaction = on_lease;
  sa.sa_flags = SA_SIGINFO;
  REQUIRE(sigaction(SIGRTMIN + 1, &sa, NULL) == 0);
  REQUIRE(sigaction(SIGIO, &sa, NULL) == 0);
  char wr[] = "1", rd[] = "0";
  char* open_wr[] = {self, "--open", path, wr, NULL};
  char* open_rd[] = {self, "--open", path, rd, NULL};
  char* trunc[] = {self, "--truncate", path, NULL};
  break_by("a write open", F_RDLCK, open_wr, F_UNLCK);
  break_by("a read open", F_WRLCK, open_rd, F_RDLCK);
  break_by("truncate", F_RDLCK, trunc, F_UNLCK);

  puts("O_NONBLOCK: EWOULDBLOCK, the break started all the same");
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK_OK(fcntl(fd, F_SETLEASE, F_WRLCK));  // no F_SETSIG: SIGIO
  got_sig = 0;
  CHECK_ERR(open(path, O_RDONLY | O_NONBLOCK), EWOULDBLOCK);
  CHECK(wait_for_signal() == SIGIO, "SIGIO for the break: %d", (int)got_sig);
  CHECK(fcntl(fd, F_GETLEASE) == F_RDLCK);
  CHECK_OK(fcntl(fd, F_SETLEASE, F_RDLCK));  // downgraded: readers may come
  int other = open(path, O_RDONLY | O_NONBLOCK);
  CHECK(other >= 0, "a reader after the downgrade: %s", strerror(errno));
  if (other >= 0) close(other);
  close(fd);  // the lease goes with the last descriptor
  other = open(path, O_WRONLY | O_NONBLOCK);
  CHECK(other >= 0, "a writer after the close: %s", strerror(errno));
  if (other >= 0) close(other);
}

int main(int argc, char** argv) {
  guest_name = "leases";
  if (argc == 4 && strcmp(argv[1], "--open") == 0) {
    int fd = open(argv[2], atoi(argv[3]) ? O_WRONLY : O_RDONLY);
    return fd >= 0 ? 0 : 1;
  }
  if (argc == 3 && strcmp(argv[1], "--truncate") == 0) return truncate(argv[2], 3) == 0 ? 0 : 1;
  REQUIRE(argc == 2, "usage: leases SCRATCH_DIR");
  REQUIRE(realpath(argv[1], dir) != NULL);
  REQUIRE(chmod(dir, 0755) == 0);
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = 0;
  snprintf(path, sizeof path, "%s/leased", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0 && write(fd, "contents", 8) == 8);
  close(fd);
  test_owners();
  test_taking();
  test_breaking();
  unlink(path);
  return guest_finish();
}
