#include "host/foreign_gate.h"

#include <asm/prctl.h>
#include <sys/syscall.h>

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

}  // namespace

long foreign_call(Kernel& k, long (*fn)(void*), void* arg) {
  Guard g(k.gate_lock);
  bool fast = k.cfg.fsgsbase;
  uint64_t guest_fs = read_fs(fast);
  write_fs(fast, k.cfg.host_fs);
  long r = fn(arg);
  write_fs(fast, guest_fs);
  return r;
}

}  // namespace flatux
