// Sockets: every guest socket is a host socket the guest never sees by its
// host number. What the kernel keeps beyond the host's own state lives here.
#pragma once
#include <sys/socket.h>

#include "kernel/heap.h"

namespace flatux {

struct NetState;

// The per-kernel socket state (AF_UNIX name registry, abstract-name tag);
// nullptr when out of memory.
NetState* net_state_create(Heap* heap);

struct PortForward;
// The port field of an IPv4 or IPv6 address (network order), or nullptr.
uint16_t* inet_port_of(sockaddr_storage& sa, socklen_t len);

// hostfwd=: the guest ports that are other host ports (at boot).
void net_set_forwards(NetState& ns, const PortForward* forwards, int n);

struct File;
// A socket whose writes the kernel must read before the host does
// (netlink): sendfile and splice into it go through FileOps::write, never
// host to host.
bool sock_checks_writes(const File& f);

}  // namespace flatux
