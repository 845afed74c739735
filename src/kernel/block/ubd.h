// ubd: block devices backed by host files, named as User-Mode Linux names
// them (`ubd0=FILE` is /dev/ubda, `ubd1r=FILE` a read-only /dev/ubdb) with
// Linux's numbers: block major 98, minor 16 * index. I/O is pread/pwrite on
// one host descriptor; there is no queue and no caching here (the
// filesystem above keeps its own caches).
#pragma once
#include <cstddef>
#include <atomic>
#include <cstdint>

#include "kernel/lib/sync.h"

struct stat;

namespace flatux {

struct Kernel;

constexpr uint32_t kUbdMajor = 98;
constexpr int kMaxUbd = 16;  // ubda .. ubdp, the minors Linux gives them

struct BlockDevice {
  char name[8];        // "ubda"
  int index;
  int host_fd = -1;
  bool readonly = false;
  uint64_t size = 0;   // bytes, at attach time
  uint32_t major = kUbdMajor, minor = 0;
  std::atomic<int> users{0};  // mounts holding it
};

struct BlockDevices {
  KMutex lock;
  BlockDevice* dev[kMaxUbd]{};
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
long ubd_read(BlockDevice& d, void* buf, size_t n, uint64_t off);
long ubd_write(BlockDevice& d, const void* buf, size_t n, uint64_t off);
long ubd_flush(BlockDevice& d);  // fdatasync of the host file

// /dev/ubdX as a file (devfs): the raw device, with its size ioctls.
class Heap;
struct File;
long ubd_open(Heap* heap, BlockDevice& d, int flags, File** out);
void ubd_stat(const BlockDevice& d, struct stat* st);

// Closes every device (kernel shutdown and tests).
void ubd_detach_all(Kernel& k);

// Device number as st_rdev / st_dev encode it (Linux's new_encode_dev).
inline uint64_t ubd_devnum(const BlockDevice& d) {
  return ((uint64_t)(d.minor & 0xff)) | ((uint64_t)d.major << 8) | ((uint64_t)(d.minor & ~0xffu) << 12);
}

}  // namespace flatux
