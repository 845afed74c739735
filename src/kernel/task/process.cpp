#include "kernel/cgroup/cgroup.h"
#include "kernel/task/process.h"
#include "kernel/seccomp/seccomp.h"
#include "kernel/sys/uts.h"
#include "kernel/vfs/mount_ns.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "kernel/entry/entry.h"
#include "kernel/task/hostproc.h"
#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/lib/kstring.h"
#include "kernel/loader/exec.h"
#include "kernel/loader/exec_move.h"
#include "kernel/mm/mm.h"
#include "kernel/signal/signal.h"
#include "kernel/task/exit.h"
#include "kernel/task/pid_reserve.h"
#include "kernel/time.h"
#include "kernel/tty/console.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"

namespace flatux {
namespace {

constexpr int kReservedPids = 300;

void default_rlimits(Kernel& k, Process& p) {
  for (auto& r : p.rlimits) r[0] = r[1] = RLIM_INFINITY;
  p.rlimits[RLIMIT_STACK][0] = 8ull << 20;
  // As many descriptors as a process can hold on its own: its table, or its
  // share of the host's (kernel/sys/host_share.h) when that is smaller.
  long fds = FdTable::kMaxFds;
  if (k.host_fds.limit > 0 && share_alone(k.host_fds) < fds) fds = share_alone(k.host_fds);
  p.rlimits[RLIMIT_NOFILE][1] = (uint64_t)fds;
  p.rlimits[RLIMIT_NOFILE][0] = fds < 1024 ? (uint64_t)fds : 1024;
  p.rlimits[RLIMIT_CORE][0] = 0;
  p.rlimits[RLIMIT_MEMLOCK][0] = p.rlimits[RLIMIT_MEMLOCK][1] = 8ull << 20;  // Linux's MLOCK_LIMIT
  p.rlimits[RLIMIT_NPROC][0] = p.rlimits[RLIMIT_NPROC][1] = kMaxTasks;
  // Queued signals per user: 16,384 cost at most ~2.3 MiB of kernel heap.
  p.rlimits[RLIMIT_SIGPENDING][0] = p.rlimits[RLIMIT_SIGPENDING][1] = 16384;
  // As Linux's init: no raising of priorities beyond the default without privilege.
  p.rlimits[RLIMIT_NICE][0] = p.rlimits[RLIMIT_NICE][1] = 0;
  p.rlimits[RLIMIT_RTPRIO][0] = p.rlimits[RLIMIT_RTPRIO][1] = 0;
}

void install_stdio(Kernel& k, Process& p) {
  for (int fd = 0; fd < 3; fd++) {
    // The guest sees the host streams with their real access modes.
    long fl = host::sys(SYS_fcntl, fd, F_GETFL);
    if (fl < 0) continue;  // a closed host stdio stream stays closed in the guest
    File* f = hostfs_wrap_host_fd(k.heap, fd, (uint32_t)fl & (O_ACCMODE | O_APPEND | O_NONBLOCK));
    if (!f) continue;
    p.files->install_at(fd, f, false);
    f->put();
  }
}

bool pid_in_use_locked(Kernel& k, int pid) {
  for (Task* t : k.live_tasks())
    if (t && (t->tid == pid || t->proc->pid == pid || t->proc->pgid == pid || t->proc->sid == pid))
      return true;
  return false;
}

}  // namespace

// Pids below kernel/pid_max, wrapping to RESERVED_PIDS as Linux does.
int alloc_pid_locked(Kernel& k) {
  int max = k.sysctl.pid_max.load(std::memory_order_relaxed);
  // Blocks held by others are skipped a few at a time: anyone on the host
  // can bind their names, and a squatter holding every one must not make
  // each fork try them all. Past that the pid goes unreserved.
  constexpr int kTakenBlocksTried = 8;
  int taken = 0;
  for (int tries = 0; tries < max; tries++) {
    int pid = k.next_pid++;
    if (k.next_pid >= max) k.next_pid = kReservedPids;
    if (pid >= max) continue;  // pid_max was lowered below the next pid
    if (pid_in_use_locked(k, pid)) continue;
    if (taken >= kTakenBlocksTried || pid_reserve_locked(k, pid)) return pid;
    taken++;
    // Another flatux instance on the host has this block of numbers.
    k.next_pid = pid_next_block(pid) < max ? pid_next_block(pid) : kReservedPids;
  }
  return -EAGAIN;
}

Process* process_create_locked(Kernel& k, Process* parent, int pid) {
  Process* p = k.heap->make<Process>();
  if (!p) return nullptr;
  p->kernel = &k;
  p->pid = pid;
  p->pgid = parent ? parent->pgid : pid;
  p->sid = parent ? parent->sid : pid;
  p->parent = parent;
  p->start_ns = monotonic_ns();
  if (parent) {
    p->sibling = parent->children;
    parent->children = p;
    p->creds = parent->creds;
    uts_inherit(*p, *parent);
    mnt_ns_inherit(*p, *parent);
    p->personality = parent->personality;
    p->oom_score_adj = parent->oom_score_adj;
    p->no_new_privs = parent->no_new_privs;  // pdeath_signal and child_subreaper start clear
    p->dumpable = parent->dumpable;
    p->thp_disable = parent->thp_disable;
    p->ctty = parent->ctty;
    memcpy(p->rlimits, parent->rlimits, sizeof p->rlimits);
    memcpy(p->exe, parent->exe, sizeof p->exe);
    memcpy(p->comm, parent->comm, sizeof p->comm);
  } else {
    default_rlimits(k, *p);
  }
  return p;
}

Task* task_create_locked(Kernel& k, Process& p, int tid, HostProc* hp) {
  reap_dead_tasks(k);
  if (k.ntasks >= kMaxTasks) return nullptr;
  Task* t = k.heap->make<Task>();
  if (!t) return nullptr;
  t->kernel = &k;
  t->proc = &p;
  t->hproc = hp;
  t->tid = tid;
  t->start_ns = monotonic_ns();
  if (!kstack_setup(*t)) {
    k.heap->destroy_obj(t);
    return nullptr;
  }
  k.add_task_locked(t);
  {
    Guard g(p.siglock);
    Task** link = &p.threads;
    while (*link) link = &(*link)->next_thread;
    *link = t;
  }
  p.nthreads++;
  cgroup_task_added_locked(p);
  hp->ntasks.fetch_add(1);
  return t;
}

void discard_unstarted_task_locked(Task& t) {
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  {
    Guard g(p.siglock);
    Task** link = &p.threads;
    while (*link && *link != &t) link = &(*link)->next_thread;
    if (*link) *link = t.next_thread;
  }
  p.nthreads--;
  cgroup_task_removed_locked(p);
  t.hproc->ntasks.fetch_sub(1);
  k.remove_task_locked(&t);
  k.heap->free(t.entry_fpstate);
  kstack_release(t);
  seccomp_release(t);
  k.heap->destroy_obj(&t);
  if (p.nthreads == 0) {
    p.state = ProcState::kZombie;
    discard_process_resources(p);
    release_zombie(p);
  }
}

Process* find_process_locked(Kernel& k, int pid) {
  for (Task* t : k.live_tasks())
    if (t && t->proc->pid == pid && t->proc->state == ProcState::kRunning) return t->proc;
  return nullptr;
}

Task* find_task_locked(Kernel& k, int tid) {
  for (Task* t : k.live_tasks())
    if (t && t->tid == tid) return t;
  return nullptr;
}

void forward_host_signal(Kernel& k, int sig) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = SI_KERNEL;
  Guard g(k.tasks_lock);
  if (!k.init || k.init->state != ProcState::kRunning) return;
  if (k.cfg.container_init) {
    send_signal(*k.init, nullptr, sig, si, kFromEngine);
    return;
  }
  int pgid = k.init->pgid;
  for (Task* t : k.live_tasks())
    if (t && first_thread_of_process(*t) && t->proc->pgid == pgid && t->proc->state == ProcState::kRunning)
      send_signal(*t->proc, nullptr, sig, si, kFromOutside);
}

namespace {

// The launcher's choice of who init is, over the defaults it was made with.
void apply_init_identity(Process& p, const InitIdentity& id) {
  Creds& c = p.creds;
  c.uid = c.euid = c.suid = c.fsuid = id.uid;
  c.gid = c.egid = c.sgid = c.fsgid = id.gid;
  c.ngroups = id.ngroups < Creds::kMaxGroups ? id.ngroups : Creds::kMaxGroups;
  memcpy(c.groups, id.groups, sizeof c.groups);
  if (id.set_caps) {
    c.cap_bset = id.cap_bounding & kAllCaps;
    c.cap_permitted = id.cap_permitted & kAllCaps;
    c.cap_effective = id.cap_effective & c.cap_permitted;
    c.cap_inheritable = id.cap_inheritable & kAllCaps;
    c.cap_ambient = id.cap_ambient & c.cap_permitted & c.cap_inheritable;
  } else if (id.uid != 0) {
    c.cap_permitted = c.cap_effective = 0;  // an ordinary user holds none
  }
  p.fs->umask = id.umask & 0777;
  p.no_new_privs = id.no_new_privs;
  p.oom_score_adj = id.oom_score_adj;
  for (int i = 0; i < id.nrlimits && i < kNumRlimits; i++) {
    const InitIdentity::Rlimit& r = id.rlimits[i];
    if (r.resource < 0 || r.resource >= kNumRlimits) continue;
    p.rlimits[r.resource][0] = r.soft;
    p.rlimits[r.resource][1] = r.hard;
  }
  uint64_t nofile = p.rlimits[RLIMIT_NOFILE][0];
  if (p.files) p.files->set_limit(nofile < (1u << 30) ? (int)nofile : 1 << 30);  // set_limit caps it
}

}  // namespace

namespace {

// The first process's console as Linux's console_on_rootfs gives it:
// /dev/console opened by path, so that ttyname(3) finds the node its
// descriptors are open on; nullptr where the root has no /dev/console that
// is this console.
File* console_by_path(Task& t, File& console) {
  File* f = nullptr;
  if (vfs_open(t, AT_FDCWD, "/dev/console", O_RDWR | O_NOCTTY, 0, &f) < 0) return nullptr;
  if (f->ops == console.ops && f->priv == console.priv) return f;
  f->put();
  return nullptr;
}

// Descriptors 0-2 of a new process: `console`, host descriptors handed
// over (taken over), or the host's own stdio streams.
void install_spawn_stdio(Task& t, const SpawnSpec& s) {
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  if (s.console) {
    File* f = s.entered ? nullptr : console_by_path(t, *s.console);
    for (int fd = 0; fd < 3; fd++) p.files->install_at(fd, f ? f : s.console, false);
    if (f) f->put();
    return;
  }
  if (!s.stdio_host_fds) {
    install_stdio(k, p);
    return;
  }
  for (int fd = 0; fd < 3; fd++) {
    int host_fd = s.stdio_host_fds[fd];
    long fl = host_fd >= 0 ? host::sys(SYS_fcntl, host_fd, F_GETFL) : -EBADF;
    if (fl < 0) continue;
    File* f = hostfs_adopt_host_fd(k.heap, host_fd, (uint32_t)fl & (O_ACCMODE | O_APPEND | O_NONBLOCK));
    if (!f) continue;
    p.files->install_at(fd, f, false);
    f->put();
  }
}

Kernel::Entered* entered_slot_locked(Kernel& k, int pid) {
  for (Kernel::Entered& e : k.entered)
    if (e.pid == pid) return &e;
  return nullptr;
}

}  // namespace

long spawn_process(Kernel& k, const SpawnSpec& s, int* pid_out, const char** why) {
  Process* p;
  Task* t;
  {
    Guard g(k.tasks_lock);
    Kernel::Entered* slot = s.entered ? entered_slot_locked(k, 0) : nullptr;
    if (s.entered && !slot) return -EAGAIN;
    int pid = alloc_pid_locked(k);
    p = pid < 0 ? nullptr : process_create_locked(k, nullptr, pid);
    if (!p) return -ENOMEM;
    cgroup_process_created_locked(k, *p, nullptr);
    p->mm = k.heap->make<Mm>(k.heap);
    if (p->mm) {
      p->mm->acct = &k.mem;
      mm_set_map_pool(*p->mm, k.hproc0->maps);
    }
    p->files = k.heap->make<FdTable>(k.heap);
    FdShare* share = fd_share_make(k.heap, &k.host_fds);
    if (p->files && share) {
      p->files->set_share(share);
      p->files->set_limit((int)p->rlimits[RLIMIT_NOFILE][0]);
    }
    p->fs = k.heap->make<FsContext>();
    p->sighand = k.heap->make<SigHand>();
    if (!p->mm || !p->files || !share || !p->fs || !p->sighand) return -ENOMEM;
    t = task_create_locked(k, *p, p->pid, k.hproc0);
    if (!t) return -ENOMEM;
    // The nice value flatux itself was started with, as a native program
    // started the same way would see it.
    long prio = host::sys(SYS_getpriority, PRIO_PROCESS, 0);
    if (prio > 0) t->nice = 20 - (int)prio;
    if (s.entered) {
      p->entered = true;
      *slot = Kernel::Entered{p->pid, false, 0};
    } else {
      k.init = p;
    }
    // An entered process joins running guests: it is never theirs to see
    // as root. The first one is set up as root, as Linux's kernel_init.
    if (s.identity && s.entered) apply_init_identity(*p, *s.identity);
  }
  install_spawn_stdio(*t, s);
  // An entered process's terminal (its own pty) becomes its session's
  // controlling terminal as TIOCSCTTY makes one.
  if (s.console && s.console_ctty && s.entered && s.console->ops->ioctl) s.console->ops->ioctl(*t, *s.console, TIOCSCTTY, 0);
  else if (s.console && s.console_ctty) console_become_ctty(*t);
  ExecResult* res = k.heap->make<ExecResult>();
  long r = res ? 0 : -ENOMEM;
  if (r == 0 && s.setup) r = s.setup(*t, s.setup_arg);
  if (s.identity && !s.entered) {
    Guard g(k.tasks_lock);
    apply_init_identity(*p, *s.identity);
  }
  if (r == 0 && s.cwd) r = fs_chdir_path(*t, s.cwd);
  if (r == 0) r = exec_load(*t, *p->mm, s.path, s.argv, s.envp, res);
  ExecMove* move = nullptr;
  if (r == -ENOEXEC && res->why == kExecRangeBusy && s.entered) {
    // An ET_EXEC at the first process's own address (a static busybox
    // beside another): loaded in a fresh host process, as execve does.
    mm_release(*p->mm);
    r = exec_move_load(*t, *p->mm, s.path, s.argv, s.envp, res, &move);
    if (r < 0) {
      mm_forget(k.heap, p->mm);  // mapped only in the host process that tried
      p->mm = nullptr;
    }
  }
  if (r < 0) {
    // The loader ran on the launcher's thread, before any guest code: the
    // pid and the process go back, so another candidate can be pid 1.
    if (res) *why = res->why;
    k.heap->destroy_obj(res);
    Guard g(k.tasks_lock);
    int pid = p->pid;
    if (s.entered) *entered_slot_locked(k, pid) = Kernel::Entered{};
    else k.init = nullptr;
    discard_unstarted_task_locked(*t);
    if (k.next_pid == pid + 1) k.next_pid = pid;
    return r;
  }
  copy_cstr(p->exe, sizeof p->exe, res->exe);
  copy_cstr(p->comm, sizeof p->comm, res->comm);
  if (pid_out) *pid_out = p->pid;
  if (move) {
    exec_move_start(*t, move);  // its thread there frees res
    return 0;
  }
  memcpy(t->entry_regs, res->regs, sizeof t->entry_regs);
  k.heap->destroy_obj(res);
  return start_task_thread(*t);
}

long spawn_init(Kernel& k, const char* path, const char* const* argv, const char* const* envp,
                const char** why, File* console, const InitIdentity* id, bool console_ctty) {
  SpawnSpec s;
  s.path = path;
  s.argv = argv;
  s.envp = envp;
  s.console = console;
  s.identity = id;
  s.console_ctty = console_ctty;
  return spawn_process(k, s, nullptr, why);
}

bool entered_take_exit(Kernel& k, int* pid, int* wait_status) {
  Guard g(k.tasks_lock);
  for (Kernel::Entered& e : k.entered)
    if (e.pid && e.ended) {
      *pid = e.pid;
      *wait_status = e.wait_status;
      e = Kernel::Entered{};
      return true;
    }
  return false;
}

}  // namespace flatux
