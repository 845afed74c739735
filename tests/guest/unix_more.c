// AF_UNIX details: MSG_WAITALL gathers pieces, SIGPIPE is delivered (with
// EPIPE) for pipes and sockets unless MSG_NOSIGNAL, a SOCK_SEQPACKET
// listener keeps message boundaries, connected datagrams go in batches
// with sendmmsg/recvmmsg, a full socket pushes back (EAGAIN, then POLLOUT
// once drained), shutdown is seen as EOF and POLLRDHUP, and the socket
// options report what they should.
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void* write_in_pieces(void* p) {
  int fd = (int)(long)p;
  const char* parts[] = {"abc", "defg", "hij"};
  for (int i = 0; i < 3; i++) {
    usleep(30000);
    if (write(fd, parts[i], strlen(parts[i])) < 0) break;
  }
  return NULL;
}

static void waitall(void) {
  printf("MSG_WAITALL:\n");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  pthread_t th;
  pthread_create(&th, NULL, write_in_pieces, (void*)(long)sv[1]);
  char buf[16] = {0};
  ssize_t n = recv(sv[0], buf, 10, MSG_WAITALL);
  pthread_join(th, NULL);
  CHECK(n == 10 && memcmp(buf, "abcdefghij", 10) == 0, "got %zd '%s'", n, buf);
  // EOF ends the wait early with what there is.
  CHECK(write(sv[1], "xy", 2) == 2, "write");
  shutdown(sv[1], SHUT_WR);
  n = recv(sv[0], buf, 10, MSG_WAITALL);
  CHECK(n == 2, "short at EOF: %zd", n);
  struct pollfd pf = {sv[0], POLLIN | POLLRDHUP, 0};
  CHECK(poll(&pf, 1, 1000) == 1 && (pf.revents & POLLRDHUP), "POLLRDHUP: 0x%x", pf.revents);
  CHECK(recv(sv[0], buf, 10, 0) == 0, "then EOF");
  close(sv[0]);
  close(sv[1]);
}

static volatile int sigpipes;
static void on_pipe(int sig) { sigpipes++; }

static void sigpipe(void) {
  printf("EPIPE and SIGPIPE:\n");
  struct sigaction sa = {0};
  sa.sa_handler = on_pipe;
  sigaction(SIGPIPE, &sa, NULL);
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe");
  close(p[0]);
  sigpipes = 0;
  CHECK_ERR(write(p[1], "x", 1), EPIPE);
  CHECK(sigpipes == 1, "pipe write raised SIGPIPE (%d)", sigpipes);
  close(p[1]);
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  close(sv[1]);
  sigpipes = 0;
  CHECK_ERR(send(sv[0], "x", 1, 0), EPIPE);
  CHECK(sigpipes == 1, "send raised SIGPIPE (%d)", sigpipes);
  CHECK_ERR(write(sv[0], "x", 1), EPIPE);
  CHECK(sigpipes == 2, "write on a socket raised SIGPIPE (%d)", sigpipes);
  CHECK_ERR(send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
  CHECK(sigpipes == 2, "MSG_NOSIGNAL: no signal (%d)", sigpipes);
  close(sv[0]);
  signal(SIGPIPE, SIG_DFL);
}

// An abstract name unique to this run.
static socklen_t abstract_addr(struct sockaddr_un* a, const char* what) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "flatux-unix-more-%d-%s", getpid(), what);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void seqpacket(void) {
  printf("SOCK_SEQPACKET listener:\n");
  struct sockaddr_un a;
  socklen_t len = abstract_addr(&a, "seq");
  int ls = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  REQUIRE(ls >= 0, "socket: %s", strerror(errno));
  REQUIRE(bind(ls, (struct sockaddr*)&a, len) == 0 && listen(ls, 4) == 0, "bind/listen: %s",
          strerror(errno));
  int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  REQUIRE(connect(c, (struct sockaddr*)&a, len) == 0, "connect: %s", strerror(errno));
  int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
  REQUIRE(s >= 0, "accept4: %s", strerror(errno));
  int type = 0;
  socklen_t tl = sizeof type;
  CHECK(getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_SEQPACKET, "SO_TYPE %d",
        type);
  CHECK(send(c, "first", 5, 0) == 5 && send(c, "second!", 7, 0) == 7 && send(c, "", 0, 0) == 0,
        "send");
  char buf[16];
  CHECK(recv(s, buf, sizeof buf, 0) == 5, "one message per recv");
  struct iovec iov = {buf, 3};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  CHECK(recvmsg(s, &m, 0) == 3 && (m.msg_flags & MSG_TRUNC), "truncated: flags 0x%x", m.msg_flags);
  CHECK(recv(s, buf, sizeof buf, MSG_DONTWAIT) == 0, "the empty message");
  CHECK_ERR(recv(s, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
  close(c);
  CHECK(recv(s, buf, sizeof buf, 0) == 0, "EOF after the peer closes");
  close(s);
  close(ls);
}

static void datagram_batches(void) {
  printf("AF_UNIX datagrams, sendmmsg/recvmmsg:\n");
  struct sockaddr_un a, b;
  socklen_t la = abstract_addr(&a, "dga"), lb = abstract_addr(&b, "dgb");
  int sa = socket(AF_UNIX, SOCK_DGRAM, 0), sb = socket(AF_UNIX, SOCK_DGRAM, 0);
  REQUIRE(bind(sa, (struct sockaddr*)&a, la) == 0 && bind(sb, (struct sockaddr*)&b, lb) == 0,
          "bind: %s", strerror(errno));
  CHECK_OK(connect(sa, (struct sockaddr*)&b, lb));
  char bodies[4][8] = {"one", "two22", "three", "4"};
  struct iovec iov[4];
  struct mmsghdr mm[4];
  memset(mm, 0, sizeof mm);
  for (int i = 0; i < 4; i++) {
    iov[i] = (struct iovec){bodies[i], strlen(bodies[i])};
    mm[i].msg_hdr.msg_iov = &iov[i];
    mm[i].msg_hdr.msg_iovlen = 1;
  }
  CHECK(sendmmsg(sa, mm, 4, 0) == 4, "sendmmsg: %s", strerror(errno));
  CHECK(mm[1].msg_len == 5, "msg_len %u", mm[1].msg_len);
  char in[4][8];
  struct iovec riov[4];
  struct mmsghdr rm[4];
  struct sockaddr_un from[4];
  memset(rm, 0, sizeof rm);
  memset(in, 0, sizeof in);
  for (int i = 0; i < 4; i++) {
    riov[i] = (struct iovec){in[i], sizeof in[i]};
    rm[i].msg_hdr.msg_iov = &riov[i];
    rm[i].msg_hdr.msg_iovlen = 1;
    rm[i].msg_hdr.msg_name = &from[i];
    rm[i].msg_hdr.msg_namelen = sizeof from[i];
  }
  int n = recvmmsg(sb, rm, 4, MSG_DONTWAIT, NULL);
  CHECK(n == 4, "recvmmsg: %d %s", n, strerror(errno));
  for (int i = 0; i < n; i++) {
    CHECK(rm[i].msg_len == strlen(bodies[i]) && strcmp(in[i], bodies[i]) == 0, "message %d: '%s'",
          i, in[i]);
    CHECK(rm[i].msg_hdr.msg_namelen == la && memcmp(&from[i], &a, la) == 0,
          "sender named (%u bytes)", rm[i].msg_hdr.msg_namelen);
  }
  CHECK_ERR(recvmmsg(sb, rm, 4, MSG_DONTWAIT, NULL), EAGAIN);
  close(sa);
  close(sb);
}

static void backpressure(void) {
  printf("backpressure:\n");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  int small = 4096;
  CHECK_OK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small));
  int got = 0;
  socklen_t gl = sizeof got;
  CHECK(getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &got, &gl) == 0 && got >= small, "SO_SNDBUF %d", got);
  static char chunk[1024];
  long sent = 0;
  ssize_t w;
  while ((w = send(sv[0], chunk, sizeof chunk, MSG_DONTWAIT)) > 0) sent += w;
  CHECK(w == -1 && errno == EAGAIN, "full: EAGAIN after %ld bytes", sent);
  struct pollfd pf = {sv[0], POLLOUT, 0};
  CHECK(poll(&pf, 1, 0) == 0, "full: not writable");
  static char sink[1 << 16];
  long drained = 0;
  ssize_t r;
  while ((r = recv(sv[1], sink, sizeof sink, MSG_DONTWAIT)) > 0) drained += r;
  CHECK(drained == sent, "drained %ld of %ld", drained, sent);
  CHECK(poll(&pf, 1, 1000) == 1 && (pf.revents & POLLOUT), "writable again");
  int err = -1;
  gl = sizeof err;
  CHECK(getsockopt(sv[0], SOL_SOCKET, SO_ERROR, &err, &gl) == 0 && err == 0, "SO_ERROR %d", err);
  close(sv[0]);
  close(sv[1]);
}

int main(void) {
  guest_name = "unix_more";
  waitall();
  sigpipe();
  seqpacket();
  datagram_batches();
  backpressure();
  return guest_finish();
}
