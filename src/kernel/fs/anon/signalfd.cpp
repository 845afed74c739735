// signalfd: guest signals are virtual, so this file is too (no host
// descriptor). A read takes pending guest signals in its mask from the
// reading thread's and its process's pending sets, as Linux does; a
// blocking read sleeps on the process's "signal queued" counter, which
// send_signal bumps for blocked signals too (they set no notify word).
// poll, select and epoll ask FileOps::poll and are woken through
// virtual_wait.h.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/anon/virtual_wait.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr uint64_t kUnblockable = (1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1));

uint64_t mask_of(const File& f) { return __atomic_load_n(&f.priv_word, __ATOMIC_ACQUIRE); }

// Takes one pending signal in `mask` (the thread's own first, then the
// process's; the lowest number first). Returns it, or 0.
int take(Task& t, uint64_t mask, siginfo_t* info) {
  Guard g(t.proc->siglock);
  SigPending* from = &t.pending;
  uint64_t ready = t.pending.set & mask;
  if (!ready) {
    from = &t.proc->shared_pending;
    ready = from->set & mask;
  }
  if (!ready) return 0;
  int sig = __builtin_ctzll(ready) + 1;
  dequeue_signal_locked(t.kernel->heap, *from, sig, info);
  recalc_notify_locked(t);
  return sig;
}

// Which siginfo fields are meaningful, by the sender's kind (Linux's
// siginfo layouts); the rest stay zero.
void to_ssi(const siginfo_t& si, signalfd_siginfo& o) {
  memset(&o, 0, sizeof o);
  o.ssi_signo = (uint32_t)si.si_signo;
  o.ssi_errno = si.si_errno;
  o.ssi_code = si.si_code;
  int sig = si.si_signo;
  bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP;
  if (si.si_code == SI_TIMER) {
    o.ssi_tid = (uint32_t)si.si_timerid;
    o.ssi_overrun = (uint32_t)si.si_overrun;
    o.ssi_ptr = (uint64_t)si.si_value.sival_ptr;
    o.ssi_int = si.si_value.sival_int;
  } else if (si.si_code == SI_QUEUE || si.si_code == SI_MESGQ || si.si_code == SI_ASYNCIO) {
    o.ssi_pid = (uint32_t)si.si_pid;
    o.ssi_uid = si.si_uid;
    o.ssi_ptr = (uint64_t)si.si_value.sival_ptr;
    o.ssi_int = si.si_value.sival_int;
  } else if (si.si_code > 0 && sig == SIGCHLD) {
    o.ssi_pid = (uint32_t)si.si_pid;
    o.ssi_uid = si.si_uid;
    o.ssi_status = si.si_status;
    o.ssi_utime = (uint64_t)si.si_utime;
    o.ssi_stime = (uint64_t)si.si_stime;
  } else if (si.si_code > 0 && fault) {
    o.ssi_addr = (uint64_t)si.si_addr;
  } else if (si.si_code > 0 && sig == SIGPOLL) {
    o.ssi_band = (uint32_t)si.si_band;
    o.ssi_fd = si.si_fd;
  } else {
    o.ssi_pid = (uint32_t)si.si_pid;
    o.ssi_uid = si.si_uid;
  }
}

long sfd_read(Task& t, File& f, void* buf, size_t n) {
  constexpr size_t kRec = sizeof(signalfd_siginfo);
  if (n < kRec) return -EINVAL;
  Process& p = *t.proc;
  size_t done = 0;
  while (done + kRec <= n) {
    uint32_t seq = p.sig_queued.load(std::memory_order_acquire);
    siginfo_t si;
    if (take(t, mask_of(f), &si)) {
      signalfd_siginfo o;
      to_ssi(si, o);
      if (copy_to_user((char*)buf + done, &o, kRec) < 0) return done ? (long)done : -EFAULT;
      done += kRec;
      continue;
    }
    if (done) break;  // only the first record is waited for
    if (f.flags & O_NONBLOCK) return -EAGAIN;
    // Counted, so senders make the futex wake only when someone sleeps here.
    p.sig_queued_sleepers.fetch_add(1, std::memory_order_seq_cst);
    long r = seq == p.sig_queued.load(std::memory_order_seq_cst) ? isys(t, SYS_futex, &p.sig_queued, FUTEX_WAIT, seq, 0) : 0;
    p.sig_queued_sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (r == -EINTR && t.notify.load()) return -ERESTARTSYS;
  }
  return (long)done;
}

short sfd_poll(Task& t, File& f, short) {
  Guard g(t.proc->siglock);
  return ((t.pending.set | t.proc->shared_pending.set) & mask_of(f)) ? POLLIN : 0;
}

long sfd_stat(Task&, File&, struct stat* out) {
  memset(out, 0, sizeof *out);
  out->st_mode = 0600;  // an anonymous inode, as Linux shows it
  out->st_nlink = 1;
  out->st_blksize = 4096;
  return 0;
}

const FileOps kSignalfdOps = {
    .read = sfd_read,
    .write = nullptr,
    .pread = nullptr,
    .pwrite = nullptr,
    .lseek = nullptr,
    .stat = sfd_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = nullptr,
    .poll = sfd_poll,
};

long do_signalfd(Task& t, uint64_t fd, uint64_t guest_mask, uint64_t size, uint64_t flags) {
  if (flags & ~(uint64_t)(SFD_CLOEXEC | SFD_NONBLOCK)) return -EINVAL;
  if (size != 8) return -EINVAL;
  uint64_t mask;
  if (copy_from_user(&mask, (const void*)guest_mask, 8) < 0) return -EFAULT;
  mask &= ~kUnblockable;
  if ((int)fd != -1) {
    FdRef f(t, fd);
    if (!f) return -EBADF;
    if (f->ops != &kSignalfdOps) return -EINVAL;
    __atomic_store_n(&f->priv_word, mask, __ATOMIC_RELEASE);
    // A reader asleep on the old mask looks again.
    t.proc->sig_queued.fetch_add(1);
    futex_wake(&t.proc->sig_queued, 1 << 30);
    Guard g(t.proc->siglock);
    virtual_wait_wake_locked(*t.proc, nullptr);
    return (long)(int)fd;
  }
  File* f = file_alloc(t.kernel->heap, &kSignalfdOps, O_RDWR | ((flags & SFD_NONBLOCK) ? O_NONBLOCK : 0), -1);
  if (!f) return -ENOMEM;
  f->priv_word = mask;
  int nfd = t.proc->files->install(f, flags & SFD_CLOEXEC);
  f->put();
  return nfd;
}

}  // namespace

long sys_signalfd(Task& t, SyscallArgs a) { return do_signalfd(t, a[0], a[1], a[2], 0); }
long sys_signalfd4(Task& t, SyscallArgs a) { return do_signalfd(t, a[0], a[1], a[2], a[3]); }

}  // namespace flatux
