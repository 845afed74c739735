// tmpfs files mapped MAP_SHARED: the guest's mapping and the file must be
// the same memory, which heap pages cannot give. On its first shared
// mapping a file's data moves into a host memfd; from then on reads,
// writes, truncation and seeks go to the memfd, and every shared mapping
// maps it. The size= limit is kept by measuring the memfd's allocated
// blocks after each change (pages a guest dirties through a mapping are
// counted at the next call that measures).
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/falloc.h>
#include <linux/memfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/sys/host_share.h"
#include "kernel/vfs/file.h"

namespace flatux {
namespace {

// Brings n.blocks and the filesystem's count up to date with the memfd.
void measure(Tmpfs& fs, TmpInode& n) {
  struct stat st;
  if (host::sys(SYS_fstat, n.memfd, &st) < 0) return;
  uint64_t pages = (uint64_t)st.st_blocks / (kTmpPage / 512);
  tmp_charge(fs, (int64_t)pages - (int64_t)n.blocks);
  n.blocks = pages;
}

// Whether writing [off, off+len) could need more pages than are free.
bool may_overflow(Tmpfs& fs, int64_t off, size_t len) {
  uint64_t first = (uint64_t)off / kTmpPage, last = ((uint64_t)off + len - 1) / kTmpPage;
  return last - first + 1 > fs.limits.max_pages - fs.used_pages || !tmp_mem_allows(fs, last - first + 1);
}

bool page_present(int fd, uint64_t idx) {
  return host::sys(SYS_lseek, fd, (long)(idx * kTmpPage), SEEK_DATA) == (long)(idx * kTmpPage);
}

}  // namespace

long shm_promote(Task& t, Tmpfs& fs, TmpInode& n) {
  if (n.memfd >= 0) return n.memfd;
  TRY(share, charge_host_fd_to(t));
  long fd = host::sys(SYS_memfd_create, "flatux-tmpfs", MFD_CLOEXEC);
  long r = fd < 0 ? fd : host::sys(SYS_ftruncate, fd, n.size);
  for (uint64_t idx = tmp_pages_next(n.pages, 0, true); r >= 0 && idx != UINT64_MAX;
       idx = tmp_pages_next(n.pages, idx + 1, true))
    r = host::sys(SYS_pwrite64, fd, tmp_page_find(n.pages, idx), kTmpPage, (long)(idx * kTmpPage));
  if (r < 0) {
    if (fd >= 0) host::sys(SYS_close, fd);
    fd_share_uncharge(fs.heap, share);
    return r;
  }
  tmp_pages_drop(fs, n, 0, UINT64_MAX);
  n.memfd = (int)fd;
  n.memfd_share = share;
  measure(fs, n);
  return fd;
}

long shm_read(TmpInode& n, void* buf, size_t len, int64_t off) {
  if (off >= n.size) return 0;
  if ((uint64_t)len > (uint64_t)(n.size - off)) len = (size_t)(n.size - off);
  return host::sys(SYS_pread64, n.memfd, buf, len, off);
}

long shm_write(Tmpfs& fs, TmpInode& n, const void* buf, size_t len, int64_t off) {
  measure(fs, n);
  size_t done = 0;
  if (may_overflow(fs, off, len)) {
    // Near the limit: page by page, each new page checked first.
    while (done < len) {
      uint64_t pos = (uint64_t)off + done;
      size_t chunk = kTmpPage - pos % kTmpPage;
      if (chunk > len - done) chunk = len - done;
      if (!page_present(n.memfd, pos / kTmpPage) &&
          (fs.used_pages >= fs.limits.max_pages || !tmp_mem_allows(fs, 1)))
        break;
      long r = host::sys(SYS_pwrite64, n.memfd, static_cast<const char*>(buf) + done, chunk, (long)pos);
      if (r <= 0) {
        if (!done) return r < 0 ? r : -EIO;
        break;
      }
      done += (size_t)r;
      measure(fs, n);
    }
    if (!done) return fs.used_pages >= fs.limits.max_pages ? -ENOSPC : -ENOMEM;
  } else {
    long r = host::sys(SYS_pwrite64, n.memfd, buf, len, off);
    if (r < 0) return r;
    done = (size_t)r;
  }
  measure(fs, n);
  if (off + (int64_t)done > n.size) n.size = off + (int64_t)done;
  return (long)done;
}

long shm_truncate(Tmpfs& fs, TmpInode& n, int64_t size) {
  long r = host::sys(SYS_ftruncate, n.memfd, size);
  if (r < 0) return r;
  n.size = size;
  measure(fs, n);
  return 0;
}

long shm_seek(TmpInode& n, int64_t off, bool data) {
  if (off < 0 || off >= n.size) return -ENXIO;
  long r = host::sys(SYS_lseek, n.memfd, off, data ? SEEK_DATA : SEEK_HOLE);
  return r > n.size ? n.size : r;
}

long shm_fallocate(Tmpfs& fs, TmpInode& n, int mode, int64_t off, int64_t len) {
  measure(fs, n);
  if (!(mode & FALLOC_FL_PUNCH_HOLE) && may_overflow(fs, off, (size_t)len))
    return tmp_mem_allows(fs, 1) ? -ENOSPC : -ENOMEM;
  long r = host::sys(SYS_fallocate, n.memfd, mode, off, len);
  if (r == 0 && !(mode & FALLOC_FL_KEEP_SIZE) && off + len > n.size) n.size = off + len;
  measure(fs, n);
  return r;
}

void shm_release(Tmpfs& fs, TmpInode& n) {
  tmp_charge(fs, -(int64_t)n.blocks);
  n.blocks = 0;
  host::sys(SYS_close, n.memfd);
  fd_share_uncharge(fs.heap, n.memfd_share);
  n.memfd = -1;
  n.memfd_share = nullptr;
}

}  // namespace flatux
