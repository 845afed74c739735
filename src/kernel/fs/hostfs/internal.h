// hostfs internals shared by its path operations and its open files.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

struct HostFs {
  Heap* heap;
  int root_fd;
  bool root_is_slash;
  size_t root_len;
  char root[kPathMax];
};

inline HostFs& hostfs_of(Filesystem& fs) { return *static_cast<HostFs*>(fs.priv); }

extern const FileOps kHostFileOps;

}  // namespace flatux
