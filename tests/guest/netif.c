// Network interfaces as tools read them: getifaddrs (a NETLINK_ROUTE
// RTM_GETLINK and RTM_GETADDR dump in both libcs), if_nametoindex, the
// SIOCGIF* ioctls, raw rtnetlink dumps and error replies. Whatever the
// machine's interfaces are, "lo" with 127.0.0.1 is among them. Requests
// that would change an interface are made only against an index or name
// that does not exist, so they change nothing even when run as root; the
// answer must then be a refusal (EPERM) or "no such device".
#include "guest_check.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int kNoSuchIndex = 0x7ffffff0;

static void getifaddrs_lists_lo(void) {
  printf("getifaddrs:\n");
  struct ifaddrs* list = NULL;
  REQUIRE(getifaddrs(&list) == 0, "getifaddrs: %s", strerror(errno));
  int lo_v4 = 0, entries = 0;
  for (struct ifaddrs* a = list; a; a = a->ifa_next) {
    entries++;
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || strcmp(a->ifa_name, "lo") != 0) continue;
    struct sockaddr_in* sin = (struct sockaddr_in*)a->ifa_addr;
    if (sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
      lo_v4 = 1;
      CHECK(a->ifa_flags & IFF_LOOPBACK, "lo flags 0x%x", a->ifa_flags);
      CHECK(a->ifa_netmask && ((struct sockaddr_in*)a->ifa_netmask)->sin_addr.s_addr == htonl(0xff000000),
            "lo netmask 255.0.0.0");
    }
  }
  printf("  %d entries\n", entries);
  CHECK(lo_v4, "lo with 127.0.0.1 listed");
  freeifaddrs(list);
}

static void name_index(void) {
  printf("if_nametoindex / if_indextoname:\n");
  unsigned idx = if_nametoindex("lo");
  CHECK(idx > 0, "if_nametoindex(lo): %s", strerror(errno));
  char name[IF_NAMESIZE] = "";
  CHECK(if_indextoname(idx, name) && strcmp(name, "lo") == 0, "if_indextoname(%u) = %s", idx, name);
  CHECK(if_nametoindex("flatuxnope0") == 0, "no such interface");
}

static void ifreq_queries(void) {
  printf("SIOCGIF*:\n");
  // Addresses are the AF_INET socket's business; the rest any socket's.
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(s >= 0, "socket: %s", strerror(errno));
  int us = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(us >= 0, "socket: %s", strerror(errno));

  struct ifconf ic = {.ifc_len = 0, .ifc_buf = NULL};
  CHECK(ioctl(us, SIOCGIFCONF, &ic) == 0 && ic.ifc_len >= (int)sizeof(struct ifreq),
        "SIOCGIFCONF length query: %d", ic.ifc_len);
  struct ifreq reqs[64];
  ic.ifc_len = sizeof reqs;
  ic.ifc_req = reqs;
  int lo = 0;
  CHECK(ioctl(us, SIOCGIFCONF, &ic) == 0, "SIOCGIFCONF: %s", strerror(errno));
  for (int i = 0; i < ic.ifc_len / (int)sizeof(struct ifreq); i++) {
    struct sockaddr_in* sin = (struct sockaddr_in*)&reqs[i].ifr_addr;
    if (strcmp(reqs[i].ifr_name, "lo") == 0 && sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) lo = 1;
  }
  CHECK(lo, "SIOCGIFCONF lists lo 127.0.0.1 (%d bytes)", ic.ifc_len);
  // Too small for one entry: nothing written, length 0.
  ic.ifc_len = sizeof(struct ifreq) - 1;
  CHECK(ioctl(s, SIOCGIFCONF, &ic) == 0 && ic.ifc_len == 0, "short buffer: %d", ic.ifc_len);

  struct ifreq r;
  memset(&r, 0, sizeof r);
  strcpy(r.ifr_name, "lo");
  CHECK(ioctl(us, SIOCGIFFLAGS, &r) == 0 && (r.ifr_flags & IFF_LOOPBACK) && (r.ifr_flags & IFF_UP),
        "SIOCGIFFLAGS 0x%x", r.ifr_flags);
  CHECK(ioctl(s, SIOCGIFADDR, &r) == 0 &&
            ((struct sockaddr_in*)&r.ifr_addr)->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
        "SIOCGIFADDR");
  CHECK(ioctl(s, SIOCGIFNETMASK, &r) == 0 &&
            ((struct sockaddr_in*)&r.ifr_netmask)->sin_addr.s_addr == htonl(0xff000000),
        "SIOCGIFNETMASK");
  CHECK(ioctl(s, SIOCGIFMTU, &r) == 0 && r.ifr_mtu > 0, "SIOCGIFMTU %d", r.ifr_mtu);
  CHECK(ioctl(s, SIOCGIFHWADDR, &r) == 0 && r.ifr_hwaddr.sa_family == ARPHRD_LOOPBACK,
        "SIOCGIFHWADDR family %d", r.ifr_hwaddr.sa_family);
  CHECK(ioctl(s, SIOCGIFINDEX, &r) == 0 && r.ifr_ifindex == (int)if_nametoindex("lo"),
        "SIOCGIFINDEX %d", r.ifr_ifindex);
  int idx = r.ifr_ifindex;
  memset(&r, 0, sizeof r);
  r.ifr_ifindex = idx;
  CHECK(ioctl(us, SIOCGIFNAME, &r) == 0 && strcmp(r.ifr_name, "lo") == 0, "SIOCGIFNAME %s", r.ifr_name);

  memset(&r, 0, sizeof r);
  strcpy(r.ifr_name, "flatuxnope0");
  CHECK_ERR(ioctl(s, SIOCGIFFLAGS, &r), ENODEV);
  r.ifr_flags = IFF_UP;
  errno = 0;
  CHECK(ioctl(s, SIOCSIFFLAGS, &r) == -1 && (errno == EPERM || errno == ENODEV),
        "SIOCSIFFLAGS on no interface: %s", strerror(errno));
  CHECK_ERR(ioctl(s, SIOCGIFFLAGS, NULL), EFAULT);
  CHECK_ERR(ioctl(s, SIOCGIFFLAGS, (void*)0x7e0000001000), EFAULT);  // flatux's heap
  ic.ifc_len = sizeof reqs;
  ic.ifc_buf = (char*)0x7e0000001000;
  CHECK_ERR(ioctl(s, SIOCGIFCONF, &ic), EFAULT);
  char tio[64];
  CHECK_ERR(ioctl(s, 0x5401 /* TCGETS */, tio), ENOTTY);
  close(s);
  close(us);
}

static int nl_open(void) {
  int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  REQUIRE(s >= 0, "socket(AF_NETLINK): %s", strerror(errno));
  struct sockaddr_nl me = {.nl_family = AF_NETLINK};
  CHECK_OK(bind(s, (struct sockaddr*)&me, sizeof me));
  socklen_t len = sizeof me;
  CHECK(getsockname(s, (struct sockaddr*)&me, &len) == 0 && me.nl_family == AF_NETLINK && me.nl_pid != 0,
        "getsockname: autobound port %u", me.nl_pid);
  return s;
}

static int nl_request(int s, uint16_t type, uint16_t flags, uint32_t seq, const void* body, size_t blen) {
  char buf[256];
  struct nlmsghdr* h = (struct nlmsghdr*)buf;
  memset(buf, 0, sizeof buf);
  h->nlmsg_len = NLMSG_LENGTH(blen);
  h->nlmsg_type = type;
  h->nlmsg_flags = NLM_F_REQUEST | flags;
  h->nlmsg_seq = seq;
  memcpy(NLMSG_DATA(h), body, blen);
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  return (int)sendto(s, buf, h->nlmsg_len, 0, (struct sockaddr*)&kernel, sizeof kernel);
}

// The request an NLMSG_ERROR answer echoed last: its type and sequence.
static struct nlmsghdr last_echo;

// Reads one reply to `seq`: a dump until NLMSG_DONE (calling `each` per
// message) or an NLMSG_ERROR, whose error code it returns (0 for a dump).
static int nl_reply_flags(int s, uint32_t seq, void (*each)(struct nlmsghdr*, void*), void* arg, int flags) {
  static char buf[32768];
  for (;;) {
    ssize_t n = recv(s, buf, sizeof buf, flags);
    if (n <= 0) {
      guest_fail(__FILE__, __LINE__, NULL, "netlink recv: %zd %s", n, strerror(errno));
      return -1;
    }
    for (struct nlmsghdr* h = (struct nlmsghdr*)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != seq) continue;
      if (h->nlmsg_type == NLMSG_DONE) return 0;
      if (h->nlmsg_type == NLMSG_ERROR) {
        last_echo = ((struct nlmsgerr*)NLMSG_DATA(h))->msg;
        return ((struct nlmsgerr*)NLMSG_DATA(h))->error;
      }
      if (each) each(h, arg);
    }
  }
}

static int nl_reply(int s, uint32_t seq, void (*each)(struct nlmsghdr*, void*), void* arg) {
  return nl_reply_flags(s, seq, each, arg, 0);
}

static void find_lo_link(struct nlmsghdr* h, void* arg) {
  if (h->nlmsg_type != RTM_NEWLINK) return;
  struct ifinfomsg* ifi = NLMSG_DATA(h);
  int len = (int)IFLA_PAYLOAD(h);
  for (struct rtattr* a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len))
    if (a->rta_type == IFLA_IFNAME && strcmp(RTA_DATA(a), "lo") == 0) *(int*)arg = ifi->ifi_index;
}

static void find_lo_addr(struct nlmsghdr* h, void* arg) {
  if (h->nlmsg_type != RTM_NEWADDR) return;
  struct ifaddrmsg* ifa = NLMSG_DATA(h);
  int len = (int)IFA_PAYLOAD(h);
  for (struct rtattr* a = IFA_RTA(ifa); RTA_OK(a, len); a = RTA_NEXT(a, len))
    if (ifa->ifa_family == AF_INET && a->rta_type == IFA_LOCAL &&
        *(uint32_t*)RTA_DATA(a) == htonl(INADDR_LOOPBACK))
      *(int*)arg = (int)ifa->ifa_index;
}

// The socket as another holder gets it: through SCM_RIGHTS (the original
// is closed).
static int passed_on(int s) {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0, "socketpair");
  char ctl[CMSG_SPACE(sizeof(int))];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {"s", 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &s, sizeof s);
  REQUIRE(sendmsg(sv[0], &m, 0) == 1, "sendmsg SCM_RIGHTS: %s", strerror(errno));
  close(s);
  char ch;
  struct iovec riov = {&ch, 1};
  struct msghdr rm = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  REQUIRE(recvmsg(sv[1], &rm, 0) == 1 && CMSG_FIRSTHDR(&rm), "recvmsg SCM_RIGHTS: %s", strerror(errno));
  int got;
  memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&rm)), sizeof got);
  close(sv[0]);
  close(sv[1]);
  return got;
}

// RTM_SETLINK of lo that changes nothing (no flags, no attributes),
// acknowledged: the answer as one number, -errno of the send or of the
// acknowledgement (0: done). Sent with send(), spliced from a pipe, sent
// from a file with sendfile and sent on the socket passed through
// SCM_RIGHTS, it must be the same answer every way.
static int setlink_answer(int how, uint32_t seq) {
  int s = nl_open();
  char buf[NLMSG_SPACE(sizeof(struct ifinfomsg))];
  memset(buf, 0, sizeof buf);
  struct nlmsghdr* h = (struct nlmsghdr*)buf;
  h->nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
  h->nlmsg_type = RTM_SETLINK;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  h->nlmsg_seq = seq;
  struct ifinfomsg* ifi = NLMSG_DATA(h);
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = (int)if_nametoindex("lo");
  ssize_t sent = -1;
  if (how == 0) {
    sent = send(s, buf, h->nlmsg_len, 0);
  } else if (how == 1) {
    int p[2];
    REQUIRE(pipe(p) == 0, "pipe");
    REQUIRE(write(p[1], buf, h->nlmsg_len) == (ssize_t)h->nlmsg_len, "fill the pipe");
    sent = splice(p[0], NULL, s, NULL, h->nlmsg_len, 0);
    close(p[0]);
    close(p[1]);
  } else if (how == 3) {
    s = passed_on(s);
    sent = send(s, buf, h->nlmsg_len, 0);
  } else {
    char path[] = "/tmp/flatux-netif.XXXXXX";
    int f = mkstemp(path);
    REQUIRE(f >= 0, "mkstemp: %s", strerror(errno));
    unlink(path);
    REQUIRE(write(f, buf, h->nlmsg_len) == (ssize_t)h->nlmsg_len, "fill the file");
    off_t off = 0;
    sent = sendfile(s, f, &off, h->nlmsg_len);
    close(f);
  }
  CHECK(sent == (ssize_t)h->nlmsg_len, "way %d: the send itself succeeds (Linux refuses in its answer): %s", how,
        strerror(errno));
  int answer = sent < 0 ? -errno : nl_reply(s, seq, NULL, NULL);
  close(s);
  return answer;
}

static void same_answer_every_way(void) {
  printf("a change request sent, spliced, sendfile'd and sent by a receiver of the socket:\n");
  int by_send = setlink_answer(0, 10), by_splice = setlink_answer(1, 11), by_sendfile = setlink_answer(2, 12);
  int passed = setlink_answer(3, 13);
  printf("  answers: send %d, splice %d, sendfile %d, passed on %d\n", by_send, by_splice, by_sendfile, passed);
  CHECK(by_send == 0 || by_send == -EPERM, "send: %d", by_send);
  CHECK(by_splice == by_send && by_sendfile == by_send && passed == by_send, "the same answer every way");
}

static void rtnetlink(void) {
  printf("NETLINK_ROUTE:\n");
  int s = nl_open();
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  CHECK(nl_request(s, RTM_GETLINK, NLM_F_DUMP, 1, &ifi, sizeof ifi) > 0, "send GETLINK: %s", strerror(errno));
  int lo_index = 0;
  CHECK(nl_reply(s, 1, find_lo_link, &lo_index) == 0 && lo_index == (int)if_nametoindex("lo"),
        "RTM_GETLINK dump has lo (%d)", lo_index);
  struct ifaddrmsg ifa = {.ifa_family = AF_INET};
  CHECK(nl_request(s, RTM_GETADDR, NLM_F_DUMP, 2, &ifa, sizeof ifa) > 0, "send GETADDR: %s", strerror(errno));
  int addr_index = 0;
  CHECK(nl_reply(s, 2, find_lo_addr, &addr_index) == 0 && addr_index == lo_index,
        "RTM_GETADDR dump has 127.0.0.1 on lo (%d)", addr_index);

  // A query for an interface that does not exist: an error reply.
  struct ifinfomsg none = {.ifi_family = AF_UNSPEC, .ifi_index = kNoSuchIndex};
  CHECK(nl_request(s, RTM_GETLINK, 0, 3, &none, sizeof none) > 0, "send: %s", strerror(errno));
  int err = nl_reply(s, 3, NULL, NULL);
  CHECK(err == -ENODEV, "GETLINK of no interface: error %d", err);

  // Deleting that same non-interface: refused, or (as root natively) no
  // such device. Either way nothing changes.
  // Linux takes the request and refuses in its answer, which is there for
  // poll, may be peeked at, and echoes the request.
  errno = 0;
  int sent = nl_request(s, RTM_DELLINK, NLM_F_ACK, 4, &none, sizeof none);
  CHECK(sent > 0, "DELLINK sent: %s", strerror(errno));
  struct pollfd pfd = {.fd = s, .events = POLLIN};
  REQUIRE(poll(&pfd, 1, 5000) == 1 && (pfd.revents & POLLIN), "the answer is there for poll");
  int peeked = nl_reply_flags(s, 4, NULL, NULL, MSG_PEEK);
  err = nl_reply(s, 4, NULL, NULL);
  CHECK(err == -ENODEV || err == -EPERM, "DELLINK of no interface: error %d", err);
  CHECK(peeked == err, "peeked %d, then read %d", peeked, err);
  CHECK(last_echo.nlmsg_type == RTM_DELLINK && last_echo.nlmsg_seq == 4, "the answer echoes type %u seq %u",
        last_echo.nlmsg_type, last_echo.nlmsg_seq);
  // The same request hidden behind a well-formed query, in one send.
  char two[2 * NLMSG_SPACE(sizeof none)];
  memset(two, 0, sizeof two);
  struct nlmsghdr* h = (struct nlmsghdr*)two;
  h->nlmsg_len = NLMSG_LENGTH(sizeof none);
  h->nlmsg_type = RTM_GETLINK;
  h->nlmsg_flags = NLM_F_REQUEST;
  h->nlmsg_seq = 5;
  memcpy(NLMSG_DATA(h), &none, sizeof none);
  struct nlmsghdr* h2 = (struct nlmsghdr*)(two + NLMSG_SPACE(sizeof none));
  *h2 = *h;
  h2->nlmsg_type = RTM_DELLINK;
  h2->nlmsg_seq = 6;
  memcpy(NLMSG_DATA(h2), &none, sizeof none);
  errno = 0;
  CHECK(send(s, two, sizeof two, 0) == (ssize_t)sizeof two, "GETLINK+DELLINK sent: %s", strerror(errno));
  CHECK(nl_reply(s, 5, NULL, NULL) == -ENODEV, "GETLINK part");
  err = nl_reply(s, 6, NULL, NULL);
  CHECK(err == -ENODEV || err == -EPERM, "DELLINK part: error %d", err);
  // A request of a type no kernel knows (the one flatux uses to carry a
  // refusal to the host) is the guest's own: its answer stays the host's.
  errno = 0;
  CHECK(nl_request(s, 0xfff0, NLM_F_ACK, 7, &none, sizeof none) > 0, "send type 0xfff0: %s", strerror(errno));
  err = nl_reply(s, 7, NULL, NULL);
  CHECK(err == -EOPNOTSUPP && last_echo.nlmsg_type == 0xfff0, "type 0xfff0: error %d, echo type %u", err,
        last_echo.nlmsg_type);
  CHECK_ERR(syscall(SYS_sendto, s, (void*)0x7e0000001000, 32, 0, NULL, 0), EFAULT);
  close(s);
  same_answer_every_way();

  CHECK_ERR(socket(AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE), ESOCKTNOSUPPORT);
}

// A device monitor's socket, as libudev and systemd's sd-device open it:
// NETLINK_KOBJECT_UEVENT bound to the udev group, with a socket filter and
// SO_PASSCRED. It works as on Linux (nothing arrives on a quiet system).
static void uevent_monitor(void) {
  puts("uevent monitor socket");
  int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
  REQUIRE(s >= 0, "socket: %s", strerror(errno));
  int proto = 0;
  socklen_t len = sizeof proto;
  CHECK(getsockopt(s, SOL_SOCKET, SO_PROTOCOL, &proto, &len) == 0 && proto == NETLINK_KOBJECT_UEVENT,
        "SO_PROTOCOL %d", proto);
  struct sock_filter accept_all[] = {BPF_STMT(BPF_RET | BPF_K, 0xffffffff)};
  struct sock_fprog prog = {1, accept_all};
  CHECK_OK(setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog));
  struct sock_fprog empty = {0, accept_all};
  CHECK_ERR(setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &empty, sizeof empty), EINVAL);
  CHECK_ERR(setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, 4), EINVAL);
  struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = 2};
  CHECK_OK(bind(s, (struct sockaddr*)&a, sizeof a));
  struct sockaddr_nl got = {0};
  len = sizeof got;
  CHECK(getsockname(s, (struct sockaddr*)&got, &len) == 0 && got.nl_family == AF_NETLINK && got.nl_groups == 2 &&
            got.nl_pid != 0,
        "bound to the udev group: groups %#x pid %u", got.nl_groups, got.nl_pid);
  int group = 1;
  CHECK_OK(setsockopt(s, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group));
  len = sizeof got;
  CHECK(getsockname(s, (struct sockaddr*)&got, &len) == 0 && got.nl_groups == 3, "and the kernel's: %#x",
        got.nl_groups);
  group = 33;
  CHECK_ERR(setsockopt(s, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group), EINVAL);
  int on = 1;
  CHECK_OK(setsockopt(s, SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
  struct pollfd p = {s, POLLIN, 0};
  CHECK(poll(&p, 1, 0) >= 0, "pollable");
  close(s);
}

int main(void) {
  guest_name = "netif";
  getifaddrs_lists_lo();
  name_index();
  ifreq_queries();
  rtnetlink();
  uevent_monitor();
  return guest_finish();
}
