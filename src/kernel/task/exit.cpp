#include "kernel/cgroup/cgroup.h"
#include "kernel/task/exit.h"

#include <cstring>
#include <ctime>
#include <linux/errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kernel/entry/entry.h"
#include "kernel/task/hostproc.h"
#include "kernel/vfs/mount_ns.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/anon/virtual_wait.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/seccomp/seccomp.h"
#include "kernel/sys/uts.h"
#include "kernel/vfs/locks.h"
#include "kernel/mm/mm.h"
#include "kernel/signal/signal.h"
#include "kernel/task/pidfd.h"
#include "kernel/task/process.h"
#include "kernel/time.h"
#include "kernel/timer/timer.h"
#include "kernel/tty/tty.h"

extern "C" void flatux_exit_thread() __attribute__((noreturn));

namespace flatux {

void drop_files(FdTable* f, Heap* h) {
  if (f && f->refs.fetch_sub(1) == 1) h->destroy_obj(f);
}

void drop_fs(FsContext* fs, Heap* h) {
  if (fs && fs->refs.fetch_sub(1) == 1) h->destroy_obj(fs);
}

namespace {

constexpr long kThreadUserClock = (~0L << 3) | 4 | 1;  // MAKE_THREAD_CPUCLOCK(0, CPUCLOCK_VIRT)

// The calling thread's CPU time: all of it, or its user part (the host's
// MAKE_THREAD_CPUCLOCK(0, CPUCLOCK_VIRT): guest code and the kernel's own
// work in it count as the host counts them).
uint64_t thread_cpu_ns(bool user_only) {
  timespec ts;
  if (host::sys(SYS_clock_gettime, user_only ? kThreadUserClock : (long)CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Linux's robust futex protocol: locks a dying thread still holds get
// FUTEX_OWNER_DIED and one waiter is woken.
void release_robust_list(Task& t) {
  if (!t.robust_list) return;
  struct { uint64_t next; int64_t offset; uint64_t pending; } head;
  if (copy_from_user(&head, (const void*)t.robust_list, sizeof head) < 0) return;
  uint64_t entry = head.next;
  for (int n = 0; entry && entry != t.robust_list && n < 2048; n++) {
    uint64_t next;
    if (copy_from_user(&next, (const void*)entry, 8) < 0) return;
    uint64_t word_addr = entry + head.offset;
    uint32_t word;
    if (get_user(word, (const void*)word_addr) == 0 && (word & FUTEX_TID_MASK) == (uint32_t)t.tid) {
      uint32_t nw = (word & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
      put_user((void*)word_addr, nw);
      if (word & FUTEX_WAITERS) host::sys(SYS_futex, word_addr, FUTEX_WAKE, 1, 0, 0, 0);
    }
    entry = next;
  }
}

void drop_mm(Mm* mm, Heap* h) {
  if (mm && mm->refs.fetch_sub(1) == 1) {
    mm_release(*mm);
    h->destroy_obj(mm);
  }
}

void drop_sighand(SigHand* s, Heap* h) {
  if (s && s->refs.fetch_sub(1) == 1) h->destroy_obj(s);
}

bool parent_autoreaps(Process& parent) {
  const GuestSigaction& a = parent.sighand->action[SIGCHLD - 1];
  return a.handler == (uint64_t)SIG_IGN || (a.flags & SA_NOCLDWAIT);
}

void notify_parent(Process& p, int code, int status) {
  Process* parent = p.parent;
  if (!parent) return;
  parent->child_event.fetch_add(1);
  futex_wake(&parent->child_event, 1 << 30);
  int sig = code == CLD_EXITED || code == CLD_KILLED || code == CLD_DUMPED ? p.exit_signal : SIGCHLD;
  if (!sig) return;
  if (code != CLD_EXITED && code != CLD_KILLED && code != CLD_DUMPED &&
      (parent->sighand->action[SIGCHLD - 1].flags & SA_NOCLDSTOP))
    return;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = code;
  si.si_pid = p.pid;
  si.si_uid = p.creds.uid;
  si.si_status = status;
  send_signal(*parent, nullptr, sig, si, sent_by(p));
}

void tell_launcher(Kernel& k) {
  if (k.cfg.launcher_event_fd < 0) return;
  uint64_t one = 1;
  host::sys(SYS_write, k.cfg.launcher_event_fd, &one, sizeof one);
}

void report_entered_exit(Kernel& k, Process& p) {
  for (Kernel::Entered& e : k.entered)
    if (e.pid == p.pid && !e.ended) {
      e.wait_status = p.wait_status;
      e.ended = true;
    }
  tell_launcher(k);
}

// The last thread has gone: the process becomes a zombie (or vanishes).
void exit_process(Task& t) {
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  discard_process_resources(p);
  tty_session_leader_exit_locked(p);
  timers_release_process(k, p);
  if (&p == k.init) {
    k.exit_wait_status = p.wait_status;
    k.halted.store(1);
    futex_wake(&k.halted, 1 << 30);
    tell_launcher(k);
  }
  // Orphans go to the nearest live subreaper above (PR_SET_CHILD_SUBREAPER),
  // else to the first process, as they would to init; each that asked for
  // it (PR_SET_PDEATHSIG) hears of its parent's death.
  Process* adopter = nullptr;
  for (Process* up = p.parent; up && !adopter; up = up->parent)
    if (up->child_subreaper && up->state == ProcState::kRunning) adopter = up;
  if (!adopter && k.init && k.init != &p) adopter = k.init;
  while (Process* c = p.children) {
    p.children = c->sibling;
    c->parent = adopter;
    if (c->pdeath_signal && c->state == ProcState::kRunning) {
      siginfo_t si;
      memset(&si, 0, sizeof si);
      si.si_signo = c->pdeath_signal;
      si.si_code = SI_USER;
      si.si_pid = p.pid;
      si.si_uid = p.creds.uid;
      send_signal(*c, nullptr, c->pdeath_signal, si, sent_by(p));
    }
    c->exit_signal = SIGCHLD;  // the adopter hears SIGCHLD, whatever the first parent asked (Linux's reparent_leader)
    if (adopter) {
      c->sibling = adopter->children;
      adopter->children = c;
      if (c->state == ProcState::kZombie) notify_parent(*c, CLD_EXITED, 0);
    } else if (c->state == ProcState::kZombie) {
      release_zombie(*c);
    }
  }
  p.state = ProcState::kZombie;
  cgroup_process_exited_locked(k, p);
  pidfd_process_exited(p);
  int status = p.wait_status;
  int code = WIFSIGNALED(status) ? (WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED) : CLD_EXITED;
  int value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
  if (p.entered && !p.parent) {  // its waiter is outside: told, and nothing is left to reap
    report_entered_exit(k, p);
    release_zombie(p);
    return;
  }
  if (p.parent && parent_autoreaps(*p.parent) && p.exit_signal == SIGCHLD) {
    Process* parent = p.parent;
    release_zombie(p);
    parent->child_event.fetch_add(1);
    futex_wake(&parent->child_event, 1 << 30);
    return;
  }
  notify_parent(p, code, value);
}

}  // namespace

void discard_process_resources(Process& p) {
  Heap* h = p.kernel->heap;
  p.kernel->locks->on_exit(p);
  sem_exit(*p.kernel, p);
  drop_files(p.files, h);
  drop_fs(p.fs, h);
  mnt_ns_leave(p);
  drop_mm(p.mm, h);
  p.files = nullptr;
  p.fs = nullptr;
  p.mm = nullptr;
}

void release_vfork_waiter(Task& t) {
  if (Task* w = t.vfork_waiter) {
    t.vfork_waiter = nullptr;
    w->vfork_done.store(1);
    futex_wake(&w->vfork_done, 1);
  }
}

void interrupt_vfork_wait(Task& t) {
  uint32_t waiting = 0;
  if (t.vfork_done.compare_exchange_strong(waiting, 2)) futex_wake(&t.vfork_done, 1);
}

void forget_vfork_child_locked(Task& t) {
  for (Task* x : t.kernel->tasks)
    if (x && x->vfork_waiter == &t) x->vfork_waiter = nullptr;
}

void release_zombie(Process& p) {
  Kernel& k = *p.kernel;
  pidfd_process_released(p);
  cgroup_process_released_locked(k, p);
  if (Process* parent = p.parent) {
    Process** link = &parent->children;
    while (*link && *link != &p) link = &(*link)->sibling;
    if (*link) *link = p.sibling;
    parent->children_cpu_ns += p.cpu_ns + p.children_cpu_ns;
  }
  drop_sighand(p.sighand, k.heap);
  p.sighand = nullptr;
  uts_leave(k.heap, p);
  {
    Guard g(p.siglock);
    sigq_clear(k.heap, p.shared_pending);
  }
  k.heap->destroy_obj(&p);
}

void reap_dead_tasks(Kernel& k) {
  hostprocs_mark_gone_locked(k);
  Task** link = &k.dead_tasks;
  while (Task* t = *link) {
    // The host clears host_tid when the thread is gone, but not for the
    // last thread of a host process: its whole process being gone says it.
    // A sender that still has to kick the task keeps it (pins).
    if ((t->host_tid.load() == 0 || (t->hproc && t->hproc->gone)) && t->pins.load() == 0) {
      *link = t->dead_next;
      kstack_release(*t);
      virtual_wait_release(*t);
      seccomp_release(*t);
      k.heap->destroy_obj(t);
    } else {
      link = &t->dead_next;
    }
  }
  hostprocs_free_gone_locked(k);
}

void exit_thread(Task& t) {
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  if (t.clear_child_tid) {
    // The pthread_join protocol: zero the tid word and wake a joiner.
    if (put_user((void*)t.clear_child_tid, (uint32_t)0) == 0)
      host::sys(SYS_futex, t.clear_child_tid, FUTEX_WAKE, 1, 0, 0, 0);
  }
  release_robust_list(t);
  uint64_t cpu = thread_cpu_ns(false), user = thread_cpu_ns(true);
  FdTable* files = nullptr;
  bool last = false;
  {
    Guard g(k.tasks_lock);
    {
      Guard s(p.siglock);
      Task** link = &p.threads;
      while (*link && *link != &t) link = &(*link)->next_thread;
      if (*link) *link = t.next_thread;
      sigq_clear(k.heap, t.pending);
    }
    release_vfork_waiter(t);
    p.nthreads--;
    cgroup_task_removed_locked(p);
    p.cpu_ns += cpu;
    p.cpu_user_ns += user < cpu ? user : cpu;
    k.remove_task_locked(&t);
    t.dead_next = k.dead_tasks;
    k.dead_tasks = &t;
    p.threads_gone.fetch_add(1);
    futex_wake(&p.threads_gone, 1 << 30);
    if (p.nthreads == 0) {
      last = true;
      files = p.files;
      p.files = nullptr;
    }
  }
  if (last) {
    // The last thread closes the descriptors without tasks_lock (closing a
    // file may take it: a pty master hangs up its slave's session), then
    // makes the process a zombie.
    drop_files(files, k.heap);
    // The mount namespace too: its last process unmounts its mounts, and a
    // filesystem's last unmount (an ext4 write-back) is no work for under
    // tasks_lock. Taken from the process under it (procfs counts a
    // reference there), let go after.
    MountNs* ns;
    {
      Guard g(k.tasks_lock);
      ns = p.mnt_ns;
      p.mnt_ns = nullptr;
    }
    if (ns) k.vfs->put_ns(ns);
    Guard g(k.tasks_lock);
    exit_process(t);
  }
  // Last, holding nothing: a forked host process may end right here.
  hostproc_task_left(k, t.hproc);
  flatux_exit_thread();
}

void do_exit(Task& t, int wait_status) {
  {
    Guard g(t.kernel->tasks_lock);
    if (!t.proc->group_exit && t.proc->nthreads == 1) t.proc->wait_status = wait_status;
  }
  exit_thread(t);
}

void do_group_exit(Task& t, int wait_status) {
  Process& p = *t.proc;
  {
    Guard g(t.kernel->tasks_lock);
    if (!p.group_exit) {
      p.group_exit = true;
      p.wait_status = wait_status;
    }
    Guard s(p.siglock);
    for (Task* o = p.threads; o; o = o->next_thread) {
      if (o == &t) continue;
      o->exit_requested = true;
      o->notify.store(1);
      interrupt_vfork_wait(*o);
      kick_task(*o);
    }
    if (p.stopped) {  // stopped threads wake up to die
      p.stopped = false;
      p.cont_seq.fetch_add(1);
      futex_wake(&p.cont_seq, 1 << 30);
    }
  }
  exit_thread(t);
}

void do_group_stop(Task& t, int sig) {
  Process& p = *t.proc;
  {
    Guard g(t.kernel->tasks_lock);
    Guard s(p.siglock);
    if (p.group_exit) return;
    if (!p.stopped) {
      p.stopped = true;
      p.report_stopped = true;
      p.report_continued = false;
      p.wait_status = (sig << 8) | 0x7f;
      for (Task* o = p.threads; o; o = o->next_thread) {
        if (o == &t) continue;
        o->notify.store(1);
        kick_task(*o);
      }
      notify_parent(p, CLD_STOPPED, sig);
    }
  }
  do_stop_wait(t);
}

void do_stop_wait(Task& t) {
  Process& p = *t.proc;
  while (p.stopped && !t.exit_requested) {
    uint32_t seq = p.cont_seq.load();
    if (!p.stopped) break;
    host::sys(SYS_futex, &p.cont_seq, FUTEX_WAIT, seq, 0, 0, 0);
    Guard s(p.siglock);
    if (t.pending.set & sigbit(SIGKILL) || p.shared_pending.set & sigbit(SIGKILL)) break;
  }
}

bool do_freeze_wait(Task& t) {
  Process& p = *t.proc;
  bool killed = false;
  t.in_freezer.store(true);
  while (p.frozen.load() && !t.exit_requested) {
    uint32_t seq = p.thaw_seq.load();
    {
      Guard s(p.siglock);
      if ((t.pending.set | p.shared_pending.set) & sigbit(SIGKILL)) {
        killed = true;
        break;
      }
    }
    if (!p.frozen.load()) break;
    host::sys(SYS_futex, &p.thaw_seq, FUTEX_WAIT, seq, 0, 0, 0);
  }
  t.in_freezer.store(false);
  return killed;
}

void continue_process(Process& p) {
  p.report_continued = true;
  p.report_stopped = false;
  notify_parent(p, CLD_CONTINUED, SIGCONT);
}

}  // namespace flatux
