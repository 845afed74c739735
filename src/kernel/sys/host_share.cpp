#include "kernel/sys/host_share.h"

#include <linux/errno.h>

#include "kernel/heap.h"

namespace flatux {

ShareVerdict share_verdict(long limit, long small, long used, long held, long n) {
  if (limit <= 0 || n <= 0) return ShareVerdict::kOk;
  long after = used + n;
  if (after > limit) return ShareVerdict::kPoolFull;
  if (held + n <= small) return ShareVerdict::kOk;
  if (after > limit - limit / 4 || held + n > limit - after) return ShareVerdict::kOverShare;
  return ShareVerdict::kOk;
}

ShareVerdict share_check(const HostPool& pool, long held, long n) {
  return share_verdict(pool.limit, pool.small, pool.used.load(std::memory_order_relaxed), held, n);
}

long share_pool_limit(long capacity, long at_boot, long reserve) {
  long left = capacity - at_boot;
  if (left <= 0) return 1;
  if (reserve > left / 2) reserve = left / 2;
  return left - reserve;
}

HostPool* host_pool_make(Heap* heap, long limit, long small) {
  HostPool* p = heap->make<HostPool>();
  if (!p) return nullptr;
  p->limit = limit;
  p->small = small;
  return p;
}

void host_pool_put(Heap* heap, HostPool* p) {
  if (p && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) heap->destroy_obj(p);
}

FdShare* fd_share_make(Heap* heap, HostPool* pool) {
  FdShare* s = heap->make<FdShare>();
  if (s) s->pool = pool;
  return s;
}

void fd_share_put(Heap* heap, FdShare* s) {
  if (s && s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) heap->destroy_obj(s);
}

long fd_share_charge(FdShare& s) {
  HostPool& p = *s.pool;
  // Check and take as one step against other holders' charges: the pool's
  // count moves by compare-and-swap from the value the check saw.
  long used = p.used.load(std::memory_order_relaxed);
  for (;;) {
    ShareVerdict v = share_verdict(p.limit, p.small, used, s.held.load(std::memory_order_relaxed), 1);
    if (v != ShareVerdict::kOk) return v == ShareVerdict::kPoolFull ? -ENFILE : -EMFILE;
    if (p.used.compare_exchange_weak(used, used + 1, std::memory_order_relaxed)) break;
  }
  s.held.fetch_add(1, std::memory_order_relaxed);
  s.refs.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

void fd_share_uncharge(Heap* heap, FdShare* s) {
  if (!s) return;
  s->held.fetch_sub(1, std::memory_order_relaxed);
  s->pool->used.fetch_sub(1, std::memory_order_relaxed);
  fd_share_put(heap, s);
}

}  // namespace flatux
