#include "host/foreign_gate.h"

#include <asm/prctl.h>
#include <sys/syscall.h>

#include "host/kstack.h"
#include "host/raw_syscall.h"

namespace flatux {
namespace {

uint64_t read_fs(bool fsgsbase) {
  uint64_t v = 0;
  if (fsgsbase) asm volatile("rdfsbase %0" : "=r"(v));
  else host::sys(SYS_arch_prctl, ARCH_GET_FS, &v);
  return v;
}

void write_fs(bool fsgsbase, uint64_t v) {
  if (fsgsbase) asm volatile("wrfsbase %0" ::"r"(v) : "memory");
  else host::sys(SYS_arch_prctl, ARCH_SET_FS, v);
}

// Who is calling: the kernel stack of a task, else the host thread.
uintptr_t caller_id() {
  if (KStackHeader* h = current_kstack_checked()) return reinterpret_cast<uintptr_t>(h);
  return (uintptr_t)host::sys(SYS_gettid) << 1 | 1;
}

}  // namespace

long foreign_call(Kernel& k, long (*fn)(void*), void* arg) {
  uintptr_t me = caller_id();
  // A call from inside the gate (ext4 on a loop device whose file lies on
  // another ext4 volume) already runs with host TLS and holds the gate.
  if (k.gate_owner.load(std::memory_order_relaxed) == me) return fn(arg);
  Guard g(k.gate_lock);
  k.gate_owner.store(me, std::memory_order_relaxed);
  bool fast = k.cfg.fsgsbase;
  uint64_t guest_fs = read_fs(fast);
  write_fs(fast, k.cfg.host_fs);
  long r = fn(arg);
  write_fs(fast, guest_fs);
  k.gate_owner.store(0, std::memory_order_relaxed);
  return r;
}

}  // namespace flatux
