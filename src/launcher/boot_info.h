// Facts about the host process that the kernel needs at boot, gathered
// with the host C library before any guest code exists.
#pragma once
#include "kernel/kernel.h"

namespace flatux::launcher {

// Fills text ranges, vDSO, hwcaps, the TLS block for the foreign gate.
// Returns false with a message on stderr if /proc/self/maps is unreadable.
bool gather_boot_info(KernelConfig& cfg);

}  // namespace flatux::launcher
