// procfs, first cut: /proc/self and /proc/PID/exe, the links programs use
// to find themselves. The rest of /proc is ENOENT until procfs grows.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kProcFsType;  // mount(2) type "proc"

long procfs_create(Heap* heap, Filesystem** out);

}  // namespace flatux
