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

}  // namespace flatux::launcher
