// Booting the system the way Linux does after its command line is parsed:
// banner, root filesystem per root=, devtmpfs/proc/sysfs, the console as
// init's stdio, then init as PID 1 (src/kernel/boot/boot.cpp); and stopping
// it (src/kernel/boot/shutdown.cpp).
#pragma once
#include "kernel/kernel.h"

namespace flatux {

// Mounts the root filesystem that root=, rootfstype=, rw/ro and hostfs=
// ask for. Returns 0, or -errno with *why set to the panic message.
long mount_root(Kernel& k, const BootConfig& boot, const char** why);

// Logs the banner, mounts everything and starts init. Returns 0, or -errno
// with *why set to the panic message (the launcher panics with it).
long kernel_boot(Kernel& k, const char** why);

// Linux's panic line on the console: "Kernel panic - not syncing: MSG".
void boot_panic_message(Kernel& k, const char* msg);

// Stops the machine: logs what happens, records why, and wakes the
// launcher, which ends the host process. Never returns to the caller.
[[noreturn]] void kernel_halt(Kernel& k, HaltReason why);

// Same, for callers that go on (the launcher): records why and wakes it.
void kernel_stop(Kernel& k, HaltReason why);

// The host asked for a power-off (SIGTERM to flatux): init gets SIGTERM
// now; the launcher powers off when init is done or the grace time ends.
void kernel_request_poweroff(Kernel& k);

// Ctrl-Alt-Del (SIGINT to flatux from the host): an immediate restart while
// reboot(CAD_ON) holds, else SIGINT to init, as Linux does.
void kernel_ctrl_alt_del(Kernel& k);

}  // namespace flatux
