// /proc/PID/pagemap: one 64-bit entry per virtual page of the process.
// Guest addresses are host addresses, so the pagemap of the host process
// the guest lives in has the answer for pages the process owns; pages it does not own (free, or
// another guest's) read as absent. Page frame numbers are never shown
// (they are the host's physical memory): the PFN bits read 0, as they do
// on Linux for a reader without CAP_SYS_ADMIN; the flag bits (present,
// swapped, file or shared, exclusive, soft-dirty) are the host's.
#include "kernel/fs/procfs/procfs.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/hostproc.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/mm/mm.h"
#include "kernel/mm/resident.h"
#include "kernel/task/process.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr uint64_t kPfnMask = (1ull << 55) - 1;  // bits 0-54
constexpr size_t kEntry = 8;

// Fills out[0..n) for the pages from `page` on: host entries (without
// PFNs) where p owns the page, else 0. tasks_lock held.
long fill(Process& p, int host_fd, uint64_t page, uint64_t* out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = 0;
  if (!p.mm) return 0;
  Guard g(p.mm->lock);
  uint64_t first = page * kPageSize, last = (page + n) * kPageSize;
  for (const Region* r = p.mm->regions.first(); r; r = r->next) {
    uint64_t s = r->start > first ? r->start : first;
    uint64_t e = r->end < last ? r->end : last;
    if (s >= e) continue;
    size_t at = (s - first) / kPageSize, count = (e - s) / kPageSize;
    long got = host::sys(SYS_pread64, host_fd, out + at, count * kEntry, (s / kPageSize) * kEntry);
    if (got < 0) return got;
    for (size_t i = at; i < at + count; i++) out[i] &= ~kPfnMask;
  }
  return 0;
}

// The host pagemap of the host process the guest process `pid` lives in
// (a forked guest has a host process of its own).
long open_host_pagemap(Task& t, int pid) {
  int host_pid;
  {
    Kernel& k = *t.kernel;
    Guard g(k.tasks_lock);
    Task* x = find_task_locked(k, pid);
    if (!x || x->proc->state != ProcState::kRunning) return -ESRCH;
    host_pid = task_host_pid(*x);
  }
  return host_pagemap_open(host_pid);
}

long pagemap_pread(Task& t, File& f, void* buf, size_t n, int64_t off) {
  if (off < 0 || off % kEntry || n % kEntry) return -EINVAL;
  if (!access_ok(buf, n)) return -EFAULT;
  long host_fd = open_host_pagemap(t, (int)f.priv_word);
  if (host_fd < 0) return host_fd;
  uint64_t chunk[512];
  size_t done = 0;
  long r = 0;
  uint64_t limit = kGuestMaxAddr / kPageSize;
  while (done < n) {
    uint64_t page = (uint64_t)off / kEntry + done / kEntry;
    if (page >= limit) break;
    size_t count = (n - done) / kEntry < 512 ? (n - done) / kEntry : 512;
    if (page + count > limit) count = limit - page;
    {
      Kernel& k = *t.kernel;
      Guard g(k.tasks_lock);
      Task* x = find_task_locked(k, (int)f.priv_word);
      r = x && x->proc->state == ProcState::kRunning ? fill(*x->proc, (int)host_fd, page, chunk, count) : -ESRCH;
    }
    if (r < 0 || copy_to_user((char*)buf + done, chunk, count * kEntry) < 0) {
      r = r < 0 ? r : -EFAULT;
      break;
    }
    done += count * kEntry;
  }
  host::sys(SYS_close, host_fd);
  return done ? (long)done : r;
}

long pagemap_lseek(Task&, File& f, int64_t off, int whence) { return file_seek_kept(f, off, whence, -1); }

long pagemap_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFREG | 0400, ((uint64_t)f.priv_word << 16) | 0xbeef, 0, 0x16);
  return 0;
}

const FileOps kPagemapOps = {
    .read = file_read_at_pos,
    .write = nullptr,
    .pread = pagemap_pread,
    .pwrite = nullptr,
    .lseek = pagemap_lseek,
    .stat = pagemap_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = nullptr,
};

}  // namespace

long procfs_open_pagemap(Task& t, int pid, uint32_t flags, File** out) {
  File* f = file_alloc(t.kernel->heap, &kPagemapOps, flags, -1);
  if (!f) return -ENOMEM;
  f->priv_word = (uint64_t)pid;
  *out = f;
  return 0;
}

}  // namespace flatux
