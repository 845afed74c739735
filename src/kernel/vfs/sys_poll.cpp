// poll, ppoll, select, pselect6: readiness is the host's, asked with one
// interruptible ppoll over the translated descriptors. Files that are always
// ready (File::always_ready) are answered here without the host, as Linux
// answers files with no poll method. Files without a host descriptor
// (signalfd) answer FileOps::poll, and the host call then also waits on the
// task's wake eventfd (fs/anon/virtual_wait.h).
#include <cstring>
#include <ctime>
#include <linux/errno.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/anon/virtual_wait.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/signal/wait_mask.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"
#include "kernel/vfs/file.h"

namespace flatux {
namespace {

constexpr int kMaxPollFds = FdTable::kMaxFds;
constexpr short kAlwaysReadyMask = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;  // DEFAULT_POLLMASK

// Learns, once per open file, whether it is one Linux would answer with
// DEFAULT_POLLMASK: a host descriptor of a regular file, a directory, or
// /dev/null, /dev/zero, /dev/full (mem devices with no poll method), or a
// kernel file with neither a host descriptor nor a poll method of its own
// (a generated /proc file: its poll waited forever).
void learn_poll_kind(File& f) {
  if (f.poll_kind.load(std::memory_order_relaxed) != File::PollKind::kUnknown) return;
  File::PollKind kind = File::PollKind::kAsk;
  if (f.host_fd < 0 && !f.ops->poll && !(f.flags & O_PATH)) kind = File::PollKind::kAlwaysReady;
  struct stat st;
  if (f.host_fd >= 0 && !(f.flags & O_PATH) && host::sys(SYS_fstat, f.host_fd, &st) == 0) {
    bool mem_dev = S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
                   (minor(st.st_rdev) == 3 || minor(st.st_rdev) == 5 || minor(st.st_rdev) == 7);
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || mem_dev) kind = File::PollKind::kAlwaysReady;
  }
  f.poll_kind.store(kind, std::memory_order_relaxed);
}

struct PollSet {
  Heap* heap;
  pollfd* host = nullptr;   // what the host polls; one more slot for the wake eventfd
  File** files = nullptr;   // the files, for the duration
  bool* owned = nullptr;    // which entries of `files` hold a reference
  int n = 0;
  int nvirtual = 0;
  int nhost = 0;    // entries the host has to poll
  int nalways = 0;  // always-ready entries whose events include a ready one
  // The virtual files' answers, kept across the host call that clears
  // them: a file may report an event only once (mountinfo's change).
  short* virtual_revents = nullptr;
  ~PollSet() {
    for (int i = 0; i < n; i++)
      if (owned && owned[i]) files[i]->put();
    heap->free(host);
    heap->free(files);
    heap->free(owned);
    heap->free(virtual_revents);
  }
  bool init(int count) {
    size_t c = count ? (size_t)count : 1;
    host = static_cast<pollfd*>(heap->alloc(sizeof(pollfd) * (c + 1)));
    files = static_cast<File**>(heap->alloc(sizeof(File*) * c));
    owned = static_cast<bool*>(heap->alloc(c));
    virtual_revents = static_cast<short*>(heap->alloc(sizeof(short) * c));
    if (!host || !files || !owned || !virtual_revents) return false;
    n = count;
    return true;
  }
  // Looks the guest descriptors up in one pass (a negative one is
  // skipped). Returns how many are not open.
  int fill(Task& t, const int* fds, const short* events) {
    t.proc->files->get_many(fds, n, files, owned);
    int bad = 0;
    for (int i = 0; i < n; i++) {
      if (files[i]) learn_poll_kind(*files[i]);
      bool always = always_ready(i);
      host[i] = {files[i] && !always ? files[i]->host_fd : -1, events[i], 0};
      if (fds[i] >= 0 && !files[i]) bad++;
      if (virtual_file(i)) nvirtual++;
      if (host[i].fd >= 0) nhost++;
      if (always && (events[i] & kAlwaysReadyMask)) nalways++;
    }
    return bad;
  }
  bool always_ready(int i) const {
    return files[i] && files[i]->poll_kind.load(std::memory_order_relaxed) == File::PollKind::kAlwaysReady;
  }
  // A file with no host descriptor answers for itself (FileOps::poll).
  bool virtual_file(int i) const {
    return files[i] && !always_ready(i) && files[i]->host_fd < 0 && files[i]->ops->poll;
  }
  // The always-ready entries' answers (after the host has cleared them).
  void answer_always_ready() {
    for (int i = 0; i < n; i++)
      if (always_ready(i)) host[i].revents = host[i].events & kAlwaysReadyMask;
  }
};

// Waits until one of the first `n` host descriptors is ready, the deadline
// passes (0: don't wait, UINT64_MAX: forever) or a signal arrives. Returns
// the host's count.
// Nanoseconds until the deadline; a zero timeout (deadline 0, the common
// "just look" call) needs no clock read, each one a host call.
uint64_t time_left(uint64_t deadline) {
  if (deadline == 0) return 0;
  uint64_t now = monotonic_ns();
  return deadline > now ? deadline - now : 0;
}

long host_wait(Task& t, PollSet& ps, int n, uint64_t deadline) {
  timespec rel{}, *tsp = nullptr;
  if (deadline != UINT64_MAX) {
    uint64_t left = time_left(deadline);
    rel = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    tsp = &rel;
  }
  long r = isys(t, SYS_ppoll, ps.host, n, tsp, 0, 8);
  return r == -EINTR ? -ERESTARTNOHAND : r;
}

// Asks the virtual files; returns how many are ready.
long poll_virtual(Task& t, PollSet& ps) {
  long ready = 0;
  for (int i = 0; i < ps.n; i++) {
    if (!ps.virtual_file(i)) continue;
    pollfd& p = ps.host[i];
    p.revents = ps.files[i]->ops->poll(t, *ps.files[i], p.events) & (p.events | POLLERR | POLLHUP | POLLNVAL);
    ps.virtual_revents[i] = p.revents;
    if (p.revents) ready++;
  }
  return ready;
}

// As host_wait, counting files without a host descriptor too. A signalfd
// wakes the wait through the task's wake eventfd, in the extra slot; other
// virtual files (the console's line discipline) have no such hook, so they
// are asked again between 5 ms host waits.
long wait_virtual(Task& t, PollSet& ps, uint64_t deadline);

// Always-ready files make the wait a look: the others are asked without
// waiting, the host not at all when it holds none of them.
long wait_ready(Task& t, PollSet& ps, uint64_t deadline) {
  if (ps.nalways) deadline = 0;
  long r = 0;
  if (ps.nvirtual) r = wait_virtual(t, ps, deadline);
  else if (ps.nhost || !ps.nalways) r = host_wait(t, ps, ps.n, deadline);
  if (r < 0) return r;
  ps.answer_always_ready();
  return r + ps.nalways;
}

long wait_virtual(Task& t, PollSet& ps, uint64_t deadline) {
  constexpr uint64_t kSliceNs = 5000000;
  VirtualWait vw(t);
  vw.arm();
  ps.host[ps.n] = {vw.fd(), POLLIN, 0};
  for (;;) {
    vw.drain();
    long vready = poll_virtual(t, ps);
    uint64_t until = vready ? 0 : deadline;
    uint64_t now = monotonic_ns();
    if (!vready && deadline - now > kSliceNs) until = now + kSliceNs;
    if (deadline <= now) until = 0;
    long r = host_wait(t, ps, ps.n + 1, until);
    if (r < 0) return r;
    if (ps.host[ps.n].revents) r--;  // the wake-up itself is no event
    // The host cleared the virtual entries' revents: put back what they
    // said, or, when nothing was ready before the wait, ask again.
    long v = vready;
    if (vready) {
      for (int i = 0; i < ps.n; i++)
        if (ps.virtual_file(i)) ps.host[i].revents = ps.virtual_revents[i];
    } else {
      v = poll_virtual(t, ps);
    }
    if (r || v) return r + v;
    if (monotonic_ns() >= deadline) return 0;
  }
}

// The deadline of a timeout; 0 for a zero timeout.
uint64_t deadline_after(const timespec& ts) {
  if (ts.tv_sec == 0 && ts.tv_nsec == 0) return 0;
  return monotonic_ns() + (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long do_poll(Task& t, uint64_t guest_fds, uint64_t nfds, uint64_t deadline) {
  if (nfds > (uint64_t)t.proc->files->limit() || nfds > (uint64_t)kMaxPollFds) return -EINVAL;
  PollSet ps{t.kernel->heap};
  if (!ps.init((int)nfds)) return -ENOMEM;
  pollfd* g = ps.host;
  if (nfds && copy_from_user(g, (const void*)guest_fds, sizeof(pollfd) * nfds) < 0) return -EFAULT;
  int guest_fd[kMaxPollFds];
  short events[kMaxPollFds];
  for (int i = 0; i < (int)nfds; i++) {
    guest_fd[i] = g[i].fd;
    events[i] = g[i].events;
  }
  int bad = ps.fill(t, guest_fd, events);
  long r = bad ? 0 : wait_ready(t, ps, deadline);
  if (r < 0) return r;
  long ready = 0;
  for (int i = 0; i < (int)nfds; i++) {
    short rev = ps.host[i].revents;
    if (guest_fd[i] >= 0 && !ps.files[i]) rev = POLLNVAL;
    if (guest_fd[i] < 0) rev = 0;
    if (rev) ready++;
    if (put_user((char*)guest_fds + i * sizeof(pollfd) + offsetof(pollfd, revents), rev) < 0)
      return -EFAULT;
  }
  return ready;
}

// ppoll/pselect: the given mask applies while waiting (signal/wait_mask.h).
void push_mask(Task& t, uint64_t mask) { push_wait_mask(t, mask); }
long pop_mask(Task& t, long r) { return pop_wait_mask(t, r, -ERESTARTNOHAND); }

long do_select(Task& t, int nfds, uint64_t rp, uint64_t wp, uint64_t ep, uint64_t deadline) {
  if (nfds < 0) return -EINVAL;
  if (nfds > t.proc->files->limit()) nfds = t.proc->files->limit();
  fd_set in[3];
  uint64_t ptr[3] = {rp, wp, ep};
  size_t bytes = ((size_t)nfds + 63) / 64 * 8;
  for (int s = 0; s < 3; s++) {
    memset(&in[s], 0, sizeof in[s]);
    if (ptr[s] && copy_from_user(&in[s], (const void*)ptr[s], bytes) < 0) return -EFAULT;
  }
  int count = 0;
  int which[FD_SETSIZE];
  for (int fd = 0; fd < nfds; fd++)
    if (FD_ISSET(fd, &in[0]) || FD_ISSET(fd, &in[1]) || FD_ISSET(fd, &in[2])) which[count++] = fd;
  PollSet ps{t.kernel->heap};
  if (!ps.init(count)) return -ENOMEM;
  short events[FD_SETSIZE];
  for (int i = 0; i < count; i++) {
    int fd = which[i];
    events[i] = (short)((FD_ISSET(fd, &in[0]) ? POLLIN : 0) | (FD_ISSET(fd, &in[1]) ? POLLOUT : 0) |
                        (FD_ISSET(fd, &in[2]) ? POLLPRI : 0));
  }
  if (ps.fill(t, which, events)) return -EBADF;
  long r = wait_ready(t, ps, deadline);
  if (r < 0) return r;
  fd_set out[3];
  for (auto& s : out) memset(&s, 0, sizeof s);
  long ready = 0;
  for (int i = 0; i < count; i++) {
    short rev = ps.host[i].revents;
    int fd = which[i];
    if (FD_ISSET(fd, &in[0]) && (rev & (POLLIN | POLLHUP | POLLERR))) { FD_SET(fd, &out[0]); ready++; }
    if (FD_ISSET(fd, &in[1]) && (rev & (POLLOUT | POLLERR))) { FD_SET(fd, &out[1]); ready++; }
    if (FD_ISSET(fd, &in[2]) && (rev & POLLPRI)) { FD_SET(fd, &out[2]); ready++; }
  }
  for (int s = 0; s < 3; s++)
    if (ptr[s] && copy_to_user((void*)ptr[s], &out[s], bytes) < 0) return -EFAULT;
  return ready;
}

}  // namespace

long sys_poll(Task& t, SyscallArgs a) {
  int ms = (int)a[2];
  uint64_t deadline = ms < 0 ? UINT64_MAX : ms == 0 ? 0 : monotonic_ns() + (uint64_t)ms * 1000000ull;
  return do_poll(t, a[0], a[1], deadline);
}

// ppoll and pselect6 report the time left, as Linux does (glibc's select
// is pselect6 underneath and hands it back as a timeval).
void put_time_left(uint64_t guest_ts, uint64_t deadline) {
  uint64_t left = time_left(deadline);
  timespec rem{(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
  copy_to_user((void*)guest_ts, &rem, sizeof rem);
}

long sys_ppoll(Task& t, SyscallArgs a) {
  uint64_t deadline = UINT64_MAX;
  if (a[2]) {
    timespec ts;
    if (copy_from_user(&ts, (const void*)a[2], sizeof ts) < 0) return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return -EINVAL;
    deadline = deadline_after(ts);
  }
  if (a[3]) {
    if (a[4] != 8) return -EINVAL;
    uint64_t mask;
    if (copy_from_user(&mask, (const void*)a[3], 8) < 0) return -EFAULT;
    push_mask(t, mask);
  }
  long r = pop_mask(t, do_poll(t, a[0], a[1], deadline));
  if (a[2] && (r >= 0 || r == -ERESTARTNOHAND || r == -EINTR)) put_time_left(a[2], deadline);
  return r;
}

long sys_select(Task& t, SyscallArgs a) {
  uint64_t deadline = UINT64_MAX;
  timeval tv{};
  if (a[4]) {
    if (copy_from_user(&tv, (const void*)a[4], sizeof tv) < 0) return -EFAULT;
    if (tv.tv_sec < 0 || tv.tv_usec < 0) return -EINVAL;
    timespec ts{tv.tv_sec + tv.tv_usec / 1000000, (long)(tv.tv_usec % 1000000) * 1000};
    deadline = deadline_after(ts);
  }
  long r = do_select(t, (int)a[0], a[1], a[2], a[3], deadline);
  if (a[4] && r >= 0) {  // Linux reports the time left
    uint64_t left = time_left(deadline);
    timeval rem{(time_t)(left / 1000000000ull), (suseconds_t)(left % 1000000000ull / 1000)};
    copy_to_user((void*)a[4], &rem, sizeof rem);
  }
  return r;
}

long sys_pselect6(Task& t, SyscallArgs a) {
  uint64_t deadline = UINT64_MAX;
  if (a[4]) {
    timespec ts;
    if (copy_from_user(&ts, (const void*)a[4], sizeof ts) < 0) return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return -EINVAL;
    deadline = deadline_after(ts);
  }
  if (a[5]) {
    struct { uint64_t set; uint64_t size; } sm;
    if (copy_from_user(&sm, (const void*)a[5], sizeof sm) < 0) return -EFAULT;
    if (sm.set) {
      if (sm.size != 8) return -EINVAL;
      uint64_t mask;
      if (copy_from_user(&mask, (const void*)sm.set, 8) < 0) return -EFAULT;
      push_mask(t, mask);
    }
  }
  long r = pop_mask(t, do_select(t, (int)a[0], a[1], a[2], a[3], deadline));
  if (a[4] && (r >= 0 || r == -ERESTARTNOHAND || r == -EINTR)) put_time_left(a[4], deadline);
  return r;
}

}  // namespace flatux
