// Block devices: what every driver (ubd on host files, loop on guest open
// files) offers the filesystems above it and the raw device file in /dev.
// Transfers are whole and take kernel buffers; the driver's ops serialise
// what they must.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

struct stat;

namespace flatux {

struct Kernel;
struct BlockDevice;
struct File;
struct Task;
class Heap;

constexpr uint32_t kLoopMajor = 7;
constexpr uint32_t kUbdMajor = 98;

struct BlockOps {
  long (*read)(BlockDevice&, void* buf, size_t n, uint64_t off);
  long (*write)(BlockDevice&, const void* buf, size_t n, uint64_t off);
  long (*flush)(BlockDevice&);
  // The driver's own ioctls on the raw device file; -ENOTTY leaves the
  // command to the generic block ioctls (BLKGETSIZE64...).
  long (*ioctl)(Task&, BlockDevice&, File&, unsigned cmd, uint64_t arg) = nullptr;
  // The last opener is gone (a loop device with LO_FLAGS_AUTOCLEAR lets
  // go of its file then).
  void (*last_close)(BlockDevice&) = nullptr;
};

struct BlockDevice {
  char name[16];        // "ubda", "loop0"
  int index = 0;
  uint32_t major = 0, minor = 0;
  bool readonly = false;
  uint64_t size = 0;    // bytes
  uint32_t block_size = 512;  // logical block size (BLKSSZGET)
  const BlockOps* ops = nullptr;
  int host_fd = -1;     // ubd: the image file
  std::atomic<int> users{0};  // mounts holding it (one at most)
  std::atomic<int> opens{0};  // open device files, mounts and lookups in flight
};

long block_read(BlockDevice& d, void* buf, size_t n, uint64_t off);
long block_write(BlockDevice& d, const void* buf, size_t n, uint64_t off);
long block_flush(BlockDevice& d);

// Device number as st_rdev / st_dev encode it (Linux's new_encode_dev).
inline uint64_t block_devnum(const BlockDevice& d) {
  return ((uint64_t)(d.minor & 0xff)) | ((uint64_t)d.major << 8) | ((uint64_t)(d.minor & ~0xffu) << 12);
}
inline uint32_t devnum_major(uint64_t d) { return (uint32_t)(((d >> 8) & 0xfff) | ((d >> 32) & ~0xfffull)); }
inline uint32_t devnum_minor(uint64_t d) { return (uint32_t)((d & 0xff) | ((d >> 12) & ~0xffull)); }

// The device numbered rdev, or named "/dev/ubda", "loop0"..., opened (one
// reference on `opens`, given back with block_put). A loop number with no
// device yet makes one, as opening its node does on Linux; by name only
// existing devices are found. nullptr when there is none.
BlockDevice* block_get(Kernel& k, uint64_t rdev);
BlockDevice* block_get_named(Kernel& k, const char* name);
void block_put(BlockDevice& d);

// The raw device as a file (devfs, and device nodes on other filesystems);
// takes over the caller's reference on success.
long block_open(Heap* heap, BlockDevice& d, int flags, File** out);
void block_stat(const BlockDevice& d, struct stat* st);
// The device behind a raw device file, or nullptr for any other file.
BlockDevice* block_of_file(File& f);

}  // namespace flatux
