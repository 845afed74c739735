// pidfds: descriptors that name a process (pidfd_open, pidfd_send_signal,
// pidfd_getfd). A pidfd's host side is an eventfd, written when the
// process exits, so poll, select and epoll on it are the host's own and it
// reads as ready (POLLIN) from the exit on, as on Linux. A pidfd keeps
// naming its process until the process is reaped; after that it names no
// one (ESRCH), even if the number is reused. A directory opened as
// /proc/PID is accepted by pidfd_send_signal too, as Linux does.
#include "kernel/task/pidfd.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/procfs/procfs.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/process.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/synth.h"
#include "kernel/task/caps.h"

namespace flatux {

struct PidFd {
  Process* proc;  // nullptr once reaped (tasks_lock)
  int pid;
  int event_fd;   // the File's host descriptor
  PidFd* next;    // on proc->pidfds (tasks_lock)
};

namespace {

constexpr uint64_t kPidfdNonblock = O_NONBLOCK;
constexpr uint64_t kSignalThread = 1, kSignalThreadGroup = 2, kSignalProcessGroup = 4;


PidFd* pidfd_of(File& f);

long pidfd_read(Task&, File&, void*, size_t) { return -EINVAL; }
long pidfd_write(Task&, File&, const void*, size_t) { return -EINVAL; }
long pidfd_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, 0600, (uint64_t)pidfd_of(f)->pid, 0, 0xd);  // an anonymous inode
  return 0;
}

void pidfd_release(File& f) {
  PidFd* pf = static_cast<PidFd*>(f.priv);
  if (!pf) return;
  if (pf->proc) {
    Kernel& k = *pf->proc->kernel;
    Guard g(k.tasks_lock);
    if (Process* p = pf->proc) {
      for (PidFd** link = &p->pidfds; *link; link = &(*link)->next)
        if (*link == pf) {
          *link = pf->next;
          break;
        }
    }
  }
  f.heap->destroy_obj(pf);
}

const FileOps kPidfdOps = {
    .read = pidfd_read, .write = pidfd_write, .pread = nullptr, .pwrite = nullptr, .lseek = nullptr,
    .stat = pidfd_stat, .getdents64 = nullptr, .ioctl = nullptr, .statfs = nullptr,
    .release = pidfd_release,
};

PidFd* pidfd_of(File& f) { return f.ops == &kPidfdOps ? static_cast<PidFd*>(f.priv) : nullptr; }

void mark_exited(const PidFd& pf) {
  uint64_t one = 1;
  host::sys(SYS_write, pf.event_fd, &one, sizeof one);
}

// The live (or zombie) process a pidfd or a /proc/PID directory names;
// tasks_lock held. ESRCH once it has been reaped, EBADF for other files.
long target_locked(Kernel& k, File& f, Process** out) {
  if (PidFd* pf = pidfd_of(f)) {
    if (!pf->proc) return -ESRCH;
    *out = pf->proc;
    return 0;
  }
  int pid = procfs_dir_pid(f);
  if (pid <= 0) return -EBADF;
  Process* p = find_process_locked(k, pid);
  if (!p) return -ESRCH;
  *out = p;
  return 0;
}


// An exited, not yet reaped process (found among its parent's children).
Process* zombie_locked(Kernel& k, int pid) {
  for (Task* x : k.live_tasks()) {
    if (!x) continue;
    for (Process* c = x->proc->children; c; c = c->sibling)
      if (c->pid == pid && c->state == ProcState::kZombie) return c;
  }
  return nullptr;
}

}  // namespace

void pidfd_process_exited(Process& p) {
  for (PidFd* pf = p.pidfds; pf; pf = pf->next) mark_exited(*pf);
}

void pidfd_process_released(Process& p) {
  for (PidFd* pf = p.pidfds; pf; pf = pf->next) pf->proc = nullptr;
  p.pidfds = nullptr;
}

int pidfd_pid(File& f) {
  PidFd* pf = pidfd_of(f);
  return pf ? pf->pid : 0;
}

long sys_pidfd_open(Task& t, SyscallArgs a) {
  int pid = (int)a[0];
  if (a[1] & ~kPidfdNonblock) return -EINVAL;
  if (pid <= 0) return -EINVAL;
  Kernel& k = *t.kernel;
  long efd = host::sys(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return efd;
  PidFd* pf = k.heap->make<PidFd>();
  File* f = pf ? file_alloc(k.heap, &kPidfdOps, O_RDWR | (uint32_t)(a[1] & kPidfdNonblock), (int)efd) : nullptr;
  if (!f) {
    if (pf) k.heap->destroy_obj(pf);
    host::sys(SYS_close, efd);
    return -ENOMEM;
  }
  pf->pid = pid;
  pf->event_fd = (int)efd;
  f->priv = pf;
  {
    Guard g(k.tasks_lock);
    Task* x = find_task_locked(k, pid);
    Process* p = x ? x->proc : zombie_locked(k, pid);
    // A thread that is not its process's leader: EINVAL; no one: ESRCH.
    long err = !p ? -ESRCH : p->pid != pid ? -EINVAL : 0;
    if (err) {
      f->put();
      return err;
    }
    pf->proc = p;
    pf->next = p->pidfds;
    p->pidfds = pf;
    if (p->state == ProcState::kZombie) mark_exited(*pf);
  }
  int fd = t.proc->files->install(f, true);  // pidfds are always close-on-exec
  f->put();
  return fd;
}

// flags: at most one of PIDFD_SIGNAL_THREAD (the thread the pid names),
// _THREAD_GROUP (its process, the default) and _PROCESS_GROUP.
long sys_pidfd_send_signal(Task& t, SyscallArgs a) {
  int sig = (int)a[1];
  uint64_t scope = a[3];
  if (scope & ~(uint64_t)(kSignalThread | kSignalThreadGroup | kSignalProcessGroup)) return -EINVAL;
  if (scope & (scope - 1)) return -EINVAL;
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  siginfo_t si;
  bool have_info = a[2] != 0;
  if (have_info && copy_from_user(&si, (const void*)a[2], sizeof si) < 0) return -EFAULT;
  if (have_info && si.si_signo != sig) return -EINVAL;
  if (a[1] > (uint64_t)kNSig) return -EINVAL;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Process* p = nullptr;
  if (long r = target_locked(k, *f, &p); r < 0) return r;
  if (have_info && p != t.proc && (si.si_code >= 0 || si.si_code == SI_TKILL)) return -EPERM;
  if (p->state != ProcState::kRunning) return 0;  // a zombie takes (and drops) any signal
  if (!have_info) si = user_siginfo(t, sig, scope == kSignalThread ? SI_TKILL : SI_USER);
  if (scope == kSignalProcessGroup) {
    send_signal_pgrp_locked(k, p->pgid, sig, si, sent_by(*t.proc));
    return 0;
  }
  Task* thread = nullptr;
  if (scope == kSignalThread) {
    thread = find_task_locked(k, p->pid);
    if (!thread || thread->proc != p) return -ESRCH;
  }
  return send_signal(*p, thread, sig, si, sent_by(*t.proc));
}

long sys_pidfd_getfd(Task& t, SyscallArgs a) {
  if (a[2]) return -EINVAL;
  FdRef f(t, a[0]);
  if (!f || !pidfd_of(*f)) return -EBADF;
  Kernel& k = *t.kernel;
  File* got = nullptr;
  {
    Guard g(k.tasks_lock);
    Process* p = nullptr;
    if (long r = target_locked(k, *f, &p); r < 0) return r;
    if (p->state != ProcState::kRunning || !p->files) return -ESRCH;
    if (!ptrace_may_access(*t.proc, *p)) return -EPERM;
    if (a[1] > (uint64_t)FdTable::kMaxFds || !(got = p->files->get((int)a[1]))) return -EBADF;
  }
  int fd = t.proc->files->install(got, true);
  got->put();
  return fd;
}

}  // namespace flatux
