// Shared between the line discipline (n_tty.cpp) and its ioctls (tty_ioctl.cpp).
#pragma once
#include "kernel/tty/tty.h"

namespace flatux {

// Job control for a read (SIGTTIN) or a write/termios change (SIGTTOU) by
// t: 0 to go ahead, -EIO, or -ERESTARTSYS once the signal has been sent to
// t's background process group.
long tty_job_control(Task& t, Tty& tty, int sig);
void tty_flush_input(Tty& tty);
// Bytes a read could return now (FIONREAD).
int tty_input_available(Tty& tty);

}  // namespace flatux
