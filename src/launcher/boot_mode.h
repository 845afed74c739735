// `flatux [OPTIONS] [PARAM...]`: boots a system from a kernel command line
// and runs it on the host terminal until it powers off.
#pragma once

namespace flatux::launcher {

// Exit statuses of a boot.
constexpr int kExitPowerOff = 0;   // power-off or halt
constexpr int kExitRestart = 3;    // the guest asked for a restart
constexpr int kExitPanic = 125;    // kernel panic (init exited, no root, no init)

int boot_main(int argc, char** argv);

}  // namespace flatux::launcher
