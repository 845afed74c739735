// Guest signal state. Delivery (handlers, frames) comes with the
// processes work; for now a fault in guest code ends the process with that
// signal, as the default action would.
#pragma once
#include <csignal>

#include "kernel/task/task.h"

namespace flatux {

// A synchronous fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP) raised by
// guest code running on task t.
void guest_fault(Task& t, int sig, const siginfo_t* si);

// A write hit a pipe or socket with no reader (EPIPE): SIGPIPE's default
// action ends the process; an ignored or caught SIGPIPE leaves just EPIPE.
void raise_sigpipe(Task& t);

// Sends `sig` to the calling task's own process. A blocked signal becomes
// pending. Returns 0 when the signal was discarded (ignored) or left
// pending, does not return when its default action ends the process, and
// -ENOSYS when it would need delivery to a handler or stopping, which come
// with full signal support.
long send_signal_self(Task& t, int sig);

// Acts on pending signals that are no longer blocked (after a mask change).
void recheck_pending(Task& t);

}  // namespace flatux
