#include "kernel/mm/regions.h"

#include "kernel/heap.h"

namespace flatux {

bool RegionList::split_at(uintptr_t addr) {
  for (Region* r = head_; r; r = r->next) {
    if (r->start < addr && addr < r->end) {
      Region* tail = heap_->make<Region>(*r);
      if (!tail) return false;
      tail->start = addr;
      r->end = addr;
      r->next = tail;
      return true;
    }
  }
  return true;
}

bool RegionList::remove(uintptr_t start, uintptr_t end) {
  if (!split_at(start) || !split_at(end)) return false;
  Region** link = &head_;
  while (Region* r = *link) {
    if (r->start >= start && r->end <= end) {
      *link = r->next;
      heap_->destroy_obj(r);
    } else {
      link = &r->next;
    }
  }
  return true;
}

bool RegionList::add(uintptr_t start, uintptr_t end, int prot, RegionKind kind, uint8_t flags) {
  if (start >= end || !remove(start, end)) return false;
  Region* n = heap_->make<Region>(Region{start, end, prot, kind, flags, nullptr});
  if (!n) return false;
  Region** link = &head_;
  while (*link && (*link)->start < start) link = &(*link)->next;
  n->next = *link;
  *link = n;
  return true;
}

bool RegionList::set_prot(uintptr_t start, uintptr_t end, int prot) {
  if (!split_at(start) || !split_at(end)) return false;
  for (Region* r = head_; r; r = r->next)
    if (r->start >= start && r->end <= end) r->prot = prot;
  return true;
}

bool RegionList::covers(uintptr_t start, uintptr_t end) const {
  uintptr_t pos = start;
  for (const Region* r = head_; r && pos < end; r = r->next) {
    if (r->end <= pos) continue;
    if (r->start > pos) return false;
    pos = r->end;
  }
  return pos >= end;
}

bool RegionList::overlaps(uintptr_t start, uintptr_t end) const {
  for (const Region* r = head_; r; r = r->next)
    if (r->start < end && start < r->end) return true;
  return false;
}

const Region* RegionList::find(uintptr_t addr) const {
  for (const Region* r = head_; r; r = r->next)
    if (r->start <= addr && addr < r->end) return r;
  return nullptr;
}

size_t RegionList::total_bytes() const {
  size_t n = 0;
  for (const Region* r = head_; r; r = r->next) n += r->end - r->start;
  return n;
}

bool RegionList::copy_from(const RegionList& src) {
  Region** tail = &head_;
  for (const Region* r = src.head_; r; r = r->next) {
    uint8_t flags = r->flags | ((r->flags & kRegionShared) ? kRegionUncharged : 0);
    Region* n = heap_->make<Region>(Region{r->start, r->end, r->prot, r->kind, flags, nullptr});
    if (!n) {
      clear();
      return false;
    }
    *tail = n;
    tail = &n->next;
  }
  return true;
}

void RegionList::clear() {
  while (Region* r = head_) {
    head_ = r->next;
    heap_->destroy_obj(r);
  }
}

}  // namespace flatux
