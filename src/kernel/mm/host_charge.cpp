#include "kernel/mm/host_charge.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/heap.h"
#include "kernel/kernel.h"
#include "kernel/mm/mm.h"

namespace flatux {

HostCharge* host_charge_new(Heap* heap, MemAccount& acct, int host_fd, ChargeKind kind) {
  struct stat st;
  if (host::sys(SYS_fstat, host_fd, &st) < 0) return nullptr;
  long keeper = -1;
  if (kind == ChargeKind::kMemfd && (keeper = host::sys(SYS_fcntl, host_fd, F_DUPFD_CLOEXEC, 0)) < 0) return nullptr;
  HostCharge* c = heap->make<HostCharge>();
  if (!c) {
    if (keeper >= 0) host::sys(SYS_close, keeper);
    return nullptr;
  }
  c->keeper = (int)keeper;
  c->kind = kind;
  c->heap = heap;
  c->acct = &acct;
  c->dev = st.st_dev;
  c->ino = st.st_ino;
  Guard g(acct.charges_lock);
  c->next = acct.charges;
  if (c->next) c->next->prev = c;
  acct.charges = c;
  return c;
}

void host_charge_get(HostCharge* c) { c->refs.fetch_add(1, std::memory_order_relaxed); }

void host_charge_put(HostCharge* c) {
  if (!c || c->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  MemAccount& acct = *c->acct;
  {
    Guard g(acct.charges_lock);
    if (c->prev) c->prev->next = c->next;
    else acct.charges = c->next;
    if (c->next) c->next->prev = c->prev;
  }
  mem_uncharge(acct, c->bytes);
  if (c->keeper >= 0) host::sys(SYS_close, c->keeper);
  c->heap->destroy_obj(c);
}

bool host_charge_grow(HostCharge& c, uint64_t bytes) {
  if (!mem_charge(*c.acct, bytes)) return false;
  c.bytes += bytes;
  return true;
}

void host_charge_shrink(HostCharge& c, uint64_t bytes) {
  if (bytes > c.bytes) bytes = c.bytes;
  mem_uncharge(*c.acct, bytes);
  c.bytes -= bytes;
}

void host_charge_set(HostCharge& c, uint64_t bytes) {
  if (bytes >= c.bytes) c.acct->used.fetch_add(bytes - c.bytes, std::memory_order_relaxed);
  else mem_uncharge(*c.acct, c.bytes - bytes);
  c.bytes = bytes;
}

void host_charge_measure_locked(HostCharge& c) {
  struct stat st;
  if (c.keeper >= 0 && host::sys(SYS_fstat, c.keeper, &st) == 0) host_charge_set(c, (uint64_t)st.st_blocks * 512);
}

void host_charge_measure(HostCharge& c) {
  Guard g(c.lock);
  host_charge_measure_locked(c);
}

HostCharge* host_charge_find(MemAccount& acct, int host_fd) {
  struct stat st;
  if (host::sys(SYS_fstat, host_fd, &st) < 0) return nullptr;
  Guard g(acct.charges_lock);
  for (HostCharge* c = acct.charges; c; c = c->next) {
    // A charge whose last reference is going is not taken again.
    int refs = c->refs.load(std::memory_order_relaxed);
    if (c->dev != st.st_dev || c->ino != st.st_ino) continue;
    while (refs > 0 && !c->refs.compare_exchange_weak(refs, refs + 1, std::memory_order_relaxed)) {
    }
    if (refs > 0) return c;
  }
  return nullptr;
}

}  // namespace flatux
