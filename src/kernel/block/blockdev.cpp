// The block device registry: devices by number and by name, whichever
// driver made them, and the calls that reach the driver.
#include "kernel/block/blockdev.h"

#include <cstring>
#include <linux/errno.h>

#include "kernel/block/loop.h"
#include "kernel/block/ubd.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"

namespace flatux {

long block_read(BlockDevice& d, void* buf, size_t n, uint64_t off) { return d.ops->read(d, buf, n, off); }

long block_write(BlockDevice& d, const void* buf, size_t n, uint64_t off) {
  if (d.readonly) return -EROFS;
  return d.ops->write(d, buf, n, off);
}

long block_flush(BlockDevice& d) { return d.ops->flush ? d.ops->flush(d) : 0; }

BlockDevice* block_get(Kernel& k, uint64_t rdev) {
  uint32_t major = devnum_major(rdev), minor = devnum_minor(rdev);
  if (major == kLoopMajor) return loop_get(k, (int)minor, true);
  if (major != kUbdMajor || minor % 16 != 0) return nullptr;
  BlockDevice* d = ubd_by_index(k, (int)(minor / 16));
  if (d) d->opens.fetch_add(1);
  return d;
}

BlockDevice* block_get_named(Kernel& k, const char* name) {
  std::string_view n(name);
  if (starts_with(n, "/dev/")) n = tail(n, 5);
  if (starts_with(n, "loop")) {
    int index = 0;
    n = tail(n, 4);
    if (n.empty() || n.size() > 7) return nullptr;
    for (char c : n) {
      if (c < '0' || c > '9') return nullptr;
      index = index * 10 + (c - '0');
    }
    return loop_get(k, index, false);
  }
  BlockDevice* d = ubd_lookup(k, name);
  if (d) d->opens.fetch_add(1);
  return d;
}

void block_put(BlockDevice& d) {
  if (d.opens.fetch_sub(1) == 1 && d.ops->last_close) d.ops->last_close(d);
}

}  // namespace flatux
