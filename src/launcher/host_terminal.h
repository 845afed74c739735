// The host terminal while a booted guest owns it: raw mode (the kernel's
// line discipline does the cooking), restored on every way out that the
// launcher can see (normal exit, catchable fatal signals).
#pragma once

namespace flatux::launcher {

// Saves the terminal on fd and makes it raw. False if fd is not a terminal.
bool host_terminal_make_raw(int fd);
// Puts the saved settings back (async-signal-safe; idempotent).
void host_terminal_restore();

}  // namespace flatux::launcher
