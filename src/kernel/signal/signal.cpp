#include "kernel/signal/signal.h"

#include "kernel/task/process.h"

namespace flatux {

void guest_fault(Task& t, int sig, const siginfo_t*) {
  // Core-dumping signals would set 0x80 only when a core is written;
  // flatux writes none, like a process with RLIMIT_CORE 0.
  process_exit(t, sig & 0x7f);
}

void raise_sigpipe(Task& t) {
  if (t.proc->sigactions[SIGPIPE - 1].handler == (uint64_t)SIG_DFL) process_exit(t, SIGPIPE);
}

}  // namespace flatux
