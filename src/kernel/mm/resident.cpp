#include "kernel/mm/resident.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/lib/kfmt.h"
#include "kernel/mm/mm.h"

namespace flatux {
namespace {

// The flag bits of a pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
constexpr uint64_t kPresent = 1ull << 63, kSwapped = 1ull << 62, kFileOrShared = 1ull << 61;

// A page of this region that the host counts as file-backed or shared is
// shmem (a memfd: tmpfs, or an anonymous shared mapping, or a System V
// segment) or a host file's page cache.
bool shmem_backed(const Region& r) {
  if (r.kind == kRegionShm) return true;
  if (r.attrs.name && r.attrs.name->charge) return true;
  return r.kind == kRegionAnon && (r.flags & kRegionShared);
}

void count(const Region& r, const uint64_t* entries, size_t n, Resident& out) {
  bool shmem = shmem_backed(r);
  for (size_t i = 0; i < n; i++) {
    uint64_t e = entries[i];
    if (e & kSwapped) out.swap += kPageSize;
    else if (!(e & kPresent)) continue;
    else if (!(e & kFileOrShared)) out.anon += kPageSize;
    else if (shmem) out.shmem += kPageSize;
    else out.file += kPageSize;
  }
}

}  // namespace

long host_pagemap_open(int host_pid) {
  char path[48];
  KFmt p(path, sizeof path);
  p.str("/proc/").dec(host_pid).str("/pagemap");
  return host::sys(SYS_open, p.c_str(), O_RDONLY | O_CLOEXEC);
}

long mm_resident_pagemap(Mm& mm, int host_pid, Resident* out) {
  *out = Resident{};
  long fd = host_pagemap_open(host_pid);
  if (fd < 0) return fd;
  long r = 0;
  {
    Guard g(mm.lock);
    uint64_t entries[512];
    for (const Region* reg = mm.regions.first(); reg && r >= 0; reg = reg->next) {
      if (reg->prot == 0) continue;  // a reserve, or a guard
      for (uintptr_t at = reg->start; at < reg->end;) {
        size_t n = (reg->end - at) / kPageSize;
        if (n > 512) n = 512;
        r = host::sys(SYS_pread64, fd, entries, n * sizeof entries[0], (at / kPageSize) * sizeof entries[0]);
        if (r < 0) break;
        count(*reg, entries, (size_t)r / sizeof entries[0], *out);
        if ((size_t)r != n * sizeof entries[0]) break;
        at += n * kPageSize;
      }
    }
  }
  host::sys(SYS_close, fd);
  if (r < 0) {
    *out = Resident{};
    return r;
  }
  mm_note_resident(mm, *out);
  return 0;
}

long mm_resident_here(Mm& mm, Resident* out) {
  *out = Resident{};
  Guard g(mm.lock);
  unsigned char vec[4096];
  for (const Region* reg = mm.regions.first(); reg; reg = reg->next) {
    if (reg->prot == 0) continue;
    uint64_t& bucket = shmem_backed(*reg) ? out->shmem : reg->kind == kRegionFile ? out->file : out->anon;
    for (uintptr_t at = reg->start; at < reg->end;) {
      size_t n = (reg->end - at) / kPageSize;
      if (n > sizeof vec) n = sizeof vec;
      long r = host::sys(SYS_mincore, at, n * kPageSize, vec);
      if (r < 0) return r;
      for (size_t i = 0; i < n; i++)
        if (vec[i] & 1) bucket += kPageSize;
      at += n * kPageSize;
    }
  }
  mm_note_resident(mm, *out);
  return 0;
}

void mm_note_resident(Mm& mm, const Resident& r) {
  uint64_t rss = r.rss(), seen = mm.hiwater_rss.load(std::memory_order_relaxed);
  while (rss > seen && !mm.hiwater_rss.compare_exchange_weak(seen, rss, std::memory_order_relaxed)) {
  }
}

}  // namespace flatux
