// mount(2) and umount2(2) (vfs/sys_mount.cpp) and what filesystem types
// need from them.
#pragma once
#include <cstdint>

#include "kernel/block/blockdev.h"

namespace flatux {

struct Kernel;

// An anonymous device number (major 0) no mounted filesystem uses, for
// st_dev of a filesystem without a device (tmpfs).
uint64_t mount_anon_dev(Kernel& k);

// The block device a mount source names, opened (block_put gives it
// back): ENOENT, ENOTBLK for something else than a block device, ENXIO
// for a number with no device.
long lookup_bdev(Kernel& k, const char* source, BlockDevice** out);

}  // namespace flatux
