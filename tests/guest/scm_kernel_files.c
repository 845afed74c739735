// SCM_RIGHTS of files opened by name: a file and its folder on a tmpfs
// (under flatux: files with no host descriptor), the same on the scratch
// folder's filesystem (under flatux: the host's), and a /proc file. What
// arrives is the same open file (one offset, one set of flags; a folder
// that still serves as a base for *at calls), in this process and in a
// forked child; MSG_PEEK installs a copy as well; and a file whose message
// is never received is let go when its socket goes (the last close of a
// writable file: IN_CLOSE_WRITE), not kept for ever.
#include "guest_check.h"
#include "guest_scm.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// Receives one message with up to 4 descriptors; returns how many.
static int recv_some(int sock, int* fds, int flags) {
  char tag[4];
  return recv_fds(sock, fds, 4, flags, tag, sizeof tag, NULL);
}

static int same_file(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static char dir_path[64], shm_path[80];

static void in_process(void) {
  printf("a file, its folder and a /proc file to this process:\n");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
  int f = open(shm_path, O_RDWR | O_CREAT | O_EXCL | O_APPEND, 0600);
  REQUIRE(f >= 0, "open %s: %s", shm_path, strerror(errno));
  int dir = open(dir_path, O_RDONLY | O_DIRECTORY);
  int proc = open("/proc/self/stat", O_RDONLY);
  REQUIRE(dir >= 0 && proc >= 0, "open: %s", strerror(errno));
  CHECK(write(f, "abc", 3) == 3, "write");
  int three[3] = {f, dir, proc};
  CHECK(send_fds(sv[0], three, 3, "f", 0) == 1, "sendmsg of kernel files: %s", strerror(errno));
  int got[4] = {-1, -1, -1, -1};
  int n = recv_some(sv[1], got, 0);
  REQUIRE(n == 3, "3 descriptors arrive (%d: %s)", n, strerror(errno));
  CHECK(got[0] != f && same_file(got[0], f), "the file arrives as itself");
  CHECK(lseek(got[0], 0, SEEK_CUR) == 3, "one open file: its offset is the sender's");
  CHECK((fcntl(got[0], F_GETFL) & O_APPEND) && (fcntl(got[0], F_GETFL) & O_ACCMODE) == O_RDWR,
        "one open file: its flags are the sender's (0%o)", fcntl(got[0], F_GETFL));
  CHECK(write(got[0], "def", 3) == 3 && lseek(f, 0, SEEK_CUR) == 6, "a write through it moves the sender's offset");
  char buf[16] = {0};
  CHECK(pread(f, buf, sizeof buf - 1, 0) == 6 && strcmp(buf, "abcdef") == 0, "contents '%s'", buf);
  struct stat st;
  CHECK(fstat(got[1], &st) == 0 && S_ISDIR(st.st_mode) && same_file(got[1], dir), "the folder arrives");
  CHECK(faccessat(got[1], strrchr(shm_path, '/') + 1, F_OK, 0) == 0, "and names its file: %s", strerror(errno));
  char stat_line[256] = {0};
  CHECK(read(got[2], stat_line, sizeof stat_line - 1) > 0 && atoi(stat_line) == getpid(),
        "the /proc file is still this process's: '%.40s'", stat_line);
  for (int i = 0; i < 3; i++) close(got[i]);

  printf("MSG_PEEK installs a copy too:\n");
  CHECK(send_fds(sv[0], &f, 1, "f", 0) == 1, "sendmsg: %s", strerror(errno));
  int peeked = -1, taken = -1;
  CHECK(recv_some(sv[1], &peeked, MSG_PEEK) == 1 && same_file(peeked, f), "peeked");
  CHECK(recv_some(sv[1], &taken, 0) == 1 && same_file(taken, f) && taken != peeked, "received");
  close(peeked);
  close(taken);
  close(dir);
  close(proc);
  close(f);
  close(sv[0]);
  close(sv[1]);
}

static void to_forked_child(void) {
  printf("a file to a forked child:\n");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "socketpair: %s", strerror(errno));
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    close(sv[0]);
    int fd = -1;
    if (recv_some(sv[1], &fd, 0) != 1) _exit(10);
    if (write(fd, "child", 5) != 5) _exit(11);
    close(fd);
    _exit(0);
  }
  close(sv[1]);
  int f = open(shm_path, O_RDWR | O_TRUNC);
  REQUIRE(f >= 0, "open: %s", strerror(errno));
  CHECK(send_fds(sv[0], &f, 1, "f", 0) == 1, "sendmsg: %s", strerror(errno));
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child status 0x%x", status);
  CHECK(lseek(f, 0, SEEK_CUR) == 5, "the child wrote at the shared offset");
  close(f);
  close(sv[0]);
}

static int close_write_events(int in) {
  struct pollfd p = {in, POLLIN, 0};
  if (poll(&p, 1, 2000) != 1) return 0;
  char buf[4096] __attribute__((aligned(8)));
  ssize_t r = read(in, buf, sizeof buf);
  int n = 0;
  for (ssize_t off = 0; off < r;) {
    struct inotify_event* e = (struct inotify_event*)(buf + off);
    if (e->mask & IN_CLOSE_WRITE) n++;
    off += (ssize_t)(sizeof *e + e->len);
  }
  return n;
}

// A writable open of the file, sent over a new datagram socketpair and
// closed here, so that the message holds its only reference; `in` watches
// the file's last close.
static void send_watched(int sv[2], int* in) {
  *in = inotify_init1(IN_NONBLOCK);
  REQUIRE(*in >= 0, "inotify_init1: %s", strerror(errno));
  CHECK(inotify_add_watch(*in, shm_path, IN_CLOSE_WRITE) >= 0, "watch: %s", strerror(errno));
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
  int f = open(shm_path, O_WRONLY);
  REQUIRE(f >= 0, "open: %s", strerror(errno));
  CHECK(send_fds(sv[0], &f, 1, "f", 0) == 1, "sendmsg: %s", strerror(errno));
  close(f);
  char ch;
  CHECK(read(*in, &ch, 1) < 0 && errno == EAGAIN, "still open while in flight");
}

static void never_received(void) {
  printf("a file whose message is never received is let go with its socket:\n");
  int sv[2], in;
  send_watched(sv, &in);
  close(sv[0]);
  close(sv[1]);
  CHECK(close_write_events(in) == 1, "closed once its socket is gone");
  close(in);
}

// A message received with no room for its descriptor: Linux closes it
// (MSG_CTRUNC), which is the file's last close here.
static void received_without_room(void) {
  printf("a file received with no room for it is let go:\n");
  int sv[2], in;
  send_watched(sv, &in);
  char ch;
  struct iovec iov = {&ch, 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  CHECK(recvmsg(sv[1], &m, 0) == 1 && (m.msg_flags & MSG_CTRUNC), "MSG_CTRUNC (flags 0x%x)", m.msg_flags);
  CHECK(close_write_events(in) == 1, "closed once received without room");
  close(sv[0]);
  close(sv[1]);
  close(in);
}

// Many files in flight at once, never received: Linux lets root send them
// all; flatux may refuse past its limit (ETOOMANYREFS), and either way
// they are let go with their socket and passing goes on.
static void flood(void) {
  printf("a flood of files in flight:\n");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
  int f = open(shm_path, O_WRONLY);
  REQUIRE(f >= 0, "open: %s", strerror(errno));
  enum { kPerMessage = 250 };  // SCM_MAX_FD is 253; musl takes control data of up to 1 KiB
  int fds[kPerMessage];
  for (int i = 0; i < kPerMessage; i++) fds[i] = f;
  int sent = 0, refused = 0;
  for (int m = 0; m < 12; m++) {
    if (send_fds(sv[0], fds, kPerMessage, "f", MSG_DONTWAIT) == 1) {
      sent += kPerMessage;
    } else {
      CHECK(errno == ETOOMANYREFS || errno == EAGAIN, "sendmsg: %s", strerror(errno));
      refused++;
    }
  }
  printf("  %d in flight, %d messages refused\n", sent, refused);
  CHECK(sent >= 1000, "at least 1000 in flight (%d)", sent);
  close(f);
  close(sv[0]);
  close(sv[1]);
  never_received();  // the flood is gone: passing works and lets go as before
}

static void all_in(const char* what) {
  printf("-- on %s\n", what);
  snprintf(shm_path, sizeof shm_path, "%s/f", dir_path);
  in_process();
  to_forked_child();
  never_received();
  received_without_room();
  flood();
  CHECK_OK(unlink(shm_path));
}

int main(void) {
  guest_name = "scm_kernel_files";
  strcpy(dir_path, "/tmp/scm_kernel_files.XXXXXX");
  REQUIRE(mkdtemp(dir_path), "mkdtemp: %s", strerror(errno));
  all_in("the scratch folder's filesystem");
  // A tmpfs of its own, in a mount namespace of its own (natively, where
  // that takes privileges the run lacks: the scratch folder only).
  if (unshare(CLONE_NEWNS) == 0) {
    CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
    REQUIRE(mount("none", dir_path, "tmpfs", 0, NULL) == 0, "mount tmpfs: %s", strerror(errno));
    all_in("a tmpfs");
    CHECK_OK(umount(dir_path));
  } else {
    REQUIRE(errno == EPERM, "unshare: %s", strerror(errno));
  }
  CHECK_OK(rmdir(dir_path));
  return guest_finish();
}
