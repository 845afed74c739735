#include "kernel/block/ubd.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"

namespace flatux {
namespace {

BlockDevices* devices(Kernel& k, bool create) {
  if (!k.blocks && create) k.blocks = k.heap->make<BlockDevices>();
  return k.blocks;
}

long ubd_pread(BlockDevice& d, void* buf, size_t n, uint64_t off) {
  char* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    long r = host::sys(SYS_pread64, d.host_fd, p + done, n - done, off + done);
    if (r == -EINTR) continue;
    if (r < 0) return r;
    if (r == 0) {  // past the end of the host file: reads as zeroes
      memset(p + done, 0, n - done);
      break;
    }
    done += (size_t)r;
  }
  return 0;
}

long ubd_pwrite(BlockDevice& d, const void* buf, size_t n, uint64_t off) {
  if (d.readonly) return -EROFS;
  const char* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    long r = host::sys(SYS_pwrite64, d.host_fd, p + done, n - done, off + done);
    if (r == -EINTR) continue;
    if (r < 0) return r;
    if (r == 0) return -EIO;
    done += (size_t)r;
  }
  return 0;
}

long ubd_fdatasync(BlockDevice& d) {
  if (d.readonly) return 0;
  return host::sys(SYS_fdatasync, d.host_fd);
}

const BlockOps kUbdOps = {.read = ubd_pread, .write = ubd_pwrite, .flush = ubd_fdatasync};

long attach_locked(Kernel& k, BlockDevices* all, int index, const char* host_path, bool readonly) {
  if (all->dev[index]) return -EBUSY;
  int flags = (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC;
  long fd = host::sys(SYS_openat, AT_FDCWD, host_path, flags, 0);
  if (fd < 0) return fd;
  struct stat st;
  long r = host::sys(SYS_fstat, fd, &st);
  if (r == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) r = -EINVAL;
  uint64_t size = (uint64_t)st.st_size;
  if (r == 0 && S_ISBLK(st.st_mode)) {
    long end = host::sys(SYS_lseek, fd, 0, SEEK_END);
    if (end < 0) r = end;
    size = (uint64_t)end;
  }
  BlockDevice* d = r == 0 ? k.heap->make<BlockDevice>() : nullptr;
  if (!d) {
    host::sys(SYS_close, fd);
    return r < 0 ? r : -ENOMEM;
  }
  copy_cstr(d->name, sizeof d->name, "ubd");
  d->name[3] = char('a' + index);
  d->name[4] = 0;
  d->index = index;
  d->host_fd = (int)fd;
  d->readonly = readonly;
  d->size = size;
  d->major = kUbdMajor;
  d->minor = 16u * (uint32_t)index;
  d->ops = &kUbdOps;
  all->dev[index] = d;
  return 0;
}

}  // namespace

long ubd_attach(Kernel& k, int index, const char* host_path, bool readonly) {
  if (index < 0 || index >= kMaxUbd) return -EINVAL;
  BlockDevices* all = devices(k, true);
  if (!all) return -ENOMEM;
  long r;
  {
    Guard g(all->lock);
    r = attach_locked(k, all, index, host_path, readonly);
  }
  if (r == 0) devtmpfs_block_added(k, *all->dev[index]);  // its /dev node, outside the table's lock
  return r;
}

BlockDevice* ubd_by_index(Kernel& k, int index) {
  BlockDevices* all = devices(k, false);
  if (!all || index < 0 || index >= kMaxUbd) return nullptr;
  Guard g(all->lock);
  return all->dev[index];
}

BlockDevice* ubd_lookup(Kernel& k, const char* name) {
  std::string_view n(name);
  if (starts_with(n, "/dev/")) n = tail(n, 5);
  if (n.size() != 4 || !starts_with(n, "ubd")) return nullptr;
  return ubd_by_index(k, n[3] - 'a');
}

void ubd_detach_all(Kernel& k) {
  BlockDevices* all = devices(k, false);
  if (!all) return;
  Guard g(all->lock);
  for (BlockDevice*& d : all->dev) {
    if (!d) continue;
    host::sys(SYS_close, d->host_fd);
    k.heap->destroy_obj(d);
    d = nullptr;
  }
}

}  // namespace flatux
