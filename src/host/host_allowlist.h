// The host calls flatux makes: every host system call the kernel, its
// foreign libraries and the launcher need after start, with their arguments
// checked where an argument widens what the call can do (clone flags,
// socket families, ioctl and fcntl commands). Anything else fails with
// EPERM.
//
// It is the second half of the one seccomp filter (seccomp.h): a call from
// guest code traps to the kernel before the list is asked, so the kernel
// still serves a guest's ptrace or mount as Linux would; a `syscall` of the
// host's own text that a guest jumps to passes as the kernel's and meets
// the list. (Two stacked filters would do the same, the stricter answer
// winning, as long as a refusal is never a KILL, which would outrank the
// trap; one filter runs once per host call instead of twice.)
#pragma once

#include <cstdint>

#include "host/bpf.h"

namespace flatux {

struct HostAllowlistOptions {
  bool net_none = false;  // --net=none: no AF_INET/AF_INET6 host sockets at all
  uint32_t own_pid = 0;   // the first host process (pidfd_open may name it only)
  bool host_owners = false;  // --hostfs-owners=host: set-id bits and device nodes pass through
};

// Appends the list's code to `p`: it loads the call number itself and ends
// every path in a return. False when the program would not fit. *ncalls
// gets the number of host calls allowed.
bool emit_host_allowlist(BpfProg& p, const HostAllowlistOptions& o, int* ncalls);

}  // namespace flatux
