// The memory controller's counters (Linux's page_counter, for flatux's
// strict overcommit): one per cgroup, charged with the commit charge of
// the processes' memory in it, as mem= is (kernel/mm/mm.h): what a private
// writable mapping may come to hold, charged when it is mapped. So
// memory.max refuses the mapping (ENOMEM, as Linux with
// vm.overcommit_memory=2) where Linux's default overcommit would let it be
// mapped and kill the process that touches past the limit; memory.current
// counts what processes have mapped so, not the host's page cache, tmpfs
// or the kernel's own memory.
//
// A counter lives as long as a cgroup or an Mm holds it (atomic
// references: an Mm lets go of its own without the tasks lock), and
// charges its ancestors' with it (each holds a reference to its parent's).
#pragma once
#include <atomic>
#include <cstdint>

namespace flatux {

class Heap;

struct MemCounter {
  std::atomic<int> refs{1};
  Heap* heap = nullptr;
  MemCounter* parent = nullptr;
  std::atomic<int64_t> usage{0}, peak{0};
  std::atomic<int64_t> max{INT64_MAX}, high{INT64_MAX};
  // memory.events: charges that took usage over high; that would have gone
  // over max (each refused: "max" and "oom" both count it, as Linux's).
  std::atomic<uint64_t> events_high{0}, events_max{0};
};

// A counter under `parent` (nullptr: the root's), or nullptr when out of memory.
MemCounter* memcg_new(Heap* heap, MemCounter* parent);
void memcg_get(MemCounter* c);
void memcg_put(MemCounter* c);
// Would `bytes` more fit under the max of c and every ancestor? A refusal
// counts in the events of the counter whose max it would pass.
bool memcg_fits(MemCounter* c, uint64_t bytes);
// Adds `delta` (negative: gives back) to c and its ancestors.
void memcg_charge(MemCounter* c, int64_t delta);

}  // namespace flatux
