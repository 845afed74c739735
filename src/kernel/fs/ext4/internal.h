// What ext4.cpp and namei.cpp share: the cache entries and the gate call.
#pragma once
#include <linux/errno.h>
#include "kernel/foreign_gate.h"
#include "kernel/fs/ext4/ext4.h"

namespace flatux::ext4 {

struct Inode {
  Inode* next;
  Attr a;
  bool valid;      // a false entry is only kept for its open count
  bool unlinked;   // no links left: freed at the last close
  bool complete;   // a directory whose every name is in the dentry cache
  int opens;
  char* link;      // symlink target, read once
  size_t link_len;
  int snapshot;    // host memfd + 1 holding a copy of the contents (0: none)
  size_t snapshot_size;
};

struct Dentry {
  Dentry* next;
  uint32_t dir, ino;  // ino 0: the name is known to be absent
  uint8_t len;
  char name[255];
};

inline bool is_error_of_the_image(long r) { return r == -EUCLEAN || r == -EBADMSG || r == -EIO; }

// Runs f() inside the foreign-code gate with libext2fs's clock set; a
// failure that means a damaged image is logged.
template <typename F>
long Volume::gate(F&& f) {
  if (!vol_) return -EIO;  // shut down (power-off) under a still-running guest
  stats_.gate_calls++;
  Time t = now();
  auto call = [&]() -> long {
    ext2glue::set_now(vol_, t);
    return f();
  };
  using Call = decltype(call);
  long r = foreign_call(k_, [](void* p) -> long { return (*static_cast<Call*>(p))(); }, &call);
  if (is_error_of_the_image(r)) log_failure(r, "");
  return r;
}

}  // namespace flatux::ext4
