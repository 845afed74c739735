// The ext4 filesystem types for the VFS ("ext4", "ext3", "ext2": one
// driver over libext2fs), mounted from block devices (ubd, loop).
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kExt4Type, kExt3Type, kExt2Type;

// Adds the three types to the kernel's registry (mount(2) finds them).
long ext4_register(Kernel& k);

// Mounts the ext4 filesystem on `device` ("/dev/ubda") at guest_path, as
// mount(2) would with MS_* flags (a read-only device mounts read-only);
// for boot code and the launcher.
long ext4_mount_device(Kernel& k, const char* device, const char* guest_path, unsigned long flags);

// Writes every mounted ext4 volume back and marks it clean, at power-off;
// later operations on them fail with EIO.
void ext4_poweroff(Kernel& k);

}  // namespace flatux
