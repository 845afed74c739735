// hostfs: a host folder as a guest filesystem, confined to that folder.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

// Opens `host_root` (a canonical host path) and returns a filesystem for it.
long hostfs_create(Heap* heap, const char* host_root, bool readonly, Filesystem** out);

// A File over an existing host descriptor (the guest's stdin/out/err).
File* hostfs_wrap_host_fd(Heap* heap, int host_fd, uint32_t flags);

}  // namespace flatux
