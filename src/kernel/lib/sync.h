// Locks for kernel code: futex-based, no pthread, no host TLS.
#pragma once
#include <atomic>
#include <cstdint>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

namespace flatux {

inline long futex_wait(std::atomic<uint32_t>* word, uint32_t expected, bool shared = true) {
  int op = shared ? FUTEX_WAIT : (FUTEX_WAIT | FUTEX_PRIVATE_FLAG);
  return host::sys(SYS_futex, word, op, expected, 0, 0, 0);
}
inline long futex_wake(std::atomic<uint32_t>* word, int n, bool shared = true) {
  int op = shared ? FUTEX_WAKE : (FUTEX_WAKE | FUTEX_PRIVATE_FLAG);
  return host::sys(SYS_futex, word, op, n, 0, 0, 0);
}

// Drepper's three-state mutex. Shared (not PRIVATE) futex ops because the
// kernel heap is MAP_SHARED and may later be mapped by several host processes.
class KMutex {
 public:
  void lock() {
    uint32_t c = 0;
    if (state_.compare_exchange_strong(c, 1, std::memory_order_acquire)) return;
    if (c != 2) c = state_.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      futex_wait(&state_, 2);
      c = state_.exchange(2, std::memory_order_acquire);
    }
  }
  void unlock() {
    if (state_.fetch_sub(1, std::memory_order_release) != 1) {
      state_.store(0, std::memory_order_release);
      futex_wake(&state_, 1);
    }
  }
  bool try_lock() {
    uint32_t c = 0;
    return state_.compare_exchange_strong(c, 1, std::memory_order_acquire);
  }

 private:
  std::atomic<uint32_t> state_{0};
};

template <typename L>
class Guard {
 public:
  explicit Guard(L& l) : l_(l) { l_.lock(); }
  ~Guard() { l_.unlock(); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  L& l_;
};

}  // namespace flatux
