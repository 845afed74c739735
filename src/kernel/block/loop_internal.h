// What loop.cpp (devices, binding, I/O) and loop_ioctl.cpp share.
#pragma once
#include <linux/loop.h>

#include "kernel/block/loop.h"
#include "kernel/lib/sync.h"

namespace flatux {

enum class LoopState : uint8_t { kUnbound, kBound, kRundown };  // rundown: cleared on last close

struct LoopDevice : BlockDevice {
  Kernel* kernel = nullptr;
  KMutex lock;  // the binding and the I/O through `bounce`
  LoopState state = LoopState::kUnbound;
  File* backing = nullptr;  // holds a reference while bound
  uint64_t offset = 0, sizelimit = 0;
  uint32_t flags = 0;       // LO_FLAGS_*
  uint8_t file_name[LO_NAME_SIZE]{}, crypt_name[LO_NAME_SIZE]{};
  // Mapped outside the kernel heap while bound, so the backing file's
  // operations see an ordinary user buffer.
  uint8_t* bounce = nullptr;
  int bounce_pid = 0;  // the host process `bounce` is mapped in
};

inline LoopDevice& loop_of(BlockDevice& d) { return static_cast<LoopDevice&>(d); }

// LOOP_SET_FD and LOOP_CONFIGURE: binds `fd` of the calling task to lo with
// `info` (offset, sizelimit, flags, names) and `block_size` (0: 512).
// dev_file is the device file the call came through: opened read-only,
// the device is read-only.
long loop_bind(Task& t, LoopDevice& lo, File& dev_file, int fd, const loop_info64& info, uint32_t block_size);
// LOOP_CHANGE_FD: a read-only device moves to another file of its size.
long loop_change_fd(Task& t, LoopDevice& lo, int fd);
// LOOP_CLR_FD: marks the device for clearing at its last close.
long loop_clear_on_close(LoopDevice& lo);
// The device size from the file's, offset and sizelimit (lock held).
long loop_update_size_locked(LoopDevice& lo);

long loop_add(Kernel& k, int index);
long loop_remove(Kernel& k, int index);
long loop_get_free(Kernel& k);

long loop_ioctl(Task& t, BlockDevice& d, File& f, unsigned cmd, uint64_t arg);

}  // namespace flatux
