// Socket options and ancillary data: the IPv6 receive options (hop limit,
// traffic class, packet info) with their control messages, IPv4's, short
// option values, TCP and timestamp options; and abstract AF_UNIX names up
// to Linux's full 107 bytes.
#include "guest_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static int int_opt(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  if (getsockopt(fd, level, name, &v, &len) != 0) return -1000 - errno;
  return v;
}

// Receives one datagram and returns the first control message of the
// given level and type, as an int (or -1 when absent).
static int recv_cmsg_int(int fd, int level, int type, char* data, size_t n) {
  char ctl[512];
  struct iovec iov = {data, n};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  if (recvmsg(fd, &mh, 0) < 0) return -2;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
    if (c->cmsg_level == level && c->cmsg_type == type) {
      int v = 0;
      memcpy(&v, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0) < sizeof v ? c->cmsg_len - CMSG_LEN(0) : sizeof v);
      return v;
    }
  return -1;
}

static void ipv6_ancillary(void) {
  printf("IPv6 ancillary data:\n");
  int rx = socket(AF_INET6, SOCK_DGRAM, 0), tx = socket(AF_INET6, SOCK_DGRAM, 0);
  REQUIRE(rx >= 0 && tx >= 0);
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  if (bind(rx, (struct sockaddr*)&a, sizeof a) != 0) {
    printf("  no IPv6 loopback here (%s): skipped\n", strerror(errno));
    close(rx);
    close(tx);
    return;
  }
  socklen_t al = sizeof a;
  REQUIRE(getsockname(rx, (struct sockaddr*)&a, &al) == 0);
  int on = 1;
  CHECK(setsockopt(rx, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof on) == 0, "%s", strerror(errno));
  CHECK(int_opt(rx, IPPROTO_IPV6, IPV6_RECVHOPLIMIT) == 1);
  CHECK(setsockopt(rx, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof on) == 0, "%s", strerror(errno));
  CHECK(setsockopt(rx, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof on) == 0, "%s", strerror(errno));
  int hops = 7;
  CHECK(setsockopt(tx, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops) == 0);
  CHECK(int_opt(tx, IPPROTO_IPV6, IPV6_UNICAST_HOPS) == 7);
  char buf[64];
  CHECK(sendto(tx, "one", 3, 0, (struct sockaddr*)&a, sizeof a) == 3);
  CHECK(recv_cmsg_int(rx, IPPROTO_IPV6, IPV6_HOPLIMIT, buf, sizeof buf) == 7, "hop limit from the socket option");
  // Per message: hop limit and traffic class as control messages.
  char ctl[CMSG_SPACE(sizeof(int)) * 2];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {"two", 3};
  struct msghdr mh = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1,
                      .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = IPPROTO_IPV6;
  c->cmsg_type = IPV6_HOPLIMIT;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int v = 42;
  memcpy(CMSG_DATA(c), &v, sizeof v);
  c = CMSG_NXTHDR(&mh, c);
  c->cmsg_level = IPPROTO_IPV6;
  c->cmsg_type = IPV6_TCLASS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  v = 0x20;
  memcpy(CMSG_DATA(c), &v, sizeof v);
  CHECK(sendmsg(tx, &mh, 0) == 3, "sendmsg: %s", strerror(errno));
  char ctl2[512];
  struct iovec riov = {buf, sizeof buf};
  struct msghdr rh = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = ctl2, .msg_controllen = sizeof ctl2};
  CHECK(recvmsg(rx, &rh, 0) == 3);
  int got_hops = -1, got_tclass = -1, got_pktinfo = 0;
  for (c = CMSG_FIRSTHDR(&rh); c; c = CMSG_NXTHDR(&rh, c)) {
    if (c->cmsg_level != IPPROTO_IPV6) continue;
    if (c->cmsg_type == IPV6_HOPLIMIT) memcpy(&got_hops, CMSG_DATA(c), sizeof got_hops);
    if (c->cmsg_type == IPV6_TCLASS) memcpy(&got_tclass, CMSG_DATA(c), sizeof got_tclass);
    if (c->cmsg_type == IPV6_PKTINFO) got_pktinfo = c->cmsg_len == CMSG_LEN(sizeof(struct in6_pktinfo));
  }
  CHECK(got_hops == 42 && got_tclass == 0x20 && got_pktinfo, "hops %d tclass 0x%x pktinfo %d", got_hops,
        got_tclass, got_pktinfo);
  // Sticky traffic class.
  v = 0x40;
  CHECK(setsockopt(tx, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof v) == 0 && int_opt(tx, IPPROTO_IPV6, IPV6_TCLASS) == 0x40);
  CHECK(sendto(tx, "3", 1, 0, (struct sockaddr*)&a, sizeof a) == 1);
  CHECK(recv_cmsg_int(rx, IPPROTO_IPV6, IPV6_TCLASS, buf, sizeof buf) == 0x40);
  close(rx);
  close(tx);
}

static void ipv4_options(void) {
  printf("IPv4 options:\n");
  int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(rx >= 0 && tx >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(rx, (struct sockaddr*)&a, sizeof a) == 0);
  socklen_t al = sizeof a;
  REQUIRE(getsockname(rx, (struct sockaddr*)&a, &al) == 0);
  int on = 1;
  CHECK(setsockopt(rx, IPPROTO_IP, IP_RECVTTL, &on, sizeof on) == 0);
  CHECK(setsockopt(rx, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on) == 0);
  // A one-byte value is enough for IP_TOS and IP_TTL, as on Linux.
  unsigned char tos = 0x10;
  CHECK(setsockopt(tx, IPPROTO_IP, IP_TOS, &tos, 1) == 0, "1-byte IP_TOS: %s", strerror(errno));
  unsigned char back = 0;
  socklen_t bl = 1;
  CHECK(getsockopt(tx, IPPROTO_IP, IP_TOS, &back, &bl) == 0 && bl == 1 && back == 0x10);
  CHECK(int_opt(tx, IPPROTO_IP, IP_TOS) == 0x10);
  int ttl = 9;
  CHECK(setsockopt(tx, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl) == 0);
  char buf[16];
  CHECK(sendto(tx, "x", 1, 0, (struct sockaddr*)&a, sizeof a) == 1);
  CHECK(recv_cmsg_int(rx, IPPROTO_IP, IP_TTL, buf, sizeof buf) == 9);
  CHECK(sendto(tx, "y", 1, 0, (struct sockaddr*)&a, sizeof a) == 1);
  CHECK(recv_cmsg_int(rx, SOL_SOCKET, SCM_TIMESTAMP, buf, sizeof buf) != -1, "SCM_TIMESTAMP");
  CHECK_ERR(setsockopt(tx, IPPROTO_IP, IP_TOS, &tos, (socklen_t)-1), EINVAL);
  CHECK_ERR(setsockopt(tx, SOL_SOCKET, 0x7777, &on, sizeof on), ENOPROTOOPT);
  CHECK_ERR(setsockopt(tx, IPPROTO_IP, IP_TOS, (void*)8, 4), EFAULT);
  close(rx);
  close(tx);

  int t = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(t >= 0);
  char cc[16] = "";
  socklen_t cl = sizeof cc;
  CHECK(getsockopt(t, IPPROTO_TCP, TCP_CONGESTION, cc, &cl) == 0 && cc[0], "TCP_CONGESTION %s", cc);
  struct tcp_info ti;
  socklen_t tl = sizeof ti;
  CHECK(getsockopt(t, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 && tl > 0 && ti.tcpi_state == 7 /*TCP_CLOSE*/);
  int ka = 33;
  CHECK(setsockopt(t, IPPROTO_TCP, TCP_USER_TIMEOUT, &ka, sizeof ka) == 0 &&
        int_opt(t, IPPROTO_TCP, TCP_USER_TIMEOUT) == 33);
  close(t);
}

static socklen_t abstract_addr(struct sockaddr_un* su, char last, size_t n) {
  memset(su, 0, sizeof *su);
  su->sun_family = AF_UNIX;
  for (size_t i = 1; i < n; i++) su->sun_path[i] = (char)('a' + i % 26);
  su->sun_path[n - 1] = last;
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
}

static void abstract_names(void) {
  printf("abstract AF_UNIX names of every length:\n");
  struct sockaddr_un a, b, got;
  for (size_t n = 2; n <= sizeof a.sun_path; n += 53) {
    socklen_t al = abstract_addr(&a, 'Z', n);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    CHECK(bind(s, (struct sockaddr*)&a, al) == 0, "bind of %zu bytes: %s", n, strerror(errno));
    socklen_t gl = sizeof got;
    CHECK(getsockname(s, (struct sockaddr*)&got, &gl) == 0 && gl == al && memcmp(&got, &a, al) == 0,
          "getsockname of %zu bytes: len %u", n, gl);
    close(s);
  }
  // The longest: 107 bytes after the NUL.
  socklen_t al = abstract_addr(&a, 'A', sizeof a.sun_path);
  socklen_t bl = abstract_addr(&b, 'B', sizeof b.sun_path);
  CHECK(al == sizeof a);
  int l1 = socket(AF_UNIX, SOCK_STREAM, 0), l2 = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK(bind(l1, (struct sockaddr*)&a, al) == 0 && listen(l1, 4) == 0, "%s", strerror(errno));
  CHECK(bind(l2, (struct sockaddr*)&b, bl) == 0 && listen(l2, 4) == 0, "a name differing in its last byte");
  int dup = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK_ERR(bind(dup, (struct sockaddr*)&a, al), EADDRINUSE);
  close(dup);
  CHECK_ERR(bind(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr*)&a, al + 1), EINVAL);
  int c = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK(connect(c, (struct sockaddr*)&b, bl) == 0, "connect: %s", strerror(errno));
  socklen_t gl = sizeof got;
  CHECK(getpeername(c, (struct sockaddr*)&got, &gl) == 0 && gl == bl && memcmp(&got, &b, bl) == 0,
        "getpeername: len %u", gl);
  int acc = accept(l2, NULL, NULL);
  CHECK(acc >= 0);
  gl = sizeof got;
  CHECK(getsockname(acc, (struct sockaddr*)&got, &gl) == 0 && gl == bl && memcmp(&got, &b, bl) == 0);
  close(acc);
  close(c);
  close(l1);
  close(l2);
  // Datagrams: the receiver learns the sender's long name.
  int d1 = socket(AF_UNIX, SOCK_DGRAM, 0), d2 = socket(AF_UNIX, SOCK_DGRAM, 0);
  CHECK(bind(d1, (struct sockaddr*)&a, al) == 0 && bind(d2, (struct sockaddr*)&b, bl) == 0);
  CHECK(sendto(d2, "hi", 2, 0, (struct sockaddr*)&a, al) == 2);
  char buf[8];
  gl = sizeof got;
  CHECK(recvfrom(d1, buf, sizeof buf, 0, (struct sockaddr*)&got, &gl) == 2 && gl == bl &&
            memcmp(&got, &b, bl) == 0,
        "recvfrom's address: len %u", gl);
  close(d1);
  close(d2);
  // Once its socket is closed the name is free again.
  int again = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK(bind(again, (struct sockaddr*)&a, al) == 0, "rebinding: %s", strerror(errno));
  close(again);
}

int main(void) {
  guest_name = "sockopt";
  ipv6_ancillary();
  ipv4_options();
  abstract_names();
  return guest_finish();
}
