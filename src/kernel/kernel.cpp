#include "kernel/kernel.h"

#include <linux/errno.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/procfs/procfs.h"
#include "kernel/time.h"
#include "kernel/timer/timer.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

Kernel* Kernel::create(const KernelConfig& cfg) {
  Heap* heap = Heap::create();
  if (!heap) return nullptr;
  Kernel* k = heap->make<Kernel>();
  if (!k) {
    heap->destroy();
    return nullptr;
  }
  k->heap = heap;
  k->cfg = cfg;
  k->boot_ns = monotonic_ns();
  k->host_pid = (int)host::sys(SYS_getpid);
  k->vfs = heap->make<Vfs>(heap);
  k->timers = heap->make<TimerService>();
  Filesystem* root = nullptr;
  Filesystem* proc = nullptr;
  if (!k->vfs || !k->timers || hostfs_create(heap, cfg.root, cfg.root_readonly, &root) < 0 ||
      procfs_create(heap, &proc) < 0 || k->vfs->mount("/", root) < 0 ||
      k->vfs->mount("/proc", proc) < 0) {
    heap->destroy();
    return nullptr;
  }
  return k;
}

void Kernel::destroy() { heap->destroy(); }

}  // namespace flatux
