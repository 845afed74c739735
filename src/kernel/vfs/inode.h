// Inodes: a filesystem's object for one file, as the dentry cache holds it.
// A filesystem derives its own inode type from this base (or uses the
// generic one, plain_inode in namei.h, which the VFS also makes from a
// stat) and keeps the fields here current; the permission policy (perm.h)
// can read them.
#pragma once
#include <atomic>
#include <cstdint>

#include "kernel/lib/sync.h"

namespace flatux {

struct Filesystem;

struct Inode {
  Filesystem* fs = nullptr;
  // Dentries naming it and operations in flight; the last reference calls
  // `release`, which frees the inode (the filesystem's own or the heap's).
  std::atomic<int> refs{1};
  void (*release)(Inode*) = nullptr;
  uint64_t ino = 0;
  uint32_t mode = 0;  // type and permission bits, as the guest sees them
  uint32_t uid = 0, gid = 0;
  uint32_t generation = 0;  // set by filesystems that can tell a reused number apart
  // A removed directory: nothing is looked up or created in it any more
  // (Linux's S_DEAD).
  std::atomic<bool> dead{false};
};

inline Inode* inode_get(Inode* n) {
  if (n) n->refs.fetch_add(1, std::memory_order_relaxed);
  return n;
}

// Drops a reference; the last one releases the inode.
inline void inode_put(Inode* n) {
  if (n && n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1 && n->release) n->release(n);
}

}  // namespace flatux
