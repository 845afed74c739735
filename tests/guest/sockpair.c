// socketpair(2) round trips: stream (partial reads, large transfers,
// shutdown), datagram and seqpacket (message boundaries, MSG_TRUNC,
// MSG_PEEK, MSG_DONTWAIT), plus the peer's credentials.
#include "guest_check.h"

#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static void stream_pair(void) {
  printf("SOCK_STREAM pair:\n");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
  CHECK(write(sv[0], "hello", 5) == 5, "write: %s", strerror(errno));
  char buf[64] = {0};
  CHECK(read(sv[1], buf, 3) == 3 && memcmp(buf, "hel", 3) == 0, "first three bytes");
  CHECK(recv(sv[1], buf, sizeof buf, 0) == 2 && memcmp(buf, "lo", 2) == 0, "the rest");
  CHECK(send(sv[1], "back", 4, 0) == 4, "send: %s", strerror(errno));
  CHECK(recv(sv[0], buf, sizeof buf, MSG_PEEK) == 4, "peek");
  CHECK(recv(sv[0], buf, sizeof buf, 0) == 4 && memcmp(buf, "back", 4) == 0, "after peek");
  CHECK_ERR(recv(sv[0], buf, sizeof buf, MSG_DONTWAIT), EAGAIN);

  // More than a socket buffer holds: a writer thread is not needed if the
  // reader drains in between, so write in pieces with poll.
  enum { kBig = 1 << 20 };
  char* out = malloc(kBig);
  char* in = malloc(kBig);
  REQUIRE(out && in, "out && in");
  for (int i = 0; i < kBig; i++) out[i] = (char)(i * 7 + 3);
  size_t sent = 0, got = 0;
  CHECK_OK(fcntl(sv[0], F_SETFL, O_NONBLOCK));
  while (got < kBig) {
    if (sent < kBig) {
      ssize_t w = send(sv[0], out + sent, kBig - sent, 0);
      if (w > 0) sent += (size_t)w;
      else CHECK(errno == EAGAIN, "send: %s", strerror(errno));
    }
    ssize_t r = recv(sv[1], in + got, kBig - got, MSG_DONTWAIT);
    if (r > 0) got += (size_t)r;
    else if (r == 0) break;
    else CHECK(errno == EAGAIN, "recv: %s", strerror(errno));
  }
  CHECK(got == kBig && memcmp(in, out, kBig) == 0, "1 MiB through the pair (%zu bytes)", got);
  printf("  1 MiB round trip: %s\n", got == kBig ? "ok" : "short");
  free(out);
  free(in);

  // scatter/gather
  struct iovec iov[3] = {{"ab", 2}, {"", 0}, {"cde", 3}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = 3};
  CHECK(sendmsg(sv[0], &m, 0) == 5, "sendmsg gather: %s", strerror(errno));
  char x[2], y[8];
  struct iovec riov[2] = {{x, 2}, {y, sizeof y}};
  struct msghdr rm = {.msg_iov = riov, .msg_iovlen = 2};
  CHECK(recvmsg(sv[1], &rm, 0) == 5 && memcmp(x, "ab", 2) == 0 && memcmp(y, "cde", 3) == 0,
        "recvmsg scatter");

  CHECK_OK(shutdown(sv[0], SHUT_WR));
  CHECK(read(sv[1], buf, sizeof buf) == 0, "EOF after shutdown");
  // Writing into a pair whose other end is gone: EPIPE, and SIGPIPE unless
  // MSG_NOSIGNAL.
  close(sv[1]);
  signal(SIGPIPE, SIG_IGN);
  CHECK_ERR(send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
  CHECK_ERR(write(sv[0], "x", 1), EPIPE);
  signal(SIGPIPE, SIG_DFL);
  close(sv[0]);

  struct ucred cr;
  socklen_t len = sizeof cr;
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0");
  CHECK(fcntl(sv[0], F_GETFD) == FD_CLOEXEC, "SOCK_CLOEXEC");
  CHECK(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && len == sizeof cr,
        "SO_PEERCRED: %s", strerror(errno));
  CHECK(cr.pid == getpid() && cr.uid == getuid() && cr.gid == getgid(),
        "peer credentials %d/%d/%d, want %d/%d/%d", (int)cr.pid, (int)cr.uid, (int)cr.gid,
        (int)getpid(), (int)getuid(), (int)getgid());
  int type = 0;
  len = sizeof type;
  CHECK(getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM, "SO_TYPE");
  close(sv[0]);
  close(sv[1]);
}

static void message_pair(int type, const char* name) {
  printf("%s pair:\n", name);
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, sv) == 0, "socketpair: %s", strerror(errno));
  CHECK((fcntl(sv[0], F_GETFL) & O_NONBLOCK) != 0, "SOCK_NONBLOCK");
  CHECK(send(sv[0], "one", 3, 0) == 3, "send: %s", strerror(errno));
  CHECK(send(sv[0], "second", 6, 0) == 6, "send: %s", strerror(errno));
  CHECK(send(sv[0], "", 0, 0) == 0, "empty message");
  char buf[64];
  CHECK(recv(sv[1], buf, sizeof buf, 0) == 3 && memcmp(buf, "one", 3) == 0, "boundary kept");
  // A short buffer truncates the message; MSG_TRUNC reports its real size.
  CHECK(recv(sv[1], buf, 2, MSG_TRUNC) == 6, "MSG_TRUNC gives the real length");
  CHECK(recv(sv[1], buf, sizeof buf, 0) == 0, "the empty message");
  CHECK_ERR(recv(sv[1], buf, sizeof buf, 0), EAGAIN);

  struct msghdr m = {0};
  struct iovec iov = {buf, 2};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  CHECK(send(sv[1], "abcdef", 6, 0) == 6, "send: %s", strerror(errno));
  CHECK(recvmsg(sv[0], &m, 0) == 2 && (m.msg_flags & MSG_TRUNC), "recvmsg sets MSG_TRUNC");

  struct pollfd p = {sv[1], POLLIN, 0};
  CHECK(poll(&p, 1, 0) == 0, "nothing to read");
  CHECK(send(sv[0], "z", 1, 0) == 1, "send: %s", strerror(errno));
  CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN), "poll sees the message");
  close(sv[0]);
  close(sv[1]);
}

// flatux keeps its heap at 0x7e0000000000 in the guest's address space:
// each socket and event call must refuse pointers there, as they refuse
// unmapped ones natively (nothing lives there natively).
static void kernel_heap_pointers(void) {
  printf("pointers into the kernel heap:\n");
  char* const kern = (char*)0x7e0000001000;
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv) == 0, "socketpair");
  CHECK_ERR(syscall(SYS_sendto, sv[0], kern, 8, 0, 0, 0), EFAULT);
  // Linux drops a datagram it failed to copy out; flatux refuses the
  // pointer before asking the host. Each failed receive gets its own.
  CHECK(send(sv[0], "12345678", 8, 0) == 8, "send");
  CHECK_ERR(syscall(SYS_recvfrom, sv[1], kern, 8, 0, 0, 0), EFAULT);
  CHECK(send(sv[0], "12345678", 8, 0) == 8, "send");
  CHECK_ERR(syscall(SYS_recvmsg, sv[1], kern, 0), EFAULT);
  struct iovec iov = {kern, 8};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  CHECK(send(sv[0], "12345678", 8, 0) == 8, "send");
  CHECK_ERR(syscall(SYS_recvmsg, sv[1], &m, 0), EFAULT);
  CHECK(send(sv[0], "12345678", 8, 0) == 8, "send");
  CHECK_ERR(syscall(SYS_read, sv[1], kern, 8), EFAULT);
  CHECK_ERR(syscall(SYS_sendmsg, sv[0], &m, 0), EFAULT);
  m.msg_iov = (struct iovec*)kern;
  CHECK_ERR(syscall(SYS_sendmsg, sv[0], &m, 0), EFAULT);
  socklen_t len = 16;
  CHECK_ERR(syscall(SYS_getsockopt, sv[0], SOL_SOCKET, SO_TYPE, kern, &len), EFAULT);
  CHECK_ERR(syscall(SYS_setsockopt, sv[0], SOL_SOCKET, SO_SNDBUF, kern, 4), EFAULT);
  CHECK_ERR(syscall(SYS_bind, sv[0], kern, 16), EFAULT);
  CHECK_ERR(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, kern), EFAULT);
  int ep = (int)syscall(SYS_epoll_create1, 0);
  CHECK_ERR(syscall(SYS_epoll_ctl, ep, 1 /* EPOLL_CTL_ADD */, sv[1], kern), EFAULT);
  // An event to report, so that Linux too must write through the pointer.
  uint32_t ev[3] = {1 /* EPOLLIN */, 0, 0};
  CHECK(syscall(SYS_epoll_ctl, ep, 1, sv[1], ev) == 0, "epoll_ctl: %s", strerror(errno));
  CHECK(send(sv[0], "e", 1, 0) == 1, "send");
  CHECK_ERR(syscall(SYS_epoll_wait, ep, kern, 4, 0), EFAULT);
  CHECK_ERR(syscall(SYS_signalfd4, -1, kern, 8, 0), EFAULT);
  char buf[16];
  while (recv(sv[1], buf, sizeof buf, 0) > 0) {}
  CHECK(send(sv[0], "ok", 2, 0) == 2 && recv(sv[1], buf, sizeof buf, 0) == 2,
        "the pair still works afterwards");
  close(ep);
  close(sv[0]);
  close(sv[1]);
}

// FIONBIO and FIOASYNC set the open file's status flags as F_SETFL does
// (nginx's master sets FIOASYNC on each worker's channel and gives up on
// the worker when it fails).
static void status_flag_ioctls(void) {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  int on = 1, off = 0;
  CHECK_OK(ioctl(sv[0], FIOASYNC, &on));
  CHECK(fcntl(sv[0], F_GETFL) & O_ASYNC, "FIOASYNC sets O_ASYNC");
  CHECK_OK(ioctl(sv[0], FIONBIO, &on));
  CHECK((fcntl(sv[0], F_GETFL) & (O_ASYNC | O_NONBLOCK)) == (O_ASYNC | O_NONBLOCK), "FIONBIO beside it");
  CHECK_OK(ioctl(sv[0], FIOASYNC, &off));
  CHECK(!(fcntl(sv[0], F_GETFL) & O_ASYNC), "FIOASYNC 0 clears it");
  CHECK(fcntl(sv[0], F_GETFL) & O_NONBLOCK, "and leaves O_NONBLOCK");
  CHECK_ERR(ioctl(sv[0], FIOASYNC, (int*)8), EFAULT);
  close(sv[0]);
  close(sv[1]);
}

int main(void) {
  guest_name = "sockpair";
  status_flag_ioctls();
  stream_pair();
  message_pair(SOCK_DGRAM, "SOCK_DGRAM");
  message_pair(SOCK_SEQPACKET, "SOCK_SEQPACKET");
  int sv[2];
  CHECK_ERR(socketpair(AF_INET, SOCK_STREAM, 0, sv), EOPNOTSUPP);
  CHECK_ERR(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, 8L), EFAULT);
  CHECK_ERR(send(0x3ff, "x", 1, 0), EBADF);
  int pfd[2];
  REQUIRE(pipe(pfd) == 0, "pipe(pfd) == 0");
  CHECK_ERR(send(pfd[1], "x", 1, 0), ENOTSOCK);
  kernel_heap_pointers();
  return guest_finish();
}
