// ubd: block devices backed by host files, named as User-Mode Linux names
// them (`ubd0=FILE` is /dev/ubda, `ubd1r=FILE` a read-only /dev/ubdb) with
// Linux's numbers: block major 98, minor 16 * index. I/O is pread/pwrite on
// one host descriptor; there is no queue and no caching here (the
// filesystem above keeps its own caches).
#pragma once
#include "kernel/block/blockdev.h"
#include "kernel/lib/sync.h"

namespace flatux {

constexpr int kMaxUbd = 16;  // ubda .. ubdp, the minors Linux gives them

struct LoopDevices;

// Every block device of the kernel (Kernel::blocks).
struct BlockDevices {
  KMutex lock;
  BlockDevice* dev[kMaxUbd]{};
  LoopDevices* loops = nullptr;  // made on first use (kernel/block/loop.h)
};

// Opens host_path (O_RDWR, or O_RDONLY when readonly) as device `index`.
// EBUSY when the index is taken, EINVAL for a bad index, the host's errno
// when the file cannot be opened. Usable before boot and from kernel code.
long ubd_attach(Kernel& k, int index, const char* host_path, bool readonly);

// "/dev/ubda", "ubda" -> the device, nullptr when none is attached.
BlockDevice* ubd_lookup(Kernel& k, const char* name);
BlockDevice* ubd_by_index(Kernel& k, int index);

// Whole transfers (short host reads past the end are zero-filled, so a
// device reads as its full size); -EIO/-EROFS/-host errno on failure.
inline long ubd_read(BlockDevice& d, void* buf, size_t n, uint64_t off) { return block_read(d, buf, n, off); }
inline long ubd_write(BlockDevice& d, const void* buf, size_t n, uint64_t off) {
  return block_write(d, buf, n, off);
}
inline uint64_t ubd_devnum(const BlockDevice& d) { return block_devnum(d); }

// Closes every device (kernel shutdown and tests).
void ubd_detach_all(Kernel& k);

}  // namespace flatux
