#include "kernel/cgroup/memcg.h"

#include "kernel/heap.h"

namespace flatux {

MemCounter* memcg_new(Heap* heap, MemCounter* parent) {
  MemCounter* c = heap->make<MemCounter>();
  if (!c) return nullptr;
  c->heap = heap;
  if (parent) memcg_get(parent);
  c->parent = parent;
  return c;
}

void memcg_get(MemCounter* c) {
  if (c) c->refs.fetch_add(1, std::memory_order_relaxed);
}

void memcg_put(MemCounter* c) {
  while (c && c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    MemCounter* parent = c->parent;
    c->heap->destroy_obj(c);
    c = parent;
  }
}

bool memcg_fits(MemCounter* c, uint64_t bytes) {
  for (; c; c = c->parent) {
    int64_t max = c->max.load(std::memory_order_relaxed);
    if (max == INT64_MAX) continue;
    if (c->usage.load(std::memory_order_relaxed) + (int64_t)bytes > max) {
      c->events_max.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  }
  return true;
}

void memcg_charge(MemCounter* c, int64_t delta) {
  if (!delta) return;
  for (; c; c = c->parent) {
    int64_t now = c->usage.fetch_add(delta, std::memory_order_relaxed) + delta;
    if (delta < 0) continue;
    int64_t peak = c->peak.load(std::memory_order_relaxed);
    while (now > peak && !c->peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    if (now > c->high.load(std::memory_order_relaxed) && now - delta <= c->high.load(std::memory_order_relaxed))
      c->events_high.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace flatux
