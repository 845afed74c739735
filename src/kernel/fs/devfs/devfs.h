// devtmpfs: the device nodes every program expects in /dev, in a tmpfs of
// the kernel's (one instance, as Linux's, however often it is mounted),
// where root may make, change and remove nodes as on Linux. The character
// devices are the host's own harmless ones (null, zero, full, random,
// urandom), opened directly, so reads, writes, poll and mmap behave
// exactly as they do on Linux; console, tty (once the kernel has a
// console), kmsg, ptmx and loop-control are the kernel's own
// (src/kernel/tty/, src/kernel/printk_kmsg.cpp, src/kernel/block/);
// without a kernel console, tty is the host's. A device node anywhere
// (devtmpfs, tmpfs, ext4, a hostfs node record) opens through
// devfs_open_rdev / devfs_open_block by its number.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kDevFsType;  // mount(2) type "devtmpfs"

struct BlockDevice;

// The kernel's devtmpfs, made and filled at its first use.
long devtmpfs_create(Kernel& k, Filesystem** out);
// A block device appeared (a ubd attached, a loop device made): its node.
void devtmpfs_block_added(Kernel& k, const BlockDevice& d);
// Mounts a tmpfs on the devtmpfs' /dev/shm (mode 1777, nosuid, nodev), as
// systemd and initramfs scripts do: POSIX shared memory and semaphores
// (shm_open, sem_open) live there.
long devfs_mount_shm(Kernel& k);

// Unmounts the /dev a run starts with (the devtmpfs, its pts and shm),
// before a container's own goes there.
long devfs_drop_run_dev(Kernel& k);
// A container's /dev, as runc makes it (an OCI bundle's tmpfs mounted at
// `at`, a mount root): the runtime spec's default devices (null, zero,
// full, random, urandom, tty; console when `console`), /dev/ptmx a link
// to pts/ptmx, the fd links, and the folders pts, shm and mqueue for the
// mounts that follow. No block devices, no kmsg: not the devtmpfs.
long devfs_populate_container(Kernel& k, const char* at, bool console);
// A mount point made in a tmpfs mounted at at's folder (a container's
// /dev): an empty file or folder; 0 when it is there already, ENOENT when
// the folder is no tmpfs mount.
long devfs_container_mount_point(Kernel& k, const char* at, bool dir);

// Opens the character device numbered `rdev` (a device node on another
// filesystem, such as tmpfs); ENXIO for a number with no driver here.
long devfs_open_rdev(Task& t, uint64_t rdev, int flags, File** out);
// Opens the block device numbered `rdev`; ENXIO when there is none.
long devfs_open_block(Task& t, uint64_t rdev, int flags, File** out);

}  // namespace flatux
