// clone, vfork, fork. A task made with CLONE_VM (a thread, a vfork or
// posix_spawn child) is a host thread in its parent's host process; a
// child without CLONE_VM (fork) gets a host process of its own, a
// copy-on-write copy of its parent's (kernel/task/hostproc.h).
#include <cstring>
#include <linux/errno.h>
#include <linux/sched.h>
#include <sys/syscall.h>

#include "kernel/cgroup/cgroup.h"
#include "kernel/entry/entry.h"
#include "kernel/task/hostproc.h"
#include "kernel/mm/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/seccomp/seccomp.h"
#include "kernel/mm/mm.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/exit.h"
#include "kernel/task/process.h"
#include "kernel/task/caps.h"
#include "kernel/sys/uts.h"
#include "kernel/vfs/mount_ns.h"

namespace flatux {
namespace {

constexpr uint64_t kUnsupported = CLONE_PIDFD | CLONE_PTRACE;
// Namespaces not implemented: EPERM, as a container's policy refuses them
// (sys_unshare.cpp says why).
constexpr uint64_t kNoNamespace = CLONE_NEWCGROUP | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;

// Gives the child what it shares or copies of its parent (not CLONE_THREAD);
// a forked child's Mm comes with its host process (fork_child).
bool share_or_copy(Kernel& k, Task& t, Process& c, uint64_t flags) {
  Process& p = *t.proc;
  if (flags & CLONE_VM) {
    p.mm->refs.fetch_add(1);
    c.mm = p.mm;
  }
  if (flags & CLONE_FILES) {
    p.files->refs.fetch_add(1);
    c.files = p.files;
  } else {
    c.files = p.files->clone();
  }
  if (flags & CLONE_FS) {
    p.fs->refs.fetch_add(1);
    c.fs = p.fs;
  } else {
    c.fs = copy_fs_context(k, *p.fs);
  }
  if (flags & CLONE_SYSVSEM) c.sem_undo = sem_undo_share(k.heap, p);
  if ((flags & CLONE_NEWUTS) && uts_unshare_locked(t, c) < 0) return false;
  if ((flags & CLONE_NEWNS) && c.fs && mnt_ns_unshare_locked(c, *c.fs) < 0) return false;
  if (flags & CLONE_SIGHAND) {
    p.sighand->refs.fetch_add(1);
    c.sighand = p.sighand;
  } else if ((c.sighand = k.heap->make<SigHand>())) {
    memcpy(c.sighand->action, p.sighand->action, sizeof c.sighand->action);
  }
  return c.files && c.fs && c.sighand;
}

// The child starts where the parent trapped, with RAX = 0 and the parent's
// FPU state.
bool prepare_child_entry(Task& t, Task& child, uint64_t flags, uint64_t newsp, uint64_t tls) {
  const greg_t* g = t.regs->uc_mcontext.gregs;
  memcpy(child.entry_regs, g, sizeof child.entry_regs);
  child.entry_regs[REG_RAX] = 0;
  if (newsp) child.entry_regs[REG_RSP] = (greg_t)newsp;
  child.guest_fs = (flags & CLONE_SETTLS) ? tls : t.guest_fs;
  if (const void* fp = t.regs->uc_mcontext.fpregs) {
    size_t n = fpstate_size(fp);
    child.entry_fpstate = t.kernel->heap->alloc(n);
    if (!child.entry_fpstate) return false;
    memcpy(child.entry_fpstate, fp, n);
  }
  return true;
}

// Fork: the child's Mm names the same ranges as the parent's, and a new
// host process holds the host's copy of them. The parent's Mm stays locked
// across the host's copy, so the two agree.
long fork_child(Task& t, Task& child) {
  Kernel& k = *t.kernel;
  Mm& parent = *t.proc->mm;
  Guard g(parent.lock);
  Mm* mm = mm_fork(k.heap, parent);
  if (!mm) {
    hostproc_abandon(child.hproc);
    return -ENOMEM;
  }
  child.proc->mm = mm;
  child.hproc->keep_mm = mm;
  mm_set_map_pool(*mm, child.hproc->maps);
  mm_set_rlimits(*mm, child.proc->rlimits);
  long r = fork_host_process(t, *child.hproc);
  if (r < 0) {
    // Not mapped here as the child's: forget the ranges, unmap nothing.
    child.proc->mm = nullptr;
    mm_forget(k.heap, mm);
  }
  return r;
}

}  // namespace

FsContext* copy_fs_context(Kernel& k, FsContext& from) {
  FsContext* fs = k.heap->make<FsContext>();
  if (!fs) return nullptr;
  {
    Guard g(from.lock);
    fs->cwd = path_get(from.cwd);
    if ((fs->cwd_file = from.cwd_file)) fs->cwd_file->get();
    fs->root = path_get(from.root);
    fs->has_root.store(bool(fs->root), std::memory_order_relaxed);
    if ((fs->root_file = from.root_file)) fs->root_file->get();
  }
  fs->umask = from.umask;
  return fs;
}

long do_clone(Task& t, uint64_t flags, uint64_t newsp, uint64_t ptid, uint64_t ctid, uint64_t tls) {
  if (flags & kUnsupported) return -EINVAL;
  if ((flags & CLONE_THREAD) && !(flags & CLONE_SIGHAND)) return -EINVAL;
  if ((flags & CLONE_SIGHAND) && !(flags & CLONE_VM)) return -EINVAL;
  if ((flags & CLONE_THREAD) && !(flags & CLONE_VM)) return -EINVAL;
  // Namespaces are a process's here, not a thread's.
  if ((flags & (CLONE_NEWUTS | CLONE_NEWNS)) && (flags & CLONE_THREAD)) return -EINVAL;
  // A new mount namespace with a shared root and cwd would move them
  // under the parent's feet (Linux refuses it too).
  if ((flags & CLONE_NEWNS) && (flags & CLONE_FS)) return -EINVAL;
  if (flags & kNoNamespace) return -EPERM;
  if ((flags & (CLONE_NEWUTS | CLONE_NEWNS)) && !capable(t.proc->creds, CAP_SYS_ADMIN)) return -EPERM;
  // init has no parent to share: the sibling would have nobody to reap it
  // (Linux refuses it for the namespace's init too).
  if ((flags & CLONE_PARENT) && t.proc == t.kernel->init) return -EINVAL;
  bool fork = !(flags & CLONE_VM);
  Kernel& k = *t.kernel;
  Task* child;
  {
    Guard g(k.tasks_lock);
    if (t.proc->group_exit) return -EINTR;
    if (k.ntasks >= (int)t.proc->rlimits[6 /*RLIMIT_NPROC*/][0] || k.ntasks >= kMaxTasks) return -EAGAIN;
    // A thread takes a task slot, a host thread and a kernel stack: no more
    // than the process's share of the task table (kernel/sys/host_share.h),
    // so a process at its limit leaves others room to make theirs.
    if ((flags & CLONE_THREAD) && share_verdict(kMaxTasks, kSmallThreads, k.ntasks, t.proc->nthreads, 1) != ShareVerdict::kOk)
      return -EAGAIN;
    // The new task joins the caller's cgroup (a new process too): pids.max.
    if (long e = cgroup_can_add_task_locked(*t.proc)) return e;
    HostProc* hp = fork ? hostproc_new_locked(k) : t.hproc;
    if (!hp) return -EAGAIN;
    int tid = alloc_pid_locked(k);
    if (tid < 0) {
      if (fork) hostproc_abandon(hp);
      return tid;
    }
    Process* proc = t.proc;
    if (!(flags & CLONE_THREAD)) {
      Process* parent = (flags & CLONE_PARENT) && t.proc->parent ? t.proc->parent : t.proc;
      proc = process_create_locked(k, parent, tid);
      if (!proc) {
        if (fork) hostproc_abandon(hp);
        return -EAGAIN;
      }
      cgroup_process_created_locked(k, *proc, t.proc);
      // A sibling (CLONE_PARENT) tells the parent it shares what the caller
      // would have: the caller's own exit signal, whatever was asked (Linux
      // does the same; a chosen one could be fatal to that parent).
      proc->exit_signal = (flags & CLONE_PARENT) ? t.proc->exit_signal : (int)(flags & CSIGNAL);
      if (!share_or_copy(k, t, *proc, flags)) {
        if (fork) hostproc_abandon(hp);
        proc->state = ProcState::kZombie;
        discard_process_resources(*proc);
        release_zombie(*proc);
        return -ENOMEM;
      }
      tid = proc->pid;
    }
    child = task_create_locked(k, *proc, tid, hp);
    if (!child) {
      if (fork) hostproc_abandon(hp);
      if (proc != t.proc) {
        proc->state = ProcState::kZombie;
        discard_process_resources(*proc);
        release_zombie(*proc);
      }
      return -EAGAIN;
    }
    if (fork) hp->first = child;
    child->sigmask = t.sigmask;
    child->nice = t.nice;
    child->ioprio = t.ioprio;
    child->timer_slack_ns = child->default_slack_ns = t.timer_slack_ns;
    child->mce_kill = t.mce_kill;
    seccomp_inherit(*child, t);
    if (!(flags & CLONE_VM) || (flags & CLONE_VFORK)) {
      child->altstack_sp = t.altstack_sp;
      child->altstack_size = t.altstack_size;
      child->altstack_flags = t.altstack_flags;
    }
    if (flags & CLONE_CHILD_CLEARTID) child->clear_child_tid = ctid;
    if (flags & CLONE_VFORK) {
      t.vfork_done.store(0);
      child->vfork_waiter = &t;
    }
  }
  // Linux ignores a bad tid pointer here: the child exists all the same.
  // A forked child writes its CLONE_CHILD_SETTID word itself, in its own
  // copy; the parent's word is written after the copy was made.
  if ((flags & CLONE_PARENT_SETTID) && !fork) put_user((void*)ptid, (int)child->tid);
  if (flags & CLONE_CHILD_SETTID) {
    if (fork) child->set_child_tid = ctid;
    else put_user((void*)ctid, (int)child->tid);
  }
  int tid = child->tid;
  long r = prepare_child_entry(t, *child, flags, newsp, tls) ? 0 : -ENOMEM;
  if (r == 0) r = fork ? fork_child(t, *child) : start_task_thread(*child);
  else if (fork) hostproc_abandon(child->hproc);  // (only ours until cloned)
  if (r < 0) {
    Guard g(k.tasks_lock);
    discard_unstarted_task_locked(*child);
    return r == -ENOMEM ? r : -EAGAIN;
  }
  if ((flags & CLONE_PARENT_SETTID) && fork) put_user((void*)ptid, tid);
  if (flags & CLONE_VFORK) {
    // The parent sleeps until the child has exec'd or exited: they share
    // the stack the child is running on. A fatal signal ends the wait (the
    // child runs on); the way back to guest mode then acts on it.
    while (t.vfork_done.load() == 0 && !fatal_signal_pending(t)) futex_wait(&t.vfork_done, 0);
    if (t.vfork_done.load() != 1) {
      Guard g(k.tasks_lock);
      if (t.vfork_done.load() != 1) forget_vfork_child_locked(t);
    }
  }
  return tid;
}

long sys_clone(Task& t, SyscallArgs a) { return do_clone(t, a[0], a[1], a[2], a[3], a[4]); }

// clone3: the same kinds of child, described by struct clone_args.
long sys_clone3(Task& t, SyscallArgs a) {
  struct clone_args ca;
  size_t size = a[1];
  if (size < CLONE_ARGS_SIZE_VER0 || size > 4096) return -EINVAL;
  memset(&ca, 0, sizeof ca);
  if (copy_from_user(&ca, (const void*)a[0], size < sizeof ca ? size : sizeof ca) < 0) return -EFAULT;
  if (ca.exit_signal & ~(uint64_t)CSIGNAL) return -EINVAL;
  if (ca.set_tid || ca.set_tid_size || (ca.flags & (CLONE_INTO_CGROUP | CLONE_CLEAR_SIGHAND))) return -EINVAL;
  if ((ca.stack == 0) != (ca.stack_size == 0)) return -EINVAL;
  uint64_t flags = ca.flags | ca.exit_signal;
  uint64_t sp = ca.stack ? ca.stack + ca.stack_size : 0;
  return do_clone(t, flags, sp, ca.parent_tid, ca.child_tid, ca.tls);
}
long sys_vfork(Task& t, SyscallArgs) { return do_clone(t, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0); }
long sys_fork(Task& t, SyscallArgs) { return do_clone(t, SIGCHLD, 0, 0, 0, 0); }

}  // namespace flatux
