// mount(2) and umount2(2) (vfs/sys_mount.cpp) and what filesystem types
// need from them.
#pragma once
#include <cstdint>

namespace flatux {

struct Kernel;

// An anonymous device number (major 0) no mounted filesystem uses, for
// st_dev of a filesystem without a device (tmpfs).
uint64_t mount_anon_dev(Kernel& k);

}  // namespace flatux
