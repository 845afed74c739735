// eventfd: a host eventfd. Reads and writes go through the ordinary host
// file path (blocking reads are interruptible and restart like pipe reads).
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/anon/anon.h"
#include "kernel/syscalls.h"

namespace flatux {
namespace {

long do_eventfd(Task& t, uint64_t initval, uint64_t flags) {
  if (flags & ~(uint64_t)(EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE)) return -EINVAL;
  long hfd = host::sys(SYS_eventfd2, (unsigned)initval,
                       EFD_CLOEXEC | (flags & (EFD_NONBLOCK | EFD_SEMAPHORE)));
  return anon_install(t, hfd, O_RDWR | ((flags & EFD_NONBLOCK) ? O_NONBLOCK : 0), flags & EFD_CLOEXEC);
}

}  // namespace

long sys_eventfd(Task& t, SyscallArgs a) { return do_eventfd(t, a[0], 0); }
long sys_eventfd2(Task& t, SyscallArgs a) { return do_eventfd(t, a[0], a[1]); }

}  // namespace flatux
