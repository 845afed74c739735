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

}  // namespace flatux
