#include "kernel/fs/memfd/memfd.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <linux/memfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/mm/host_charge.h"
#include "kernel/mm/mm.h"
#include "kernel/syscalls.h"

namespace flatux {
namespace {

constexpr uint64_t kPage = 4096;

bool is_memfd(const File& f) { return f.charge && f.charge->kind == ChargeKind::kMemfd; }

// Charges the pages the memfd holds now (its lock held).
void measure_locked(File& f) { host_charge_measure_locked(*f.charge); }

// What writing `n` bytes may add: every page the range touches.
uint64_t most_for(uint64_t n) {
  if (n > (1ull << 62)) return ~0ull;
  return (n + kPage - 1) / kPage * kPage + kPage;
}

// Reserves `bytes` under mem= for the length of a host call that may
// allocate that much; the memfd's real pages are charged when it ends.
class Reservation {
 public:
  Reservation(File& f, uint64_t bytes) : f_(f) {
    MemAccount& acct = *f.charge->acct;
    if (acct.limit && bytes > acct.limit) return;
    if (mem_charge(acct, bytes)) held_ = bytes, ok_ = true;
  }
  ~Reservation() {
    if (!ok_) return;
    {
      Guard g(f_.charge->lock);
      measure_locked(f_);
    }
    mem_uncharge(*f_.charge->acct, held_);
  }
  bool ok() const { return ok_; }

 private:
  File& f_;
  uint64_t held_ = 0;
  bool ok_ = false;
};

bool page_present(int fd, uint64_t pos) {
  uint64_t start = pos / kPage * kPage;
  return host::sys(SYS_lseek, fd, (long)start, SEEK_DATA) == (long)start;
}

// How much of [at, at + left) one host write may take without passing
// mem=: the run of pages the memfd already has (rewriting them costs
// nothing), or as many new pages as still fit. 0: not one page fits.
uint64_t next_chunk(File& f, uint64_t at, uint64_t left) {
  uint64_t in_page = kPage - at % kPage;
  if (page_present(f.host_fd, at)) {
    long hole = host::sys(SYS_lseek, f.host_fd, (long)at, SEEK_HOLE);
    uint64_t run = hole > (long)at ? (uint64_t)hole - at : in_page;
    return run < left ? run : left;
  }
  const MemAccount& acct = *f.charge->acct;
  uint64_t used = acct.used.load(std::memory_order_relaxed);
  if (!acct.limit) return left;
  uint64_t pages = used < acct.limit ? (acct.limit - used) / kPage : 0;
  if (!pages) return 0;
  uint64_t most = pages * kPage - at % kPage;
  return most < left ? most : left;
}

// Near the limit: each host write takes only pages the memfd has or pages
// that still fit, so that rewriting what it holds keeps working. `off` < 0:
// at the file position. ENOSPC when nothing could be written.
long write_pagewise(File& f, const char* buf, size_t n, int64_t off) {
  HostCharge& c = *f.charge;
  Guard g(c.lock);
  int64_t pos = off;
  if (off < 0) {
    struct stat st;
    if (f.flags & O_APPEND) pos = host::sys(SYS_fstat, f.host_fd, &st) < 0 ? -EIO : st.st_size;
    else pos = host::sys(SYS_lseek, f.host_fd, 0, SEEK_CUR);
    if (pos < 0) return pos;
  }
  size_t done = 0;
  long err = -ENOSPC;
  while (done < n) {
    uint64_t at = (uint64_t)pos + done;
    measure_locked(f);
    uint64_t chunk = next_chunk(f, at, n - done);
    if (!chunk) break;
    long r = host::sys(SYS_pwrite64, f.host_fd, buf + done, chunk, (long)at);
    if (r <= 0) {
      err = r < 0 ? r : -EIO;
      break;
    }
    done += (size_t)r;
  }
  measure_locked(f);
  if (!done) return err;
  if (off < 0 && !(f.flags & O_APPEND)) host::sys(SYS_lseek, f.host_fd, (long)(pos + done), SEEK_SET);
  return (long)done;
}

}  // namespace

long memfd_write(Task& t, File& f, const void* buf, size_t n) {
  {
    Reservation room(f, most_for(n));
    if (room.ok()) return kHostFileOps.write(t, f, buf, n);
  }
  if (!access_ok(buf, n)) return -EFAULT;
  return write_pagewise(f, static_cast<const char*>(buf), n, -1);
}

long memfd_pwrite(Task& t, File& f, const void* buf, size_t n, int64_t off) {
  {
    Reservation room(f, most_for(n));
    if (room.ok()) return kHostFileOps.pwrite(t, f, buf, n, off);
  }
  if (!access_ok(buf, n)) return -EFAULT;
  if (off < 0) return -EINVAL;
  return write_pagewise(f, static_cast<const char*>(buf), n, off);
}

long memfd_writev(Task& t, File& f, const iovec* iov, int cnt, int64_t off, int flags) {
  uint64_t total = 0;
  for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
  {
    Reservation room(f, most_for(total));
    if (room.ok()) return kHostFileOps.writev(t, f, iov, cnt, off, flags);
  }
  // One buffer after another, as far as they fit.
  long done = 0;
  for (int i = 0; i < cnt; i++) {
    if (!iov[i].iov_len) continue;
    if (!access_ok(iov[i].iov_base, iov[i].iov_len)) return done ? done : -EFAULT;
    long r = write_pagewise(f, static_cast<const char*>(iov[i].iov_base), iov[i].iov_len, off < 0 ? -1 : off + done);
    if (r < 0) return done ? done : r;
    done += r;
    if ((size_t)r < iov[i].iov_len) break;
  }
  return done;
}

long memfd_fallocate(Task& t, File& f, int mode, int64_t off, int64_t len) {
  if ((mode & FALLOC_FL_PUNCH_HOLE) || len <= 0 || off < 0) {
    long r = kHostFileOps.fallocate(t, f, mode, off, len);
    Guard g(f.charge->lock);
    measure_locked(f);
    return r;
  }
  Reservation room(f, most_for((uint64_t)len));
  if (!room.ok()) return -ENOSPC;  // shmem's answer when its pages are not there
  return kHostFileOps.fallocate(t, f, mode, off, len);
}

// ftruncate: a larger size is a hole (free); a smaller one gives pages back.
long memfd_setattr(Task& t, File& f, const Attr& a) {
  long r = kHostFileOps.setattr(t, f, a);
  Guard g(f.charge->lock);
  measure_locked(f);
  return r;
}



namespace {

bool host_is_memfd(int host_fd) {
  char path[32], target[16];
  KFmt pf(path, sizeof path);
  pf.str("/proc/self/fd/").dec(host_fd);
  long n = host::sys(SYS_readlinkat, AT_FDCWD, pf.c_str(), target, sizeof target);
  constexpr char kPrefix[] = "/memfd:";
  if (n < (long)sizeof kPrefix - 1) return false;
  for (size_t i = 0; i + 1 < sizeof kPrefix; i++)
    if (target[i] != kPrefix[i]) return false;
  return true;
}

}  // namespace

void memfd_measure(File& f) {
  if (!is_memfd(f)) return;
  Guard g(f.charge->lock);
  measure_locked(f);
}

long MemfdCopy::reserve(File& out, size_t* count) {
  if (!is_memfd(out)) return 0;
  MemAccount& acct = *out.charge->acct;
  if (acct.limit) {
    uint64_t used = acct.used.load(std::memory_order_relaxed);
    uint64_t room = used < acct.limit ? (acct.limit - used) / kPage * kPage : 0;
    if (room < 2 * kPage) return -ENOSPC;
    if (most_for(*count) > room) *count = room - 2 * kPage + 1;
  }
  uint64_t want = most_for(*count);
  if (!mem_charge(acct, want)) return -ENOSPC;
  out_ = &out;
  reserved_ = want;
  return 0;
}

MemfdCopy::~MemfdCopy() {
  if (!out_) return;
  memfd_measure(*out_);
  mem_uncharge(*out_->charge->acct, reserved_);
}

void host_charge_adopt(File& f, MemAccount& acct) {
  if (f.host_fd < 0 || f.charge) return;
  HostCharge* c = host_charge_find(acct, f.host_fd);
  if (!c) {
    struct stat st;
    if (host::sys(SYS_fstat, f.host_fd, &st) < 0) return;
    bool pipe = S_ISFIFO(st.st_mode), memfd = S_ISREG(st.st_mode) && host_is_memfd(f.host_fd);
    if (!pipe && !memfd) return;
    c = host_charge_new(f.heap, acct, f.host_fd, pipe ? ChargeKind::kPipe : ChargeKind::kMemfd);
    if (!c) return;
    Guard g(c->lock);
    if (pipe) {
      long size = host::sys(SYS_fcntl, f.host_fd, F_GETPIPE_SZ);
      host_charge_set(*c, size > 0 ? (uint64_t)size : 0);
    } else {
      host_charge_set(*c, (uint64_t)st.st_blocks * 512);
    }
  }
  f.charge = c;
  if (c->kind == ChargeKind::kMemfd) f.ops = &kMemfdFileOps;
}

long sys_memfd_create(Task& t, SyscallArgs a) {
  char name[250];
  long r = strncpy_from_user(name, (const char*)a[0], sizeof name);
  if (r < 0) return r == -ENAMETOOLONG ? -EINVAL : r;
  constexpr uint64_t kKnown = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  if (a[1] & ~kKnown) return -EINVAL;
  // A host memfd: shared mappings of it work like any host file's.
  long fd = host::sys(SYS_memfd_create, name, (a[1] & MFD_ALLOW_SEALING) | MFD_CLOEXEC);
  if (fd < 0) return fd;
  HostCharge* c = host_charge_new(t.kernel->heap, t.kernel->mem, (int)fd, ChargeKind::kMemfd);
  if (!c) {
    host::sys(SYS_close, fd);
    return -ENOMEM;
  }
  File* f = hostfs_adopt_host_fd(t.kernel->heap, (int)fd, O_RDWR | kOLargeFile);
  if (!f) {
    host_charge_put(c);
    return -ENOMEM;
  }
  f->ops = &kMemfdFileOps;
  f->charge = c;
  long gfd = t.proc->files->install(f, a[1] & MFD_CLOEXEC);
  f->put();
  return gfd;
}

}  // namespace flatux
