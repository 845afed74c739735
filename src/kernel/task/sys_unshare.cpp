// unshare(2) and setns(2). unshare: the caller stops sharing what it shares with other
// processes: its descriptor table (CLONE_FILES), root, cwd and umask
// (CLONE_FS), its SEM_UNDO list (CLONE_SYSVSEM), and its UTS namespace
// and mount namespaces (CLONE_NEWUTS, CLONE_NEWNS: copies of their own).
// The namespaces flatux does not have
// yet are refused with EPERM, as a container's policy refuses them, so
// that programs that can do without (systemd's service sandboxing, which
// treats EINVAL as fatal and EPERM as "confined") carry on; CLONE_THREAD,
// CLONE_VM and CLONE_SIGHAND are allowed only when there is nothing to
// unshare.
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/sched.h>

#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/mm/mm.h"
#include "kernel/sys/uts.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"
#include "kernel/task/exit.h"
#include "kernel/task/process.h"
#include "kernel/fs/nsfs/nsfs.h"
#include "kernel/task/pidfd.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/mount_ns.h"

namespace flatux {
namespace {

constexpr uint64_t kNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;
constexpr uint64_t kKnown = kNamespaces | CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_THREAD | CLONE_VM |
                            CLONE_SIGHAND;
constexpr uint64_t kHere = CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_NEWUTS | CLONE_NEWNS | CLONE_THREAD |
                           CLONE_VM | CLONE_SIGHAND;

// Linux's unshare_check: the flags that unshare the thread group itself
// only work when it has nothing to share. Tables, fs info and the UTS
// namespace are a process's here, not a thread's: with other threads
// still using them they are not swapped either (EINVAL).
long check_alone(Process& p, uint64_t flags) {
  constexpr uint64_t kProcessWide = CLONE_FILES | CLONE_FS | CLONE_NEWUTS | CLONE_NEWNS;
  if (!(flags & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | kProcessWide))) return 0;
  if (p.nthreads > 1) return -EINVAL;
  if ((flags & CLONE_SIGHAND) && p.sighand->refs.load() > 1) return -EINVAL;
  if ((flags & CLONE_VM) && p.mm->refs.load() > 1) return -EINVAL;
  return 0;
}

}  // namespace

long sys_unshare(Task& t, SyscallArgs a) {
  uint64_t flags = a[0];
  if (flags & ~kKnown) return -EINVAL;
  // What one flag brings with it (Linux's unshare_check order).
  if (flags & CLONE_VM) flags |= CLONE_SIGHAND;
  if (flags & CLONE_SIGHAND) flags |= CLONE_THREAD;
  if (flags & CLONE_NEWNS) flags |= CLONE_FS;
  if (flags & ~kHere) return -EPERM;  // a namespace not implemented
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  if (long r = check_alone(p, flags)) return r;
  if ((flags & (CLONE_NEWUTS | CLONE_NEWNS)) && !capable(p.creds, CAP_SYS_ADMIN)) return -EPERM;
  FdTable* files = nullptr;
  FsContext* fs = nullptr;
  if ((flags & CLONE_FILES) && p.files->refs.load() > 1 && !(files = p.files->clone())) return -ENOMEM;
  if ((flags & CLONE_FS) && p.fs->refs.load() > 1 && !(fs = copy_fs_context(k, *p.fs))) {
    drop_files(files, k.heap);
    return -ENOMEM;
  }
  if (flags & CLONE_NEWUTS) {
    if (long r = uts_unshare(t, p)) {
      drop_files(files, k.heap);
      drop_fs(fs, k.heap);
      return r;
    }
  }
  if (flags & CLONE_NEWNS) {
    // Last of what can fail: a new namespace is not taken back.
    if (long r = mnt_ns_unshare(p, fs ? *fs : *p.fs)) {
      drop_files(files, k.heap);
      drop_fs(fs, k.heap);
      return r;
    }
  }
  if (files) {
    drop_files(p.files, k.heap);
    p.files = files;
  }
  if (fs) {
    drop_fs(p.fs, k.heap);
    p.fs = fs;
  }
  if (flags & CLONE_SYSVSEM) sem_exit(k, p);
  return 0;
}

// setns(2). The kernel's own namespaces (mount, UTS) are joined; of the
// other kinds each has one namespace, which the caller is in already:
// joining it needs what Linux's needs (CAP_SYS_ADMIN) and changes nothing,
// and the caller's own user namespace cannot be entered again (EINVAL).
namespace {

long join_uts(Task& t, UtsNames* u) {
  Process& p = *t.proc;
  if (!capable(p.creds, CAP_SYS_ADMIN)) return -EPERM;
  if (p.nthreads > 1) return -EINVAL;  // a process's here, a thread's on Linux
  if (u) u->refs.fetch_add(1, std::memory_order_relaxed);
  UtsNames* old_ns;
  {
    Guard g(t.kernel->tasks_lock);
    old_ns = p.uts;
    p.uts = u;
  }
  uts_put(t.kernel->heap, old_ns);
  return 0;
}

long join_single(Task& t, NsKind kind) {
  if (kind == NsKind::kUser) return -EINVAL;
  return capable(t.proc->creds, CAP_SYS_ADMIN) ? 0 : -EPERM;
}

long join(Task& t, const NsTarget& ns) {
  switch (ns.kind) {
    case NsKind::kMnt: return mnt_ns_enter(t, ns.mnt);
    case NsKind::kUts: return join_uts(t, ns.uts);
    default: return join_single(t, ns.kind);
  }
}

// setns(pidfd, flags): every namespace in flags of the process the pidfd
// names. Each is checked before any is joined, as Linux's validate_nsset.
long join_of_process(Task& t, int pid, uint64_t flags) {
  if (!flags || (flags & ~kNamespaces)) return -EINVAL;
  Kernel& k = *t.kernel;
  constexpr NsKind kOrder[] = {NsKind::kUser, NsKind::kMnt, NsKind::kUts, NsKind::kIpc, NsKind::kPid,
                               NsKind::kCgroup, NsKind::kNet, NsKind::kTime};
  File* held[8] = {};
  NsTarget targets[8];
  int n = 0;
  long r = 0;
  {
    Guard g(k.tasks_lock);
    Process* p = find_process_locked(k, pid);
    if (!p || p->state != ProcState::kRunning) return -ESRCH;
    for (NsKind kind : kOrder) {
      if (!(flags & (uint64_t)ns_clone_flag(kind))) continue;
      // The same user namespace is not entered, and not an error here.
      if (kind == NsKind::kUser) continue;
      if ((r = ns_open_locked(k, *p, kind, O_RDONLY, &held[n])) < 0) break;
      ns_file_target(*held[n], &targets[n]);
      n++;
    }
  }
  if (r == 0 && (flags & CLONE_NEWUSER) && n == 0) r = -EINVAL;
  for (int i = 0; i < n && r == 0; i++)
    if (targets[i].kind != NsKind::kMnt && targets[i].kind != NsKind::kUts) r = join_single(t, targets[i].kind);
  for (int i = 0; i < n && r == 0; i++)
    if (targets[i].kind == NsKind::kMnt || targets[i].kind == NsKind::kUts) r = join(t, targets[i]);
  for (int i = 0; i < n; i++) held[i]->put();
  return r;
}

}  // namespace

long sys_setns(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  NsTarget ns;
  if (ns_file_target(*f, &ns)) {
    int nstype = (int)a[1];
    if (nstype && nstype != ns_clone_flag(ns.kind)) return -EINVAL;
    return join(t, ns);
  }
  if (int pid = pidfd_pid(*f)) return join_of_process(t, pid, a[1]);
  return -EINVAL;
}

}  // namespace flatux
