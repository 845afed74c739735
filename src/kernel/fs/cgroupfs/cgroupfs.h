// cgroupfs: the kernel's cgroup v2 hierarchy (kernel/cgroup/cgroup.h) as
// a filesystem, `mount -t cgroup2 none /sys/fs/cgroup`. Every mount shows
// the one hierarchy. A folder is a cgroup (mkdir makes one, rmdir removes
// an empty one); its files are the interface files of Linux's cgroup v2
// that the kernel serves, each one real: what is not served is not listed.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kCgroup2Type;  // mount(2) type "cgroup2"

}  // namespace flatux
