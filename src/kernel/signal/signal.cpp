#include "kernel/signal/signal.h"

#include <linux/errno.h>

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

namespace {

bool default_ignored(int sig) {
  return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}
bool default_stops(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

}  // namespace

long send_signal_self(Task& t, int sig) {
  if (sig == 0) return 0;
  uint64_t handler = t.proc->sigactions[sig - 1].handler;
  if (sig != SIGKILL && handler == (uint64_t)SIG_IGN) return 0;
  if (sig != SIGKILL && ((t.sigmask >> (sig - 1)) & 1)) {
    t.sigpending |= 1ull << (sig - 1);
    return 0;
  }
  if (sig != SIGKILL && handler != (uint64_t)SIG_DFL) return -ENOSYS;
  if (default_ignored(sig)) return 0;
  if (default_stops(sig)) return -ENOSYS;
  process_exit(t, sig);
}

void recheck_pending(Task& t) {
  uint64_t ready = t.sigpending & ~t.sigmask;
  for (int sig = 1; ready && sig <= kNSig; sig++) {
    uint64_t bit = 1ull << (sig - 1);
    if (!(ready & bit)) continue;
    ready &= ~bit;
    // A caught signal stays pending until handlers can be run.
    if (t.proc->sigactions[sig - 1].handler != (uint64_t)SIG_DFL) continue;
    t.sigpending &= ~bit;
    send_signal_self(t, sig);
  }
}

}  // namespace flatux
