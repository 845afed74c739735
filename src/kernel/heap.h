// The kernel heap: one MAP_SHARED anonymous region at a fixed address.
// Fixed, so that the pointers stored in it mean the same in every host
// process that maps it; shared, so that later some guest processes can run
// in separate host processes over the same kernel state. The Heap object
// itself lives at the start of the region.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>

#include "host/layout.h"
#include "kernel/lib/sync.h"

namespace flatux {

class Heap {
 public:
  // Maps the region and constructs the heap in it; nullptr on failure.
  static Heap* create();
  // Unmaps everything; every pointer into the heap becomes invalid.
  void destroy();

  void* alloc(size_t n);  // 16-byte aligned, zeroed; nullptr when exhausted
  // Not zeroed: for a large buffer only ever read up to where it was
  // filled (exec's copy of argv and envp reserves 2 MiB and uses a few
  // hundred bytes; zeroing it was a fifth of a vfork+exec).
  void* alloc_uninit(size_t n);
  void free(void* p);
  void* alloc_kstack();   // kKernelStackSize bytes, aligned to that size
  void free_kstack(void* p);

  // Bytes handed out and not yet freed, kernel stacks included, and the
  // part of it that is kernel stacks (/proc/meminfo's Slab, KernelStack).
  size_t bytes_in_use() const { return in_use_; }
  size_t kstack_bytes() const { return kstack_bytes_; }

  // The object all other state hangs off (the Kernel), found through the
  // heap's fixed address by code that is handed no pointer to it (a
  // foreign library's callback).
  void set_root(void* p) { root_ = p; }
  static void* root_of_this_process() { return reinterpret_cast<Heap*>(kHeapBase)->root_; }

  template <typename T, typename... A>
  T* make(A&&... a) {
    void* p = alloc(sizeof(T));
    return p ? new (p) T(static_cast<A&&>(a)...) : nullptr;
  }
  template <typename T>
  void destroy_obj(T* p) {
    if (!p) return;
    p->~T();
    free(p);
  }

 private:
  static constexpr int kClasses = 16;
  struct FreeBlock { FreeBlock* next; };
  struct LargeFree { LargeFree* next; size_t size; };

  void* bump(size_t n, size_t align);
  void* alloc_block(size_t n, bool zero);
  LargeFree** best_large_fit(size_t want);
  size_t split_large(void* payload, size_t size, size_t want);
  static int class_of(size_t n);
  static size_t class_size(int c);

  KMutex lock_;
  uintptr_t top_ = 0;   // first unused byte
  uintptr_t limit_ = 0;
  size_t in_use_ = 0;
  size_t kstack_bytes_ = 0;
  FreeBlock* small_[kClasses]{};
  LargeFree* large_ = nullptr;
  FreeBlock* kstacks_ = nullptr;
  void* root_ = nullptr;
};

// std-style allocator over the kernel heap, for containers.
template <typename T>
struct KAlloc {
  using value_type = T;
  Heap* heap;
  explicit KAlloc(Heap* h) : heap(h) {}
  template <typename U>
  KAlloc(const KAlloc<U>& o) : heap(o.heap) {}
  T* allocate(size_t n) { return static_cast<T*>(heap->alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t) { heap->free(p); }
  template <typename U>
  bool operator==(const KAlloc<U>& o) const { return heap == o.heap; }
};

}  // namespace flatux
