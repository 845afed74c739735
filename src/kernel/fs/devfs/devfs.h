// devfs: the device nodes every program expects in /dev. The character
// devices are the host's own harmless ones (null, zero, full, random,
// urandom), opened directly, so reads, writes, poll and mmap behave
// exactly as they do on Linux. console, tty (once the kernel has a console)
// and kmsg are the kernel's own (src/kernel/tty/, src/kernel/printk_kmsg.cpp);
// without a kernel console, tty is the host's.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kDevFsType;  // mount(2) type "devtmpfs"

long devfs_create(Heap* heap, Filesystem** out);
// Mounts a tmpfs on the devtmpfs' /dev/shm (mode 1777, nosuid, nodev), as
// systemd and initramfs scripts do: POSIX shared memory and semaphores
// (shm_open, sem_open) live there.
long devfs_mount_shm(Kernel& k);

// Opens the character device numbered `rdev` (a device node on another
// filesystem, such as tmpfs); ENXIO for a number with no driver here.
long devfs_open_rdev(Task& t, uint64_t rdev, int flags, File** out);
// Opens the block device numbered `rdev`; ENXIO when there is none.
long devfs_open_block(Task& t, uint64_t rdev, int flags, File** out);

}  // namespace flatux
