// Host resources every guest draws on through the kernel: the one host
// descriptor table all host processes share (CLONE_FILES), each host
// process's vm.max_map_count, and the kernel's task table. Each is a pool:
// the host's capacity less what the kernel keeps for itself (its own
// descriptors and kernel stacks, exec, loading). A guest holds a share of
// it, charged on acquire and given back on release, exactly.
//
// The share rule, for a holder asking for more:
//  - nothing past the pool's limit (the kernel's reserve stays its own);
//  - a holder holding little (up to the pool's `small`) may take while the
//    pool has room: any process can open its few files, map its libraries,
//    start its few threads;
//  - past that, it may take only while a quarter of the pool stays free
//    and it would hold no more than what stays free for everyone else.
// So one holder gets at most half of the pool, any number of big holders
// together three quarters, and the last quarter goes out in small
// holdings only: emptying it takes (limit / 4) / small processes at once.
#pragma once
#include <atomic>
#include <cstdint>

namespace flatux {

class Heap;

struct HostPool {
  std::atomic<long> used{0};
  long limit = 0;  // what guests may hold in all; 0: no pool (nothing is limited)
  long small = 0;  // what any holder may take while there is room
  std::atomic<int> refs{1};  // for pools in the heap (a host process's mappings)
};

// What any holder may take while there is room: a process's few files,
// its libraries' and thread stacks' mappings, a few threads.
constexpr long kSmallFds = 64, kSmallMaps = 256, kSmallThreads = 16;

enum class ShareVerdict : uint8_t { kOk, kPoolFull, kOverShare };

// Would `n` more for a holder now holding `held` fit, in a pool of `limit`
// (and `small`) with `used` taken (`held` is part of `used`)? A limit <= 0
// limits nothing.
ShareVerdict share_verdict(long limit, long small, long used, long held, long n);
ShareVerdict share_check(const HostPool& pool, long held, long n);
// The most one holder may hold while the pool is otherwise idle.
inline long share_alone(const HostPool& pool) { return pool.limit / 2; }

// The capacity guests may draw on: `capacity` less what is in use at boot
// and the kernel's reserve (at most half of what is left).
long share_pool_limit(long capacity, long at_boot, long reserve);

HostPool* host_pool_make(Heap* heap, long limit, long small);
void host_pool_put(Heap* heap, HostPool* p);

// One guest's holding of host descriptors: the files first installed in
// its descriptor table. It lives on while such a file does (a file may
// outlive the table that charged it: fork, SCM_RIGHTS).
struct FdShare {
  HostPool* pool;
  std::atomic<long> held{0};
  std::atomic<int> refs{1};  // the table's, and one per charged file
};
FdShare* fd_share_make(Heap* heap, HostPool* pool);
void fd_share_put(Heap* heap, FdShare* s);
// Charges one descriptor: 0, or -ENFILE (pool full) or -EMFILE (over share).
long fd_share_charge(FdShare& s);
void fd_share_uncharge(Heap* heap, FdShare* s);

}  // namespace flatux
