// AF_NETLINK, NETLINK_ROUTE only, over a host netlink socket: the guest
// sees the host's interfaces, addresses and routes (getifaddrs, `ip addr`)
// and may change nothing. Every request is copied into kernel memory and
// read as the host kernel will read it (netlink_rcv_skb's walk); a message
// that is not an rtnetlink query (RTM_GET*: kind 2, which Linux serves to
// unprivileged callers) makes the whole send fail with EPERM. Only the host
// kernel may be addressed (port 0, no multicast groups), so a guest cannot
// reach another host process's netlink socket. Replies hold no pointers and
// go straight to guest buffers.
#include <cstring>
#include <linux/errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/net/sock.h"

namespace flatux {
namespace {

// Requests are small; Linux bounds a send by the socket's send buffer.
constexpr size_t kMaxRequest = 64 * 1024;

bool is_query(uint16_t type) { return type >= RTM_BASE && ((type - RTM_BASE) & 3) == 2; }

// True when every message the host will act on is a query. Types below
// NLMSG_MIN_TYPE (noop, done...) are ignored by the host; so is whatever
// follows a message whose length is not plausible.
bool only_queries(const unsigned char* buf, size_t len) {
  size_t off = 0;
  while (len - off >= NLMSG_HDRLEN) {
    nlmsghdr h;
    memcpy(&h, buf + off, sizeof h);
    if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len - off) return true;
    if (h.nlmsg_type >= NLMSG_MIN_TYPE && !is_query(h.nlmsg_type)) return false;
    size_t step = NLMSG_ALIGN(h.nlmsg_len);
    off += step < len - off ? step : len - off;
  }
  return true;
}

}  // namespace

long netlink_check_dest(const sockaddr_storage& sa, socklen_t len) {
  if (sa.ss_family != AF_NETLINK || len < sizeof(sockaddr_nl)) return 0;  // the host's EINVAL
  const auto& nl = reinterpret_cast<const sockaddr_nl&>(sa);
  return nl.nl_pid || nl.nl_groups ? -EPERM : 0;
}

long netlink_sendmsg(Task& t, int host_fd, msghdr& km, int flags) {
  if (km.msg_name) {
    long r = netlink_check_dest(*static_cast<sockaddr_storage*>(km.msg_name), km.msg_namelen);
    if (r < 0) return r;
  }
  size_t total = 0;
  for (size_t i = 0; i < km.msg_iovlen; i++) total += km.msg_iov[i].iov_len;
  if (total > kMaxRequest) return -EMSGSIZE;
  Heap* heap = t.kernel->heap;
  auto* buf = static_cast<unsigned char*>(heap->alloc(total ? total : 1));
  if (!buf) return -ENOMEM;
  size_t off = 0;
  long r = 0;
  for (size_t i = 0; i < km.msg_iovlen && r == 0; i++) {
    const iovec& v = km.msg_iov[i];
    if (v.iov_len && copy_from_user(buf + off, v.iov_base, v.iov_len) < 0) r = -EFAULT;
    off += v.iov_len;
  }
  if (r == 0 && !only_queries(buf, total)) r = -EPERM;
  if (r == 0) {
    iovec one = {buf, total};
    msghdr hm = km;
    hm.msg_iov = &one;
    hm.msg_iovlen = 1;
    r = restartable(isys(t, SYS_sendmsg, host_fd, &hm, flags | MSG_NOSIGNAL));
  }
  heap->free(buf);
  return r;
}

}  // namespace flatux
