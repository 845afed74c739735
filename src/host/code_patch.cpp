#include "host/code_patch.h"

#include <linux/errno.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

namespace flatux {
namespace {

constexpr uintptr_t kPage = 4096;

// Every CPU that runs a thread of this host process serializes its
// instruction stream before going on (what cross-modifying code needs).
// Registration is per host address space: a forked host process starts
// unregistered, so it registers on first use.
void sync_cores() {
  if (host::sys(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == -EPERM) {
    host::sys(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
    host::sys(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
  }
}

// The pages holding [addr, addr+n) writable (and still executable) while
// it lives, then `prot` again.
class Writable {
 public:
  Writable(uintptr_t addr, size_t n, int prot)
      : start_(addr & ~(kPage - 1)), len_(((addr + n + kPage - 1) & ~(kPage - 1)) - start_), prot_(prot) {
    err_ = host::sys(SYS_mprotect, start_, len_, prot | PROT_WRITE);
  }
  ~Writable() {
    if (!err_) host::sys(SYS_mprotect, start_, len_, prot_);
  }
  long error() const { return err_; }

 private:
  uintptr_t start_;
  size_t len_;
  int prot_;
  long err_;
};

void store(uintptr_t addr, const uint8_t* bytes, size_t n) {
  auto* dst = reinterpret_cast<volatile uint8_t*>(addr);
  for (size_t i = 0; i < n; i++) dst[i] = bytes[i];
}

}  // namespace

long code_write(uintptr_t addr, const void* bytes, size_t n, int prot) {
  Writable w(addr, n, prot);
  if (w.error()) return w.error();
  store(addr, static_cast<const uint8_t*>(bytes), n);
  return 0;
}

long code_patch_insn(uintptr_t addr, const uint8_t* insn, size_t n, int prot) {
  static constexpr uint8_t kInt3 = 0xcc;
  Writable w(addr, n, prot);
  if (w.error()) return w.error();
  store(addr, &kInt3, 1);
  sync_cores();
  store(addr + 1, insn + 1, n - 1);
  sync_cores();
  store(addr, insn, 1);
  sync_cores();
  return 0;
}

}  // namespace flatux
