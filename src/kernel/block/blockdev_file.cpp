// A block device opened as a file (/dev/ubda, /dev/loop0): the raw device,
// read and written at any offset (as a block device's page cache would,
// without one here), with the size ioctls that mkfs and friends ask and
// the driver's own ioctls.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/mm/usercopy.h"
#include "kernel/block/blockdev.h"
#include "kernel/heap.h"
#include "kernel/vfs/file.h"

namespace flatux {
namespace {

BlockDevice& dev_of(File& f) { return *static_cast<BlockDevice*>(f.priv); }

// Transfers through a kernel bounce buffer: guest memory is only touched
// by the user-copy helpers.
long transfer(File& f, void* guest, size_t n, int64_t off, bool write) {
  BlockDevice& d = dev_of(f);
  if (off < 0) return -EINVAL;
  if (write && d.readonly) return -EPERM;  // as blkdev_write_iter
  if ((uint64_t)off >= d.size) return write && n ? -ENOSPC : 0;
  if (n > d.size - (uint64_t)off) n = d.size - (uint64_t)off;
  constexpr size_t kChunk = 64 * 1024;
  uint8_t* bounce = static_cast<uint8_t*>(f.heap->alloc(kChunk));
  if (!bounce) return -ENOMEM;
  size_t done = 0;
  long r = 0;
  while (done < n) {
    size_t chunk = n - done < kChunk ? n - done : kChunk;
    char* g = static_cast<char*>(guest) + done;
    if (write) {
      if (copy_from_user(bounce, g, chunk) < 0) { r = -EFAULT; break; }
      if ((r = block_write(d, bounce, chunk, (uint64_t)off + done)) < 0) break;
    } else {
      if ((r = block_read(d, bounce, chunk, (uint64_t)off + done)) < 0) break;
      if (copy_to_user(g, bounce, chunk) < 0) { r = -EFAULT; break; }
    }
    done += chunk;
  }
  f.heap->free(bounce);
  return done ? (long)done : r;
}

long blk_pread(Task&, File& f, void* buf, size_t n, int64_t off) { return transfer(f, buf, n, off, false); }
long blk_pwrite(Task&, File& f, const void* buf, size_t n, int64_t off) {
  return transfer(f, const_cast<void*>(buf), n, off, true);
}

long blk_lseek(Task&, File& f, int64_t off, int whence) {
  Guard g(f.pos_lock);
  int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f.pos : whence == SEEK_END ? (int64_t)dev_of(f).size : -1;
  if (base < 0 || base + off < 0) return -EINVAL;
  return f.pos = base + off;
}

long blk_stat(Task&, File& f, struct stat* out) {
  block_stat(dev_of(f), out);
  return 0;
}

long blk_ioctl(Task& t, File& f, unsigned cmd, uint64_t arg) {
  BlockDevice& d = dev_of(f);
  if (d.ops->ioctl) {
    long r = d.ops->ioctl(t, d, f, cmd, arg);
    if (r != -ENOTTY) return r;
  }
  void* guest = reinterpret_cast<void*>(arg);
  switch (cmd) {
    case BLKGETSIZE64: return put_user(guest, (uint64_t)d.size);
    case BLKGETSIZE: return put_user(guest, (unsigned long)(d.size / 512));
    case BLKSSZGET: return put_user(guest, (int)d.block_size);
    case BLKPBSZGET: return put_user(guest, (unsigned)d.block_size);
    case BLKBSZGET: return put_user(guest, (int)4096);
    case BLKROGET: return put_user(guest, (int)d.readonly);
    case BLKFLSBUF: return 0;
    default: return -ENOTTY;
  }
}

long blk_fsync(Task&, File& f, bool) { return block_flush(dev_of(f)); }

void blk_release(File& f) { block_put(dev_of(f)); }

const FileOps kBlockFileOps = {
    .read = file_read_at_pos,
    .write = file_write_at_pos,
    .pread = blk_pread,
    .pwrite = blk_pwrite,
    .lseek = blk_lseek,
    .stat = blk_stat,
    .getdents64 = nullptr,
    .ioctl = blk_ioctl,
    .statfs = nullptr,
    .release = blk_release,
    .poll = nullptr,
    .setattr = nullptr,
    .fsync = blk_fsync,
};

}  // namespace

void block_stat(const BlockDevice& d, struct stat* st) {
  memset(st, 0, sizeof *st);
  st->st_mode = S_IFBLK | 0660;
  st->st_nlink = 1;
  st->st_gid = 6;  // "disk", as udev makes them
  st->st_rdev = block_devnum(d);
  st->st_ino = (d.major == kLoopMajor ? 1000 : 100) + (unsigned)d.index;
  st->st_blksize = 4096;
}

long block_open(Heap* heap, BlockDevice& d, int flags, File** out) {
  if (flags & O_DIRECTORY) return -ENOTDIR;
  if (d.readonly && (flags & O_ACCMODE) != O_RDONLY) return -EROFS;
  File* f = file_alloc(heap, &kBlockFileOps, (uint32_t)flags & ~(O_CLOEXEC | O_CREAT | O_EXCL | O_TRUNC), -1);
  if (!f) return -ENOMEM;
  f->priv = &d;
  *out = f;
  return 0;
}

BlockDevice* block_of_file(File& f) { return f.ops == &kBlockFileOps ? &dev_of(f) : nullptr; }

}  // namespace flatux
