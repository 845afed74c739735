// Event files (epoll, eventfd, timerfd over host objects; signalfd virtual).
#pragma once
#include <linux/errno.h>

#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"

namespace flatux {

// Wraps a new host descriptor as a guest File and installs it; the host
// descriptor is closed on every failure.
inline long anon_install(Task& t, long host_fd, uint32_t flags, bool cloexec) {
  if (host_fd < 0) return host_fd;
  File* f = hostfs_adopt_host_fd(t.kernel->heap, (int)host_fd, flags);
  if (!f) return -ENOMEM;
  int fd = t.proc->files->install(f, cloexec);
  f->put();
  return fd;
}

}  // namespace flatux
