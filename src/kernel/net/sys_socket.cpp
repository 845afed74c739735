// socket, socketpair, bind, listen, accept/accept4, connect, getsockname,
// getpeername, shutdown: each a call on the host socket behind the guest
// descriptor, with addresses translated both ways (sockaddr.cpp).
#include <cstring>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/errno.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/net/net.h"
#include "kernel/net/sock.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

constexpr int kTypeFlags = SOCK_NONBLOCK | SOCK_CLOEXEC;

bool family_ok(int domain) {
  return domain == AF_UNIX || domain == AF_INET || domain == AF_INET6 || domain == AF_NETLINK;
}

// --net=none: the host's network is out of reach. socket() is refused as a
// security policy refuses it (EACCES), so programs fail at once instead of
// timing out.
bool net_denied(Task& t, int domain) {
  return t.kernel->cfg.net_none && (domain == AF_INET || domain == AF_INET6);
}

// Raw IP sockets need CAP_NET_RAW (a raw netlink socket does not); the
// host (which may grant them to the whole flatux process) is asked first,
// so a bad type or protocol gets Linux's own errno.
bool needs_net_raw(int domain, int type) {
  return (type == SOCK_RAW || type == SOCK_PACKET) && (domain == AF_INET || domain == AF_INET6);
}

// A port below 1024 (Linux's ip_unprivileged_port_start): binding it
// takes CAP_NET_BIND_SERVICE, the guest's own, checked here. The host may
// allow the kernel's process more (a container's network namespace lets
// every port be bound) or less (then it refuses on its own).
bool privileged_port(HostAddr& ha) {
  uint16_t* field = inet_port_of(ha.sa, ha.len);
  uint16_t port = field ? (uint16_t)((*field >> 8) | (*field << 8)) : 0;  // network order
  return port != 0 && port < 1024;
}

// Netlink: NETLINK_ROUTE, and NETLINK_KOBJECT_UEVENT that nothing is sent
// to (netlink.cpp), as datagrams (SOCK_RAW and SOCK_DGRAM are the same
// there).
long netlink_type_check(int type, uint64_t protocol) {
  if (type != SOCK_RAW && type != SOCK_DGRAM) return -ESOCKTNOSUPPORT;
  return protocol == NETLINK_ROUTE || protocol == NETLINK_KOBJECT_UEVENT ? 0 : -EPROTONOSUPPORT;
}

// The host socket behind a guest descriptor: EBADF for no descriptor,
// ENOTSOCK for anything the host would not take as a socket.
struct SockRef {
  FdRef f;
  long err = 0;
  SockRef(Task& t, uint64_t fd) : f(t, fd) {
    // An O_PATH descriptor is no descriptor to socket calls (EBADF), as
    // Linux's fdget leaves such files out.
    if (!f || (f->flags & O_PATH)) err = -EBADF;
    else if (f->host_fd < 0) err = -ENOTSOCK;
  }
  int host() const { return f->host_fd; }
};

uint32_t file_flags(int type) { return O_RDWR | ((type & SOCK_NONBLOCK) ? O_NONBLOCK : 0); }

// Reads *guest_lenp before the call, as Linux does (EINVAL when negative).
long check_addr_len(uint64_t guest_addr, uint64_t guest_lenp) {
  if (!guest_addr) return 0;
  int glen;
  if (get_user(glen, (const void*)guest_lenp) < 0) return -EFAULT;
  return glen < 0 ? -EINVAL : 0;
}

long do_accept(Task& t, uint64_t fd, uint64_t guest_addr, uint64_t guest_lenp, uint64_t flags) {
  if (flags & ~(uint64_t)kTypeFlags) return -EINVAL;
  SockRef s(t, fd);
  if (s.err) return s.err;
  long r = check_addr_len(guest_addr, guest_lenp);
  if (r < 0) return r;
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  long hfd = restartable(isys(t, SYS_accept4, s.host(), &sa, &len,
                              SOCK_CLOEXEC | (flags & SOCK_NONBLOCK)));
  if (hfd < 0) return hfd;
  File* nf = sock_file_adopt(*t.kernel, (int)hfd, file_flags((int)flags));
  if (!nf) return -ENOMEM;
  // Its local name is the listener's: share it so it stays readable.
  if (SockPriv* lp = sock_priv(*s.f)) {
    NetState& ns = *t.kernel->net;
    Guard g(ns.lock);
    if (UnixName* n = lp->local) {
      n->refs.fetch_add(1);
      sock_priv(*nf)->local = n;
    }
  }
  if (sa.ss_family == AF_UNIX) accept_find_peer(t, *nf);
  addr_to_guest(t, nf, sa, len);
  long gfd = install_file(t, nf, flags & SOCK_CLOEXEC);
  if (gfd < 0) return gfd;
  if (addr_put_user(sa, len, guest_addr, guest_lenp) < 0) {
    t.proc->files->close((int)gfd);
    return -EFAULT;
  }
  return gfd;
}

long do_name(Task& t, SyscallArgs a, long nr) {
  SockRef s(t, a[0]);
  if (s.err) return s.err;
  long r = check_addr_len(a[1], a[2]);
  if (r < 0) return r;
  if (!a[1]) return -EFAULT;
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  r = host::sys(nr, s.host(), &sa, &len);
  if (r < 0) return r;
  addr_to_guest(t, &*s.f, sa, len, nr == SYS_getsockname);
  return addr_put_user(sa, len, a[1], a[2]);
}

}  // namespace

long sys_socket(Task& t, SyscallArgs a) {
  int domain = (int)a[0], type = (int)a[1];
  if (type & ~(kTypeFlags | 0xf)) return -EINVAL;
  if (!family_ok(domain)) return -EAFNOSUPPORT;
  if (domain == AF_NETLINK) {
    if (long r = netlink_type_check(type & 0xf, a[2]); r < 0) return r;
  }
  if (net_denied(t, domain)) return -EACCES;
  // The type and protocol are the host's to judge (its errno is Linux's).
  bool uevent = domain == AF_NETLINK && a[2] == NETLINK_KOBJECT_UEVENT;
  long hfd = host::sys(SYS_socket, domain, (type & ~SOCK_CLOEXEC) | SOCK_CLOEXEC, uevent ? NETLINK_ROUTE : a[2]);
  if (hfd < 0) return hfd;
  if (needs_net_raw(domain, type & 0xf) && !capable(t.proc->creds, CAP_NET_RAW)) {
    host::sys(SYS_close, hfd);
    return -EPERM;
  }
  File* f = sock_file_adopt(*t.kernel, (int)hfd, file_flags(type));
  if (!f) return -ENOMEM;
  sock_priv(*f)->netlink = domain == AF_NETLINK;
  sock_priv(*f)->uevent = uevent;
  return install_file(t, f, type & SOCK_CLOEXEC);
}

long sys_socketpair(Task& t, SyscallArgs a) {
  int domain = (int)a[0], type = (int)a[1];
  if (type & ~(kTypeFlags | 0xf)) return -EINVAL;
  if (!family_ok(domain)) return -EAFNOSUPPORT;
  if (net_denied(t, domain)) return -EACCES;
  if (!access_ok((void*)a[3], 2 * sizeof(int))) return -EFAULT;
  // Only AF_UNIX makes pairs; the host says why another cannot (a bad
  // protocol: EPROTONOSUPPORT; no pairs in that family: EOPNOTSUPP).
  int hfd[2];
  long r = host::sys(SYS_socketpair, domain, (type & ~SOCK_CLOEXEC) | SOCK_CLOEXEC, a[2], hfd);
  if (r < 0) return r;
  if (domain != AF_UNIX) {  // cannot happen on Linux; never hand the guest one
    host::sys(SYS_close, hfd[0]);
    host::sys(SYS_close, hfd[1]);
    return -EOPNOTSUPP;
  }
  File* f0 = sock_file_adopt(*t.kernel, hfd[0], file_flags(type));
  File* f1 = sock_file_adopt(*t.kernel, hfd[1], file_flags(type));
  if (!f0 || !f1) {
    if (f0) f0->put();
    if (f1) f1->put();
    return -ENOMEM;
  }
  // Both ends belong to the caller until one is passed on.
  sock_priv(*f0)->peer_cred = sock_priv(*f1)->peer_cred = peer_cred_of(t);
  bool cloexec = type & SOCK_CLOEXEC;
  int fds[2] = {t.proc->files->install(f0, cloexec), -1};
  if (fds[0] >= 0) fds[1] = t.proc->files->install(f1, cloexec);
  f0->put();
  f1->put();
  if (fds[1] < 0) {
    if (fds[0] >= 0) t.proc->files->close(fds[0]);
    return fds[0] < 0 ? fds[0] : fds[1];
  }
  if (copy_to_user((void*)a[3], fds, sizeof fds) < 0) {
    t.proc->files->close(fds[0]);
    t.proc->files->close(fds[1]);
    return -EFAULT;
  }
  return 0;
}

long sys_bind(Task& t, SyscallArgs a) {
  SockRef s(t, a[0]);
  if (s.err) return s.err;
  HostAddr ha;
  long r = addr_from_user(t, s.host(), a[1], a[2], AddrUse::kBind, &ha);
  if (r < 0) return r;
  if (ha.sa.ss_family == AF_UNIX && ha.len == kSunPathOff) return unix_autobind(t, s.host());
  if (SockPriv* p = sock_priv(*s.f); p && p->uevent) return uevent_bind(*p, s.host(), ha.sa, ha.len);
  if (privileged_port(ha) && !capable(t.proc->creds, CAP_NET_BIND_SERVICE)) return -EACCES;
  r = host::sys(SYS_bind, s.host(), &ha.sa, ha.len);
  if (r < 0 || !ha.name) return r;
  SockPriv* p = sock_priv(*s.f);
  if (!p) return r;  // not ours to name (cannot happen for a bound path)
  unix_name_register(*t.kernel, ha.name);
  UnixName* old;
  {
    Guard g(t.kernel->net->lock);
    old = p->local;
    p->local = ha.name;
  }
  ha.name = nullptr;
  unix_name_put(t.kernel->heap, old);
  return r;
}

long sys_listen(Task& t, SyscallArgs a) {
  SockRef s(t, a[0]);
  if (s.err) return s.err;
  long r = host::sys(SYS_listen, s.host(), a[1]);
  if (r < 0) return r;
  // Connecting peers see the listener as the process that called listen().
  if (SockPriv* p = sock_priv(*s.f)) {
    Guard g(t.kernel->net->lock);
    if (p->local) p->local->owner = peer_cred_of(t);
  }
  return r;
}

long sys_accept(Task& t, SyscallArgs a) { return do_accept(t, a[0], a[1], a[2], 0); }
long sys_accept4(Task& t, SyscallArgs a) { return do_accept(t, a[0], a[1], a[2], a[3]); }

namespace {

// Remembers whom an AF_UNIX client reached, for getpeername and
// SO_PEERCRED: the name as the host records it for the listener.
void remember_peer(Task& t, File& sock, SockPriv* p) {
  sockaddr_storage peer{};
  socklen_t plen = sizeof peer;
  if (host::sys(SYS_getpeername, sock.host_fd, &peer, &plen) < 0 || peer.ss_family != AF_UNIX ||
      plen <= kSunPathOff)
    return;
  char host_path[kSunPathMax + 1] = {};
  size_t hl = plen - kSunPathOff < kSunPathMax ? plen - kSunPathOff : kSunPathMax;
  memcpy(host_path, reinterpret_cast<sockaddr_un*>(&peer)->sun_path, hl);
  UnixName* n = unix_name_find(*t.kernel, host_path, hl);
  if (!n) return;
  UnixName* old;
  {
    Guard g(t.kernel->net->lock);
    old = p->peer;
    p->peer = n;
    p->peer_cred = n->owner;
  }
  unix_name_put(t.kernel->heap, old);
}

}  // namespace

long sys_connect(Task& t, SyscallArgs a) {
  SockRef s(t, a[0]);
  if (s.err) return s.err;
  HostAddr ha;
  long r = addr_from_user(t, s.host(), a[1], a[2], AddrUse::kConnect, &ha);
  if (r < 0) return r;
  SockPriv* p = sock_priv(*s.f);
  if (p && p->netlink && (r = netlink_check_dest(ha.sa, ha.len)) < 0) return r;
  bool unix_path = ha.sa.ss_family == AF_UNIX && ha.len > kSunPathOff;
  // Recorded before the host connects: the listener may accept at once.
  if (unix_path && p) connect_record(t, *s.f);
  r = restartable(isys(t, SYS_connect, s.host(), &ha.sa, ha.len));
  if (r < 0 && unix_path && p && p->connect_registry) connect_forget(p);
  if (r < 0 || !unix_path || !p) return r;
  remember_peer(t, *s.f, p);
  return r;
}

long sys_getsockname(Task& t, SyscallArgs a) { return do_name(t, a, SYS_getsockname); }
long sys_getpeername(Task& t, SyscallArgs a) { return do_name(t, a, SYS_getpeername); }

long sys_shutdown(Task& t, SyscallArgs a) {
  SockRef s(t, a[0]);
  if (s.err) return s.err;
  return host::sys(SYS_shutdown, s.host(), a[1]);
}

}  // namespace flatux
