// The private mount namespace of a folder root (jail_mounts.cpp).
#pragma once
#include <string>

#include "launcher/sandbox/sandbox.h"

namespace flatux::launcher {

// In a fresh mount namespace (the caller unshared it, with the right to
// mount there): replaces the process's view of the host's tree with one
// holding only what `g` grants, at the same host paths, and a tmpfs at
// /dev/shm. False (with *why) when it could not be built; nothing visible
// changed then. A failure after the switch began ends the process.
bool build_jail_mounts(const SandboxGrant& g, std::string* why);

// The whole host granted (--root /), in a fresh mount namespace: every
// mount nosuid; with --ro every mount read-only too (metadata changes are
// EROFS at the host), but for writable images and a tmpfs at /dev/shm for
// the host FIFOs. With *own_proc (in a pid namespace of the run's own), a
// /proc showing only the run's processes; *own_proc says whether the host
// allowed it. False (with *why) when a step failed; what was done before
// it stays.
bool build_host_mounts(const SandboxGrant& g, bool* own_proc, std::string* why);

}  // namespace flatux::launcher
