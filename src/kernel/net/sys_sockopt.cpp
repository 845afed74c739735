// setsockopt/getsockopt: a whitelist of options passed to the host socket,
// values bounced through kernel memory. Anything else is ENOPROTOOPT, so no
// option can hand the host a guest pointer or change more than the socket.
// A classic BPF socket filter (SO_ATTACH_FILTER) is copied in whole and
// handed over from kernel memory; the host checks the program.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <linux/in6.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/net/sock.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

enum : uint8_t { kGet = 1, kSet = 2, kBoth = 3 };

// Values are plain data of at most `max` bytes (no pointers inside): the
// guest's length, bounded by it, is what the host is given, so the host
// judges short values as Linux does (IP_TOS takes a byte, most an int).
struct OptSpec {
  int level, name;
  uint16_t max;
  uint8_t dirs;
};

constexpr uint16_t kInt = 4;
constexpr size_t kMaxOptValue = 256;

constexpr OptSpec kOpts[] = {
    // SOL_SOCKET
    {SOL_SOCKET, SO_DEBUG, kInt, kBoth},          {SOL_SOCKET, SO_REUSEADDR, kInt, kBoth},
    {SOL_SOCKET, SO_REUSEPORT, kInt, kBoth},      {SOL_SOCKET, SO_KEEPALIVE, kInt, kBoth},
    {SOL_SOCKET, SO_RCVBUF, kInt, kBoth},         {SOL_SOCKET, SO_SNDBUF, kInt, kBoth},
    {SOL_SOCKET, SO_ERROR, kInt, kGet},           {SOL_SOCKET, SO_TYPE, kInt, kGet},
    {SOL_SOCKET, SO_DOMAIN, kInt, kGet},          {SOL_SOCKET, SO_PROTOCOL, kInt, kGet},
    {SOL_SOCKET, SO_ACCEPTCONN, kInt, kGet},      {SOL_SOCKET, SO_LINGER, 8, kBoth},
    {SOL_SOCKET, SO_RCVTIMEO, 16, kBoth},         {SOL_SOCKET, SO_SNDTIMEO, 16, kBoth},
    {SOL_SOCKET, SO_PASSCRED, kInt, kBoth},       {SOL_SOCKET, SO_PEERCRED, 12, kGet},
    {SOL_SOCKET, SO_BROADCAST, kInt, kBoth},      {SOL_SOCKET, SO_OOBINLINE, kInt, kBoth},
    {SOL_SOCKET, SO_RCVLOWAT, kInt, kBoth},       {SOL_SOCKET, SO_SNDLOWAT, kInt, kBoth},
    {SOL_SOCKET, SO_DONTROUTE, kInt, kBoth},      {SOL_SOCKET, SO_PRIORITY, kInt, kBoth},
    {SOL_SOCKET, SO_TIMESTAMP, kInt, kBoth},      {SOL_SOCKET, SO_TIMESTAMPNS, kInt, kBoth},
    {SOL_SOCKET, SO_TIMESTAMPING, 8, kBoth},      {SOL_SOCKET, SO_PASSSEC, kInt, kBoth},
    {SOL_SOCKET, SO_PEEK_OFF, kInt, kBoth},       {SOL_SOCKET, SO_RXQ_OVFL, kInt, kBoth},
    {SOL_SOCKET, SO_BUSY_POLL, kInt, kBoth},      {SOL_SOCKET, SO_INCOMING_CPU, kInt, kBoth},
    {SOL_SOCKET, SO_COOKIE, 8, kGet},             {SOL_SOCKET, SO_ZEROCOPY, kInt, kBoth},
    {SOL_SOCKET, SO_SELECT_ERR_QUEUE, kInt, kBoth}, {SOL_SOCKET, SO_MAX_PACING_RATE, 8, kBoth},
    {SOL_SOCKET, SO_TXTIME, 8, kBoth},            {SOL_SOCKET, SO_DETACH_FILTER, kInt, kSet},
    {SOL_SOCKET, SO_LOCK_FILTER, kInt, kBoth},
    // IPPROTO_IP
    {IPPROTO_IP, IP_TOS, kInt, kBoth},            {IPPROTO_IP, IP_TTL, kInt, kBoth},
    {IPPROTO_IP, IP_OPTIONS, 40, kBoth},          {IPPROTO_IP, IP_PKTINFO, kInt, kBoth},
    {IPPROTO_IP, IP_RECVTTL, kInt, kBoth},        {IPPROTO_IP, IP_RECVTOS, kInt, kBoth},
    {IPPROTO_IP, IP_RECVOPTS, kInt, kBoth},       {IPPROTO_IP, IP_RETOPTS, kInt, kBoth},
    {IPPROTO_IP, IP_RECVERR, kInt, kBoth},        {IPPROTO_IP, IP_MTU_DISCOVER, kInt, kBoth},
    {IPPROTO_IP, IP_MTU, kInt, kGet},             {IPPROTO_IP, IP_FREEBIND, kInt, kBoth},
    {IPPROTO_IP, IP_MULTICAST_TTL, kInt, kBoth},  {IPPROTO_IP, IP_MULTICAST_LOOP, kInt, kBoth},
    {IPPROTO_IP, IP_MULTICAST_IF, 12, kBoth},     {IPPROTO_IP, IP_MULTICAST_ALL, kInt, kBoth},
    {IPPROTO_IP, IP_ADD_MEMBERSHIP, 12, kSet},    {IPPROTO_IP, IP_DROP_MEMBERSHIP, 12, kSet},
    {IPPROTO_IP, IP_RECVORIGDSTADDR, kInt, kBoth}, {IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, kInt, kBoth},
    {IPPROTO_IP, IP_RECVFRAGSIZE, kInt, kBoth},   {IPPROTO_IP, IP_PASSSEC, kInt, kBoth},
    // Multicast membership: struct group_req / ip_mreq hold no pointers.
    {IPPROTO_IP, MCAST_JOIN_GROUP, sizeof(group_req), kSet},
    {IPPROTO_IP, MCAST_LEAVE_GROUP, sizeof(group_req), kSet},
    {IPPROTO_IPV6, MCAST_JOIN_GROUP, sizeof(group_req), kSet},
    {IPPROTO_IPV6, MCAST_LEAVE_GROUP, sizeof(group_req), kSet},
    // IPPROTO_IPV6 (the ancillary-data options included: RFC 3542)
    {IPPROTO_IPV6, IPV6_V6ONLY, kInt, kBoth},          {IPPROTO_IPV6, IPV6_UNICAST_HOPS, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_MULTICAST_IF, kInt, kBoth},    {IPPROTO_IPV6, IPV6_MULTICAST_HOPS, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_MULTICAST_LOOP, kInt, kBoth},  {IPPROTO_IPV6, IPV6_MULTICAST_ALL, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, 20, kSet},     {IPPROTO_IPV6, IPV6_DROP_MEMBERSHIP, 20, kSet},
    {IPPROTO_IPV6, IPV6_RECVPKTINFO, kInt, kBoth},     {IPPROTO_IPV6, IPV6_PKTINFO, 20, kBoth},
    {IPPROTO_IPV6, IPV6_RECVHOPLIMIT, kInt, kBoth},    {IPPROTO_IPV6, IPV6_HOPLIMIT, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_RECVTCLASS, kInt, kBoth},      {IPPROTO_IPV6, IPV6_TCLASS, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_RECVRTHDR, kInt, kBoth},       {IPPROTO_IPV6, IPV6_RECVHOPOPTS, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_RECVDSTOPTS, kInt, kBoth},     {IPPROTO_IPV6, IPV6_RECVPATHMTU, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_RTHDR, kMaxOptValue, kBoth},   {IPPROTO_IPV6, IPV6_HOPOPTS, kMaxOptValue, kBoth},
    {IPPROTO_IPV6, IPV6_DSTOPTS, kMaxOptValue, kBoth}, {IPPROTO_IPV6, IPV6_RTHDRDSTOPTS, kMaxOptValue, kBoth},
    {IPPROTO_IPV6, IPV6_PATHMTU, 32, kGet},            {IPPROTO_IPV6, IPV6_DONTFRAG, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_MTU_DISCOVER, kInt, kBoth},    {IPPROTO_IPV6, IPV6_MTU, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_RECVERR, kInt, kBoth},         {IPPROTO_IPV6, IPV6_ADDR_PREFERENCES, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_MINHOPCOUNT, kInt, kBoth},     {IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_RECVORIGDSTADDR, kInt, kBoth}, {IPPROTO_IPV6, IPV6_FLOWINFO, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_FLOWINFO_SEND, kInt, kBoth},   {IPPROTO_IPV6, IPV6_CHECKSUM, kInt, kBoth},
    {IPPROTO_IPV6, IPV6_RECVFRAGSIZE, kInt, kBoth},
    // IPPROTO_TCP
    {IPPROTO_TCP, TCP_NODELAY, kInt, kBoth},      {IPPROTO_TCP, TCP_MAXSEG, kInt, kBoth},
    {IPPROTO_TCP, TCP_CORK, kInt, kBoth},         {IPPROTO_TCP, TCP_KEEPIDLE, kInt, kBoth},
    {IPPROTO_TCP, TCP_KEEPINTVL, kInt, kBoth},    {IPPROTO_TCP, TCP_KEEPCNT, kInt, kBoth},
    {IPPROTO_TCP, TCP_SYNCNT, kInt, kBoth},       {IPPROTO_TCP, TCP_LINGER2, kInt, kBoth},
    {IPPROTO_TCP, TCP_DEFER_ACCEPT, kInt, kBoth}, {IPPROTO_TCP, TCP_WINDOW_CLAMP, kInt, kBoth},
    {IPPROTO_TCP, TCP_INFO, kMaxOptValue, kGet},  {IPPROTO_TCP, TCP_QUICKACK, kInt, kBoth},
    {IPPROTO_TCP, TCP_CONGESTION, 16, kBoth},     {IPPROTO_TCP, TCP_USER_TIMEOUT, kInt, kBoth},
    {IPPROTO_TCP, TCP_FASTOPEN, kInt, kBoth},     {IPPROTO_TCP, TCP_FASTOPEN_CONNECT, kInt, kBoth},
    {IPPROTO_TCP, TCP_NOTSENT_LOWAT, kInt, kBoth}, {IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS, kInt, kBoth},
    // IPPROTO_UDP
    {IPPROTO_UDP, UDP_CORK, kInt, kBoth},         {IPPROTO_UDP, UDP_SEGMENT, kInt, kBoth},
    {IPPROTO_UDP, UDP_GRO, kInt, kBoth},
    // Netlink: group membership (notifications are read-only) and the
    // reply formats iproute2 asks for.
    {SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, kInt, kSet}, {SOL_NETLINK, NETLINK_DROP_MEMBERSHIP, kInt, kSet},
    {SOL_NETLINK, NETLINK_PKTINFO, kInt, kBoth},       {SOL_NETLINK, NETLINK_BROADCAST_ERROR, kInt, kBoth},
    {SOL_NETLINK, NETLINK_NO_ENOBUFS, kInt, kBoth},    {SOL_NETLINK, NETLINK_CAP_ACK, kInt, kBoth},
    {SOL_NETLINK, NETLINK_EXT_ACK, kInt, kBoth},       {SOL_NETLINK, NETLINK_GET_STRICT_CHK, kInt, kBoth},
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

// SO_ATTACH_FILTER: Linux's checks (the exact size of a sock_fprog, 1 to
// BPF_MAXINSNS instructions), the program copied to kernel memory.
long attach_filter(Task& t, long hfd, uint64_t guest, uint64_t len) {
  if (len != sizeof(sock_fprog)) return -EINVAL;
  sock_fprog prog;
  if (copy_from_user(&prog, (const void*)guest, sizeof prog) < 0) return -EFAULT;
  if (prog.len == 0 || prog.len > BPF_MAXINSNS) return -EINVAL;
  size_t bytes = sizeof(sock_filter) * prog.len;
  auto* code = static_cast<sock_filter*>(t.kernel->heap->alloc(bytes));
  if (!code) return -ENOMEM;
  long r = copy_from_user(code, prog.filter, bytes) < 0 ? -EFAULT : 0;
  if (r == 0) {
    sock_fprog kprog{prog.len, code};
    r = host::sys(SYS_setsockopt, hfd, SOL_SOCKET, SO_ATTACH_FILTER, &kprog, sizeof kprog);
  }
  t.kernel->heap->free(code);
  return r;
}

}  // namespace

long sys_setsockopt(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  long hfd = sock_host(t, f);
  if (hfd < 0) return hfd;
  if ((int)a[1] == SOL_SOCKET && (int)a[2] == SO_ATTACH_FILTER) return attach_filter(t, hfd, a[3], (uint64_t)(int)a[4]);
  const OptSpec* o = find_opt((int)a[1], (int)a[2]);
  if (!o || !(o->dirs & kSet)) return -ENOPROTOOPT;
  if ((int)a[4] < 0) return -EINVAL;
  size_t len = (size_t)(int)a[4] < o->max ? (size_t)(int)a[4] : o->max;
  unsigned char buf[kMaxOptValue] = {};
  if (len && copy_from_user(buf, (const void*)a[3], len) < 0) return -EFAULT;
  SockPriv* p = sock_priv(*f);
  if (p && p->uevent && o->level == SOL_NETLINK &&
      (o->name == NETLINK_ADD_MEMBERSHIP || o->name == NETLINK_DROP_MEMBERSHIP)) {
    if (len < sizeof(uint32_t)) return -EINVAL;
    uint32_t group;
    memcpy(&group, buf, sizeof group);
    return uevent_membership(*p, o->name, group);
  }
  return host::sys(SYS_setsockopt, hfd, o->level, o->name, len ? buf : nullptr, len);
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
  unsigned char buf[kMaxOptValue] = {};
  socklen_t len = (size_t)glen < o->max ? (socklen_t)glen : o->max;
  long r = host::sys(SYS_getsockopt, hfd, o->level, o->name, buf, &len);
  if (r < 0) return r;
  if (len > o->max) len = o->max;
  if (o->level == SOL_SOCKET && o->name == SO_PROTOCOL && len >= sizeof(int)) {
    SockPriv* p = sock_priv(*f);
    int proto = NETLINK_KOBJECT_UEVENT;
    if (p && p->uevent) memcpy(buf, &proto, sizeof proto);
  }
  if (o->level == SOL_SOCKET && o->name == SO_PEERCRED && len >= sizeof(ucred)) {
    ucred c;
    memcpy(&c, buf, sizeof c);
    peer_cred_to_guest(t, &*f, c);
    memcpy(buf, &c, sizeof c);
  }
  if (len && copy_to_user((void*)a[3], buf, len) < 0) return -EFAULT;
  if (put_user((void*)a[4], (int)len) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
