// The system console: /dev/console and /dev/tty on the host terminal.
//
// On a host terminal the console is a Tty (line discipline in the kernel):
// the launcher puts the host terminal in raw mode, pumps its input into
// console_receive() and reports resizes. When stdin is not a terminal the
// console passes bytes through unchanged (host stdin in, host stdout out)
// and is not a tty (ioctls: ENOTTY).
#pragma once
#include <cstddef>
#include <string_view>

namespace flatux {

struct Kernel;
struct Task;
struct File;

// Creates the console on host descriptors in/out. `terminal`: the host
// side is a terminal in raw mode, so the kernel's line discipline runs.
long console_create(Kernel& k, int host_in, int host_out, bool terminal);

// Host input typed on the console (launcher thread).
void console_receive(Kernel& k, const char* data, size_t n);
// The host terminal's window size changed (launcher thread).
void console_host_resized(Kernel& k);

// Whether there is a console and it is a terminal (a tty with a line
// discipline), which the virtual terminals need.
bool console_is_terminal(const Kernel& k);

// Makes a terminal console the controlling terminal of t's session (t a
// session leader without one): an OCI container's init, which natively
// is a session leader on its pty.
void console_become_ctty(Task& t);

// Kernel messages (printk): false when there is no console yet.
bool console_write_kernel(Kernel& k, std::string_view text);

// A new open file on the console (/dev/console; Linux never makes it a
// controlling terminal on open), or on the caller's controlling terminal
// (/dev/tty: ENXIO without one). Returns 0 or -errno.
long console_open(Task& t, int flags, File** out);
// A virtual terminal, /dev/tty0 (the current one) or /dev/ttyN: the
// console is the one there is, as UML's con0, on the host terminal. Unlike
// /dev/console, opening it makes it the controlling terminal of a session
// leader without one (O_NOCTTY aside), as getty needs. ENXIO without a
// console that is a terminal.
long console_vt_open(Task& t, int flags, int minor, File** out);
// init's descriptors 0-2 (opened O_RDWR before any task exists).
long console_open_initial(Kernel& k, File** out);
long ctty_open(Task& t, int flags, File** out);

}  // namespace flatux
