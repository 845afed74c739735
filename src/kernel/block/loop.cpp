// Loop devices: the table (loop0..7 made at first use, more through
// /dev/loop-control or by opening their number), binding to a guest open
// file, and the I/O, which goes through the backing file's own operations.
//
// The backing file's I/O runs as a kernel identity of the loop driver's
// (root, like Linux's loop workers), not as whichever task happens to
// read the device: the ext4 driver above may read it from inside its
// foreign-code gate, from any task, or at power-off from the launcher.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/block/loop_internal.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/block/ubd.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/task/kthread.h"
#include "kernel/task/task.h"
#include "kernel/vfs/file.h"

namespace flatux {

struct LoopDevices {
  KMutex lock;  // the table, and `opens` of devices being removed
  LoopDevice* dev[kMaxLoop]{};
  Task* io_task = nullptr;
};

namespace {

constexpr size_t kBounce = 128 * 1024;

long loop_read(BlockDevice& d, void* buf, size_t n, uint64_t off);
long loop_write(BlockDevice& d, const void* buf, size_t n, uint64_t off);
long loop_flush(BlockDevice& d);
void loop_last_close(BlockDevice& d);

const BlockOps kLoopOps = {
    .read = loop_read,
    .write = loop_write,
    .flush = loop_flush,
    .ioctl = loop_ioctl,
    .last_close = loop_last_close,
};

LoopDevice* make_device(Kernel& k, int index) {
  LoopDevice* lo = k.heap->make<LoopDevice>();
  if (!lo) return nullptr;
  KFmt(lo->name, sizeof lo->name).str("loop").dec(index).c_str();
  lo->index = index;
  lo->major = kLoopMajor;
  lo->minor = (uint32_t)index;
  lo->ops = &kLoopOps;
  lo->kernel = &k;
  return lo;
}

// The table, with loop0..7, made on first use.
LoopDevices* table(Kernel& k) {
  if (!k.blocks) return nullptr;  // made with the kernel
  Guard g(k.blocks->lock);
  if (k.blocks->loops) return k.blocks->loops;
  LoopDevices* t = k.heap->make<LoopDevices>();
  // The identity backing-file I/O runs under: root, no files of its own.
  if (!t || !(t->io_task = make_kernel_task(k, "kloopd"))) return nullptr;
  for (int i = 0; i < kLoopPrealloc; i++) t->dev[i] = make_device(k, i);
  k.blocks->loops = t;
  return t;
}

LoopDevices& table_of(LoopDevice& lo) { return *lo.kernel->blocks->loops; }

// Whole transfers between buf and the backing file, a bounce buffer's
// worth at a time; past the file's end reads as zeroes.
long transfer_through(LoopDevice& lo, uint8_t* bounce, uint8_t* buf, size_t n, uint64_t off, bool write) {
  Task& t = *table_of(lo).io_task;
  File& f = *lo.backing;
  KernelBuffers bounce_is_ours;
  for (size_t done = 0; done < n;) {
    size_t chunk = n - done < kBounce ? n - done : kBounce;
    int64_t at = (int64_t)(lo.offset + off + done);
    if (write) {
      memcpy(bounce, buf + done, chunk);
      for (size_t put = 0; put < chunk;) {
        long r = f.ops->pwrite(t, f, bounce + put, chunk - put, at + (int64_t)put);
        if (r <= 0) return r < 0 ? r : -EIO;
        put += (size_t)r;
      }
    } else {
      size_t got = 0;
      while (got < chunk) {
        long r = f.ops->pread(t, f, bounce + got, chunk - got, at + (int64_t)got);
        if (r < 0) return r;
        if (r == 0) break;
        got += (size_t)r;
      }
      memset(bounce + got, 0, chunk - got);
      memcpy(buf + done, bounce, chunk);
    }
    done += chunk;
  }
  return 0;
}

// The bounce buffer is host memory outside the kernel heap (file
// operations take guest-range buffers), mapped in the host process that
// bound the device; another one (a forked guest, or the foreign-call server
// working for one) maps its own for the transfer.
long transfer(LoopDevice& lo, uint8_t* buf, size_t n, uint64_t off, bool write) {
  Guard g(lo.lock);
  if (lo.state == LoopState::kUnbound || !lo.backing) return -EIO;
  if (off > lo.size || n > lo.size - off) return -EIO;
  if (host::sys(SYS_getpid) == lo.bounce_pid) return transfer_through(lo, lo.bounce, buf, n, off, write);
  long map = host::sys(SYS_mmap, 0, kBounce, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map < 0 && map > -4096) return -ENOMEM;
  long r = transfer_through(lo, reinterpret_cast<uint8_t*>(map), buf, n, off, write);
  host::sys(SYS_munmap, map, kBounce);
  return r;
}

long loop_read(BlockDevice& d, void* buf, size_t n, uint64_t off) {
  return transfer(loop_of(d), static_cast<uint8_t*>(buf), n, off, false);
}

long loop_write(BlockDevice& d, const void* buf, size_t n, uint64_t off) {
  return transfer(loop_of(d), static_cast<uint8_t*>(const_cast<void*>(buf)), n, off, true);
}

long loop_flush(BlockDevice& d) {
  LoopDevice& lo = loop_of(d);
  Guard g(lo.lock);
  if (lo.state == LoopState::kUnbound || !lo.backing || !lo.backing->ops->fsync) return 0;
  return lo.backing->ops->fsync(*table_of(lo).io_task, *lo.backing, true);
}

// Lets go of the file (lock held); the caller puts the returned reference.
File* unbind_locked(LoopDevice& lo) {
  File* f = lo.backing;
  lo.backing = nullptr;
  lo.state = LoopState::kUnbound;
  lo.flags = 0;
  lo.offset = lo.sizelimit = 0;
  lo.size = 0;
  lo.readonly = false;
  lo.block_size = 512;
  memset(lo.file_name, 0, sizeof lo.file_name);
  memset(lo.crypt_name, 0, sizeof lo.crypt_name);
  // Only where it is mapped: elsewhere the address may be anything (a
  // binder that has since exited took its mapping along; else it stays).
  if (lo.bounce && host::sys(SYS_getpid) == lo.bounce_pid) host::sys(SYS_munmap, lo.bounce, kBounce);
  lo.bounce = nullptr;
  return f;
}

// Linux's lo_release: the last close of an autoclear device clears it.
void loop_last_close(BlockDevice& d) {
  LoopDevice& lo = loop_of(d);
  File* f = nullptr;
  {
    Guard g(lo.lock);
    if (lo.state != LoopState::kUnbound && (lo.flags & LO_FLAGS_AUTOCLEAR) && lo.opens.load() == 0)
      f = unbind_locked(lo);
  }
  if (f) f->put();
}

bool valid_block_size(uint32_t bs) { return bs >= 512 && bs <= 4096 && (bs & (bs - 1)) == 0; }

// The file behind fd, if a loop device may use it: a regular file or a
// block device that does not lead back to lo through bound loop devices
// (Linux's loop_validate_file: EBADF for lo itself).
long backing_file(Task& t, LoopDevice& lo, int fd, File** out, struct stat* st) {
  File* f = t.proc->files->get(fd);
  if (!f) return -EBADF;
  long r = (f->flags & O_PATH) ? -EBADF : f->ops->stat && f->ops->pread ? f->ops->stat(t, *f, st) : -EINVAL;
  if (r == 0 && !S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode)) r = -EINVAL;
  if (r == 0 && st->st_dev == block_devnum(lo)) r = -EINVAL;  // a file on this very device
  for (BlockDevice* b = block_of_file(*f); r == 0 && b && b->major == kLoopMajor;) {
    LoopDevice& next = loop_of(*b);
    if (&next == &lo) r = -EBADF;
    else if (next.state != LoopState::kBound) r = -EINVAL;
    b = next.backing ? block_of_file(*next.backing) : nullptr;
  }
  if (r < 0) {
    f->put();
    return r;
  }
  *out = f;
  return 0;
}

uint64_t file_size(File& f, const struct stat& st) {
  if (BlockDevice* b = block_of_file(f)) return b->size;
  return st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

}  // namespace

long loop_update_size_locked(LoopDevice& lo) {
  struct stat st;
  long r = lo.backing->ops->stat(*table_of(lo).io_task, *lo.backing, &st);
  if (r < 0) return r;
  uint64_t size = file_size(*lo.backing, st);
  size = size > lo.offset ? size - lo.offset : 0;
  if (lo.sizelimit && lo.sizelimit < size) size = lo.sizelimit;
  lo.size = size & ~511ull;  // whole sectors, as get_size
  return 0;
}

long loop_bind(Task& t, LoopDevice& lo, File& dev_file, int fd, const loop_info64& info, uint32_t block_size) {
  if (block_size && !valid_block_size(block_size)) return -EINVAL;
  if (info.lo_offset > INT64_MAX || info.lo_sizelimit > INT64_MAX) return -EOVERFLOW;
  File* f = nullptr;
  struct stat st;
  long r = backing_file(t, lo, fd, &f, &st);
  if (r < 0) return r;
  Guard g(lo.lock);
  if (lo.state != LoopState::kUnbound) r = -EBUSY;
  long map = r < 0 ? r : host::sys(SYS_mmap, 0, kBounce, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == 0 && map < 0) r = -ENOMEM;
  if (r < 0) {
    f->put();
    return r;
  }
  bool ro = (info.lo_flags & LO_FLAGS_READ_ONLY) || (f->flags & O_ACCMODE) == O_RDONLY ||
            (dev_file.flags & O_ACCMODE) == O_RDONLY || !f->ops->pwrite;
  lo.bounce = reinterpret_cast<uint8_t*>(map);
  lo.bounce_pid = (int)host::sys(SYS_getpid);
  lo.backing = f;
  lo.offset = info.lo_offset;
  lo.sizelimit = info.lo_sizelimit;
  lo.flags = (info.lo_flags & LOOP_CONFIGURE_SETTABLE_FLAGS & ~LO_FLAGS_DIRECT_IO) | (ro ? LO_FLAGS_READ_ONLY : 0);
  memcpy(lo.file_name, info.lo_file_name, LO_NAME_SIZE);
  memcpy(lo.crypt_name, info.lo_crypt_name, LO_NAME_SIZE);
  lo.file_name[LO_NAME_SIZE - 1] = lo.crypt_name[LO_NAME_SIZE - 1] = 0;
  lo.readonly = ro;
  lo.block_size = block_size ? block_size : 512;
  lo.state = LoopState::kBound;
  if ((r = loop_update_size_locked(lo)) < 0) unbind_locked(lo)->put();
  return r;
}

long loop_change_fd(Task& t, LoopDevice& lo, int fd) {
  File* f = nullptr;
  struct stat st;
  long r = backing_file(t, lo, fd, &f, &st);
  if (r < 0) return r;
  File* old = nullptr;
  {
    Guard g(lo.lock);
    struct stat old_st;
    if (lo.state != LoopState::kBound) r = -ENXIO;
    else if (!(lo.flags & LO_FLAGS_READ_ONLY)) r = -EINVAL;
    else if ((r = lo.backing->ops->stat(t, *lo.backing, &old_st)) == 0 &&
             file_size(*lo.backing, old_st) != file_size(*f, st))
      r = -EINVAL;
    if (r == 0) {
      old = lo.backing;
      lo.backing = f;
      f = nullptr;
    }
  }
  if (f) f->put();
  if (old) old->put();
  return r;
}

long loop_clear_on_close(LoopDevice& lo) {
  Guard g(lo.lock);
  if (lo.state != LoopState::kBound) return -ENXIO;
  lo.flags |= LO_FLAGS_AUTOCLEAR;
  // The caller's own open is the only one: nobody else may come in.
  if (lo.opens.load() == 1) lo.state = LoopState::kRundown;
  return 0;
}

BlockDevice* loop_get(Kernel& k, int index, bool create) {
  LoopDevices* t = table(k);
  if (!t || index < 0 || index >= kMaxLoop) return nullptr;
  LoopDevice* lo;
  bool made = false;
  {
    Guard g(t->lock);
    if (!t->dev[index] && create) made = (t->dev[index] = make_device(k, index)) != nullptr;
    lo = t->dev[index];
    if (lo) lo->opens.fetch_add(1);
  }
  if (made) devtmpfs_block_added(k, *lo);  // held open here: it cannot go meanwhile
  return lo;
}

void loop_for_each(Kernel& k, void (*fn)(void* ctx, const BlockDevice& d), void* ctx) {
  LoopDevices* t = table(k);
  if (!t) return;
  Guard g(t->lock);
  for (LoopDevice* lo : t->dev)
    if (lo) fn(ctx, *lo);
}

namespace {

long add_locked(Kernel& k, LoopDevices* t, int index) {
  if (index < 0)
    for (int i = 0; i < kMaxLoop && index < 0; i++)
      if (!t->dev[i]) index = i;
  if (index < 0) return -ENOSPC;
  if (index >= kMaxLoop) return -EINVAL;
  if (t->dev[index]) return -EEXIST;
  if (!(t->dev[index] = make_device(k, index))) return -ENOMEM;
  return index;
}

}  // namespace

long loop_add(Kernel& k, int index) {
  LoopDevices* t = table(k);
  if (!t) return -ENOMEM;
  long r;
  {
    Guard g(t->lock);
    r = add_locked(k, t, index);
  }
  if (r >= 0) {
    // Its /dev node, outside the table's lock; the device is held open for
    // it (a LOOP_CTL_REMOVE meanwhile then waits for nothing: EBUSY).
    if (BlockDevice* d = loop_get(k, (int)r, false)) {
      devtmpfs_block_added(k, *d);
      block_put(*d);
    }
  }
  return r;
}

long loop_remove(Kernel& k, int index) {
  LoopDevices* t = table(k);
  if (!t) return -ENOMEM;
  if (index < 0) return -EINVAL;
  Guard g(t->lock);
  LoopDevice* lo = index < kMaxLoop ? t->dev[index] : nullptr;
  if (!lo) return -ENODEV;
  {
    Guard d(lo->lock);
    if (lo->state != LoopState::kUnbound || lo->opens.load() > 0) return -EBUSY;
  }
  t->dev[index] = nullptr;
  k.heap->destroy_obj(lo);
  return 0;
}

long loop_get_free(Kernel& k) {
  LoopDevices* t = table(k);
  if (!t) return -ENOMEM;
  {
    Guard g(t->lock);
    for (LoopDevice* lo : t->dev)
      if (lo && lo->state == LoopState::kUnbound) return lo->index;
  }
  return loop_add(k, -1);
}

}  // namespace flatux
