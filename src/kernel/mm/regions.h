// The list of address ranges a guest process owns. In the no-MMU model all
// processes share one address space, so this list is what makes a mapping
// "the process's own": munmap/mprotect/MAP_FIXED may only touch these
// ranges, and exit releases exactly them.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace flatux {

class Heap;
struct HostCharge;

// kRegionShm: a System V shared memory attachment (ipc/shm.cpp), charged to
// mem= once as a segment, not again per mapping.
enum RegionKind : uint8_t { kRegionAnon, kRegionFile, kRegionStack, kRegionBrk, kRegionImage, kRegionShm };

// The file a mapping shows in /proc/PID/maps: its device, inode and path,
// shared by the pieces of a split mapping (reference counted).
struct RegionName {
  std::atomic<int> refs{1};
  uint64_t dev = 0, ino = 0;
  // A mapped memfd's charge (mm/host_charge.h): its pages live while
  // the mapping does, even with every file on it closed.
  HostCharge* charge = nullptr;
  char path[1];  // NUL-terminated, allocated to its length
};
RegionName* region_name_make(Heap* heap, const char* path, uint64_t dev, uint64_t ino);
void region_name_put(Heap* heap, RegionName* n);

// What /proc/PID/maps and mlock know of a mapping besides its range,
// protection and flags.
struct RegionAttrs {
  bool locked = false;        // mlock'ed (VmLck)
  uint64_t offset = 0;        // file offset of the first page
  RegionName* name = nullptr; // the file mapped, or nullptr (the list takes its own reference)
};

// Region flags: a MAP_SHARED mapping; a mapping charged to another Mm
// (a forked child's view of its parent's shared memory, see mm_fork); a
// mapping a fork child does not get (MADV_DONTFORK, Linux's VM_DONTCOPY:
// the host leaves it out of the child's copy, so the child's list must
// too, or it would claim a range the host hands out again).
constexpr uint8_t kRegionShared = 1, kRegionUncharged = 2, kRegionDontFork = 4;

struct Region {
  uintptr_t start, end;  // page aligned, [start, end)
  int prot;
  RegionKind kind;
  uint8_t flags;
  Region* next;
  RegionAttrs attrs;
};

class RegionList {
 public:
  explicit RegionList(Heap* h) : heap_(h) {}
  // Adds [start, end); overlapping parts of existing regions are replaced.
  bool add(uintptr_t start, uintptr_t end, int prot, RegionKind kind, uint8_t flags = 0,
           const RegionAttrs& attrs = {});
  // Makes this (empty) list a fork child's copy of `src`: regions marked
  // kRegionDontFork are left out, shared regions of the copy get
  // kRegionUncharged, and no region is locked (mlock is not inherited).
  // False when out of memory (the list is cleared).
  bool copy_from(const RegionList& src);
  // Forgets [start, end) (splitting regions as needed). Returns false only
  // if memory for a split could not be allocated.
  bool remove(uintptr_t start, uintptr_t end);
  bool set_prot(uintptr_t start, uintptr_t end, int prot);
  bool set_locked(uintptr_t start, uintptr_t end, bool locked);
  // Names [start, end) `name` in /proc/PID/maps (nullptr: no name); each
  // region takes its own reference.
  bool set_name(uintptr_t start, uintptr_t end, RegionName* name);
  // Sets or clears region flags `flag` over [start, end).
  bool set_flag(uintptr_t start, uintptr_t end, uint8_t flag, bool on);
  size_t locked_bytes() const;
  int count() const { return count_; }
  // Would removing or changing [start, end) split a region in two (one
  // region more)?
  bool splits(uintptr_t start, uintptr_t end) const;
  bool covers(uintptr_t start, uintptr_t end) const;   // every byte owned
  bool overlaps(uintptr_t start, uintptr_t end) const; // any byte owned
  const Region* find(uintptr_t addr) const;
  // How many bytes from addr on (at most max) lie in regions, without a gap.
  size_t extent_from(uintptr_t addr, size_t max) const;
  const Region* first() const { return head_; }
  size_t total_bytes() const;
  void clear();
  Heap* heap() const { return heap_; }

 private:
  bool split_at(uintptr_t addr);
  // Splits at start and end, then applies f to each region inside.
  template <typename F>
  bool change_range(uintptr_t start, uintptr_t end, F&& f);
  void drop(Region* r);
  Heap* heap_;
  Region* head_ = nullptr;
  int count_ = 0;
  // The regions extent_from() last started in: a call's user copies go
  // to a few places again and again (a path in the program's data, a
  // result on its stack, a buffer on its heap). Dropped by every change.
  static constexpr unsigned kRecent = 4;
  mutable const Region* recent_[kRecent] = {};
  mutable unsigned recent_next_ = 0;
  void forget_recent() {
    for (const Region*& c : recent_) c = nullptr;
  }
};

}  // namespace flatux
