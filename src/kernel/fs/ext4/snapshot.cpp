// Host copies of file contents for exec and mmap. The host can only map a
// host descriptor, and an ext4 file's data lives in the image: a memfd
// holding a copy is what gets mapped. Made once per unchanged file and kept
// with its cache entry, so a program started a thousand times (a shell, a
// shared library) is read from the image and copied once, and all its
// mappings share the host's pages of that copy.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/ext4/internal.h"

namespace flatux::ext4 {

long Volume::snapshot_fd(uint32_t ino) {
  Guard g(lock_);
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  if (!S_ISREG(in->a.mode)) return -ENODEV;
  if (!in->snapshot) {
    long r = make_snapshot(in);
    if (r < 0) return r;
  }
  return host::sys(SYS_fcntl, in->snapshot - 1, F_DUPFD_CLOEXEC, 0);
}

long Volume::make_snapshot(Inode* in) {
  size_t size = (size_t)in->a.size;
  if (snapshot_bytes_ + size > kSnapshotBudget) drop_every_snapshot();
  long fd = host::sys(SYS_memfd_create, "ext4", MFD_CLOEXEC);
  if (fd < 0) return fd;
  long r = host::sys(SYS_ftruncate, fd, size);
  if (r == 0 && size) {
    // Read straight into a shared mapping of the copy, through the page
    // cache, as kernel memory.
    long map = host::sys(SYS_mmap, 0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map < 0 && map > -4096) {
      r = map;
    } else {
      for (size_t done = 0; r == 0 && done < size;) {
        long got = read_locked(in->a.ino, (char*)map + done, size - done, done, true);
        if (got <= 0) r = got < 0 ? got : -EIO;
        else done += (size_t)got;
      }
      host::sys(SYS_munmap, map, size);
    }
  }
  if (r < 0) {
    host::sys(SYS_close, fd);
    return r;
  }
  in->snapshot = (int)fd + 1;
  in->snapshot_size = size;
  snapshot_bytes_ += size;
  return 0;
}

void Volume::drop_snapshot(Inode* in) {
  if (!in->snapshot) return;
  host::sys(SYS_close, in->snapshot - 1);
  in->snapshot = 0;
  snapshot_bytes_ -= in->snapshot_size;
  in->snapshot_size = 0;
}

void Volume::drop_snapshot(uint32_t ino) {
  for (Inode* in = inodes_[ino % kInodeBuckets]; in; in = in->next)
    if (in->a.ino == ino) drop_snapshot(in);
}

void Volume::drop_every_snapshot() {
  for (Inode* head : inodes_)
    for (Inode* in = head; in; in = in->next) drop_snapshot(in);
}

}  // namespace flatux::ext4
