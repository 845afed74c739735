// A page cache in the kernel heap: fixed 4 KiB pages keyed by (owner,
// index), least recently used first out. The ext4 filesystem keeps two: one
// over its block device (write-back: dirty pages reach the host file when
// flushed or evicted) and one over file contents (clean copies, so that
// repeated reads do not leave the kernel). Not locked: its owner serialises.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

class Heap;

class PageCache {
 public:
  static constexpr size_t kPageSize = 4096;

  struct Page {
    uint64_t owner, index;
    Page *hash_next, *lru_prev, *lru_next;
    bool dirty;
    // Apart from the header, so both fit the heap's small classes (a page
    // with its header inline would take the large-block path: 12 KiB).
    uint8_t* data;
  };

  // Writes a dirty page back; a failure keeps it dirty (and cached).
  using WriteBack = long (*)(void* ctx, const Page& p);

  PageCache(Heap* heap, size_t max_pages, WriteBack wb = nullptr, void* ctx = nullptr);
  ~PageCache();
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  Page* find(uint64_t owner, uint64_t index);  // marks it recently used
  // A new page (contents undefined) inserted for (owner, index), evicting
  // the least recently used page when full; nullptr when no memory or when
  // every candidate for eviction fails to write back.
  Page* insert(uint64_t owner, uint64_t index);
  void drop(Page* p);  // discards, dirty or not
  // Discards the pages of `owner` with first <= index < end.
  void drop_range(uint64_t owner, uint64_t first, uint64_t end);
  // Writes back every dirty page; returns the first error (pages that
  // failed stay dirty).
  long flush();
  size_t pages() const { return count_; }
  size_t dirty_pages() const;

 private:
  size_t bucket(uint64_t owner, uint64_t index) const;
  void unlink(Page* p);
  void push_front(Page* p);
  long evict_one();
  Page* new_page();

  Heap* heap_;
  size_t max_pages_;
  WriteBack wb_;
  void* ctx_;
  Page** buckets_ = nullptr;
  size_t nbuckets_ = 0;
  size_t count_ = 0;
  Page* lru_head_ = nullptr;  // most recent
  Page* lru_tail_ = nullptr;  // least recent
};

}  // namespace flatux
