// The one kernel object. Every piece of mutable kernel state hangs off it,
// and it lives in the kernel heap (MAP_SHARED, fixed address): there are no
// mutable static globals in kernel code.
#pragma once
#include <atomic>
#include <cstdint>
#include <span>

#include "host/text_range.h"
#include "kernel/boot/boot_config.h"
#include "kernel/heap.h"
#include "kernel/lib/sync.h"
#include "kernel/sys/host_share.h"
#include "kernel/sys/sysctl.h"
#include "kernel/task/task.h"

namespace flatux {

class LockTable;
class LeaseTable;

class Vfs;
class Dcache;
struct TimerService;
struct NetState;
struct LogBuffer;
struct Console;
struct BlockDevices;
struct PtyTable;
struct Dnotify;
struct Inotify;
struct HostCharge;
struct PidReservations;
struct SiteSurvey;
struct IpcNamespace;
struct HostProc;
struct GateRequest;
struct RetiredStack;

// How guest syscalls enter the kernel (--syscall-entry): always by the
// SIGSYS trap, or by rewriting each site at its first trap so later calls
// jump in (kernel/mm/syscall_sites.h; page 0 adds zpoline's `call *%rax`).
enum class SyscallEntryMode : uint8_t { kTrap, kRewrite, kRewritePage0 };

// What the launcher hands the kernel at boot. Plain data: the launcher
// fills it with host-libc help before anything runs in kernel mode.
struct KernelConfig {
  char root[kPathMax] = "/";  // hostfs root, a canonical host path
  char cwd[kPathMax] = "/";   // the first process's working directory (guest path)
  bool root_readonly = false;
  int strace_fd = -1;         // host fd for --strace output, -1 when off
  // The host's answers to PR_GET_SPECULATION_CTRL (store bypass, indirect
  // branch, L1D flush) before the jail, or -errno: what a guest thread,
  // a host thread, runs with.
  long spec_ctrl[3] = {-19, -19, -19};
  TextRange text[32]{};       // the host executable code the filter allows
  int ntext = 0;
  // Every host mapping at boot (flatux, its libraries' code and data, the
  // vDSO), merged where adjacent: what a forked host process keeps besides
  // the kernel heap and its own guest's memory (kernel/task/hostproc.cpp).
  TextRange host_maps[64]{};
  int nhost_maps = 0;         // 0 when they did not fit: nothing is dropped
  uint64_t host_fs = 0;       // TLS block the foreign-code gate borrows
  uint64_t vdso_base = 0;     // AT_SYSINFO_EHDR handed to guests
  uint64_t hwcap = 0, hwcap2 = 0, minsigstksz = 0;
  bool fsgsbase = false;
  bool xsave = false;         // the OS enabled XSAVE (CPUID.1:ECX.OSXSAVE)
  uintptr_t image_base = 0;   // flatux's own load address (oops messages)
  bool net_none = false;      // --net=none: no AF_INET/AF_INET6 sockets
  char fifo_dir[256] = "";    // host folder for the host FIFOs behind named pipes ("": /dev/shm, /tmp)
  bool hostfs_host_owners = false;  // hostfs: guest owners, set-id bits and devices go to the host as they are
  // An OCI container's init: host signals go to it alone, as from an
  // ancestor pid namespace (kernel/signal/signal.cpp), not to its group.
  bool container_init = false;
  // An eventfd the kernel adds 1 to when the first process or one entered
  // from outside ends (Kernel::entered), for a launcher that waits on more
  // than `halted`; -1: none.
  int launcher_event_fd = -1;
  SyscallEntryMode syscall_entry = SyscallEntryMode::kTrap;
  // The host limits all guests share (kernel/sys/host_share.h): the
  // descriptor table (RLIMIT_NOFILE, raised to its hard limit) and
  // vm.max_map_count, and how much of each was in use at boot. 0: unknown.
  long host_nofile = 0, host_fds_at_boot = 0;
  long host_max_map_count = 0, host_maps_at_boot = 0;
  BootConfig boot;            // `flatux [PARAM...]`; boot.enabled is false for `flatux run`
};

// Guest memory charged against mem= (src/kernel/mm/mm.h says what counts).
struct MemAccount {
  std::atomic<uint64_t> used{0};
  uint64_t limit = 0;  // 0: no limit of our own
  uint64_t shown_total = 0;  // less than limit: the total sysinfo and meminfo show (a container's memory.max)
  std::atomic<int> max_map_count{65530};  // vm.max_map_count: regions per process
  KMutex charges_lock;            // the list of host objects charged (mm/host_charge.h)
  HostCharge* charges = nullptr;
};

// Queued signals per user, which RLIMIT_SIGPENDING limits (Linux counts
// per user too). A slot is taken by a uid while it has signals queued.
struct SigQueueUsers {
  static constexpr int kSlots = 128;
  KMutex lock;  // taking a slot and counting up; counting down is atomic
  uint32_t uid[kSlots]{};
  std::atomic<uint32_t> queued[kSlots]{};
};

// uname's node and domain names (sethostname, setdomainname).
struct UtsNames {
  KMutex lock;
  char nodename[65] = "flatux";
  char domainname[65] = "(none)";
  uint64_t inum = 0xEFFFFFFEu;  // /proc/PID/ns/uts: Linux's first UTS namespace's, then Vfs::new_ns_inum
  // Each setting of either (sethostname, setdomainname, /proc/sys/kernel):
  // their /proc/sys files poll POLLPRI for it, as Linux's uts_proc_notify.
  std::atomic<uint64_t> events{0};
  // The processes in this UTS namespace (one made by unshare or clone;
  // the kernel's first is never freed). kernel/sys/uts.h.
  std::atomic<int> refs{1};
};

// Why the kernel stopped (reboot(2) and host requests), for the launcher.
enum class HaltReason : uint32_t { kNone, kInitExited, kPowerOff, kHalt, kRestart };

constexpr int kMaxTasks = 4096;

struct CgroupTree;

struct Kernel {
  Heap* heap;
  KernelConfig cfg;
  Vfs* vfs = nullptr;
  Dcache* dcache = nullptr;  // every filesystem's dentries (kernel/vfs/dcache.h)
  LockTable* locks = nullptr;
  LeaseTable* leases = nullptr;
  TimerService* timers = nullptr;
  NetState* net = nullptr;
  BlockDevices* blocks = nullptr;  // ubd and loop devices (kernel/block/ubd.h)
  SiteSurvey* survey = nullptr;    // --site-survey (kernel/mm/site_survey.h)
  IpcNamespace* ipc = nullptr;     // System V IPC (kernel/ipc/ipc.h)
  Sysctl sysctl;                   // the tunables /proc/sys shows (kernel/sys/sysctl.h)
  uint64_t boot_ns = 0;

  KMutex tasks_lock;
  int next_pid = 1;
  PidReservations* pid_reserve = nullptr;  // flatux run: pids apart from other instances'
  Process* init = nullptr;  // the first guest process
  Task* tasks[kMaxTasks]{};   // every live task, for lookup by tid: the first ntasks slots
  int ntasks = 0;
  Task* dead_tasks = nullptr; // exited, kernel stack freed once the host thread is gone
  int host_pid = 0;           // the first host process (the launcher's)
  HostProc* hproc0 = nullptr; // its record; the other host processes (forks) follow
  HostProc* hprocs = nullptr; // on this list (tasks_lock; kernel/task/hostproc.h)
  bool forking_ready = false; // what forked host processes rely on is set up (tasks_lock)
  int launcher_pidfd = -1;    // the first host process, watched by the others
  RetiredStack* retired_stacks = nullptr;  // kernel stacks of threads still ending (tasks_lock)

  KMutex log_lock;
  // Serializes putting an epoll instance into another (fs/anon/epoll.cpp):
  // the loop check and the add are one step, as Linux's epnested_mutex.
  KMutex epoll_nest_lock;
  KMutex gate_lock;
  std::atomic<uintptr_t> gate_owner{0};  // who holds gate_lock (kernel/foreign_gate.cpp)
  // Foreign calls made in other host processes, run by a server thread in
  // the first one (kernel/foreign_gate.cpp).
  KMutex gate_queue_lock;
  GateRequest* gate_queue = nullptr;
  std::atomic<uint32_t> gate_queue_seq{0};
  bool gate_server_started = false;
  LogBuffer* log = nullptr;    // printk's ring buffer
  Console* console = nullptr;  // the in-kernel console (boot mode on a terminal)
  PtyTable* ptys = nullptr;    // pseudo-terminals (kernel/tty/pty.h)
  Dnotify* dnotify = nullptr;  // F_NOTIFY watches (kernel/vfs/dnotify.h)
  Inotify* inotify = nullptr;  // inotify watches (kernel/vfs/inotify.h)
  CgroupTree* cgroups = nullptr;  // the cgroup v2 hierarchy (kernel/cgroup/cgroup.h)
  KMutex devtmpfs_lock;
  Filesystem* devtmpfs = nullptr;  // the one devtmpfs (kernel/fs/devfs/devfs.h)
  MemAccount mem;
  HostPool host_fds;  // the host descriptor table (kernel/sys/host_share.h)
  long host_map_limit = 0;  // what guests may map in one host process (HostProc::maps)
  SigQueueUsers sigqueue_users;
  UtsNames uts;
  bool cad_enabled = true;     // reboot(2) CAD_ON/CAD_OFF
  std::atomic<bool> shutdown_requested{false};  // the host asked for a power-off

  // Set when the kernel stops; the launcher's thread waits on it.
  std::atomic<uint32_t> halted{0};
  int exit_wait_status = 0;  // the first process's wait status
  // Processes started from outside the guests (an OCI runtime's exec):
  // no guest is their parent, and their wait status goes to the launcher
  // through these slots (tasks_lock).
  struct Entered {
    int pid = 0;      // 0: a free slot
    bool ended = false;
    int wait_status = 0;
  };
  static constexpr int kMaxEntered = 64;
  Entered entered[kMaxEntered];
  std::atomic<HaltReason> halt_reason{HaltReason::kNone};

  // The live tasks (tasks_lock held). Kept at the front of `tasks`, so a
  // lookup (kill, tgkill) looks at as many slots as there are tasks.
  std::span<Task* const> live_tasks() const { return {tasks, (size_t)ntasks}; }
  void add_task_locked(Task* t) { tasks[ntasks++] = t; }
  void remove_task_locked(Task* t) {
    for (int i = 0; i < ntasks; i++)
      if (tasks[i] == t) {
        tasks[i] = tasks[--ntasks];
        tasks[ntasks] = nullptr;
        return;
      }
  }

  static Kernel* create(const KernelConfig& cfg);  // also creates the heap
  void destroy();
};

}  // namespace flatux
