// AF_INET/AF_INET6 on loopback: a TCP echo server on an ephemeral port
// (found with getsockname) and a client thread, UDP round trips with
// sendmmsg/recvmmsg, a non-blocking connect to a closed port, socket
// options, and blocking calls interrupted by signals (SA_RESTART or EINTR).
#include "guest_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kBytes = 4 << 20 };

static socklen_t loopback(struct sockaddr_storage* ss, int family, int port) {
  memset(ss, 0, sizeof *ss);
  if (family == AF_INET) {
    struct sockaddr_in* a = (struct sockaddr_in*)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((unsigned short)port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sizeof *a;
  }
  struct sockaddr_in6* a = (struct sockaddr_in6*)ss;
  a->sin6_family = AF_INET6;
  a->sin6_port = htons((unsigned short)port);
  a->sin6_addr = in6addr_loopback;
  return sizeof *a;
}

static int port_of(const struct sockaddr_storage* ss) {
  return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in*)ss)->sin_port
                                        : ((const struct sockaddr_in6*)ss)->sin6_port);
}

struct client_arg {
  struct sockaddr_storage addr;
  socklen_t len;
  long ok;
};

static void* tcp_client(void* p) {
  struct client_arg* a = p;
  int s = socket(a->addr.ss_family, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&a->addr, a->len) < 0) {
    CHECK(0, "client connect: %s", strerror(errno));
    return NULL;
  }
  int one = 1;
  CHECK_OK(setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
  unsigned char* out = malloc(kBytes);
  unsigned char* in = malloc(kBytes);
  for (int i = 0; i < kBytes; i++) out[i] = (unsigned char)(i % 251);
  // Send and receive together, or both sides' buffers fill up.
  size_t sent = 0, got = 0;
  struct pollfd pf = {s, POLLIN | POLLOUT, 0};
  while (got < kBytes) {
    pf.events = POLLIN | (sent < kBytes ? POLLOUT : 0);
    if (poll(&pf, 1, 10000) <= 0) break;
    if ((pf.revents & POLLOUT) && sent < kBytes) {
      ssize_t w = send(s, out + sent, kBytes - sent > 65536 ? 65536 : kBytes - sent, MSG_DONTWAIT);
      if (w > 0) sent += (size_t)w;
    }
    if (pf.revents & (POLLIN | POLLHUP)) {
      ssize_t r = recv(s, in + got, kBytes - got, MSG_DONTWAIT);
      if (r == 0) break;
      if (r > 0) got += (size_t)r;
    }
  }
  a->ok = got == kBytes && memcmp(in, out, kBytes) == 0;
  free(out);
  free(in);
  close(s);
  return NULL;
}

static void tcp_echo(int family, const char* name) {
  printf("TCP echo over %s:\n", name);
  int ls = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0 && family == AF_INET6) {
    printf("  no IPv6 here (%s), skipped\n", strerror(errno));
    return;
  }
  REQUIRE(ls >= 0, "socket: %s", strerror(errno));
  int one = 1;
  CHECK_OK(setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
  if (family == AF_INET6) CHECK_OK(setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one));
  struct client_arg ca;
  ca.len = loopback(&ca.addr, family, 0);
  if (bind(ls, (struct sockaddr*)&ca.addr, ca.len) < 0) {
    CHECK(family == AF_INET6 && errno == EADDRNOTAVAIL, "bind: %s", strerror(errno));
    printf("  no %s loopback address, skipped\n", name);
    close(ls);
    return;
  }
  REQUIRE(listen(ls, 4) == 0, "listen: %s", strerror(errno));
  socklen_t len = sizeof ca.addr;
  REQUIRE(getsockname(ls, (struct sockaddr*)&ca.addr, &len) == 0 && len == ca.len, "getsockname");
  CHECK(port_of(&ca.addr) != 0, "an ephemeral port was chosen");
  int acc = 0;
  len = sizeof acc;
  CHECK(getsockopt(ls, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 && acc == 1, "SO_ACCEPTCONN");
  pthread_t th;
  ca.ok = 0;
  pthread_create(&th, NULL, tcp_client, &ca);
  struct sockaddr_storage peer;
  socklen_t plen = sizeof peer;
  int c = accept4(ls, (struct sockaddr*)&peer, &plen, SOCK_CLOEXEC);
  REQUIRE(c >= 0, "accept4: %s", strerror(errno));
  CHECK(peer.ss_family == family && plen == ca.len, "peer address family %d", peer.ss_family);
  CHECK(fcntl(c, F_GETFD) == FD_CLOEXEC, "accept4 SOCK_CLOEXEC");
  struct sockaddr_storage mine;
  socklen_t mlen = sizeof mine;
  CHECK(getpeername(c, (struct sockaddr*)&mine, &mlen) == 0 && port_of(&mine) == port_of(&peer),
        "getpeername matches accept's address");
  char* buf = malloc(65536);
  size_t total = 0;
  ssize_t r;
  while ((r = read(c, buf, 65536)) > 0) {
    ssize_t off = 0;
    while (off < r) {
      ssize_t w = write(c, buf + off, (size_t)(r - off));
      if (w <= 0) break;
      off += w;
    }
    total += (size_t)r;
    if (total == kBytes) shutdown(c, SHUT_WR);
  }
  free(buf);
  pthread_join(th, NULL);
  CHECK(ca.ok, "4 MiB echoed intact");
  printf("  %zu bytes echoed, client %s\n", total, ca.ok ? "verified them" : "saw a difference");
  close(c);
  close(ls);
}

static void udp(void) {
  printf("UDP round trips:\n");
  int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  REQUIRE(a >= 0 && b >= 0, "socket: %s", strerror(errno));
  struct sockaddr_storage sa, sb, from;
  socklen_t la = loopback(&sa, AF_INET, 0), lb = loopback(&sb, AF_INET, 0);
  REQUIRE(bind(a, (struct sockaddr*)&sa, la) == 0 && bind(b, (struct sockaddr*)&sb, lb) == 0, "bind");
  getsockname(a, (struct sockaddr*)&sa, &la);
  getsockname(b, (struct sockaddr*)&sb, &lb);
  CHECK(sendto(a, "datagram", 8, 0, (struct sockaddr*)&sb, lb) == 8, "sendto: %s", strerror(errno));
  char buf[64];
  socklen_t fl = sizeof from;
  struct pollfd pf = {b, POLLIN, 0};
  CHECK(poll(&pf, 1, 5000) == 1, "poll");
  CHECK(recvfrom(b, buf, sizeof buf, 0, (struct sockaddr*)&from, &fl) == 8 && memcmp(buf, "datagram", 8) == 0,
        "recvfrom");
  CHECK(fl == sizeof(struct sockaddr_in) && port_of(&from) == port_of(&sa), "sender's port");
  CHECK_ERR(recv(b, buf, sizeof buf, 0), EAGAIN);

  // Several at once.
  CHECK_OK(connect(a, (struct sockaddr*)&sb, lb));
  struct mmsghdr mm[3];
  struct iovec iov[3];
  const char* words[3] = {"alpha", "beta", "gamma"};
  memset(mm, 0, sizeof mm);
  for (int i = 0; i < 3; i++) {
    iov[i].iov_base = (void*)words[i];
    iov[i].iov_len = strlen(words[i]);
    mm[i].msg_hdr.msg_iov = &iov[i];
    mm[i].msg_hdr.msg_iovlen = 1;
  }
  CHECK(sendmmsg(a, mm, 3, 0) == 3, "sendmmsg: %s", strerror(errno));
  CHECK(mm[0].msg_len == 5 && mm[1].msg_len == 4 && mm[2].msg_len == 5, "msg_len filled in");
  char rb[3][16];
  struct iovec riov[3];
  struct mmsghdr rm[3];
  memset(rm, 0, sizeof rm);
  for (int i = 0; i < 3; i++) {
    riov[i].iov_base = rb[i];
    riov[i].iov_len = sizeof rb[i];
    rm[i].msg_hdr.msg_iov = &riov[i];
    rm[i].msg_hdr.msg_iovlen = 1;
  }
  usleep(20000);
  int n = recvmmsg(b, rm, 3, MSG_WAITFORONE, NULL);
  CHECK(n == 3, "recvmmsg: %d (%s)", n, strerror(errno));
  for (int i = 0; i < n && i < 3; i++)
    CHECK(rm[i].msg_len == strlen(words[i]) && memcmp(rb[i], words[i], rm[i].msg_len) == 0,
          "datagram %d", i);
  close(a);
  close(b);
}

static void refused(void) {
  printf("non-blocking connect to a closed port:\n");
  struct sockaddr_storage sa;
  socklen_t len = loopback(&sa, AF_INET, 0);
  int probe = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(bind(probe, (struct sockaddr*)&sa, len) == 0, "bind");
  getsockname(probe, (struct sockaddr*)&sa, &len);
  close(probe);  // nobody listens there now
  int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int r = connect(s, (struct sockaddr*)&sa, len);
  int e = errno;
  // Loopback may answer before connect returns; EINPROGRESS is usual.
  CHECK(r == -1 && (e == EINPROGRESS || e == ECONNREFUSED), "connect: %d %s", r, strerror(e));
  printf("  connect -> %s\n", e == EINPROGRESS ? "EINPROGRESS" : strerror(e));
  if (e == EINPROGRESS) {
    struct pollfd pf = {s, POLLOUT, 0};
    CHECK(poll(&pf, 1, 5000) == 1, "poll reports completion");
    int err = 0;
    socklen_t el = sizeof err;
    CHECK(getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == ECONNREFUSED,
          "SO_ERROR %d (%s)", err, strerror(err));
  }
  close(s);
  int bogus;
  socklen_t bl = sizeof bogus;
  CHECK_ERR(getsockopt(0x3ff, SOL_SOCKET, SO_ERROR, &bogus, &bl), EBADF);
  s = socket(AF_INET, SOCK_STREAM, 0);
  CHECK_ERR(connect(s, (struct sockaddr*)&sa, 3), EINVAL);
  CHECK_ERR(connect(s, (struct sockaddr*)8, len), EFAULT);
  CHECK_ERR(socket(AF_INET, SOCK_STREAM | 0x1000, 0), EINVAL);
  close(s);
}

static volatile int handled;
static void on_usr1(int sig) { handled++; }

struct blocker {
  int fd;
  ssize_t r;
  int err;
  volatile int done;
};

static void* block_in_recv(void* p) {
  struct blocker* b = p;
  char c;
  b->r = recv(b->fd, &c, 1, 0);
  b->err = errno;
  b->done = 1;
  return NULL;
}

static void interrupted(void) {
  printf("a blocked recv and a signal:\n");
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  for (int restart = 0; restart < 2; restart++) {
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGUSR1, &sa, NULL);
    handled = 0;
    struct blocker b = {sv[1], 0, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, block_in_recv, &b);
    // Again until it lands while the thread is blocked: one that came
    // before recv would only run the handler.
    for (int i = 0; i < 50 && !b.done; i++) {
      usleep(100000);
      if (!b.done) pthread_kill(th, SIGUSR1);
      if (restart && handled) break;
    }
    usleep(100000);
    CHECK(handled >= 1, "handler ran (%d)", handled);
    if (restart) CHECK(write(sv[0], "k", 1) == 1, "write");
    pthread_join(th, NULL);
    if (restart)
      CHECK(b.r == 1, "SA_RESTART: recv carried on and got the byte (%zd, %s)", b.r, strerror(b.err));
    else
      CHECK(b.r == -1 && b.err == EINTR, "no SA_RESTART: EINTR (%zd, %s)", b.r, strerror(b.err));
  }
  signal(SIGUSR1, SIG_DFL);
  close(sv[0]);
  close(sv[1]);
}

int main(void) {
  guest_name = "inet";
  tcp_echo(AF_INET, "127.0.0.1");
  tcp_echo(AF_INET6, "::1");
  udp();
  refused();
  interrupted();
  return guest_finish();
}
