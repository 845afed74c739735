// epoll over a host epoll instance. epoll_ctl names the guest file's host
// descriptor; the guest's epoll_data is stored in the host instance as it
// is, so what epoll_wait returns needs no translation. Files without a host
// descriptor that answer FileOps::poll (signalfd) are kept on a kernel-side
// list instead; while it is not empty, a wait asks them and then waits on
// the host instance and the task's wake eventfd together, as poll/select
// do (virtual_wait.h). Files that answer neither way cannot be watched
// (EPERM, as Linux gives for files that do not support polling).
#include <climits>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <linux/errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/anon/anon.h"
#include "kernel/fs/anon/virtual_wait.h"
#include "kernel/signal/wait_mask.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr uint64_t kForever = UINT64_MAX;
constexpr uint64_t kSliceNs = 5000000;  // host wait slice when no wake eventfd could be made
constexpr uint32_t kModeBits = EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP;

// A watched file without a host descriptor. It holds a reference: nothing
// tells the instance when the guest closes its last descriptor of it.
struct VirtualMember {
  VirtualMember* next;
  File* file;
  epoll_event ev;
  bool disarmed;    // EPOLLONESHOT, reported
  // EPOLLET: what the last look found. An edge is an event that was not
  // there then: a file becoming ready, or one that stays readable saying
  // something new (/proc/self/mountinfo's POLLERR|POLLPRI after a mount),
  // as Linux reports each wake-up of a file.
  uint32_t last;
};

struct EpollPriv {
  KMutex lock;
  VirtualMember* members = nullptr;
  // Events of virtual members an outer epoll's look at this instance took
  // (epoll_poll): they are this instance's to return, first, as Linux's
  // ready list keeps what its callbacks queued.
  static constexpr int kPendingMax = 64;
  epoll_event pending[kPendingMax];
  int npending = 0;
};

long epoll_stat(Task&, File& f, struct stat* out) { return host::sys(SYS_fstat, f.host_fd, out); }

void epoll_release(File& f) {
  auto* p = static_cast<EpollPriv*>(f.priv);
  if (!p) return;
  while (VirtualMember* m = p->members) {
    p->members = m->next;
    m->file->put();
    f.heap->free(m);
  }
  f.heap->destroy_obj(p);
}

short epoll_poll(Task& t, File& f, short events);

const FileOps kEpollOps = {
    .read = nullptr,
    .write = nullptr,
    .pread = nullptr,
    .pwrite = nullptr,
    .lseek = nullptr,
    .stat = epoll_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = epoll_release,
    .poll = epoll_poll,
};

long create(Task& t, bool cloexec) {
  long hfd = host::sys(SYS_epoll_create1, EPOLL_CLOEXEC);
  if (hfd < 0) return hfd;
  Heap* h = t.kernel->heap;
  File* f = file_alloc(h, &kEpollOps, O_RDWR, (int)hfd);
  if (!f) {
    host::sys(SYS_close, hfd);
    return -ENOMEM;
  }
  f->priv = h->make<EpollPriv>();
  if (!f->priv) {
    f->put();
    return -ENOMEM;
  }
  int fd = t.proc->files->install(f, cloexec);
  f->put();
  return fd;
}

EpollPriv* epoll_priv(File& f) { return f.ops == &kEpollOps ? static_cast<EpollPriv*>(f.priv) : nullptr; }

// epoll_ctl for a file without a host descriptor, with Linux's checks.
long ctl_virtual(Task& t, EpollPriv& ep, int op, File& target, const epoll_event& ev) {
  if (!target.ops->poll) return -EPERM;
  Guard g(ep.lock);
  VirtualMember** link = &ep.members;
  while (*link && (*link)->file != &target) link = &(*link)->next;
  VirtualMember* m = *link;
  if (op == EPOLL_CTL_ADD) {
    if (m) return -EEXIST;
    if ((ev.events & EPOLLEXCLUSIVE) && (ev.events & EPOLLONESHOT)) return -EINVAL;
    m = static_cast<VirtualMember*>(t.kernel->heap->alloc(sizeof(VirtualMember)));
    if (!m) return -ENOMEM;
    target.get();
    *m = {ep.members, &target, ev, false, 0};
    ep.members = m;
    return 0;
  }
  if (!m) return -ENOENT;
  if (op == EPOLL_CTL_DEL) {
    *link = m->next;
    m->file->put();
    t.kernel->heap->free(m);
    return 0;
  }
  if (op != EPOLL_CTL_MOD) return -EINVAL;
  if ((ev.events | m->ev.events) & EPOLLEXCLUSIVE) return -EINVAL;
  m->ev = ev;
  m->disarmed = false;
  m->last = 0;
  return 0;
}

// The ready virtual members' events (lock held), at most `max`, into out:
// their count. EPOLLET reports a member on a not-ready -> ready change only;
// EPOLLONESHOT disarms it once reported.
long collect_locked(Task& t, EpollPriv& ep, epoll_event* out, long max) {
  long n = 0;
  for (VirtualMember* m = ep.members; m && n < max; m = m->next) {
    if (m->disarmed) continue;
    short want = (short)(m->ev.events & ~kModeBits);
    uint32_t got = (uint32_t)m->file->ops->poll(t, *m->file, want) & (m->ev.events | EPOLLERR | EPOLLHUP);
    bool edge = (got & ~m->last) != 0;
    m->last = got;
    if (!got || ((m->ev.events & EPOLLET) && !edge)) continue;
    out[n++] = {got, m->ev.data};
    if (m->ev.events & EPOLLONESHOT) m->disarmed = true;
  }
  return n;
}

// The events an outer look queued first, then the ready virtual members',
// copied to the guest array `events` (room for `max`): their count.
long collect_virtual(Task& t, EpollPriv& ep, uint64_t events, long max) {
  epoll_event got[EpollPriv::kPendingMax];
  long n;
  {
    Guard g(ep.lock);
    n = ep.npending < max ? ep.npending : max;
    memcpy(got, ep.pending, sizeof(epoll_event) * (size_t)n);
    memmove(ep.pending, ep.pending + n, sizeof(epoll_event) * (size_t)(ep.npending - n));
    ep.npending -= (int)n;
    // What an outer look took stands for this look (a member once in a
    // wait's answer); the members are asked again next time.
    long cap = max < EpollPriv::kPendingMax ? max : EpollPriv::kPendingMax;
    if (n == 0) n = collect_locked(t, ep, got, cap);
  }
  if (n && copy_to_user((void*)events, got, sizeof(epoll_event) * (size_t)n) < 0) return -EFAULT;
  return n;
}

// An epoll instance as a member of another (or of poll): readable when it
// has events to return. What its virtual members have is taken now and
// kept for its own epoll_wait; its host members are asked without waiting.
short epoll_poll(Task& t, File& f, short events) {
  auto* ep = static_cast<EpollPriv*>(f.priv);
  bool ready;
  {
    Guard g(ep->lock);
    if (!ep->npending) ep->npending = (int)collect_locked(t, *ep, ep->pending, EpollPriv::kPendingMax);
    ready = ep->npending > 0;
  }
  if (!ready) {
    pollfd p{f.host_fd, POLLIN, 0};
    ready = host::sys(SYS_poll, &p, 1, 0) > 0 && (p.revents & POLLIN);
  }
  return (short)(ready ? (POLLIN | POLLRDNORM) & events : 0);
}

bool has_virtual(EpollPriv* ep) {
  if (!ep) return false;
  Guard g(ep->lock);
  return ep->members != nullptr || ep->npending;
}

bool in_virtual_list(EpollPriv& ep, const File& f) {
  Guard g(ep.lock);
  for (VirtualMember* m = ep.members; m; m = m->next)
    if (m->file == &f) return true;
  return false;
}

// Whether `from` reaches the instance `to` through epoll instances that
// are virtual members, within Linux's EPOLL_MAX_NESTS (4): a cycle, or a
// nest too deep, either way ELOOP.
bool reaches(EpollPriv& from, const EpollPriv& to, int depth) {
  if (&from == &to || depth > 4) return true;
  Guard g(from.lock);
  for (VirtualMember* m = from.members; m; m = m->next) {
    EpollPriv* inner = m->file->ops == &kEpollOps ? static_cast<EpollPriv*>(m->file->priv) : nullptr;
    if (inner && reaches(*inner, to, depth + 1)) return true;
  }
  return false;
}

int ms_until(uint64_t until) {
  if (until == kForever) return -1;
  uint64_t now = monotonic_ns();
  uint64_t left = until > now ? until - now : 0;
  uint64_t lms = (left + 999999) / 1000000;
  return lms > INT_MAX ? INT_MAX : (int)lms;
}

// With virtual members and none ready: waits for the host instance to have
// events, a wake-up for the virtual ones, `until` or a guest signal.
// Returns 1 when the host instance is ready, 0 otherwise, or -EINTR.
long wait_host_or_wake(Task& t, int host_epfd, const VirtualWait& vw, uint64_t until) {
  uint64_t now = monotonic_ns();
  // The slice also covers virtual members the eventfd does not wake (the console).
  if (until == kForever || until - now > kSliceNs) until = now + kSliceNs;
  pollfd p[2] = {{host_epfd, POLLIN, 0}, {vw.fd(), POLLIN, 0}};
  timespec rel{}, *tsp = nullptr;
  if (until != kForever) {
    uint64_t left = until > now ? until - now : 0;
    rel = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    tsp = &rel;
  }
  long r = isys(t, SYS_ppoll, p, 2, tsp, 0, 8);
  if (r < 0) return r;
  return p[0].revents ? 1 : 0;
}

// Waits on the host instance until an event, the deadline or a guest
// signal (EINTR: epoll_wait is never restarted, as on Linux). The host
// writes the events straight into the checked guest array.
long do_wait(Task& t, uint64_t epfd, uint64_t events, uint64_t maxevents, uint64_t deadline) {
  if ((int)maxevents <= 0 || maxevents > INT_MAX / sizeof(epoll_event)) return -EINVAL;
  // As many events as the caller's memory holds (Linux copies them one at
  // a time, faulting only at the one that does not fit).
  size_t room = owned_extent((void*)events, maxevents * sizeof(epoll_event)) / sizeof(epoll_event);
  if (room && room < maxevents) maxevents = room;
  if (!access_ok((void*)events, maxevents * sizeof(epoll_event))) return -EFAULT;
  FdRef ep(t, epfd);
  if (!ep) return -EBADF;
  if (ep->host_fd < 0) return -EINVAL;
  EpollPriv* vp = epoll_priv(*ep);
  VirtualWait vw(t);
  for (;;) {
    // Virtual members first: they are ready without waiting on the host.
    bool virt = has_virtual(vp);
    if (virt) vw.arm();
    vw.drain();
    long vn = virt ? collect_virtual(t, *vp, events, (long)maxevents) : 0;
    if (vn < 0) return vn;
    uint64_t until = vn ? 0 : deadline;
    if (virt && !vn) {
      long w = wait_host_or_wake(t, ep->host_fd, vw, deadline);
      if (w == -EINTR && t.notify.load()) return -EINTR;
      if (w < 0 && w != -EINTR) return w;
      if (w <= 0) {
        if (deadline != kForever && monotonic_ns() >= deadline) return 0;
        continue;  // a wake-up (or a stale kick): ask the virtual members again
      }
      until = 0;  // the host instance has events: take them
    }
    long r = isys(t, SYS_epoll_pwait, ep->host_fd, (char*)events + vn * sizeof(epoll_event),
                  maxevents - (uint64_t)vn, ms_until(until), 0, 8);
    if (r == -EINTR) {
      if (vn) return vn;
      if (t.notify.load()) return -EINTR;
      continue;  // a stale wake-up, no signal to take
    }
    if (r < 0) return vn ? vn : r;
    if (r + vn == 0 && deadline != kForever && monotonic_ns() < deadline) continue;
    if (r + vn == 0 && deadline == kForever) continue;
    return r + vn;
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
  epoll_event ev{};
  if ((int)a[1] != EPOLL_CTL_DEL && copy_from_user(&ev, (const void*)a[3], sizeof ev) < 0)
    return -EFAULT;
  EpollPriv* vp = epoll_priv(*ep);
  EpollPriv* inner = epoll_priv(*f);
  if (inner && inner == vp) return -EINVAL;
  // An epoll instance with virtual members is one itself: the host's
  // instance would never see what those have.
  bool virt = f->host_fd < 0 ||
              (vp && ((int)a[1] == EPOLL_CTL_ADD ? has_virtual(inner) : in_virtual_list(*vp, *f)));
  if (virt) {
    if (!vp) return -EINVAL;
    if (!inner || (int)a[1] != EPOLL_CTL_ADD) return ctl_virtual(t, *vp, (int)a[1], *f, ev);
    // Two adds racing the other way round cannot make a cycle between
    // their checks (epoll_poll would then wait on its own lock).
    Guard g(t.kernel->epoll_nest_lock);
    if (reaches(*inner, *vp, 1)) return -ELOOP;
    return ctl_virtual(t, *vp, (int)a[1], *f, ev);
  }
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
