// A temporary signal mask for the length of one wait (ppoll, pselect6,
// epoll_pwait): a signal that interrupts the wait is delivered with it in
// force, and the caller's mask comes back after the handler.
#pragma once
#include "kernel/signal/signal.h"

namespace flatux {

inline void push_wait_mask(Task& t, uint64_t mask) {
  t.saved_sigmask = t.sigmask;
  t.restore_sigmask = true;
  set_sigmask(t, mask);
}

// `interrupted` is the result the wait gives when a signal cut it short;
// then the signal code restores the mask once the signal is handled.
inline long pop_wait_mask(Task& t, long r, long interrupted) {
  if (r != interrupted && t.restore_sigmask) {
    t.restore_sigmask = false;
    set_sigmask(t, t.saved_sigmask);
  }
  return r;
}

}  // namespace flatux
