// The list of address ranges a guest process owns. In the no-MMU model all
// processes share one address space, so this list is what makes a mapping
// "the process's own": munmap/mprotect/MAP_FIXED may only touch these
// ranges, and exit releases exactly them.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

class Heap;

enum RegionKind : uint8_t { kRegionAnon, kRegionFile, kRegionStack, kRegionBrk, kRegionImage };

// Region flags: a MAP_SHARED mapping; a mapping charged to another Mm
// (a forked child's view of its parent's shared memory, see mm_fork).
constexpr uint8_t kRegionShared = 1, kRegionUncharged = 2;

struct Region {
  uintptr_t start, end;  // page aligned, [start, end)
  int prot;
  RegionKind kind;
  uint8_t flags;
  Region* next;
};

class RegionList {
 public:
  explicit RegionList(Heap* h) : heap_(h) {}
  // Adds [start, end); overlapping parts of existing regions are replaced.
  bool add(uintptr_t start, uintptr_t end, int prot, RegionKind kind, uint8_t flags = 0);
  // Makes this (empty) list a copy of `src`; shared regions of the copy
  // get kRegionUncharged. False when out of memory (the list is cleared).
  bool copy_from(const RegionList& src);
  // Forgets [start, end) (splitting regions as needed). Returns false only
  // if memory for a split could not be allocated.
  bool remove(uintptr_t start, uintptr_t end);
  bool set_prot(uintptr_t start, uintptr_t end, int prot);
  bool covers(uintptr_t start, uintptr_t end) const;   // every byte owned
  bool overlaps(uintptr_t start, uintptr_t end) const; // any byte owned
  const Region* find(uintptr_t addr) const;
  const Region* first() const { return head_; }
  size_t total_bytes() const;
  void clear();

 private:
  bool split_at(uintptr_t addr);
  Heap* heap_;
  Region* head_ = nullptr;
};

}  // namespace flatux
