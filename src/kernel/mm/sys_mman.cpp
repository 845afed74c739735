#include <fcntl.h>
#include <linux/errno.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/mm/mm.h"
#include "kernel/mm/syscall_sites.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr int kProtMask = PROT_READ | PROT_WRITE | PROT_EXEC;
constexpr uint64_t kPassFlags = MAP_NORESERVE | MAP_POPULATE | MAP_STACK | MAP_LOCKED | MAP_NONBLOCK;

bool valid_range(uintptr_t addr, size_t len) {
  return (addr & (kPageSize - 1)) == 0 && len && addr + len > addr;
}

// Someone else's memory in the way: MAP_FIXED_NOREPLACE says EEXIST, plain
// MAP_FIXED (which on Linux would have clobbered it) says ENOMEM.
long fixed_errno(uint64_t flags, long r) {
  return (r == -EEXIST && !(flags & MAP_FIXED_NOREPLACE)) ? -ENOMEM : r;
}

// A file with no host descriptor (tmpfs) is mapped by copying its contents
// into anonymous memory, which is exact for MAP_PRIVATE. A shared mapping
// maps the host descriptor the file hands out for that (shared_map_fd);
// a file without one can only be mapped shared read-only from a read-only
// descriptor (a copy that cannot be made writable either).
long map_by_copy(Task& t, File& f, uintptr_t addr, size_t len, int prot, uint64_t flags, uint64_t off) {
  if (!f.ops->pread) return -ENODEV;
  bool shared = (flags & MAP_TYPE) != MAP_PRIVATE;
  if (shared && ((prot & PROT_WRITE) || (f.flags & O_ACCMODE) != O_RDONLY)) return -ENODEV;
  if ((int64_t)off < 0 || off + len < off) return -EOVERFLOW;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  if ((flags & MAP_FIXED_NOREPLACE) && mm.regions.overlaps(addr, addr + len)) return -EEXIST;
  int host_flags = MAP_PRIVATE | MAP_ANONYMOUS | (int)(flags & kPassFlags & ~MAP_NORESERVE);
  long at = fixed_errno(flags, mm_map(mm, addr, len, PROT_READ | PROT_WRITE, host_flags, -1, 0, kRegionFile,
                                      flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)));
  if (at < 0 && at > -4096) return at;
  long r = f.ops->pread(t, f, (void*)at, len, (int64_t)off);
  if (r >= 0 && prot != (PROT_READ | PROT_WRITE)) {
    r = host::sys(SYS_mprotect, at, len, prot);
    if (r == 0 && !mm.regions.set_prot(at, at + len, prot)) r = -ENOMEM;
  }
  if (r < 0) {
    mm_unmap(mm, at, len);
    return r == -EISDIR ? -ENODEV : r;
  }
  return at;
}

}  // namespace

long sys_mmap(Task& t, SyscallArgs a) {
  uintptr_t addr = a[0];
  size_t len = page_up(a[1]);
  int prot = (int)a[2];
  uint64_t flags = a[3];
  uint64_t off = a[5];
  if (!a[1] || len < a[1]) return a[1] ? -ENOMEM : -EINVAL;
  if (off & (kPageSize - 1)) return -EINVAL;
  if (prot & ~(kProtMask | PROT_GROWSDOWN | PROT_GROWSUP | PROT_SEM)) return -EINVAL;
  prot &= kProtMask;
  int type = (int)(flags & MAP_TYPE);
  if (type != MAP_SHARED && type != MAP_PRIVATE && type != MAP_SHARED_VALIDATE) return -EINVAL;
  if (flags & MAP_HUGETLB) return -EINVAL;
  bool fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
  if (fixed && (addr & (kPageSize - 1))) return -EINVAL;
  int host_flags = (type == MAP_PRIVATE ? MAP_PRIVATE : MAP_SHARED) | (int)(flags & kPassFlags);

  Mm& mm = *t.proc->mm;
  if (flags & MAP_ANONYMOUS) {
    Guard g(mm.lock);
    if ((flags & MAP_FIXED_NOREPLACE) && mm.regions.overlaps(addr, addr + len))
      return -EEXIST;
    return fixed_errno(flags, mm_map(mm, addr, len, prot, host_flags | MAP_ANONYMOUS, -1, 0,
                                     kRegionAnon, fixed));
  }
  FdRef f(t, a[4]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  int acc = (int)(f->flags & O_ACCMODE);
  if (acc == O_WRONLY) return -EACCES;
  if (type != MAP_PRIVATE && (prot & PROT_WRITE) && acc != O_RDWR) return -EACCES;
  int host_fd = f->host_fd;
  if (host_fd < 0 && type != MAP_PRIVATE && f->ops->shared_map_fd) {
    long fd = f->ops->shared_map_fd(t, *f);
    if (fd < 0) return fd;
    host_fd = (int)fd;
  }
  int own_fd = -1;  // a private mapping's copy of the contents, closed once mapped
  if (host_fd < 0 && type == MAP_PRIVATE && f->ops->private_map_fd) {
    long fd = f->ops->private_map_fd(t, *f);
    if (fd >= 0) host_fd = own_fd = (int)fd;
  }
  if (host_fd < 0) return map_by_copy(t, *f, addr, len, prot, flags, off);
  long r;
  {
    Guard g(mm.lock);
    r = (flags & MAP_FIXED_NOREPLACE) && mm.regions.overlaps(addr, addr + len)
            ? -EEXIST
            : fixed_errno(flags, mm_map(mm, addr, len, prot, host_flags, host_fd, off, kRegionFile, fixed));
  }
  if (own_fd >= 0) host::sys(SYS_close, own_fd);
  return r;
}

long sys_munmap(Task& t, SyscallArgs a) {
  size_t len = page_up(a[1]);
  if (!valid_range(a[0], len)) return -EINVAL;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  return mm_unmap(mm, a[0], len);
}

long sys_mprotect(Task& t, SyscallArgs a) {
  size_t len = page_up(a[1]);
  int prot = (int)a[2];
  if (a[0] & (kPageSize - 1)) return -EINVAL;
  if (prot & ~(kProtMask | PROT_GROWSDOWN | PROT_GROWSUP | PROT_SEM)) return -EINVAL;
  if (len == 0) return 0;
  if (a[0] + len < a[0]) return -ENOMEM;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  if (!mm.regions.covers(a[0], a[0] + len)) return -ENOMEM;
  if ((prot & PROT_WRITE) && !mm_charge_fits(mm, len)) return -ENOMEM;
  syscall_sites_protect(mm, a[0], a[0] + len, prot & kProtMask);
  long r = host::sys(SYS_mprotect, a[0], len, prot & kProtMask);
  if (r < 0) return r;
  bool ok = mm.regions.set_prot(a[0], a[0] + len, prot & kProtMask);
  mm_recharge(mm);
  return ok ? 0 : -ENOMEM;
}

long sys_mremap(Task& t, SyscallArgs a) {
  uintptr_t old = a[0];
  size_t old_len = page_up(a[1]), new_len = page_up(a[2]);
  uint64_t flags = a[3];
  uintptr_t new_addr = a[4];
  if (old & (kPageSize - 1)) return -EINVAL;
  if (flags & ~(uint64_t)(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) return -EINVAL;
  if ((flags & MREMAP_FIXED) && !(flags & MREMAP_MAYMOVE)) return -EINVAL;
  if (!new_len || new_len < a[2]) return -EINVAL;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  const Region* r = mm.regions.find(old);
  if (!r || !old_len || !mm.regions.covers(old, old + old_len)) return -EFAULT;
  if ((flags & MREMAP_FIXED) && !mm.regions.covers(new_addr, new_addr + new_len)) return -EINVAL;
  int prot = r->prot;
  RegionKind kind = r->kind;
  uint8_t rflags = r->flags;  // MAP_SHARED stays so when moved
  if (new_len > old_len && mm_chargeable(prot, kind) && !mm_charge_fits(mm, new_len - old_len)) return -ENOMEM;
  // Rewritten sites' jumps are relative: the code moves with its original bytes.
  syscall_sites_revert(mm, old, old + old_len);
  if (flags & MREMAP_FIXED) syscall_sites_forget(mm, new_addr, new_addr + new_len);
  long res = host::sys(SYS_mremap, old, old_len, new_len, flags, new_addr);
  if (res < 0 && res > -4096) return res;
  uintptr_t n = (uintptr_t)res;
  if (n != old || new_len < old_len) syscall_sites_forget(mm, old, old + old_len);
  if (!(flags & MREMAP_DONTUNMAP)) mm.regions.remove(old, old + old_len);
  bool ok = mm.regions.add(n, n + new_len, prot, kind, rflags);
  mm_recharge(mm);
  return ok ? (long)n : -ENOMEM;
}

long sys_madvise(Task& t, SyscallArgs a) {
  size_t len = page_up(a[1]);
  if (a[0] & (kPageSize - 1)) return -EINVAL;
  if (len == 0) return 0;
  switch ((int)a[2]) {
    case MADV_NORMAL: case MADV_RANDOM: case MADV_SEQUENTIAL: case MADV_WILLNEED:
    case MADV_DONTNEED: case MADV_FREE: case MADV_DONTFORK: case MADV_DOFORK:
    case MADV_HUGEPAGE: case MADV_NOHUGEPAGE: case MADV_DONTDUMP: case MADV_DODUMP:
    case MADV_COLD: case MADV_PAGEOUT:
      break;
    default:
      return -EINVAL;
  }
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  if (!mm.regions.covers(a[0], a[0] + len)) return -ENOMEM;
  return host::sys(SYS_madvise, a[0], len, a[2]);
}

long sys_brk(Task& t, SyscallArgs a) {
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  uintptr_t want = a[0];
  if (want < mm.brk_start || want > mm.brk_limit) return (long)mm.brk_cur;
  uintptr_t mapped = page_up(want);
  if (mapped > mm.brk_mapped) {
    if (!mm_charge_fits(mm, mapped - mm.brk_mapped)) return (long)mm.brk_cur;
    if (host::sys(SYS_mprotect, mm.brk_mapped, mapped - mm.brk_mapped, PROT_READ | PROT_WRITE) < 0)
      return (long)mm.brk_cur;
    mm.regions.set_prot(mm.brk_mapped, mapped, PROT_READ | PROT_WRITE);
  } else if (mapped < mm.brk_mapped) {
    // Shrinking gives the pages back and makes them fault again, as on Linux.
    host::sys(SYS_madvise, mapped, mm.brk_mapped - mapped, MADV_DONTNEED);
    host::sys(SYS_mprotect, mapped, mm.brk_mapped - mapped, PROT_NONE);
    mm.regions.set_prot(mapped, mm.brk_mapped, PROT_NONE);
  }
  mm.brk_mapped = mapped;
  mm.brk_cur = want;
  mm_recharge(mm);
  return (long)want;
}

}  // namespace flatux
