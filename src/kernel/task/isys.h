// Host calls a task makes that end as soon as it has a signal to handle.
#pragma once
#include "host/isyscall.h"
#include "kernel/task/task.h"

namespace flatux {

// A host syscall that returns -EINTR as soon as t has a signal to handle.
// A kick that came earlier in this trap, while kernel code ran, was left
// pending and blocked until the return to guest code; unblocked first
// (and dropped: notify is what counts), so a later one can end the wait.
template <typename... A>
long isys(Task& t, long nr, A... args) {
  if (t.kick_deferred) [[unlikely]] {
    t.kick_deferred = false;
    flatux_unblock_kick();
  }
  long v[6] = {(long)args...};
  return flatux_isyscall(&t.notify, nr, v[0], v[1], v[2], v[3], v[4], v[5]);
}

// A host call that can block (pipes, terminals, sockets): a guest signal
// interrupts it, and the signal code then restarts it or reports EINTR as
// the guest's handler says (SA_RESTART).
inline long restartable(long r) { return r == -4 /*EINTR*/ ? -512 /*ERESTARTSYS*/ : r; }

}  // namespace flatux
