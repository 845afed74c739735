// Waking poll, select and epoll for files without a host descriptor.
//
// A signalfd is virtual (guest signals are virtual), so the host cannot
// wake a wait on it. Instead, each task that waits on such a file gets a
// host eventfd (Task::wake_fd) and marks itself waiting; send_signal, and a
// signalfd whose mask changes, write the eventfd of every waiting task that
// could read the signal, and the wait includes that eventfd in its host
// call. The order makes lost wake-ups impossible: the waiter marks itself,
// empties the eventfd and only then asks the files (under the process's
// siglock, as the sender queues), so a signal queued after that look finds
// the mark and leaves the eventfd readable.
#pragma once
#include "kernel/kernel.h"

namespace flatux {

// A task's wait on virtual files; armed when the first one is seen.
class VirtualWait {
 public:
  explicit VirtualWait(Task& t) : t_(t) {}
  ~VirtualWait();
  VirtualWait(const VirtualWait&) = delete;
  VirtualWait& operator=(const VirtualWait&) = delete;
  // Marks the task waiting (again harmless); fd() is then the eventfd, or
  // -1 when none could be made (the caller falls back to short host waits).
  void arm();
  bool armed() const { return armed_; }
  int fd() const { return fd_; }
  // Empties the eventfd; call before asking the files.
  void drain();

 private:
  Task& t_;
  int fd_ = -1;
  bool armed_ = false;
};

// Sender side, called with the process's siglock held: wakes `target`, or
// every waiting thread of `p` when target is null.
void virtual_wait_wake_locked(Process& p, Task* target);
// Closes a freed task's eventfd.
void virtual_wait_release(Task& t);

}  // namespace flatux
