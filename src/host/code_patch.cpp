#include "host/code_patch.h"

#include <linux/errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/kernel.h"

namespace flatux {
namespace {

// Every CPU that runs a thread of this host process serializes its
// instruction stream before going on (what cross-modifying code needs).
void sync_cores() {
  host::sys(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

}  // namespace

long code_write(const Kernel& k, uintptr_t addr, const void* bytes, size_t n) {
  if (k.cfg.code_mem_fd < 0) return -ENOSYS;
  long r = host::sys(SYS_pwrite64, k.cfg.code_mem_fd, bytes, n, addr);
  if (r < 0) return r;
  return (size_t)r == n ? 0 : -EIO;
}

long code_patch_insn(const Kernel& k, uintptr_t addr, const uint8_t* old, const uint8_t* insn, size_t n) {
  static constexpr uint8_t kInt3 = 0xcc;
  long r = code_write(k, addr, &kInt3, 1);
  if (r < 0) return r;
  sync_cores();
  if (n > 1 && (r = code_write(k, addr + 1, insn + 1, n - 1)) < 0) {
    code_write(k, addr, old, 1);
    sync_cores();
    return r;
  }
  sync_cores();
  r = code_write(k, addr, insn, 1);
  sync_cores();
  return r;
}

}  // namespace flatux
