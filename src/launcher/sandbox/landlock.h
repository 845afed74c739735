// Landlock rules for the host process (landlock.cpp lists them).
#pragma once
#include <string>

#include "launcher/sandbox/sandbox.h"

namespace flatux::launcher {

struct LandlockApplied {
  int abi = 0;          // the running kernel's Landlock version (0: none)
  bool files = false;   // file rules (none when the grant is the whole host, read-write)
  bool net = false;     // TCP bind/connect refused (--net=none, ABI >= 4)
  bool scopes = false;  // signals and abstract sockets kept inside (ABI >= 6)
};

// The running kernel's Landlock ABI version, 0 without Landlock.
int landlock_abi();

// Restricts the calling thread and everything it creates afterwards: call
// it while the process has one thread. `fifo_dir` is where the kernel makes
// host FIFOs ("" for none). With `mounts_hold_files` the private mounts
// alone confine files (sandbox.cpp says when) and no file access is
// handled: Landlock then adds a check to every open for nothing.
bool apply_landlock(const SandboxGrant& g, const std::string& fifo_dir, bool mounts_hold_files, LandlockApplied* out,
                    std::string* why);

}  // namespace flatux::launcher
