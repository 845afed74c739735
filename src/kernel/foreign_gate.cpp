#include "kernel/foreign_gate.h"

#include <asm/prctl.h>
#include <cstring>
#include <sys/syscall.h>

#include "kernel/task/hostproc.h"
#include "host/kstack.h"
#include "host/raw_syscall.h"
#include "kernel/task/kthread.h"

namespace flatux {

// A foreign call handed to the first host process (on the caller's kernel stack).
struct GateRequest {
  long (*fn)(void*);
  void* arg;
  long result;
  std::atomic<uint32_t> done;
  GateRequest* next;
};

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

// Foreign code is ordinary host code and uses the vector registers. Inside
// a fast entry (a rewritten guest syscall, host/fast_entry.S) they still
// hold the guest's values, which nothing else saves, so they are kept
// around the call: x87, SSE, AVX and AVX-512 state (XSAVE's standard form;
// FXSAVE where the host has no XSAVE). On the trap path the host's signal
// frame holds them already.
class GuestFpu {
 public:
  GuestFpu(const Kernel& k) : xsave_(k.cfg.xsave) {
    memset(area_ + 512, 0, 64);  // the XSAVE header XRSTOR checks
    if (xsave_) asm volatile("xsave64 (%0)" ::"r"(area_), "a"(kMask), "d"(0) : "memory");
    else asm volatile("fxsave64 (%0)" ::"r"(area_) : "memory");
  }
  ~GuestFpu() {
    if (xsave_) asm volatile("xrstor64 (%0)" ::"r"(area_), "a"(kMask), "d"(0) : "memory");
    else asm volatile("fxrstor64 (%0)" ::"r"(area_) : "memory");
  }

 private:
  static constexpr uint32_t kMask = 0xe7;  // x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  bool xsave_;
  alignas(64) uint8_t area_[4096];  // the standard form ends at 2688 bytes with these
};

long call_keeping_guest_fpu(const Kernel& k, long (*fn)(void*), void* arg) {
  GuestFpu keep(k);
  return fn(arg);
}

bool in_fast_entry() {
  KStackHeader* h = current_kstack_checked();
  return h && on_fast_stack(h, current_sp());
}

// Asked of the host, not of the task: during an execve into a fresh host
// process the task's thread there loads the image before the task moves.
bool in_forked_host_process(Kernel& k) {
  return k.gate_server_started && host::sys(SYS_getpid) != k.host_pid;
}

long forward_call(Kernel& k, long (*fn)(void*), void* arg) {
  GateRequest req{fn, arg, 0, {0}, nullptr};
  {
    Guard g(k.gate_queue_lock);
    GateRequest** tail = &k.gate_queue;
    while (*tail) tail = &(*tail)->next;
    *tail = &req;
  }
  k.gate_queue_seq.fetch_add(1);
  futex_wake(&k.gate_queue_seq, 1);
  while (req.done.load() == 0) futex_wait(&req.done, 0);
  return req.result;
}

void gate_server(void* arg) {
  Kernel& k = *static_cast<Kernel*>(arg);
  for (;;) {
    uint32_t seq = k.gate_queue_seq.load();
    GateRequest* req;
    {
      Guard g(k.gate_queue_lock);
      req = k.gate_queue;
      if (req) k.gate_queue = req->next;
    }
    if (!req) {
      futex_wait(&k.gate_queue_seq, seq);
      continue;
    }
    req->result = foreign_call(k, req->fn, req->arg);
    req->done.store(1);
    futex_wake(&req->done, 1);
  }
}

}  // namespace

long foreign_gate_start_server(Kernel& k) {
  if (k.gate_server_started) return 0;
  void* stack;
  long r = start_kernel_thread(k, gate_server, &k, &stack);
  if (r == 0) k.gate_server_started = true;
  return r;
}

long foreign_call(Kernel& k, long (*fn)(void*), void* arg) {
  if (in_forked_host_process(k)) return forward_call(k, fn, arg);
  uintptr_t me = caller_id();
  // A call from inside the gate (ext4 on a loop device whose file lies on
  // another ext4 volume) already runs with host TLS and holds the gate.
  if (k.gate_owner.load(std::memory_order_relaxed) == me) return fn(arg);
  Guard g(k.gate_lock);
  k.gate_owner.store(me, std::memory_order_relaxed);
  bool fast = k.cfg.fsgsbase;
  uint64_t guest_fs = read_fs(fast);
  write_fs(fast, k.cfg.host_fs);
  long r = in_fast_entry() ? call_keeping_guest_fpu(k, fn, arg) : fn(arg);
  write_fs(fast, guest_fs);
  k.gate_owner.store(0, std::memory_order_relaxed);
  return r;
}

}  // namespace flatux
