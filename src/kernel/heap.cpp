#include "kernel/heap.h"

#include <cstring>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

namespace flatux {
namespace {

// Every block carries a header so free() needs no size; the magic catches
// double frees and wild pointers early instead of corrupting lists.
struct BlockHeader {
  uint32_t magic;
  int32_t cls;    // size class, or -1 for a large block
  uint64_t size;  // usable bytes
};
static_assert(sizeof(BlockHeader) == 16);
constexpr uint32_t kLiveMagic = 0x6b616c6c;  // "kall"
constexpr uint32_t kFreeMagic = 0x6b667265;  // "kfre"
constexpr size_t kPage = 4096;
// Growth is committed in chunks: the reservation is PROT_NONE-free
// MAP_NORESERVE shared memory, so only touched pages cost anything.
constexpr size_t kClassSizes[] = {16,  32,  48,  64,   96,   128,  192,  256,
                                  384, 512, 768, 1024, 1536, 2048, 3072, 4096};

uintptr_t align_up(uintptr_t v, size_t a) { return (v + a - 1) & ~(uintptr_t)(a - 1); }

// Under AddressSanitizer (the fuzzers' clang build of the kernel) the heap
// tells ASan what is in use: block headers, the slack past a request and
// free blocks (but for their list link) are poisoned, so an overrun into
// them or a use after free is reported. The g++ build has none of this.
#if defined(__SANITIZE_ADDRESS__)
#define FLATUX_HEAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FLATUX_HEAP_ASAN 1
#endif
#endif
#ifdef FLATUX_HEAP_ASAN
extern "C" void __asan_poison_memory_region(void const volatile* p, size_t n);
extern "C" void __asan_unpoison_memory_region(void const volatile* p, size_t n);
void hide(const void* p, size_t n) { __asan_poison_memory_region(p, n); }
void expose(const void* p, size_t n) { __asan_unpoison_memory_region(p, n); }
#else
void hide(const void*, size_t) {}
void expose(const void*, size_t) {}
#endif
constexpr size_t kLinkBytes = 16;  // a free block's list link (FreeBlock, LargeFree)

}  // namespace

int Heap::class_of(size_t n) {
  for (int c = 0; c < kClasses; c++)
    if (n <= kClassSizes[c]) return c;
  return -1;
}
size_t Heap::class_size(int c) { return kClassSizes[c]; }

Heap* Heap::create() {
  long p = host::sys(SYS_mmap, kHeapBase, kHeapReserve, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p < 0 && p > -4096) return nullptr;
  if ((uintptr_t)p != kHeapBase) {
    host::sys(SYS_munmap, p, kHeapReserve);
    return nullptr;
  }
  Heap* h = new ((void*)kHeapBase) Heap();
  h->top_ = align_up(kHeapBase + sizeof(Heap), 64);
  h->limit_ = kHeapBase + kHeapReserve;
  return h;
}

void Heap::destroy() {
  host::sys(SYS_munmap, kHeapBase, kHeapReserve);
}

void* Heap::bump(size_t n, size_t align) {
  uintptr_t p = align_up(top_, align);
  if (p + n > limit_ || p + n < p) return nullptr;
  top_ = p + n;
  return (void*)p;
}

void* Heap::alloc(size_t n) { return alloc_block(n, true); }
void* Heap::alloc_uninit(size_t n) { return alloc_block(n, false); }

void* Heap::alloc_block(size_t n, bool zero) {
  if (n == 0) n = 1;
  if (n > kHeapReserve) return nullptr;
  Guard g(lock_);
  int c = class_of(n);
  BlockHeader* h = nullptr;
  size_t size = 0;
  if (c >= 0) {
    if (FreeBlock* f = small_[c]) {
      small_[c] = f->next;
      h = reinterpret_cast<BlockHeader*>(f) - 1;
    } else {
      void* raw = bump(sizeof(BlockHeader) + class_size(c), 16);
      if (!raw) return nullptr;
      h = static_cast<BlockHeader*>(raw);
    }
    size = class_size(c);
  } else {
    size_t want = align_up(n, kPage);
    if (LargeFree** link = best_large_fit(want)) {
      LargeFree* f = *link;
      *link = f->next;
      h = reinterpret_cast<BlockHeader*>(f) - 1;
      want = split_large(f, f->size, want);
    } else {
      // The header sits in the 16 bytes before a page boundary so the
      // payload is page aligned (good for buffers handed to the host).
      void* raw = bump(kPage + want, kPage);
      if (!raw) return nullptr;
      h = reinterpret_cast<BlockHeader*>((uintptr_t)raw + kPage) - 1;
    }
    size = want;
  }
  expose(h, sizeof *h + size);
  h->size = size;
  h->magic = kLiveMagic;
  h->cls = c;
  in_use_ += size;
  void* p = h + 1;
  if (zero) memset(p, 0, n);  // what was asked for: a reused large block may be bigger
  hide(h, sizeof *h);
  hide(static_cast<char*>(p) + n, size - n);
  return p;
}

// The smallest free large block of at least `want` bytes (the link to it).
Heap::LargeFree** Heap::best_large_fit(size_t want) {
  LargeFree** best = nullptr;
  for (LargeFree** link = &large_; *link; link = &(*link)->next)
    if ((*link)->size >= want && (!best || (*link)->size < (*best)->size)) best = link;
  return best;
}

// Cuts a reused large block (its payload and size) down to `want` when
// enough is left over to be worth keeping: the rest (its header in the 16
// bytes before its own page boundary, so one page is given up between
// them) goes back on the list. Returns the block's size now.
size_t Heap::split_large(void* payload, size_t size, size_t want) {
  constexpr size_t kMinRest = 4 * kPage;
  if (size < want + kPage + kMinRest) return size;
  uintptr_t rest = (uintptr_t)payload + want + kPage;
  auto* rh = reinterpret_cast<BlockHeader*>(rest) - 1;
  expose(rh, sizeof *rh + kLinkBytes);
  rh->magic = kFreeMagic;
  rh->cls = -1;
  rh->size = size - want - kPage;
  auto* f = reinterpret_cast<LargeFree*>(rest);
  f->size = rh->size;
  f->next = large_;
  large_ = f;
  hide(rh, sizeof *rh);
  return want;
}

void Heap::free(void* p) {
  if (!p) return;
  BlockHeader* h = static_cast<BlockHeader*>(p) - 1;
  Guard g(lock_);
  expose(h, sizeof *h);
  if (h->magic != kLiveMagic) {  // double free or foreign pointer: ignore, never corrupt
    if (h->magic == kFreeMagic) hide(h, sizeof *h);
    return;
  }
  h->magic = kFreeMagic;
  size_t size = h->size;
  in_use_ -= size;
  expose(p, kLinkBytes);
  if (h->cls >= 0) {
    auto* f = static_cast<FreeBlock*>(p);
    f->next = small_[h->cls];
    small_[h->cls] = f;
  } else {
    auto* f = static_cast<LargeFree*>(p);
    f->size = size;
    f->next = large_;
    large_ = f;
  }
  hide(h, sizeof *h);
  hide(static_cast<char*>(p) + kLinkBytes, size - kLinkBytes);
}

void* Heap::alloc_kstack() {
  Guard g(lock_);
  void* p;
  if (kstacks_) {
    p = kstacks_;
    kstacks_ = kstacks_->next;
  } else {
    p = bump(kKernelStackSize, kKernelStackSize);
    if (!p) return nullptr;
  }
  in_use_ += kKernelStackSize;
  kstack_bytes_ += kKernelStackSize;
  return p;
}

void Heap::free_kstack(void* p) {
  if (!p) return;
  Guard g(lock_);
  in_use_ -= kKernelStackSize;
  kstack_bytes_ -= kKernelStackSize;
  auto* f = static_cast<FreeBlock*>(p);
  f->next = kstacks_;
  kstacks_ = f;
}

}  // namespace flatux
