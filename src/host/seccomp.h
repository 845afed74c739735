// The seccomp filter that turns every guest `syscall` into SIGSYS and
// holds the kernel's own host calls to what it needs.
#pragma once
#include "host/host_allowlist.h"
#include "host/text_range.h"

namespace flatux {

// Allows system calls whose instruction pointer lies in one of `ranges`
// (the kernel's own executable code), traps every other one. With
// `allowlist`, a call from those ranges must also be one of the host calls
// the kernel makes (host_allowlist.h), else it fails with EPERM; *ncalls
// gets their number. Installed on all threads of the host process at once
// (SECCOMP_FILTER_FLAG_TSYNC), with no_new_privs. 0 or -errno.
long install_syscall_filter(const TextRange* ranges, int n, const HostAllowlistOptions* allowlist = nullptr,
                            int* ncalls = nullptr);

}  // namespace flatux
