// AF_NETLINK, NETLINK_ROUTE only, over a host netlink socket: the guest
// sees the host's interfaces, addresses and routes (getifaddrs, `ip addr`)
// and may change nothing. Every request is copied into kernel memory and
// read as the host kernel will read it (netlink_rcv_skb's walk). A request
// that is not an rtnetlink query (RTM_GET*: kind 2, which Linux serves to
// unprivileged callers) is refused as Linux refuses a caller without
// CAP_NET_ADMIN: the send succeeds and the reply is an NLMSG_ERROR of
// -EPERM echoing the request. To keep that reply in order with the others
// and visible to poll and epoll on the host socket, the request goes to the
// host with a type no kernel knows (kRefusedType), which the host answers
// with -EOPNOTSUPP and acts on in no way; on receipt that error is turned
// back into Linux's (-EPERM, the request's own type). Only the host kernel
// may be addressed (port 0, no multicast groups), so a guest cannot reach
// another host process's netlink socket. Replies hold no pointers and go
// straight to guest buffers.
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
#include "kernel/lib/sync.h"

namespace flatux {
namespace {

// Requests are small; Linux bounds a send by the socket's send buffer.
constexpr size_t kMaxRequest = 64 * 1024;

// Above RTM_MAX of any kernel: rtnetlink_rcv_msg answers -EOPNOTSUPP first.
constexpr uint16_t kRefusedType = 0xfff0;

bool is_query(uint16_t type) { return type >= RTM_BASE && ((type - RTM_BASE) & 3) == 2; }

// Calls fn(offset, header) for each message the host kernel will read, as
// netlink_rcv_skb walks them: it stops at a length that is not plausible.
template <typename Fn>
void each_message(const unsigned char* buf, size_t len, Fn fn) {
  size_t off = 0;
  while (len - off >= NLMSG_HDRLEN) {
    nlmsghdr h;
    memcpy(&h, buf + off, sizeof h);
    if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len - off) return;
    fn(off, h);
    size_t step = NLMSG_ALIGN(h.nlmsg_len);
    off += step < len - off ? step : len - off;
  }
}

// Whether the host acts on the message: types below NLMSG_MIN_TYPE (noop,
// done...) and messages without NLM_F_REQUEST it skips.
bool host_acts_on(const nlmsghdr& h) {
  return h.nlmsg_type >= NLMSG_MIN_TYPE && (h.nlmsg_flags & NLM_F_REQUEST) && h.nlmsg_type != kRefusedType;
}

}  // namespace

// Requests refused and not yet answered: their sequence numbers and types.
struct NetlinkRefusals {
  static constexpr int kSlots = 32;
  KMutex lock;
  struct Slot {
    uint32_t seq;
    uint16_t type;
    bool used;
  } slots[kSlots] = {};
  int used = 0;

  bool add(uint32_t seq, uint16_t type) {
    for (Slot& s : slots) {
      if (s.used) continue;
      s = {seq, type, true};
      used++;
      return true;
    }
    return false;
  }
  // The refused request's type for an answer with `seq` (0: none), taken
  // out unless only peeked at.
  uint16_t answer(uint32_t seq, bool peek) {
    for (Slot& s : slots) {
      if (!s.used || s.seq != seq) continue;
      uint16_t type = s.type;
      if (!peek) {
        s.used = false;
        used--;
      }
      return type;
    }
    return 0;
  }
};

void netlink_release(Heap* heap, SockPriv& p) {
  heap->destroy_obj(p.refusals);
  p.refusals = nullptr;
}

namespace {

// Marks each non-query request in `buf` refused (kRefusedType), recording
// its type to restore in the answer. False when too many are outstanding.
bool refuse_changes(Heap* heap, SockPriv& p, unsigned char* buf, size_t len) {
  bool ok = true;
  each_message(buf, len, [&](size_t off, const nlmsghdr& h) {
    if (!ok || !host_acts_on(h) || is_query(h.nlmsg_type)) return;
    if (!p.refusals && !(p.refusals = heap->make<NetlinkRefusals>())) {
      ok = false;
      return;
    }
    Guard g(p.refusals->lock);
    if (!p.refusals->add(h.nlmsg_seq, h.nlmsg_type)) {
      ok = false;
      return;
    }
    uint16_t type = kRefusedType;
    memcpy(buf + off + offsetof(nlmsghdr, nlmsg_type), &type, sizeof type);
  });
  if (!ok) return false;
  // What the host reads now holds queries and refusals only.
  each_message(buf, len, [&](size_t, const nlmsghdr& h) {
    if (host_acts_on(h) && !is_query(h.nlmsg_type)) ok = false;
  });
  return ok;
}

// Copies between kernel memory and the guest's iovecs at byte `off`.
bool iov_copy(const iovec* iov, size_t n, size_t off, void* k, size_t len, bool to_guest) {
  for (size_t i = 0; i < n && len; i++) {
    if (off >= iov[i].iov_len) {
      off -= iov[i].iov_len;
      continue;
    }
    size_t take = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;
    char* g = static_cast<char*>(iov[i].iov_base) + off;
    long r = to_guest ? copy_to_user(g, k, take) : copy_from_user(k, g, take);
    if (r < 0) return false;
    k = static_cast<char*>(k) + take;
    len -= take;
    off = 0;
  }
  return len == 0;
}

}  // namespace

void netlink_received(SockPriv& p, const iovec* iov, size_t n, size_t bytes, bool peek) {
  if (!p.refusals) return;
  {
    Guard g(p.refusals->lock);
    if (!p.refusals->used) return;
  }
  size_t room = 0;  // MSG_TRUNC: the host reports more than it wrote
  for (size_t i = 0; i < n; i++) room += iov[i].iov_len;
  if (bytes > room) bytes = room;
  size_t off = 0;
  while (bytes - off >= NLMSG_HDRLEN + sizeof(nlmsgerr)) {
    nlmsghdr h;
    if (!iov_copy(iov, n, off, &h, sizeof h, false) || h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > bytes - off) return;
    nlmsgerr e;
    if (h.nlmsg_type == NLMSG_ERROR && h.nlmsg_len >= NLMSG_HDRLEN + sizeof e &&
        iov_copy(iov, n, off + NLMSG_HDRLEN, &e, sizeof e, false) && e.error == -EOPNOTSUPP &&
        e.msg.nlmsg_type == kRefusedType) {
      uint16_t type;
      {
        Guard g(p.refusals->lock);
        type = p.refusals->answer(e.msg.nlmsg_seq, peek);
      }
      if (type) {
        e.error = -EPERM;
        e.msg.nlmsg_type = type;
        iov_copy(iov, n, off + NLMSG_HDRLEN, &e, sizeof e, true);
      }
    }
    off += NLMSG_ALIGN(h.nlmsg_len) < bytes - off ? NLMSG_ALIGN(h.nlmsg_len) : bytes - off;
  }
}

long netlink_check_dest(const sockaddr_storage& sa, socklen_t len) {
  if (sa.ss_family != AF_NETLINK || len < sizeof(sockaddr_nl)) return 0;  // the host's EINVAL
  const auto& nl = reinterpret_cast<const sockaddr_nl&>(sa);
  return nl.nl_pid || nl.nl_groups ? -EPERM : 0;
}

long uevent_bind(SockPriv& p, int host_fd, sockaddr_storage& sa, socklen_t len) {
  if (sa.ss_family != AF_NETLINK || len < sizeof(sockaddr_nl)) return -EINVAL;
  auto& nl = reinterpret_cast<sockaddr_nl&>(sa);
  uint32_t groups = nl.nl_groups;
  nl.nl_groups = 0;  // the host's route groups are not the guest's uevent groups
  long r = host::sys(SYS_bind, host_fd, &sa, len);
  if (r == 0) p.uevent_groups = groups;
  return r;
}

long uevent_membership(SockPriv& p, int opt, uint32_t group) {
  if (group == 0 || group > 32) return -EINVAL;  // the uevent family has 32 groups
  uint32_t bit = 1u << (group - 1);
  if (opt == NETLINK_ADD_MEMBERSHIP) p.uevent_groups |= bit;
  else p.uevent_groups &= ~bit;
  return 0;
}

long netlink_sendmsg(Task& t, File& f, msghdr& km, int flags) {
  SockPriv& p = *static_cast<SockPriv*>(f.priv);
  // Broadcasting uevents (udevd's part) has no listener to reach here.
  if (p.uevent) return -EOPNOTSUPP;
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
  if (r == 0 && !refuse_changes(heap, p, buf, total)) r = -EPERM;
  if (r == 0) {
    iovec one = {buf, total};
    msghdr hm = km;
    hm.msg_iov = &one;
    hm.msg_iovlen = 1;
    r = restartable(isys(t, SYS_sendmsg, f.host_fd, &hm, flags | MSG_NOSIGNAL));
  }
  heap->free(buf);
  return r;
}

}  // namespace flatux
