// sysfs, minimal: the top-level directories programs look for, and
// fs/cgroup to mount the cgroup hierarchy on; nothing else is generated yet.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kSysFsType;  // mount(2) type "sysfs"

long sysfs_create(Heap* heap, Filesystem** out);

}  // namespace flatux
