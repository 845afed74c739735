#include "kernel/mm/mm.h"

#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"

namespace flatux {

long mm_map(Mm& mm, uintptr_t hint, size_t len, int prot, int host_flags, int host_fd,
            uint64_t off, RegionKind kind, bool fixed) {
  if (fixed) {
    if (!access_ok((void*)hint, len)) return -ENOMEM;
    if (mm.regions.covers(hint, hint + len)) {
      host_flags |= MAP_FIXED;  // replacing our own mapping is safe
    } else if (mm.regions.overlaps(hint, hint + len)) {
      return -ENOMEM;           // part ours, part someone else's
    } else {
      host_flags |= MAP_FIXED_NOREPLACE;  // free space only, never another's memory
    }
  }
  long r = host::sys(SYS_mmap, hint, len, prot, host_flags, host_fd, off);
  if (r < 0 && r > -4096) return r;
  uintptr_t addr = (uintptr_t)r;
  if (!access_ok((void*)addr, len) || !mm.regions.add(addr, addr + len, prot, kind)) {
    host::sys(SYS_munmap, addr, len);
    return -ENOMEM;
  }
  return (long)addr;
}

long mm_unmap(Mm& mm, uintptr_t addr, size_t len) {
  uintptr_t end = addr + len;
  for (const Region* r = mm.regions.first(); r; r = r->next) {
    uintptr_t s = r->start > addr ? r->start : addr;
    uintptr_t e = r->end < end ? r->end : end;
    if (s < e) host::sys(SYS_munmap, s, e - s);
  }
  return mm.regions.remove(addr, end) ? 0 : -ENOMEM;
}

long mm_setup_brk(Mm& mm, uintptr_t after) {
  long r = host::sys(SYS_mmap, page_up(after), kBrkReserve, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (r < 0 && r > -4096)
    r = host::sys(SYS_mmap, 0, kBrkReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r < 0 && r > -4096) return r;
  uintptr_t base = (uintptr_t)r;
  if (!mm.regions.add(base, base + kBrkReserve, PROT_NONE, kRegionBrk)) {
    host::sys(SYS_munmap, base, kBrkReserve);
    return -ENOMEM;
  }
  mm.brk_start = mm.brk_cur = mm.brk_mapped = base;
  mm.brk_limit = base + kBrkReserve;
  return 0;
}

void mm_release(Mm& mm) {
  Guard g(mm.lock);
  for (const Region* r = mm.regions.first(); r; r = r->next)
    host::sys(SYS_munmap, r->start, r->end - r->start);
  mm.regions.clear();
}

}  // namespace flatux
