// Loop devices (/dev/loopN, block major 7, minor N) over guest open files,
// and /dev/loop-control (char 10:237), as Linux's drivers/block/loop.c.
// A bound device reads and writes its backing file through the file's own
// operations (tmpfs, hostfs, ext4, another block device), at the file's
// offset, under a kernel identity of its own; the ext4 driver mounts it as
// it mounts a ubd device.
#pragma once
#include <cstdint>

#include "kernel/block/blockdev.h"

namespace flatux {

constexpr int kMaxLoop = 256;     // loop0 .. loop255
constexpr int kLoopPrealloc = 8;  // made at first use, as Linux's max_loop default
constexpr uint64_t kLoopControlRdev = (10u << 8) | 237u;

// Device `index` with a reference (BlockDevice::opens, see block_put);
// `create` makes it when missing. nullptr past kMaxLoop or when absent.
BlockDevice* loop_get(Kernel& k, int index, bool create);

// Calls fn for every loop device (the first eight exist from first use).
void loop_for_each(Kernel& k, void (*fn)(void* ctx, const BlockDevice& d), void* ctx);

// /dev/loop-control: LOOP_CTL_GET_FREE, LOOP_CTL_ADD, LOOP_CTL_REMOVE.
long loop_control_open(Task& t, int flags, File** out);

}  // namespace flatux
