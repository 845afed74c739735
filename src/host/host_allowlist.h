// The host calls flatux makes, as a second seccomp filter: every host
// system call the kernel, its foreign libraries and the launcher need after
// start, with their arguments checked where an argument widens what the
// call can do (clone flags, socket families, ioctl and fcntl commands).
// Anything else fails with EPERM.
//
// Both filters run on every host call and the strictest answer wins. A
// guest's own `syscall` traps in the first filter (TRAP outranks ERRNO),
// so the kernel still serves a guest's ptrace or mount as Linux would; a
// `syscall` of the host's text that a guest jumps to passes the first
// filter and meets this one. That is why a refusal here must never be a
// KILL, which would outrank the trap and end flatux on a guest's ordinary
// call.
#pragma once

namespace flatux {

struct HostAllowlistOptions {
  bool net_none = false;  // --net=none: no AF_INET/AF_INET6 host sockets at all
};

// Installs the filter on every thread (TSYNC). Also sets no_new_privs.
// Returns 0 or -errno. *ncalls gets the number of host calls allowed.
long install_host_allowlist(const HostAllowlistOptions& o, int* ncalls);

}  // namespace flatux
