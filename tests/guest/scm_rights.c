// SCM_RIGHTS: a pipe's read end travels over a socketpair to a vfork+exec'd
// child, which reads what the parent writes into the pipe. Also: several
// descriptors in one message, MSG_CMSG_CLOEXEC, MSG_CTRUNC when the
// control buffer is too small, and SCM_CREDENTIALS.
//
// usage: scm_rights              (the checks)
//        scm_rights child FD     (the exec'd side)
#include "guest_check.h"
#include "guest_scm.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const char kPayload[] = "carried by a descriptor that crossed a socket";

static int child_main(int fd) {
  guest_name = "scm_rights(child)";
  int got[4];
  char tag[32];
  int n = recv_fds(fd, got, 4, 0, tag, sizeof tag, NULL);
  if (n != 1) return 100;
  if (strcmp(tag, "pipe") != 0) return 101;
  struct stat st;
  if (fstat(got[0], &st) != 0 || !S_ISFIFO(st.st_mode)) return 102;
  char buf[128];
  size_t len = 0;
  ssize_t r;
  while ((r = read(got[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)r;
  if (r < 0) return 103;
  buf[len] = 0;
  if (strcmp(buf, kPayload) != 0) return 104;
  // Tell the parent what arrived, through the socket.
  if (write(fd, buf, len) != (ssize_t)len) return 105;
  return 0;
}

static char self_buf[4096];
static const char* self_path(const char* argv0) {
  if (strchr(argv0, '/') && realpath(argv0, self_buf)) return self_buf;
  ssize_t n = readlink("/proc/self/exe", self_buf, sizeof self_buf - 1);
  if (n > 0) {
    self_buf[n] = 0;
    return self_buf;
  }
  return argv0;
}

static void to_child(const char* self) {
  printf("a pipe end passed to a vfork+exec'd child:\n");
  int sv[2], p[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
  REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
  CHECK_OK(fcntl(sv[0], F_SETFD, FD_CLOEXEC));
  char fdarg[16];
  snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
  pid_t pid = vfork();
  if (pid == 0) {
    execl(self, self, "child", fdarg, (char*)NULL);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  close(sv[1]);
  CHECK(send_fds(sv[0], &p[0], 1, "pipe", 0) == 4, "sendmsg SCM_RIGHTS: %s", strerror(errno));
  close(p[0]);  // the child's copy is the only reader now
  CHECK(write(p[1], kPayload, strlen(kPayload)) == (ssize_t)strlen(kPayload), "write");
  close(p[1]);
  char back[128] = {0};
  size_t len = 0;
  ssize_t r;
  while ((r = read(sv[0], back + len, sizeof back - 1 - len)) > 0) len += (size_t)r;
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
  CHECK(strcmp(back, kPayload) == 0, "child read '%s'", back);
  printf("  child read %zu bytes through the passed descriptor\n", len);
  close(sv[0]);
}

static void in_process(void) {
  printf("several descriptors, MSG_CMSG_CLOEXEC, MSG_CTRUNC:\n");
  int sv[2], p1[2], p2[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0 && pipe(p1) == 0 && pipe(p2) == 0, "setup");
  int three[3] = {p1[1], p2[1], sv[0]};
  CHECK(send_fds(sv[0], three, 3, "three", 0) == 5, "sendmsg: %s", strerror(errno));
  int got[8], mf = 0;
  char tag[16];
  int n = recv_fds(sv[1], got, 8, MSG_CMSG_CLOEXEC, tag, sizeof tag, &mf);
  CHECK(n == 3 && !(mf & MSG_CTRUNC), "3 descriptors arrive (%d)", n);
  if (n == 3) {
    for (int i = 0; i < 3; i++) CHECK(fcntl(got[i], F_GETFD) == FD_CLOEXEC, "fd %d close-on-exec", got[i]);
    CHECK(write(got[0], "1", 1) == 1 && write(got[1], "2", 1) == 1, "write through received ends");
    char c1 = 0, c2 = 0;
    CHECK(read(p1[0], &c1, 1) == 1 && c1 == '1' && read(p2[0], &c2, 1) == 1 && c2 == '2',
          "each received end is its pipe");
    int type = 0;
    socklen_t len = sizeof type;
    CHECK(getsockopt(got[2], SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM,
          "a received socket is a socket");
    for (int i = 0; i < 3; i++) close(got[i]);
  }
  // Room for one descriptor only: the rest are dropped, MSG_CTRUNC.
  CHECK(send_fds(sv[0], three, 3, "trunc", 0) == 5, "sendmsg: %s", strerror(errno));
  n = recv_fds(sv[1], got, 1, 0, tag, sizeof tag, &mf);
  CHECK(n == 1 && (mf & MSG_CTRUNC), "truncated to %d, flags 0x%x", n, mf);
  if (n >= 1) CHECK(fcntl(got[0], F_GETFD) == 0, "no MSG_CMSG_CLOEXEC, no close-on-exec");
  if (n >= 1) close(got[0]);
  int bad = 0x3fe;
  CHECK_ERR(send_fds(sv[0], &bad, 1, "bad", 0), EBADF);

  printf("SCM_CREDENTIALS:\n");
  int on = 1;
  CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
  struct ucred me = {getpid(), getuid(), getgid()};
  char ctl[CMSG_SPACE(sizeof me)];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {"c", 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_CREDENTIALS;
  c->cmsg_len = CMSG_LEN(sizeof me);
  memcpy(CMSG_DATA(c), &me, sizeof me);
  CHECK(sendmsg(sv[0], &m, 0) == 1, "sendmsg SCM_CREDENTIALS: %s", strerror(errno));
  char rctl[CMSG_SPACE(sizeof me)];
  char ch;
  struct iovec riov = {&ch, 1};
  struct msghdr rm = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = rctl, .msg_controllen = sizeof rctl};
  CHECK(recvmsg(sv[1], &rm, 0) == 1, "recvmsg: %s", strerror(errno));
  struct cmsghdr* rc = CMSG_FIRSTHDR(&rm);
  CHECK(rc && rc->cmsg_type == SCM_CREDENTIALS, "credentials arrive");
  if (rc) {
    struct ucred got_cr;
    memcpy(&got_cr, CMSG_DATA(rc), sizeof got_cr);
    // flatux cannot tell which of its guests sent a datagram: pid 0 then.
    CHECK((got_cr.pid == getpid() || got_cr.pid == 0) && got_cr.uid == getuid() &&
              got_cr.gid == getgid(),
          "credentials %d/%d/%d", (int)got_cr.pid, (int)got_cr.uid, (int)got_cr.gid);
  }
  close(sv[0]);
  close(sv[1]);
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "child") == 0) return child_main(atoi(argv[2]));
  guest_name = "scm_rights";
  to_child(self_path(argv[0]));
  in_process();
  return guest_finish();
}
