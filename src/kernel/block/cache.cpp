#include "kernel/block/cache.h"

#include <linux/errno.h>

#include "kernel/heap.h"

namespace flatux {

PageCache::PageCache(Heap* heap, size_t max_pages, WriteBack wb, void* ctx)
    : heap_(heap), max_pages_(max_pages ? max_pages : 1), wb_(wb), ctx_(ctx) {
  nbuckets_ = 1;
  while (nbuckets_ < max_pages_) nbuckets_ <<= 1;
  buckets_ = static_cast<Page**>(heap_->alloc(nbuckets_ * sizeof(Page*)));
  if (!buckets_) nbuckets_ = 0;
}

PageCache::~PageCache() {
  while (lru_head_) drop(lru_head_);
  heap_->free(buckets_);
}

size_t PageCache::bucket(uint64_t owner, uint64_t index) const {
  uint64_t h = (owner * 0x9e3779b97f4a7c15ull) ^ (index * 0xc2b2ae3d27d4eb4full);
  return (size_t)(h ^ (h >> 29)) & (nbuckets_ - 1);
}

void PageCache::unlink(Page* p) {
  (p->lru_prev ? p->lru_prev->lru_next : lru_head_) = p->lru_next;
  (p->lru_next ? p->lru_next->lru_prev : lru_tail_) = p->lru_prev;
  p->lru_prev = p->lru_next = nullptr;
}

void PageCache::push_front(Page* p) {
  p->lru_prev = nullptr;
  p->lru_next = lru_head_;
  if (lru_head_) lru_head_->lru_prev = p;
  lru_head_ = p;
  if (!lru_tail_) lru_tail_ = p;
}

PageCache::Page* PageCache::find(uint64_t owner, uint64_t index) {
  if (!nbuckets_) return nullptr;
  for (Page* p = buckets_[bucket(owner, index)]; p; p = p->hash_next) {
    if (p->owner != owner || p->index != index) continue;
    if (p != lru_head_) {
      unlink(p);
      push_front(p);
    }
    return p;
  }
  return nullptr;
}

long PageCache::evict_one() {
  // The least recently used page that can go; a dirty one is written first.
  for (Page* p = lru_tail_; p; p = p->lru_prev) {
    if (p->dirty) {
      if (!wb_ || wb_(ctx_, *p) < 0) continue;
      p->dirty = false;
    }
    drop(p);
    return 0;
  }
  return -EIO;
}

PageCache::Page* PageCache::insert(uint64_t owner, uint64_t index) {
  if (!nbuckets_) return nullptr;
  if (count_ >= max_pages_ && evict_one() < 0) return nullptr;
  Page* p = new_page();
  if (!p && (evict_one() < 0 || !(p = new_page()))) return nullptr;
  p->owner = owner;
  p->index = index;
  p->dirty = false;
  Page*& head = buckets_[bucket(owner, index)];
  p->hash_next = head;
  head = p;
  push_front(p);
  count_++;
  return p;
}

PageCache::Page* PageCache::new_page() {
  Page* p = static_cast<Page*>(heap_->alloc(sizeof(Page)));
  uint8_t* data = static_cast<uint8_t*>(heap_->alloc(kPageSize));
  if (!p || !data) {
    heap_->free(p);
    heap_->free(data);
    return nullptr;
  }
  p->data = data;
  return p;
}

void PageCache::drop(Page* p) {
  Page** pp = &buckets_[bucket(p->owner, p->index)];
  while (*pp != p) pp = &(*pp)->hash_next;
  *pp = p->hash_next;
  unlink(p);
  count_--;
  heap_->free(p->data);
  heap_->free(p);
}

void PageCache::drop_range(uint64_t owner, uint64_t first, uint64_t end) {
  if (first >= end || !nbuckets_) return;
  if (end - first <= count_) {  // cheaper to look each index up
    for (uint64_t i = first; i < end; i++)
      for (Page* p = buckets_[bucket(owner, i)]; p; p = p->hash_next)
        if (p->owner == owner && p->index == i) {
          drop(p);
          break;
        }
    return;
  }
  for (Page* p = lru_head_; p;) {
    Page* next = p->lru_next;
    if (p->owner == owner && p->index >= first && p->index < end) drop(p);
    p = next;
  }
}

long PageCache::flush() {
  long err = 0;
  for (Page* p = lru_tail_; p; p = p->lru_prev) {
    if (!p->dirty) continue;
    long r = wb_ ? wb_(ctx_, *p) : -EIO;
    if (r < 0) {
      if (!err) err = r;
      continue;
    }
    p->dirty = false;
  }
  return err;
}

size_t PageCache::dirty_pages() const {
  size_t n = 0;
  for (Page* p = lru_head_; p; p = p->lru_next) n += p->dirty;
  return n;
}

}  // namespace flatux
