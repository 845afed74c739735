// File locks kept by the kernel, keyed by (st_dev, st_ino), so they work
// the same on every filesystem and between guests of one host process
// (host POSIX locks would all belong to that one process): flock(2),
// POSIX record locks (owned by a process) and OFD locks (owned by an open
// file description), with Linux's conflict and release rules.
#pragma once
#include <atomic>
#include <cstdint>

#include "kernel/task/task.h"

struct flock;

namespace flatux {

class LockTable {
 public:
  explicit LockTable(Heap* h) : heap_(h) {}

  long flock(Task& t, File& f, int op);
  // F_GETLK/F_SETLK/F_SETLKW and the F_OFD_* forms; `fl` is kernel memory
  // (F_GETLK writes the answer into it).
  long fcntl_lock(Task& t, File& f, int cmd, struct flock* fl);

  // A process closed a descriptor of `f`: its POSIX locks on that file go.
  void on_close(Task& t, File& f);
  // A process is gone: all its POSIX locks go.
  void on_exit(const Process& p);
  // The last reference to an open file description went: its flock and
  // OFD locks go.
  void on_release(const File& f);

 private:
  struct Lock;
  enum Kind : uint8_t { kPosix, kOfd, kFlock };

  long try_set(const Lock& want);
  long set(Task& t, const Lock& want, bool wait);
  const Lock* conflict(const Lock& want) const;
  long unlock_range(const Lock& range);  // lock_ held; -ENOMEM if a split failed
  void remove_if(bool (*match)(const Lock&, const void*), const void* arg);
  void wake();

  Heap* heap_;
  KMutex lock_;
  Lock* head_ = nullptr;
  std::atomic<int> count_{0};       // locks held: lets close() skip the table
  std::atomic<uint32_t> changed_{0};  // bumped on every release: waiters look again
};

}  // namespace flatux
