#include "host/foreign_gate.h"

#include <asm/prctl.h>
#include <sys/syscall.h>

#include "host/entry.h"
#include "host/hostproc.h"
#include "host/kstack.h"
#include "host/raw_syscall.h"

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
  long r = fn(arg);
  write_fs(fast, guest_fs);
  k.gate_owner.store(0, std::memory_order_relaxed);
  return r;
}

}  // namespace flatux
