// See virtual_wait.h.
#include "kernel/fs/anon/virtual_wait.h"

#include <cstdint>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

namespace flatux {

void VirtualWait::arm() {
  if (armed_) return;
  if (t_.wake_fd < 0) {
    long fd = host::sys(SYS_eventfd2, 0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd >= 0) t_.wake_fd = (int)fd;
  }
  fd_ = t_.wake_fd;
  armed_ = true;
  // Published before the first look at the files (see the header).
  t_.virtual_waiting.store(1, std::memory_order_seq_cst);
}

VirtualWait::~VirtualWait() {
  if (armed_) t_.virtual_waiting.store(0, std::memory_order_release);
}

void VirtualWait::drain() {
  if (!armed_ || fd_ < 0) return;
  uint64_t v;
  host::sys(SYS_read, fd_, &v, sizeof v);
}

namespace {
void wake(Task& t) {
  if (!t.virtual_waiting.load(std::memory_order_acquire) || t.wake_fd < 0) return;
  uint64_t one = 1;
  host::sys(SYS_write, t.wake_fd, &one, sizeof one);  // non-blocking; a full counter is awake anyway
}
}  // namespace

void virtual_wait_wake_locked(Process& p, Task* target) {
  if (target) {
    wake(*target);
    return;
  }
  for (Task* t = p.threads; t; t = t->next_thread) wake(*t);
}

void virtual_wait_release(Task& t) {
  if (t.wake_fd >= 0) host::sys(SYS_close, t.wake_fd);
  t.wake_fd = -1;
}

}  // namespace flatux
