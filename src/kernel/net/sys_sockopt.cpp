// setsockopt/getsockopt: a whitelist of options passed to the host socket,
// values bounced through kernel memory. Anything else is ENOPROTOOPT, so no
// option can hand the host a guest pointer or change more than the socket.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/netlink.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/net/sock.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

enum : uint8_t { kGet = 1, kSet = 2, kBoth = 3 };

struct OptSpec {
  int level, name;
  uint8_t size;  // the value's size; shorter values are EINVAL on set
  uint8_t dirs;
};

constexpr OptSpec kOpts[] = {
    {SOL_SOCKET, SO_REUSEADDR, 4, kBoth},   {SOL_SOCKET, SO_REUSEPORT, 4, kBoth},
    {SOL_SOCKET, SO_KEEPALIVE, 4, kBoth},   {SOL_SOCKET, SO_RCVBUF, 4, kBoth},
    {SOL_SOCKET, SO_SNDBUF, 4, kBoth},      {SOL_SOCKET, SO_ERROR, 4, kGet},
    {SOL_SOCKET, SO_TYPE, 4, kGet},         {SOL_SOCKET, SO_DOMAIN, 4, kGet},
    {SOL_SOCKET, SO_PROTOCOL, 4, kGet},     {SOL_SOCKET, SO_ACCEPTCONN, 4, kGet},
    {SOL_SOCKET, SO_LINGER, 8, kBoth},      {SOL_SOCKET, SO_RCVTIMEO, 16, kBoth},
    {SOL_SOCKET, SO_SNDTIMEO, 16, kBoth},   {SOL_SOCKET, SO_PASSCRED, 4, kBoth},
    {SOL_SOCKET, SO_PEERCRED, 12, kGet},    {SOL_SOCKET, SO_BROADCAST, 4, kBoth},
    {SOL_SOCKET, SO_OOBINLINE, 4, kBoth},   {SOL_SOCKET, SO_RCVLOWAT, 4, kBoth},
    {SOL_SOCKET, SO_DONTROUTE, 4, kBoth},
    {IPPROTO_TCP, TCP_NODELAY, 4, kBoth},   {IPPROTO_TCP, TCP_KEEPIDLE, 4, kBoth},
    {IPPROTO_TCP, TCP_KEEPINTVL, 4, kBoth}, {IPPROTO_TCP, TCP_KEEPCNT, 4, kBoth},
    {IPPROTO_TCP, TCP_CORK, 4, kBoth},      {IPPROTO_TCP, TCP_QUICKACK, 4, kBoth},
    {IPPROTO_IPV6, IPV6_V6ONLY, 4, kBoth},
    {IPPROTO_IP, IP_TOS, 4, kBoth},         {IPPROTO_IP, IP_TTL, 4, kBoth},
    // Multicast membership: struct group_req / ip_mreq hold no pointers.
    {IPPROTO_IP, MCAST_JOIN_GROUP, sizeof(group_req), kSet},
    {IPPROTO_IP, MCAST_LEAVE_GROUP, sizeof(group_req), kSet},
    {IPPROTO_IPV6, MCAST_JOIN_GROUP, sizeof(group_req), kSet},
    {IPPROTO_IPV6, MCAST_LEAVE_GROUP, sizeof(group_req), kSet},
    {IPPROTO_IP, IP_ADD_MEMBERSHIP, sizeof(ip_mreq), kSet},
    {IPPROTO_IP, IP_DROP_MEMBERSHIP, sizeof(ip_mreq), kSet},
    {IPPROTO_IP, IP_MULTICAST_TTL, 4, kBoth},
    {IPPROTO_IP, IP_MULTICAST_LOOP, 4, kBoth},
    // Netlink: group membership (notifications are read-only) and the
    // reply formats iproute2 asks for.
    {SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, 4, kSet}, {SOL_NETLINK, NETLINK_DROP_MEMBERSHIP, 4, kSet},
    {SOL_NETLINK, NETLINK_PKTINFO, 4, kBoth},       {SOL_NETLINK, NETLINK_BROADCAST_ERROR, 4, kBoth},
    {SOL_NETLINK, NETLINK_NO_ENOBUFS, 4, kBoth},    {SOL_NETLINK, NETLINK_CAP_ACK, 4, kBoth},
    {SOL_NETLINK, NETLINK_EXT_ACK, 4, kBoth},       {SOL_NETLINK, NETLINK_GET_STRICT_CHK, 4, kBoth},
};

const OptSpec* find_opt(int level, int name) {
  for (const OptSpec& o : kOpts)
    if (o.level == level && o.name == name) return &o;
  return nullptr;
}

long sock_host(Task& t, FdRef& f) {
  if (!f || (f->flags & O_PATH)) return -EBADF;
  if (f->host_fd < 0) return -ENOTSOCK;
  return f->host_fd;
}

}  // namespace

long sys_setsockopt(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  long hfd = sock_host(t, f);
  if (hfd < 0) return hfd;
  const OptSpec* o = find_opt((int)a[1], (int)a[2]);
  if (!o || !(o->dirs & kSet)) return -ENOPROTOOPT;
  if ((int)a[4] < o->size) return -EINVAL;
  unsigned char buf[sizeof(group_req)] = {};
  if (copy_from_user(buf, (const void*)a[3], o->size) < 0) return -EFAULT;
  return host::sys(SYS_setsockopt, hfd, o->level, o->name, buf, o->size);
}

long sys_getsockopt(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  long hfd = sock_host(t, f);
  if (hfd < 0) return hfd;
  int glen;
  if (get_user(glen, (const void*)a[4]) < 0) return -EFAULT;
  if (glen < 0) return -EINVAL;
  const OptSpec* o = find_opt((int)a[1], (int)a[2]);
  if (!o || !(o->dirs & kGet)) return -ENOPROTOOPT;
  unsigned char buf[32] = {};
  socklen_t len = o->size;
  long r = host::sys(SYS_getsockopt, hfd, o->level, o->name, buf, &len);
  if (r < 0) return r;
  if (o->level == SOL_SOCKET && o->name == SO_PEERCRED) {
    ucred c;
    memcpy(&c, buf, sizeof c);
    peer_cred_to_guest(t, &*f, c);
    memcpy(buf, &c, sizeof c);
  }
  size_t n = (size_t)glen < len ? (size_t)glen : len;
  if (n && copy_to_user((void*)a[3], buf, n) < 0) return -EFAULT;
  if (put_user((void*)a[4], (int)n) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
