// epoll over a host epoll instance. epoll_ctl names the guest file's host
// descriptor; the guest's epoll_data is stored in the host instance as it
// is, so what epoll_wait returns needs no translation. Files without a host
// descriptor (signalfd) cannot be watched: EPERM, as Linux gives for files
// that do not support polling.
#include <climits>
#include <ctime>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

#include "host/entry.h"
#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/fs/anon/anon.h"
#include "kernel/signal/wait_mask.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr uint64_t kForever = UINT64_MAX;

long create(Task& t, bool cloexec) {
  return anon_install(t, host::sys(SYS_epoll_create1, EPOLL_CLOEXEC), O_RDWR, cloexec);
}

// Waits on the host instance until an event, the deadline or a guest
// signal (EINTR: epoll_wait is never restarted, as on Linux). The host
// writes the events straight into the checked guest array.
long do_wait(Task& t, uint64_t epfd, uint64_t events, uint64_t maxevents, uint64_t deadline) {
  if ((int)maxevents <= 0 || maxevents > INT_MAX / sizeof(epoll_event)) return -EINVAL;
  if (!access_ok((void*)events, maxevents * sizeof(epoll_event))) return -EFAULT;
  FdRef ep(t, epfd);
  if (!ep) return -EBADF;
  if (ep->host_fd < 0) return -EINVAL;
  for (;;) {
    long ms = -1;
    uint64_t now = 0;
    if (deadline != kForever) {
      now = monotonic_ns();
      uint64_t left = deadline > now ? deadline - now : 0;
      uint64_t lms = (left + 999999) / 1000000;
      ms = lms > INT_MAX ? INT_MAX : (long)lms;
    }
    long r = isys(t, SYS_epoll_pwait, ep->host_fd, events, maxevents, ms, 0, 8);
    if (r == -EINTR) {
      if (t.notify.load()) return -EINTR;
      continue;  // a stale wake-up, no signal to take
    }
    if (r == 0 && deadline != kForever && monotonic_ns() < deadline) continue;
    return r;
  }
}

uint64_t deadline_ms(int ms) {
  return ms < 0 ? kForever : monotonic_ns() + (uint64_t)ms * 1000000ull;
}

long with_mask(Task& t, uint64_t guest_mask, uint64_t size, uint64_t epfd, uint64_t events,
               uint64_t maxevents, uint64_t deadline) {
  if (!guest_mask) return do_wait(t, epfd, events, maxevents, deadline);
  if (size != 8) return -EINVAL;
  uint64_t mask;
  if (copy_from_user(&mask, (const void*)guest_mask, 8) < 0) return -EFAULT;
  push_wait_mask(t, mask);
  return pop_wait_mask(t, do_wait(t, epfd, events, maxevents, deadline), -EINTR);
}

}  // namespace

long sys_epoll_create(Task& t, SyscallArgs a) {
  if ((int)a[0] <= 0) return -EINVAL;
  return create(t, false);
}

long sys_epoll_create1(Task& t, SyscallArgs a) {
  if (a[0] & ~(uint64_t)EPOLL_CLOEXEC) return -EINVAL;
  return create(t, a[0] & EPOLL_CLOEXEC);
}

long sys_epoll_ctl(Task& t, SyscallArgs a) {
  FdRef ep(t, a[0]);
  FdRef f(t, a[2]);
  if (!ep || !f) return -EBADF;
  if (ep->host_fd < 0) return -EINVAL;
  if (f->host_fd < 0) return -EPERM;
  epoll_event ev{};
  if ((int)a[1] != EPOLL_CTL_DEL && copy_from_user(&ev, (const void*)a[3], sizeof ev) < 0)
    return -EFAULT;
  return host::sys(SYS_epoll_ctl, ep->host_fd, (int)a[1], f->host_fd, &ev);
}

long sys_epoll_wait(Task& t, SyscallArgs a) {
  return do_wait(t, a[0], a[1], a[2], deadline_ms((int)a[3]));
}

long sys_epoll_pwait(Task& t, SyscallArgs a) {
  return with_mask(t, a[4], a[5], a[0], a[1], a[2], deadline_ms((int)a[3]));
}

long sys_epoll_pwait2(Task& t, SyscallArgs a) {
  uint64_t deadline = kForever;
  if (a[3]) {
    timespec ts;
    if (copy_from_user(&ts, (const void*)a[3], sizeof ts) < 0) return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return -EINVAL;
    deadline = monotonic_ns() + (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  return with_mask(t, a[4], a[5], a[0], a[1], a[2], deadline);
}

}  // namespace flatux
