// The memory controller, as Linux's without swap: memory.current is what
// the cgroup's processes hold in memory (counted from the host's pagemaps,
// mm/resident.h: anonymous and shmem pages; a host file's page cache is
// the host's), mapping never fails for a cgroup's sake, and a cgroup that
// holds more than its memory.max has its worst process killed (SIGKILL,
// Linux's OOM killer's choice: the most memory, weighed by oom_score_adj;
// with memory.oom.group all of them).
//
// There is no page fault to catch the touch that passes the limit, so the
// kernel looks instead: every kMemcgWatchNs while any cgroup has a
// memory.max or memory.high (the timer service's tick), and at each read
// of memory.current. So a process may pass memory.max by what it can
// touch in that time before it is killed; mem= (strict commit accounting)
// still bounds the kernel as a whole. memory.high is counted (its events)
// but throttles nothing. memory.peak is the most seen by a look.
//
// Everything here is under the kernel's tasks_lock.
#pragma once
#include <cstdint>

namespace flatux {

struct Kernel;
struct Cgroup;
struct Process;

constexpr uint64_t kMemcgWatchNs = 10'000'000;

struct MemCounter {
  int64_t max = INT64_MAX, high = INT64_MAX;
  int64_t peak = 0;
  bool oom_group = false;  // memory.oom.group
  // memory.events, for it and below (Linux's hierarchical file).
  uint64_t events_high = 0, events_max = 0, events_oom = 0, events_oom_kill = 0, events_oom_group_kill = 0;
};

// What a cgroup's processes hold (bytes), for memory.current and memory.stat.
struct MemUsage {
  int64_t anon = 0, shmem = 0, file_mapped = 0;
  int64_t current() const { return anon + shmem; }
};

// Counts cg and everything below (each Mm once) and raises its peak.
void memcg_usage_locked(Kernel& k, Cgroup& cg, MemUsage* out);
// A look at cg with `usage` counted: its peak, and past high or max, the
// events of cg and its ancestors. Whether an OOM kill is due.
bool memcg_account_locked(Cgroup& cg, int64_t usage);
// Linux's oom_badness: what a process of `charged` bytes weighs against a
// limit of `limit` bytes (oom_score_adj -1000: never, -1).
int64_t memcg_badness(int64_t charged, int oom_score_adj, int64_t limit);
// memory.max or memory.high changed somewhere: the watch runs while any
// is set.
void memcg_limits_changed_locked(Kernel& k);
// The watch (the timer thread's tick; takes tasks_lock): every cgroup with
// a limit is counted, and each over memory.max has its victim killed.
void memcg_watch(Kernel& k);

}  // namespace flatux
