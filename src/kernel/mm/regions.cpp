#include "kernel/mm/regions.h"

#include <cstring>

#include "kernel/heap.h"
#include "kernel/mm/host_charge.h"

namespace flatux {

RegionName* region_name_make(Heap* heap, const char* path, uint64_t dev, uint64_t ino) {
  size_t len = strlen(path);
  auto* n = static_cast<RegionName*>(heap->alloc(sizeof(RegionName) + len));
  if (!n) return nullptr;
  new (n) RegionName();
  n->dev = dev;
  n->ino = ino;
  memcpy(n->path, path, len + 1);
  return n;
}

void region_name_put(Heap* heap, RegionName* n) {
  if (!n || n->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  host_charge_put(n->charge);
  heap->free(n);
}

void RegionList::drop(Region* r) {
  // Pages written through a memfd's mapping stay the memfd's: charged to it
  // now that the mapping no longer is.
  if (r->attrs.name && r->attrs.name->charge) host_charge_measure(*r->attrs.name->charge);
  region_name_put(heap_, r->attrs.name);
  heap_->destroy_obj(r);
  count_--;
}

bool RegionList::split_at(uintptr_t addr) {
  forget_recent();
  for (Region* r = head_; r; r = r->next) {
    if (r->start < addr && addr < r->end) {
      Region* tail = heap_->make<Region>(*r);
      if (!tail) return false;
      tail->start = addr;
      tail->attrs.offset = r->attrs.offset + (addr - r->start);
      if (tail->attrs.name) tail->attrs.name->refs.fetch_add(1, std::memory_order_relaxed);
      r->end = addr;
      r->next = tail;
      count_++;
      return true;
    }
  }
  return true;
}

bool RegionList::remove(uintptr_t start, uintptr_t end) {
  forget_recent();
  if (!split_at(start) || !split_at(end)) return false;
  Region** link = &head_;
  while (Region* r = *link) {
    if (r->start >= start && r->end <= end) {
      *link = r->next;
      drop(r);
    } else {
      link = &r->next;
    }
  }
  return true;
}

bool RegionList::add(uintptr_t start, uintptr_t end, int prot, RegionKind kind, uint8_t flags,
                     const RegionAttrs& attrs) {
  forget_recent();
  if (start >= end || !remove(start, end)) return false;
  Region* n = heap_->make<Region>(Region{start, end, prot, kind, flags, nullptr, attrs});
  if (!n) return false;
  if (attrs.name) attrs.name->refs.fetch_add(1, std::memory_order_relaxed);
  count_++;
  Region** link = &head_;
  while (*link && (*link)->start < start) link = &(*link)->next;
  n->next = *link;
  *link = n;
  return true;
}

template <typename F>
bool RegionList::change_range(uintptr_t start, uintptr_t end, F&& f) {
  if (!split_at(start) || !split_at(end)) return false;
  for (Region* r = head_; r; r = r->next)
    if (r->start >= start && r->end <= end) f(*r);
  return true;
}

bool RegionList::set_prot(uintptr_t start, uintptr_t end, int prot) {
  return change_range(start, end, [prot](Region& r) { r.prot = prot; });
}

bool RegionList::set_locked(uintptr_t start, uintptr_t end, bool locked) {
  return change_range(start, end, [locked](Region& r) { r.attrs.locked = locked; });
}

bool RegionList::set_name(uintptr_t start, uintptr_t end, RegionName* name) {
  return change_range(start, end, [this, name](Region& r) {
    if (name) name->refs.fetch_add(1, std::memory_order_relaxed);
    region_name_put(heap_, r.attrs.name);
    r.attrs.name = name;
  });
}

bool RegionList::set_flag(uintptr_t start, uintptr_t end, uint8_t flag, bool on) {
  return change_range(start, end, [flag, on](Region& r) {
    r.flags = on ? uint8_t(r.flags | flag) : uint8_t(r.flags & ~flag);
  });
}

size_t RegionList::locked_bytes() const {
  size_t n = 0;
  for (const Region* r = head_; r; r = r->next)
    if (r->attrs.locked) n += r->end - r->start;
  return n;
}

bool RegionList::splits(uintptr_t start, uintptr_t end) const {
  for (const Region* r = head_; r; r = r->next)
    if (r->start < start && end < r->end) return true;
  return false;
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

size_t RegionList::extent_from(uintptr_t addr, size_t max) const {
  const Region* r = nullptr;
  for (const Region* c : recent_)
    if (c && c->start <= addr && addr < c->end) r = c;
  if (!r) {
    if (!(r = find(addr))) return 0;
    recent_[recent_next_++ % kRecent] = r;
  }
  uintptr_t end = addr + max < addr ? UINTPTR_MAX : addr + max;
  uintptr_t pos = r->end;
  for (r = r->next; pos < end && r && r->start == pos; r = r->next) pos = r->end;
  return (pos < end ? pos : end) - addr;
}

size_t RegionList::total_bytes() const {
  size_t n = 0;
  for (const Region* r = head_; r; r = r->next) n += r->end - r->start;
  return n;
}

bool RegionList::copy_from(const RegionList& src) {
  Region** tail = &head_;
  for (const Region* r = src.head_; r; r = r->next) {
    if (r->flags & kRegionDontFork) continue;
    uint8_t flags = r->flags | ((r->flags & kRegionShared) ? kRegionUncharged : 0);
    RegionAttrs attrs = r->attrs;
    attrs.locked = false;  // a forked child's memory is not locked (Linux)
    Region* n = heap_->make<Region>(Region{r->start, r->end, r->prot, r->kind, flags, nullptr, attrs});
    if (!n) {
      clear();
      return false;
    }
    if (attrs.name) attrs.name->refs.fetch_add(1, std::memory_order_relaxed);
    count_++;
    *tail = n;
    tail = &n->next;
  }
  return true;
}

void RegionList::clear() {
  forget_recent();
  while (Region* r = head_) {
    head_ = r->next;
    drop(r);
  }
}

}  // namespace flatux
