// Making a new filesystem to mount: what mount(2) (vfs/sys_mount.cpp),
// the launcher and the filesystem types share — the source's block
// device, an anonymous device number, and the mount of a new filesystem.
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

struct MountNs;

// A new filesystem of the registered type `type_name` (ENODEV: none such)
// made from source and data (mount(2)'s), mounted at guest_path with the
// per-mount flags among `flags`; what mount(2) does once it has checked
// the caller and the target. The launcher's --tmpfs uses it as well. In
// mount namespace ns (the first one when nullptr).
long mount_new_fs(Kernel& k, const char* type_name, const char* guest_path, const char* source,
                  unsigned long flags, const char* data, MountNs* ns = nullptr);

struct Task;

// A container's maskedPaths entry, as runc applies it in t's mount
// namespace: a folder gets an empty read-only tmpfs over it, anything else
// /dev/null bound over it; a path that does not exist is left alone.
long mount_mask_path(Task& t, const char* path);

// A readonlyPaths entry: the path (with the mounts below it) bound over
// itself, the new mount read-only. A path that does not exist is left alone.
long mount_readonly_path(Task& t, const char* path);

}  // namespace flatux
