// Tasks (host threads running guest code) and processes.
//
// Locking: Kernel::tasks_lock guards the process tree (parents, children,
// thread lists, states, pid allocation). Process::siglock guards signal
// state: the shared and per-thread pending sets and every thread's mask.
#pragma once
#include <atomic>
#include <csignal>
#include <cstdint>
#include <ucontext.h>

#include "kernel/heap.h"
#include "kernel/mm/regions.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/file.h"

namespace flatux {

struct Kernel;
struct Process;
struct Task;
struct Tty;
struct MemAccount;
struct PidFd;
struct SyscallSites;
struct SemUndoList;
struct HostProc;
struct HostPool;
struct MountNs;
struct Cgroup;
struct SeccompFilter;

constexpr int kPathMax = 4096;
constexpr int kNSig = 64;
constexpr int kNumRlimits = 16;

inline uint64_t sigbit(int sig) { return 1ull << (sig - 1); }

struct GuestSigaction {
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};

// Shared by tasks cloned with CLONE_SIGHAND (all threads of a process).
struct SigHand {
  std::atomic<int> refs{1};
  GuestSigaction action[kNSig]{};
};

// Whose doing a signal is: the guest process that sent it (kill and its
// kin, a file owner it set, its exit signal), or nobody (pid 0): the host,
// the terminal's user, or the kernel on the receiver's own account (its
// faults, timers, broken pipes). The guest's init ignores what another
// process sends it without a handler for it (signal.cpp, send_signal).
struct SigSender {
  int pid = 0;  // the sending process's pid (tgid); 0: not a guest process
  // A container engine's signal from outside the guest's pid namespace
  // (an OCI runtime's kill): init takes it only with a handler, SIGKILL
  // and SIGSTOP always, as Linux's init from an ancestor namespace.
  bool ancestor_namespace = false;
};

// A queued signal with its siginfo. Standard signals coalesce (at most one
// queued each); real-time signals queue every instance in order.
struct SigQueued {
  siginfo_t info;
  SigQueued* next;
  std::atomic<uint32_t>* charged_to;  // its user's RLIMIT_SIGPENDING count
  bool by_other = false;              // another guest process sent it
};

// Pending signals: the set, and a FIFO per signal number, so that queueing
// and taking a signal cost the same however many are queued. A bit in
// `set` with an empty FIFO is a signal whose siginfo was lost (queued over
// the limit by kill()).
struct SigPending {
  uint64_t set = 0;
  SigQueued* head[kNSig]{};
  SigQueued* tail[kNSig]{};
};

// The lock of an Mm's region list. It knows which thread holds it (by its
// stack), so that a check of guest memory made while the thread holds it
// (a file read into a mapping being made) need not take it again.
class MmLock {
 public:
  void lock() {
    mutex_.lock();
    holder_.store(stack_id(), std::memory_order_relaxed);
  }
  void unlock() {
    holder_.store(0, std::memory_order_relaxed);
    mutex_.unlock();
  }
  bool held_by_caller() const { return holder_.load(std::memory_order_relaxed) == stack_id(); }

 private:
  static uintptr_t stack_id() {
    uintptr_t sp;
    asm volatile("mov %%rsp, %0" : "=r"(sp));
    return (sp & ~(uintptr_t)(kKernelStackSize - 1)) | 1;
  }
  KMutex mutex_;
  std::atomic<uintptr_t> holder_{0};
};

// Memory ownership; shared by CLONE_VM (threads, and a vfork child until it
// execs or exits).
struct ShmAttach;

struct Mm {
  explicit Mm(Heap* h) : regions(h) {}
  ~Mm();  // gives back its share of its host process's mappings (mm/mm.cpp)
  std::atomic<int> refs{1};
  MmLock lock;
  RegionList regions;
  uintptr_t brk_start = 0, brk_cur = 0, brk_mapped = 0, brk_limit = 0;
  // The main stack: [stack_floor, stack_top) is reserved, [stack_low,
  // stack_top) usable; below stack_low is PROT_NONE so an overflow faults
  // instead of running into another mapping (there is no MMU to grow it).
  uintptr_t stack_floor = 0, stack_low = 0, stack_top = 0;
  uintptr_t arg_start = 0, arg_end = 0, env_start = 0, env_end = 0;
  MemAccount* acct = nullptr;  // the kernel's mem= account (mm/mm.h)
  // The host process's mappings it draws on, and how many of them its
  // regions are charged for (kernel/sys/host_share.h; mm_set_map_pool).
  HostPool* map_pool = nullptr;
  long maps_charged = 0;
  uint64_t charged = 0;        // what this Mm has charged to it (to acct)
  // The most resident memory seen in it (VmHWM; mm/resident.h).
  std::atomic<uint64_t> hiwater_rss{0};
  // RLIMIT_AS and RLIMIT_DATA of the process that owns it, and what counts
  // against them (mm_recharge): all mappings but the unused reserves of the
  // heap and stack; of those, the private writable ones but the stack.
  uint64_t as_limit = ~0ull, data_limit = ~0ull;
  uint64_t total_vm = 0, data_vm = 0;
  SyscallSites* sites = nullptr;  // rewritten syscall sites and their stubs (mm/syscall_sites.h)
  ShmAttach* shm = nullptr;    // System V shared memory attached here (ipc/shm.cpp)
  int lock_future = 0;         // mlockall(MCL_FUTURE): new mappings are locked (MCL_* bits)
};

struct FsContext {
  std::atomic<int> refs{1};
  KMutex lock;                // cwd
  // The working directory itself, so it follows renames (vfs/namei.h,
  // fs_cwd). Empty until first needed in the first process: the kernel's
  // start folder is resolved then.
  Path cwd;
  // The cwd as chdir opened it (O_PATH), so "." still names it once it
  // is removed; nullptr after fchdir (an open file's description is the
  // caller's, not ours to keep).
  File* cwd_file = nullptr;
  // chroot(2): the process's root, so it follows renames; empty: the
  // root of its mount namespace (vfs/namei.h, fs_root).
  Path root;
  // Whether `root` is set, read without the lock by walks from the
  // namespace's root (a racing chroot of another thread is either side).
  std::atomic<bool> has_root{false};
  // The root as chroot opened it (O_PATH), so "/" still stats it once it
  // is removed.
  File* root_file = nullptr;
  uint32_t umask = 022;

  FsContext() = default;
  FsContext(const FsContext&) = delete;
  FsContext& operator=(const FsContext&) = delete;
  ~FsContext() {
    path_put(cwd);
    path_put(root);
    if (cwd_file) cwd_file->put();
    if (root_file) root_file->put();
  }
};

// Every capability Linux defines (CAP_CHOWN .. CAP_LAST_CAP), one bit each.
constexpr uint64_t kAllCaps = (uint64_t{1} << 41) - 1;

struct UtsNames;

struct Creds {
  static constexpr int kMaxGroups = 64;
  uint32_t uid = 0, euid = 0, suid = 0, fsuid = 0;
  uint32_t gid = 0, egid = 0, sgid = 0, fsgid = 0;
  int ngroups = 0;
  uint32_t groups[kMaxGroups]{};
  // The capability sets (capabilities(7)); the first process holds all,
  // as Linux's init does. The policy is kernel/task/caps.h's.
  uint64_t cap_inheritable = 0, cap_permitted = kAllCaps, cap_effective = kAllCaps;
  uint64_t cap_bset = kAllCaps, cap_ambient = 0;
  uint32_t securebits = 0;  // SECBIT_* (prctl PR_SET_SECUREBITS)
};

enum class ProcState : uint8_t { kRunning, kZombie };

struct Process {
  Kernel* kernel;
  int pid, pgid, sid;
  Tty* ctty = nullptr;          // controlling terminal (inherited; dropped by setsid)
  Process* parent = nullptr;
  bool entered = false;         // started from outside (Kernel::entered); no parent
  Process* children = nullptr;  // singly linked through `sibling`
  Process* sibling = nullptr;
  Task* threads = nullptr;      // singly linked through Task::next_thread
  int nthreads = 0;
  Cgroup* cgroup = nullptr;     // (tasks_lock) its cgroup, kernel/cgroup/cgroup.h
  bool cgroup_live = false;     // counted there (until its last thread exits)
  ProcState state = ProcState::kRunning;

  Mm* mm = nullptr;
  FdTable* files = nullptr;
  FsContext* fs = nullptr;
  SigHand* sighand = nullptr;
  Creds creds;
  UtsNames* uts = nullptr;      // its UTS namespace; null: the kernel's first (kernel/sys/uts.h)
  MountNs* mnt_ns = nullptr;    // its mount namespace; null: the kernel's first (kernel/vfs/mount_ns.h)
  SemUndoList* sem_undo = nullptr;  // SEM_UNDO adjustments (ipc/sem.cpp); CLONE_SYSVSEM shares
  uint64_t rlimits[kNumRlimits][2]{};
  char exe[kPathMax] = "";
  char comm[16] = "";
  uint32_t personality = 0;     // personality(2): PER_LINUX and its flags
  // /proc/PID/oom_score_adj: kept and inherited as Linux's; flatux has no
  // OOM killer to weigh it (past mem= an allocation fails with ENOMEM).
  int oom_score_adj = 0;
  int pdeath_signal = 0;         // PR_SET_PDEATHSIG: sent when the parent exits
  bool child_subreaper = false;  // PR_SET_CHILD_SUBREAPER: adopts orphans below it
  bool no_new_privs = false;     // PR_SET_NO_NEW_PRIVS: kept across fork and exec, never unset
  int dumpable = 1;              // PR_SET_DUMPABLE (SUID_DUMP_DISABLE 0, USER 1); execve sets it again
  bool thp_disable = false;      // PR_SET_THP_DISABLE: kept across fork and exec

  // Signals directed at the whole process.
  KMutex siglock;
  SigPending shared_pending;
  int exit_signal = SIGCHLD;  // what the parent gets when we die
  // Bumped whenever a signal is queued for the process or one of its
  // threads, blocked or not: wakes signalfd readers.
  std::atomic<uint32_t> sig_queued{0};
  std::atomic<uint32_t> sig_queued_sleepers{0};  // signalfd readers asleep on sig_queued

  // Exit, stop and wait bookkeeping (under tasks_lock).
  bool group_exit = false;
  int wait_status = 0;        // valid once a zombie, or for a stop/continue report
  bool stopped = false;
  bool report_stopped = false, report_continued = false;
  bool has_posix_locks = false;          // fcntl record locks taken: close() must drop them
  std::atomic<uint32_t> cont_seq{0};     // bumped by SIGCONT / SIGKILL: wakes stopped threads
  // Its cgroup (or one above) is frozen (cgroup.freeze): its threads park in
  // the freezer (do_freeze_wait) until thawed (thaw_seq) or killed.
  std::atomic<bool> frozen{false};
  std::atomic<uint32_t> thaw_seq{0};
  std::atomic<uint32_t> child_event{0};  // bumped when a child changes state: wakes waiters
  std::atomic<uint32_t> threads_gone{0}; // bumped when a thread leaves: wakes execve
  PidFd* pidfds = nullptr;       // pidfds naming it (task/pidfd.cpp; tasks_lock)

  uint64_t start_ns = 0;
  uint64_t cpu_ns = 0;           // CPU time of threads that have exited
  uint64_t cpu_user_ns = 0;      // the part of it spent in guest code (user time)
  uint64_t children_cpu_ns = 0;  // of reaped children
};

struct Task {
  Kernel* kernel;
  Process* proc;
  Task* next_thread = nullptr;
  int tid;
  void* kstack;               // base of the kernel stack (see host/kstack.h)
  HostProc* hproc = nullptr;  // the host process its thread runs in (kernel/task/hostproc.h)
  ucontext_t* regs = nullptr; // the guest's registers during a trap
  uint64_t guest_fs = 0;
  uint64_t clear_child_tid = 0;
  uint64_t robust_list = 0, robust_len = 0;
  int nice = 0;                       // getpriority/setpriority (sys/sys_sched.cpp; tasks_lock)
  // PR_SET_TIMERSLACK: this thread's slack, and what 0 sets it back to
  // (its creator's slack when it was made); PR_MCE_KILL's policy.
  uint64_t timer_slack_ns = 50000, default_slack_ns = 50000;
  int mce_kill = 2;                   // PR_MCE_KILL_DEFAULT
  int ioprio = 0;                     // ioprio_get/set (sys/sys_sched.cpp; tasks_lock); 0: none set

  // Signal state; the mask and pending set are guarded by proc->siglock.
  uint64_t sigmask = 0;
  SigPending pending;
  uint64_t saved_sigmask = 0;    // restored after a sigsuspend-style wait
  uint64_t real_blocked = 0;     // the mask before sigtimedwait unblocked what it awaits
  bool restore_sigmask = false;
  uint64_t altstack_sp = 0, altstack_size = 0;
  int altstack_flags = SS_DISABLE;
  // Set when something needs the task's attention on its way back to guest
  // code: a deliverable signal, or a request to exit. Blocking waits in the
  // kernel watch it too (kernel/task/isys.h: interruptible host calls).
  std::atomic<uint32_t> notify{0};
  // A kick came while kernel code ran and was left pending and blocked
  // until the return to guest code (kernel/entry/trap.cpp); isys() unblocks it.
  // Never cleared on entry: a kick can land between the host's delivery
  // of SIGSYS and the handler's first instruction. Left set after a
  // return to guest code, it costs the next isys() one unblock, nothing
  // more.
  bool kick_deferred = false;
  // Set while the task sleeps on `notify` itself (sigsuspend, pause,
  // sigtimedwait): a sender then wakes it with a futex wake instead of a
  // kick, which would cost a host signal delivery (signal/signal.cpp).
  std::atomic<uint32_t> waits_on_notify{0};
  // Held by a sender that kicks the task after letting go of tasks_lock:
  // its memory stays until then (reap_dead_tasks).
  std::atomic<int> pins{0};
  bool exit_requested = false;   // group exit or exec in another thread
  std::atomic<bool> in_freezer{false};  // parked for cgroup.freeze (cgroup.events "frozen")
  // While the task waits in poll/select/epoll on a file without a host
  // descriptor (signalfd), `virtual_waiting` is set and send_signal writes
  // the task's host eventfd `wake_fd` (made on first use, closed when the
  // task is freed), which the wait includes (fs/anon/virtual_wait.h).
  std::atomic<uint32_t> virtual_waiting{0};
  int wake_fd = -1;

  // seccomp (seccomp/seccomp.h): SECCOMP_MODE_*, and the newest filter
  // (set by the task itself, or by a thread of its process with TSYNC).
  std::atomic<uint8_t> seccomp_mode{0};
  std::atomic<SeccompFilter*> seccomp_filter{nullptr};

  // access(2)'s real-id credentials for the duration of the call; the
  // permission checks use these when set (vfs/perm.h, creds_of).
  const Creds* creds_override = nullptr;

  // For syscalls restarted after a handler-less interruption (nanosleep).
  uint64_t restart_deadline_ns = 0;
  int restart_clock = 0;

  // The parent task sleeping in vfork() until this task execs or exits
  // (per task, as Linux's vfork_done: CLONE_VFORK may come with
  // CLONE_THREAD).
  Task* vfork_waiter = nullptr;
  // vfork(): 0 while the parent waits, 1 once the child has exec'd or
  // exited, 2 when the parent is being killed (the wait is killable, as
  // Linux's): exit/kill paths store 2 so no wake-up can be missed.
  std::atomic<uint32_t> vfork_done{0};
  std::atomic<uint32_t> host_tid{0};  // cleared by the host when the thread dies
  uint64_t set_child_tid = 0;         // fork's CLONE_CHILD_SETTID: written by the child itself
  int kernel_buffers = 0;             // > 0: user copies may name kernel buffers (KernelBuffers)
  greg_t entry_regs[NGREG]{};         // registers the thread starts guest code with
  void* entry_fpstate = nullptr;      // FPU state it starts with (kernel heap), or clean
  uint64_t start_ns = 0;
  Task* dead_next = nullptr;          // on Kernel::dead_tasks until its thread is gone
};

}  // namespace flatux
