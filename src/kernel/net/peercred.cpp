// Peer credentials of AF_UNIX sockets in guest terms. Every guest is one
// host process, so the host's SO_PEERCRED can only say "a guest of this
// kernel"; the guest's view is recorded when the connection is made, as
// Linux records it:
//
// - socketpair: both ends are the creator's;
// - a client reaching a guest listener sees whoever bound or last listened
//   on the name (UnixName::owner);
// - an accepted socket sees the process that called connect(). The client
//   records its host socket's inode with its credentials; accept asks the
//   host (NETLINK_SOCK_DIAG, UDIAG_SHOW_PEER) for the inode of the accepted
//   socket's peer and takes the matching record. A client that closed
//   before the accept has no inode any more: its record is kept (a few,
//   the oldest dropped first) and found by the host process that
//   connected, which the host's own SO_PEERCRED names.
#include <cstring>
#include <linux/errno.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/hostproc.h"
#include "host/raw_syscall.h"
#include "kernel/net/sock.h"

namespace flatux {

struct ConnectRecord {
  ConnectRecord* next;
  SockPriv* client;  // null once the client closed
  uint64_t ino;      // the client's host socket inode
  int host_pid;      // the host process that connected
  PeerCred cred;
};

namespace {

uint64_t host_ino(int host_fd) {
  struct stat st;
  return host::sys(SYS_fstat, host_fd, &st) == 0 ? st.st_ino : 0;
}

// The inode of the AF_UNIX socket connected to the host socket with inode
// `ino`, or 0 when the host cannot tell (peer closed, no sock_diag).
uint64_t host_peer_ino(uint64_t ino) {
  struct {
    nlmsghdr h;
    unix_diag_req r;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.h.nlmsg_flags = NLM_F_REQUEST;
  req.r.sdiag_family = AF_UNIX;
  req.r.udiag_states = ~0u;
  req.r.udiag_ino = (uint32_t)ino;
  req.r.udiag_show = UDIAG_SHOW_PEER;
  req.r.udiag_cookie[0] = req.r.udiag_cookie[1] = ~0u;  // INET_DIAG_NOCOOKIE
  long fd = host::sys(SYS_socket, AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return 0;
  sockaddr_nl kernel_addr{};
  kernel_addr.nl_family = AF_NETLINK;
  alignas(nlmsghdr) unsigned char buf[512];
  long n = -1;
  // The host answers within the send; MSG_DONTWAIT only guards a host
  // that does not.
  if (host::sys(SYS_sendto, fd, &req, sizeof req, 0, &kernel_addr, sizeof kernel_addr) == (long)sizeof req)
    n = host::sys(SYS_recvfrom, fd, buf, sizeof buf, MSG_DONTWAIT, 0, 0);
  host::sys(SYS_close, fd);
  if (n < (long)NLMSG_LENGTH(sizeof(unix_diag_msg))) return 0;
  auto* h = reinterpret_cast<nlmsghdr*>(buf);
  if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len > (size_t)n) return 0;
  size_t off = NLMSG_LENGTH(sizeof(unix_diag_msg));
  while (off + sizeof(nlattr) <= h->nlmsg_len) {
    nlattr a;
    memcpy(&a, buf + off, sizeof a);
    if (a.nla_len < sizeof a || a.nla_len > h->nlmsg_len - off) break;
    if (a.nla_type == UNIX_DIAG_PEER && a.nla_len >= sizeof a + 4) {
      uint32_t peer;
      memcpy(&peer, buf + off + sizeof a, 4);
      return peer;
    }
    off += NLA_ALIGN(a.nla_len);
  }
  return 0;
}

}  // namespace

PeerCred peer_cred_of(Task& t) {
  PeerCred c;
  c.pid = t.proc->pid;
  c.uid = t.proc->creds.euid;
  c.gid = t.proc->creds.egid;
  return c;
}

void connect_record(Task& t, File& client) {
  SockPriv* p = sock_priv(client);
  if (!p) return;
  int type = 0;
  socklen_t len = sizeof type;
  if (host::sys(SYS_getsockopt, client.host_fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
      (type != SOCK_STREAM && type != SOCK_SEQPACKET))
    return;  // datagram sockets keep no peer credentials
  uint64_t ino = host_ino(client.host_fd);
  NetState& ns = *t.kernel->net;
  auto* rec = static_cast<ConnectRecord*>(ns.heap->alloc(sizeof(ConnectRecord)));
  if (!ino || !rec) {
    ns.heap->free(rec);
    return;
  }
  *rec = {nullptr, p, ino, task_host_pid(t), peer_cred_of(t)};
  Guard g(ns.lock);
  rec->next = ns.connects;
  ns.connects = rec;
  p->connect_registry = &ns;
}

namespace {

// Closed clients' records kept for a late accept.
constexpr int kClosedKept = 64;

}  // namespace

void connect_forget(SockPriv* client) {
  NetState& ns = *client->connect_registry;
  ConnectRecord* gone = nullptr;
  {
    Guard g(ns.lock);
    // The record stays, without its client; past kClosedKept closed
    // records the oldest goes (the list runs newest first).
    int closed = 0;
    for (ConnectRecord** link = &ns.connects; *link;) {
      ConnectRecord* r = *link;
      if (r->client == client) r->client = nullptr;
      if (!r->client && ++closed > kClosedKept && !gone) {
        gone = r;
        *link = r->next;
        continue;
      }
      link = &r->next;
    }
  }
  ns.heap->free(gone);
}

void accept_find_peer(Task& t, File& accepted) {
  NetState& ns = *t.kernel->net;
  SockPriv* p = sock_priv(accepted);
  {
    Guard g(ns.lock);
    if (!ns.connects || !p) return;  // no guest is waiting to be accepted
  }
  uint64_t peer = host_peer_ino(host_ino(accepted.host_fd));
  ucred host{};
  socklen_t len = sizeof host;
  if (!peer && host::sys(SYS_getsockopt, accepted.host_fd, SOL_SOCKET, SO_PEERCRED, &host, &len) < 0) return;
  ConnectRecord* found = nullptr;
  {
    Guard g(ns.lock);
    ConnectRecord** match = nullptr;
    for (ConnectRecord** link = &ns.connects; *link; link = &(*link)->next) {
      ConnectRecord* r = *link;
      if (peer ? r->ino == peer : (!r->client && r->host_pid == host.pid)) {
        match = link;  // by inode: the one; by host process: the oldest
        if (peer) break;
      }
    }
    if (match) {
      found = *match;
      *match = found->next;
      p->peer_cred = found->cred;
    }
  }
  ns.heap->free(found);
}

// The peer's credentials in guest terms: a guest peer as recorded (the
// reader's own ids when nothing was), a peer outside flatux as pid 0 and
// the overflow uid/gid: its host identity is not the guest's business.
namespace {

// The guest process a host pid names in received credentials (a datagram's,
// which no connection recorded): the one guest process whose threads run
// in that host process. The host names a process, not a guest, so where
// several guests share one host process (vfork children beside their
// parent) it cannot tell: false.
bool sole_guest_of(Kernel& k, int host_pid, PeerCred* out) {
  Guard g(k.tasks_lock);
  Process* found = nullptr;
  for (Task* x : k.live_tasks()) {
    if (!x || x->proc->state != ProcState::kRunning || task_host_pid(*x) != host_pid) continue;
    if (found && found != x->proc) return false;
    found = x->proc;
  }
  if (!found) return false;
  *out = {found->pid, found->creds.uid, found->creds.gid};
  return true;
}

}  // namespace

void peer_cred_to_guest(Task& t, File* sock, ucred& c) {
  if (c.pid == 0) return;  // no peer
  // What the connection recorded comes first: the host process that
  // connected may be gone by now.
  SockPriv* p = sock ? sock_priv(*sock) : nullptr;
  PeerCred pc;
  if (p) {
    Guard g(t.kernel->net->lock);
    pc = p->peer_cred;
  }
  if (!pc.pid && !is_kernel_host_pid(*t.kernel, c.pid)) {
    c = {0, 65534, 65534};
    return;
  }
  if (!pc.pid && !sole_guest_of(*t.kernel, c.pid, &pc)) pc = {0, t.proc->creds.euid, t.proc->creds.egid};
  c = {pc.pid, pc.uid, pc.gid};
}

}  // namespace flatux
