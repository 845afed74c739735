// File leases (fcntl F_SETLEASE/F_GETLEASE), kept by the kernel and keyed
// by (st_dev, st_ino) like the lock table, with Linux's rules: a read lease
// needs the file open for writing nowhere, a write lease needs no other
// open at all; an open that conflicts (a write open against any lease, any
// open against a write lease) or a truncate breaks the leases: each holder
// is signalled and the opener waits until they are released or downgraded,
// or until fs.lease-break-time runs out (then they go by force), unless it
// opened O_NONBLOCK (EWOULDBLOCK at once).
#pragma once
#include <atomic>
#include <cstdint>

#include "kernel/task/task.h"

namespace flatux {

class LeaseTable {
 public:
  explicit LeaseTable(Heap* h) : heap_(h) {}

  // F_SETLEASE with F_RDLCK, F_WRLCK or F_UNLCK on descriptor fd of f.
  long set(Task& t, File& f, int fd, long type);
  // F_GETLEASE: the lease f holds (what it is being broken to), or F_UNLCK.
  long get(Task& t, File& f);
  // Someone opens f's file with `flags` (or truncates it: O_WRONLY):
  // conflicting leases are broken first. 0, -EWOULDBLOCK or -ERESTARTSYS.
  long break_for_open(Task& t, File& f, int flags);
  long break_for(Task& t, uint64_t dev, uint64_t ino, int flags);
  // The last reference to f went: its lease goes.
  void on_release(File& f);
  bool any() const { return count_.load(std::memory_order_acquire) > 0; }

 private:
  struct Lease;
  Lease* find_locked(const File& f);
  bool conflicts_locked(uint64_t dev, uint64_t ino, bool write) const;
  void expire_locked(uint64_t now);
  void remove_locked(Lease* l);
  void wake();

  Heap* heap_;
  KMutex lock_;
  Lease* head_ = nullptr;
  std::atomic<int> count_{0};
  std::atomic<uint32_t> changed_{0};  // bumped when a lease goes or changes: breakers look again
};

}  // namespace flatux
