#include <fcntl.h>
#include <linux/errno.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/memfd/memfd.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/mm/host_charge.h"
#include "kernel/mm/mm.h"
#include "kernel/mm/syscall_sites.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/path_ops.h"

namespace flatux {
namespace {

constexpr int kProtMask = PROT_READ | PROT_WRITE | PROT_EXEC;
constexpr uint32_t kReadImpliesExec = 0x0400000;  // personality's READ_IMPLIES_EXEC
constexpr uint64_t kPassFlags = MAP_NORESERVE | MAP_POPULATE | MAP_STACK | MAP_LOCKED | MAP_NONBLOCK;
// Linux's LEGACY_MAP_MASK: the flags every mapping of a file may carry.
constexpr uint64_t kLegacyMapMask = MAP_SHARED | MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_DENYWRITE |
                                    MAP_EXECUTABLE | 0x4000000 /*MAP_UNINITIALIZED*/ | MAP_GROWSDOWN |
                                    MAP_LOCKED | MAP_NORESERVE | MAP_POPULATE | MAP_NONBLOCK | MAP_STACK |
                                    MAP_HUGETLB;

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
long map_by_copy(Task& t, File& f, uintptr_t addr, size_t len, int prot, uint64_t flags, uint64_t off,
                 const RegionAttrs& attrs) {
  if (!f.ops->pread) return -ENODEV;
  bool shared = (flags & MAP_TYPE) != MAP_PRIVATE;
  if (shared && ((prot & PROT_WRITE) || (f.flags & O_ACCMODE) != O_RDONLY)) return -ENODEV;
  if ((int64_t)off < 0 || off + len < off) return -EOVERFLOW;
  Mm& mm = *t.proc->mm;
  long at;
  {
    Guard g(mm.lock);
    if ((flags & MAP_FIXED_NOREPLACE) && mm.regions.overlaps(addr, addr + len)) return -EEXIST;
    int host_flags = MAP_PRIVATE | MAP_ANONYMOUS | (int)(flags & kPassFlags & ~MAP_NORESERVE);
    at = fixed_errno(flags, mm_map(mm, addr, len, PROT_READ | PROT_WRITE, host_flags, -1, 0, kRegionFile,
                                   flags & (MAP_FIXED | MAP_FIXED_NOREPLACE), attrs));
    if (at < 0 && at > -4096) return at;
  }
  // Read without the lock: the filesystem takes its own locks, and its
  // copy into the mapping checks the mapping is ours.
  long r = f.ops->pread(t, f, (void*)at, len, (int64_t)off);
  Guard g(mm.lock);
  if (!mm.regions.covers(at, at + len)) return r < 0 ? r : -EFAULT;  // unmapped meanwhile
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

// What /proc/PID/maps shows for a mapping of f: its guest path, device
// and inode (a reference for the caller), or nullptr.
RegionName* file_region_name(Task& t, File& f) {
  char path[kPathMax];
  struct stat st;
  if (!f.ops->stat || f.ops->stat(t, f, &st) < 0) return nullptr;
  if (vfs_of(t).file_guest_path(t, f, path, sizeof path) < 0) return nullptr;
  return region_name_make(t.kernel->heap, path, st.st_dev, st.st_ino);
}

// Holds a RegionAttrs' name reference for the length of a call.
struct MapAttrs {
  Heap* heap;
  RegionAttrs a;
  ~MapAttrs() { region_name_put(heap, a.name); }
};

long do_mmap(Task& t, uintptr_t addr, size_t len, uint64_t asked, int prot, uint64_t flags, File* file,
             uint64_t off) {
  if (!asked || len < asked) return asked ? -ENOMEM : -EINVAL;
  if (prot & ~(kProtMask | PROT_GROWSDOWN | PROT_GROWSUP | PROT_SEM)) return -EINVAL;
  prot &= kProtMask;
  if ((prot & PROT_READ) && (t.proc->personality & kReadImpliesExec)) prot |= PROT_EXEC;
  int type = (int)(flags & MAP_TYPE);
  if (type != MAP_SHARED && type != MAP_PRIVATE && type != MAP_SHARED_VALIDATE) return -EINVAL;
  if (flags & MAP_HUGETLB) return -EINVAL;
  bool fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
  if (fixed && (addr & (kPageSize - 1))) return -EINVAL;
  int host_flags = (type == MAP_PRIVATE ? MAP_PRIVATE : MAP_SHARED) | (int)(flags & kPassFlags);

  Mm& mm = *t.proc->mm;
  MapAttrs ma{t.kernel->heap, {}};
  if (flags & MAP_ANONYMOUS) {
    // Shared anonymous memory is a deleted /dev/zero on Linux, and shows so.
    if (type != MAP_PRIVATE) ma.a.name = region_name_make(t.kernel->heap, "/dev/zero (deleted)", 1, 0);
    Guard g(mm.lock);
    if ((flags & MAP_FIXED_NOREPLACE) && mm.regions.overlaps(addr, addr + len))
      return -EEXIST;
    return fixed_errno(flags, mm_map(mm, addr, len, prot, host_flags | MAP_ANONYMOUS, -1, 0,
                                     kRegionAnon, fixed, ma.a));
  }
  File* f = file;
  // MAP_SHARED_VALIDATE: a flag Linux does not know for this file is
  // EOPNOTSUPP (MAP_SYNC included: no file here is DAX).
  if (type == MAP_SHARED_VALIDATE && (flags & ~kLegacyMapMask)) return -EOPNOTSUPP;
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
  ma.a.offset = off;
  ma.a.name = file_region_name(t, *f);
  if (f->charge && f->charge->kind == ChargeKind::kMemfd) {
    // The mapping keeps the memfd's pages, and so its charge.
    if (!ma.a.name) return -ENOMEM;
    memfd_measure(*f);
    host_charge_get(f->charge);
    ma.a.name->charge = f->charge;
  }
  if (host_fd < 0) return map_by_copy(t, *f, addr, len, prot, flags, off, ma.a);
  long r;
  {
    Guard g(mm.lock);
    r = (flags & MAP_FIXED_NOREPLACE) && mm.regions.overlaps(addr, addr + len)
            ? -EEXIST
            : fixed_errno(flags, mm_map(mm, addr, len, prot, host_flags, host_fd, off, kRegionFile, fixed, ma.a));
  }
  if (own_fd >= 0) host::sys(SYS_close, own_fd);
  return r;
}

}  // namespace

long sys_mmap(Task& t, SyscallArgs a) {
  uintptr_t addr = a[0];
  size_t len = page_up(a[1]);
  int prot = (int)a[2];
  uint64_t flags = a[3];
  uint64_t off = a[5];
  if (off & (kPageSize - 1)) return -EINVAL;
  // The descriptor is looked up before anything else is judged, as Linux's
  // ksys_mmap_pgoff does (a bad one is EBADF even with a zero length).
  File* file = nullptr;
  if (!(flags & MAP_ANONYMOUS)) {
    file = a[4] > (uint64_t)FdTable::kMaxFds ? nullptr : t.proc->files->get((int)a[4]);
    if (file && (file->flags & O_PATH)) {
      file->put();
      file = nullptr;
    }
    if (!file) return -EBADF;
  }
  long r = do_mmap(t, addr, len, a[1], prot, flags, file, off);
  if (file) file->put();
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
  if (mm_too_many_maps(mm, mm_splits_for(mm, a[0], a[0] + len))) return -ENOMEM;  // vm.max_map_count
  if ((prot & PROT_WRITE) && !mm_charge_fits(mm, len)) return -ENOMEM;
  syscall_sites_protect(mm, a[0], a[0] + len, prot & kProtMask);
  long r = host::sys(SYS_mprotect, a[0], len, prot & kProtMask);
  if (r < 0) return r;
  bool ok = mm.regions.set_prot(a[0], a[0] + len, prot & kProtMask);
  mm_recharge(mm);
  return ok ? 0 : -ENOMEM;
}

namespace {

// MREMAP_FIXED's destination: our own mapping (replaced), or free space,
// held with a PROT_NONE placeholder so the host's move replaces only that;
// never another process's memory (ENOMEM, as a MAP_FIXED there). Sets
// *placeholder when one was made.
long claim_destination(Mm& mm, uintptr_t dst, size_t len, bool* placeholder) {
  *placeholder = false;
  if (!user_range_ok((void*)dst, len)) return -ENOMEM;
  if (mm.regions.covers(dst, dst + len)) return 0;
  if (mm.regions.overlaps(dst, dst + len)) return -ENOMEM;
  long r = host::sys(SYS_mmap, dst, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                     -1, 0);
  if (r < 0 && r > -4096) return r == -EEXIST ? -ENOMEM : r;
  *placeholder = true;
  return 0;
}

}  // namespace

long sys_mremap(Task& t, SyscallArgs a) {
  uintptr_t old = a[0];
  size_t old_len = page_up(a[1]), new_len = page_up(a[2]);
  uint64_t flags = a[3];
  uintptr_t new_addr = a[4];
  bool fixed = flags & MREMAP_FIXED, dontunmap = flags & MREMAP_DONTUNMAP;
  if (old & (kPageSize - 1)) return -EINVAL;
  if (flags & ~(uint64_t)(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) return -EINVAL;
  if ((fixed || dontunmap) && !(flags & MREMAP_MAYMOVE)) return -EINVAL;
  if (dontunmap && old_len != new_len) return -EINVAL;
  if (!new_len || new_len < a[2]) return -EINVAL;
  if (fixed) {
    if (new_addr & (kPageSize - 1)) return -EINVAL;
    if (old < new_addr + new_len && new_addr < old + old_len) return -EINVAL;  // overlapping
  }
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  const Region* r = mm.regions.find(old);
  if (!r || !old_len || !mm.regions.covers(old, old + old_len)) return -EFAULT;
  int prot = r->prot;
  RegionKind kind = r->kind;
  uint8_t rflags = r->flags;
  RegionAttrs attrs = r->attrs;
  attrs.offset += old - r->start;
  if (attrs.name) attrs.name->refs.fetch_add(1, std::memory_order_relaxed);  // ours until added
  bool grows = new_len > old_len || dontunmap;  // DONTUNMAP keeps the old range too
  size_t more = dontunmap ? new_len : new_len - old_len;
  long res = grows && mm_chargeable(prot, kind) && !mm_charge_fits(mm, more) ? -ENOMEM : 0;
  if (grows && !mm_may_expand(mm, more, mm_is_data(prot, rflags & kRegionShared, kind) ? more : 0)) res = -ENOMEM;
  bool placeholder = false;
  // Rewritten sites' jumps are relative: the code moves with its original bytes.
  if (res == 0) syscall_sites_revert(mm, old, old + old_len);
  if (res == 0 && fixed) syscall_sites_forget(mm, new_addr, new_addr + new_len);
  if (res == 0 && fixed) res = claim_destination(mm, new_addr, new_len, &placeholder);
  if (res == 0) res = host::sys(SYS_mremap, old, old_len, new_len, flags, new_addr);
  if (res < 0 && res > -4096) {
    if (placeholder) host::sys(SYS_munmap, new_addr, new_len);
    region_name_put(mm.regions.heap(), attrs.name);
    return res;
  }
  uintptr_t n = (uintptr_t)res;
  if (n != old || new_len < old_len) syscall_sites_forget(mm, old, old + old_len);
  if (!dontunmap) mm.regions.remove(old, old + old_len);
  bool ok = mm.regions.add(n, n + new_len, prot, kind, rflags, attrs);
  region_name_put(mm.regions.heap(), attrs.name);
  if (kind == kRegionShm && !dontunmap) shm_moved(mm, old, n, old_len);
  mm_recharge(mm);
  shm_forget_unmapped(mm);
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
    case MADV_COLD: case MADV_PAGEOUT: case MADV_WIPEONFORK: case MADV_KEEPONFORK:
      break;
    default:
      return -EINVAL;
  }
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  if (!mm.regions.covers(a[0], a[0] + len)) return -ENOMEM;
  int advice = (int)a[2];
  bool fork_flag = advice == MADV_DONTFORK || advice == MADV_DOFORK;
  if (fork_flag && mm_too_many_maps(mm, mm_splits_for(mm, a[0], a[0] + len))) return -ENOMEM;
  long r = host::sys(SYS_madvise, a[0], len, advice);
  // A fork child's copy leaves DONTFORK memory out (the host's fork does
  // the same with the host mapping): the region list must know.
  if (r == 0 && fork_flag && !mm.regions.set_flag(a[0], a[0] + len, kRegionDontFork, advice == MADV_DONTFORK))
    r = -ENOMEM;
  if (r == 0 && fork_flag) mm_recharge(mm);
  return r;
}

// Shared writable mappings are host mappings of host descriptors (hostfs
// files, tmpfs memfds), so the host's msync writes them back; the range
// must lie in the caller's own mappings (ENOMEM otherwise, as for
// unmapped pages on Linux).
long sys_msync(Task& t, SyscallArgs a) {
  uint64_t flags = a[2];
  if (flags & ~(uint64_t)(MS_ASYNC | MS_INVALIDATE | MS_SYNC)) return -EINVAL;
  if ((flags & MS_ASYNC) && (flags & MS_SYNC)) return -EINVAL;
  if (a[0] & (kPageSize - 1)) return -EINVAL;
  size_t len = page_up(a[1]);
  if (a[1] && len < a[1]) return -ENOMEM;
  if (a[0] + len < a[0]) return -ENOMEM;
  if (len == 0) return 0;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  if (!mm.regions.covers(a[0], a[0] + len)) return -ENOMEM;
  return host::sys(SYS_msync, a[0], len, flags);
}

// Memory protection keys: the machines flatux runs on have no PKU, and in
// one shared address space the sixteen keys could not be any guest's own,
// so there are none to hand out: pkey_alloc is ENOSPC as on a CPU without
// them, after Linux's argument checks.
long sys_pkey_alloc(Task&, SyscallArgs a) {
  if (a[0]) return -EINVAL;
  if (a[1] & ~(uint64_t)(PKEY_DISABLE_ACCESS | PKEY_DISABLE_WRITE)) return -EINVAL;
  return -ENOSPC;
}

long sys_pkey_free(Task&, SyscallArgs) { return -EINVAL; }  // no key is ever allocated

long sys_pkey_mprotect(Task& t, SyscallArgs a) {
  if ((int)a[3] != -1) return -EINVAL;
  const uint64_t args[6] = {a[0], a[1], a[2], 0, 0, 0};
  return sys_mprotect(t, args);
}

long sys_brk(Task& t, SyscallArgs a) {
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  uintptr_t want = a[0];
  if (want < mm.brk_start || want > mm.brk_limit) return (long)mm.brk_cur;
  uintptr_t mapped = page_up(want);
  if (mapped > mm.brk_mapped) {
    if (!mm_charge_fits(mm, mapped - mm.brk_mapped)) return (long)mm.brk_cur;
    if (!mm_may_expand(mm, mapped - mm.brk_mapped, mapped - mm.brk_mapped)) return (long)mm.brk_cur;
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
