// Port forwarding (hostfwd=, as QEMU spells it): guests share the host's
// network, where the ports below 1024 are not an unprivileged process's
// to bind; a forward makes the guest's port (sshd's 22) the host's
// another one (2222), so that the host reaches the guest's server there
// while the guest sees its own port everywhere it looks.
#include <arpa/inet.h>
#include <cstring>
#include <linux/errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/net/net.h"
#include "kernel/net/sock.h"

namespace flatux {

uint16_t* inet_port_of(sockaddr_storage& sa, socklen_t len) {
  if (sa.ss_family == AF_INET && len >= sizeof(sockaddr_in)) return &reinterpret_cast<sockaddr_in&>(sa).sin_port;
  if (sa.ss_family == AF_INET6 && len >= sizeof(sockaddr_in6)) return &reinterpret_cast<sockaddr_in6&>(sa).sin6_port;
  return nullptr;
}

namespace {

// 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104.
bool is_loopback(const sockaddr_storage& sa) {
  if (sa.ss_family == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in&>(sa).sin_addr.s_addr) >> 24) == 127;
  const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(sa).sin6_addr;
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (memcmp(a.s6_addr, kMapped, 12) == 0) return a.s6_addr[12] == 127;
  static const uint8_t kOne[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return memcmp(a.s6_addr, kOne, 16) == 0;
}

int sock_type(int host_fd) {
  int type = 0;
  socklen_t n = sizeof type;
  return host::sys(SYS_getsockopt, host_fd, SOL_SOCKET, SO_TYPE, &type, &n) == 0 ? type : -1;
}

}  // namespace

void net_set_forwards(NetState& ns, const PortForward* forwards, int n) {
  ns.nforwards = 0;
  for (int i = 0; i < n && i < BootConfig::kMaxForwards; i++) ns.forwards[ns.nforwards++] = forwards[i];
}

long forward_to_host(NetState& ns, int host_fd, sockaddr_storage& sa, socklen_t len, AddrUse use) {
  uint16_t* port = ns.nforwards ? inet_port_of(sa, len) : nullptr;
  if (!port || (use != AddrUse::kBind && !is_loopback(sa))) return 0;
  int type = sock_type(host_fd);
  uint16_t p = ntohs(*port);
  for (int i = 0; i < ns.nforwards; i++) {
    if (ns.forwards[i].type != type || ns.forwards[i].guest_port != p) continue;
    *port = htons(ns.forwards[i].host_port);
    return 0;
  }
  if (use == AddrUse::kBind)
    for (int i = 0; i < ns.nforwards; i++)
      if (ns.forwards[i].type == type && ns.forwards[i].host_port == p) return -EADDRINUSE;
  return 0;
}

void forward_to_guest(NetState& ns, int host_fd, sockaddr_storage& sa, socklen_t len, bool local) {
  uint16_t* port = ns.nforwards ? inet_port_of(sa, len) : nullptr;
  if (!port || (!local && !is_loopback(sa))) return;
  int type = sock_type(host_fd);
  uint16_t p = ntohs(*port);
  for (int i = 0; i < ns.nforwards; i++)
    if (ns.forwards[i].type == type && ns.forwards[i].host_port == p) {
      *port = htons(ns.forwards[i].guest_port);
      return;
    }
}

}  // namespace flatux
