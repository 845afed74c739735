#include "kernel/kernel.h"

#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "kernel/task/hostproc.h"
#include "host/open_how_table.h"
#include "host/kstack.h"
#include "host/raw_syscall.h"

#include "kernel/block/ubd.h"
#include "kernel/cgroup/cgroup.h"
#include "kernel/fs/cgroupfs/cgroupfs.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/fs/devpts/devpts.h"
#include "kernel/fs/ext4/ext4_vfs.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/procfs/procfs.h"
#include "kernel/fs/tmpfs/tmpfs.h"
#include "kernel/ipc/ipc.h"
#include "kernel/net/net.h"
#include "kernel/printk.h"
#include "kernel/time.h"
#include "kernel/task/pid_reserve.h"
#include "kernel/timer/timer.h"
#include "kernel/tty/pty.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/dnotify.h"
#include "kernel/boot/sysfs.h"
#include "kernel/vfs/inotify.h"
#include "kernel/vfs/lease.h"
#include "kernel/vfs/locks.h"
#include "kernel/vfs/vfs.h"
#include "kernel/ipc/mqueue.h"

namespace flatux {
namespace {

// A folder root gets its own /dev (with a tmpfs on /dev/shm); the host's whole root keeps the host's
// /dev (with its shm and the rest), but the terminals are the kernel's:
// its devpts on /dev/pts, and /dev/ptmx and /dev/tty bound from devpts
// and devfs (the host's would reach the host's ptys and terminal).
long mount_run_dev(Kernel& k, Filesystem* dev, const KernelConfig& cfg) {
  bool whole_host = cfg.root[0] == '/' && cfg.root[1] == 0;
  Filesystem* pts = nullptr;
  long r = devpts_create(k.heap, &pts);
  if (r < 0) return r;
  if (!whole_host) {
    if ((r = k.vfs->mount("/dev", dev, &kDevFsType, MS_NOSUID, "devtmpfs")) < 0 ||
        (r = k.vfs->mount("/dev/pts", pts, &kDevPtsType, MS_NOSUID | MS_NOEXEC, "devpts")) < 0)
      return r;
    return devfs_mount_shm(k);
  }
  if ((r = k.vfs->mount("/dev/pts", pts, &kDevPtsType, MS_NOSUID | MS_NOEXEC, "devpts")) < 0 ||
      (r = k.vfs->mount("/dev/ptmx", pts, &kDevPtsType, MS_NOSUID | MS_NOEXEC, "devpts", "/ptmx")) < 0)
    return r;
  return k.vfs->mount("/dev/tty", dev, &kDevFsType, MS_NOSUID, "devtmpfs", "/tty");
}

// The pools guests draw on. The kernel keeps back, of the descriptors, one
// per possible host process (its pidfd) and one per task (its wakeup
// eventfd) besides a margin for its own files (exec, loading, /proc); of
// the mappings, the split a kernel stack's guard pages make for every
// possible task, and a margin.
void share_host_limits(Kernel& k) {
  constexpr long kFdReserve = 2 * kMaxTasks + 512;
  constexpr long kMapReserve = kMaxTasks * kKStackMaps + 1024;
  k.host_fds.small = kSmallFds;
  if (k.cfg.host_nofile > 0)
    k.host_fds.limit = share_pool_limit(k.cfg.host_nofile, k.cfg.host_fds_at_boot, kFdReserve);
  if (k.cfg.host_max_map_count > 0)
    k.host_map_limit = share_pool_limit(k.cfg.host_max_map_count, k.cfg.host_maps_at_boot, kMapReserve);
}

// kernel.pid_max as Linux sets it at boot: PID_MAX_DEFAULT (32768), or
// 1024 for each CPU where there are more than 32.
int default_pid_max() {
  uint64_t mask[16] = {};
  long n = host::sys(SYS_sched_getaffinity, 0, sizeof mask, mask);
  int cpus = 0;
  for (long i = 0; n > 0 && i < n / 8; i++)
    for (uint64_t m = mask[i]; m; m &= m - 1) cpus++;  // (no popcount: libgcc's is not the kernel's)
  return cpus > 32 ? 1024 * cpus : 32768;
}

}  // namespace

Kernel* Kernel::create(const KernelConfig& cfg) {
  // hostfs's openat2 calls point into it; it must exist before the filter.
  if (open_how_table_make() == OpenHowState::kAbsent) return nullptr;
  Heap* heap = Heap::create();
  if (!heap) return nullptr;
  Kernel* k = heap->make<Kernel>();
  if (!k) {
    heap->destroy();
    return nullptr;
  }
  k->heap = heap;
  heap->set_root(k);
  k->cfg = cfg;
  k->boot_ns = monotonic_ns();
  k->host_pid = (int)host::sys(SYS_getpid);
  share_host_limits(*k);
  k->hproc0 = heap->make<HostProc>();
  if (k->hproc0) {
    k->hproc0->kernel = k;
    k->hproc0->pid = k->host_pid;
    k->hproc0->maps = host_pool_make(heap, k->host_map_limit, kSmallMaps);
  }
  k->vfs = heap->make<Vfs>(heap);
  k->dcache = heap->make<Dcache>(heap, dcache_bound(1ull << 30));
  k->locks = heap->make<LockTable>(heap);
  k->leases = heap->make<LeaseTable>(heap);
  k->timers = heap->make<TimerService>();
  k->net = net_state_create(heap);
  if (k->net) net_set_forwards(*k->net, cfg.boot.forwards, cfg.boot.nforwards);
  k->log = log_buffer_create(heap);
  k->blocks = heap->make<BlockDevices>();
  k->ipc = ipc_namespace_create(heap);
  k->ptys = pty_table_create(heap);
  k->dnotify = dnotify_create(heap);
  k->inotify = inotify_create(heap);
  k->cgroups = cgroup_tree_create(heap);
  if (!k->hproc0 || !k->hproc0->maps || !k->blocks || !k->ipc || !k->leases || !k->vfs || !k->dcache || !k->locks || !k->timers || !k->net ||
      !k->log || !k->ptys || !k->dnotify || !k->inotify || !k->cgroups) {
    heap->destroy();
    return nullptr;
  }
  for (const FsType* type :
       {&kHostFsType, &kProcFsType, &kDevFsType, &kDevPtsType, &kTmpFsType, &kExt4Type, &kExt3Type,
        &kExt2Type, &kCgroup2Type, &kSysFsType, &kMqueueFsType})
    k->vfs->register_type(type);
  k->log->console_loglevel = cfg.boot.loglevel;
  k->log->time = cfg.boot.printk_time;
  k->mem.limit = cfg.boot.mem_bytes;
  k->sysctl.pid_max.store(default_pid_max());
  sysctl_start(k->sysctl);
  // Booting mounts what the command line asks for (kernel/boot/boot.cpp),
  // and numbers its processes from init's 1 on its own.
  if (cfg.boot.enabled) return k;
  k->pid_reserve = pid_reservations_create(heap);
  Filesystem* root = nullptr;
  Filesystem* proc = nullptr;
  Filesystem* dev = nullptr;
  if (hostfs_create(*k, cfg.root, &root) < 0 ||
      procfs_create(heap, &proc) < 0 || devtmpfs_create(*k, &dev) < 0 ||
      k->vfs->mount("/", root, &kHostFsType, cfg.root_readonly ? MS_RDONLY : 0, "/dev/root", "/",
                    cfg.root) < 0 ||
      k->vfs->mount("/proc", proc, &kProcFsType, MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc") < 0) {
    heap->destroy();
    return nullptr;
  }
  if (mount_run_dev(*k, dev, cfg) < 0) {
    heap->destroy();
    return nullptr;
  }
  return k;
}

void Kernel::destroy() { heap->destroy(); }

}  // namespace flatux
