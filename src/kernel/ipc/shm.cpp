// System V shared memory: shmget, shmat, shmdt, shmctl.
//
// A segment's pages are a host memfd, so shmat is a MAP_SHARED mapping of
// it, and every process attaching it sees one memory (a guest process
// living in another host process maps the same descriptor: the host fd
// table is shared). A segment is charged to mem= once, when it is made;
// its mappings (kRegionShm) are not charged again. Each attachment is
// recorded in the Mm that made it, so shmdt finds its size and exit, exec,
// munmap and MAP_FIXED drop what they took away.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/ipc.h>
#include <linux/shm.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/mm/mm.h"
#include "kernel/syscalls.h"
#include "kernel/sys/host_share.h"
#include "kernel/vfs/synth.h"
#include "kernel/task/caps.h"

namespace flatux {

constexpr uint32_t kShmDest = 01000;    // SHM_DEST: removed, goes with its last attachment
constexpr uint32_t kShmLocked = 02000;  // SHM_LOCKED

struct ShmSegment : IpcObject {
  uint64_t size = 0;  // as asked (shm_segsz); the memfd holds whole pages
  int memfd = -1;
  FdShare* memfd_share = nullptr;  // whose share of the host table holds memfd
  int cpid = 0, lpid = 0;
  int64_t atime = 0, dtime = 0;
  uint64_t nattch = 0;
  IpcNamespace* ns = nullptr;
  MemAccount* mem = nullptr;
};

struct ShmAttach {
  uintptr_t addr;
  size_t len;
  ShmSegment* seg;  // holds a reference and counts in nattch
  ShmAttach* next;
};

namespace {

uint64_t pages_of(uint64_t size) { return (size + kPageSize - 1) / kPageSize; }

IpcNamespace& ns_of(Task& t) { return *t.kernel->ipc; }

void put_segment(Heap* heap, ShmSegment* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  host::sys(SYS_close, s->memfd);
  fd_share_uncharge(heap, s->memfd_share);
  heap->destroy_obj(s);
}

// Linux's shm_destroy: out of the table, its pages and charge given back
// (the memory itself goes with the last reference). shm.lock held.
void destroy_locked(Heap* heap, IpcNamespace& ns, ShmSegment* s) {
  ns.shm.remove(s);
  ns.shm_pages -= pages_of(s->size);
  mem_uncharge(*s->mem, pages_of(s->size) * kPageSize);
  put_segment(heap, s);
}

bool may_destroy(const IpcNamespace& ns, const ShmSegment& s) {
  return s.nattch == 0 && ((s.mode & kShmDest) || ns.limits.shm_rmid_forced.load());
}

// One attachment less (shmdt, exit, an unmap): shm.lock held.
void detach_locked(Heap* heap, IpcNamespace& ns, ShmSegment* s, int pid) {
  s->nattch--;
  s->dtime = ipc_now();
  if (pid) s->lpid = pid;
  if (!s->removed && may_destroy(ns, *s)) destroy_locked(heap, ns, s);
  put_segment(heap, s);
}

long new_segment(Task& t, IpcNamespace& ns, int32_t key, uint64_t size, int flag) {
  Kernel& k = *t.kernel;
  if (size < 1 || size > ns.limits.shmmax.load()) return -EINVAL;
  uint64_t pages = pages_of(size);
  if (pages == 0 || ns.shm_pages + pages < ns.shm_pages || ns.shm_pages + pages > ns.limits.shmall.load())
    return -ENOSPC;
  if (ns.shm.in_use() >= ns.limits.shmmni.load()) return -ENOSPC;
  if (flag & SHM_HUGETLB) return -ENOMEM;  // no huge pages are reserved for guests
  if (!mem_charge(k.mem, pages * kPageSize)) return -ENOMEM;
  ErrorOr<FdShare*> share = charge_host_fd_to(t);
  if (share.is_error()) {
    mem_uncharge(k.mem, pages * kPageSize);
    return share.error();
  }
  char name[24];
  KFmt n(name, sizeof name);
  n.str("SYSV").hexraw((uint32_t)key, 8);
  long fd = host::sys(SYS_memfd_create, n.c_str(), MFD_CLOEXEC);
  if (fd >= 0 && host::sys(SYS_ftruncate, fd, pages * kPageSize) < 0) {
    host::sys(SYS_close, fd);
    fd = -ENOMEM;
  }
  ShmSegment* s = fd >= 0 ? k.heap->make<ShmSegment>() : nullptr;
  if (!s) {
    if (fd >= 0) host::sys(SYS_close, fd);
    fd_share_uncharge(k.heap, share.value());
    mem_uncharge(k.mem, pages * kPageSize);
    return fd < 0 ? fd : -ENOMEM;
  }
  ipc_init_object(t, *s, key, flag);
  s->size = size;
  s->memfd = (int)fd;
  s->memfd_share = share.value();
  s->cpid = t.proc->pid;
  s->ns = &ns;
  s->mem = &k.mem;
  long id = ns.shm.add(k.heap, s, ns.limits.shmmni.load());
  if (id < 0) {
    host::sys(SYS_close, fd);
    fd_share_uncharge(k.heap, s->memfd_share);
    mem_uncharge(k.mem, pages * kPageSize);
    k.heap->destroy_obj(s);
    return id;
  }
  ns.shm_pages += pages;
  return id;
}

ShmSegment* find_id(IpcNamespace& ns, int id) { return static_cast<ShmSegment*>(ns.shm.find_id(id)); }

void fill_ds(const ShmSegment& s, shmid64_ds* ds) {
  memset(ds, 0, sizeof *ds);
  ipc_fill_perm(s, &ds->shm_perm);
  ds->shm_segsz = s.size;
  ds->shm_atime = s.atime;
  ds->shm_dtime = s.dtime;
  ds->shm_ctime = s.ctime;
  ds->shm_cpid = s.cpid;
  ds->shm_lpid = s.lpid;
  ds->shm_nattch = s.nattch;
}

// Unlinks and frees the record `a` (its segment is detached by the caller).
void drop_record(Heap* heap, Mm& mm, ShmAttach* a) {
  for (ShmAttach** link = &mm.shm; *link; link = &(*link)->next)
    if (*link == a) {
      *link = a->next;
      break;
    }
  heap->free(a);
}

bool any_shm_region(const Mm& mm, uintptr_t start, uintptr_t end) {
  for (const Region* r = mm.regions.first(); r; r = r->next)
    if (r->kind == kRegionShm && r->start < end && r->end > start) return true;
  return false;
}

long info_cmd(IpcNamespace& ns, int cmd, uint64_t buf) {
  if (cmd == IPC_INFO) {
    shminfo64 info{};
    info.shmmax = ns.limits.shmmax.load();
    info.shmmin = 1;
    info.shmmni = (unsigned long)ns.limits.shmmni.load();
    info.shmseg = SHMSEG;
    info.shmall = ns.limits.shmall.load();
    if (copy_to_user((void*)buf, &info, sizeof info) < 0) return -EFAULT;
  } else {
    shm_info info{};
    info.used_ids = ns.shm.in_use();
    info.shm_tot = ns.shm_pages;
    info.shm_rss = ns.shm_pages;
    if (copy_to_user((void*)buf, &info, sizeof info) < 0) return -EFAULT;
  }
  int max = ns.shm.max_index();
  return max < 0 ? 0 : max;
}

// SHM_LOCK and SHM_UNLOCK: the owner or creator with a memlock limit, or root.
long lock_cmd(Task& t, IpcNamespace& ns, int id, int cmd) {
  Guard g(ns.shm.lock);
  ShmSegment* s = find_id(ns, id);
  if (!s) return -EINVAL;
  uint32_t euid = t.proc->creds.euid;
  if (!capable(t.proc->creds, CAP_IPC_LOCK)) {
    if (euid != s->uid && euid != s->cuid) return -EPERM;
    if (cmd == SHM_LOCK && t.proc->rlimits[RLIMIT_MEMLOCK][0] == 0) return -EPERM;
  }
  if (cmd == SHM_LOCK) s->mode |= kShmLocked;
  else s->mode &= ~kShmLocked;
  return 0;
}

// IPC_RMID: gone now, or with its last attachment; either way its key is
// free for a new segment.
long remove(Task& t, IpcNamespace& ns, ShmSegment& s) {
  if (s.nattch) {
    s.mode |= kShmDest;
    s.key = IPC_PRIVATE;
  } else {
    destroy_locked(t.kernel->heap, ns, &s);
  }
  return 0;
}

}  // namespace

long sys_shmget(Task& t, SyscallArgs a) {
  IpcNamespace& ns = ns_of(t);
  int32_t key = (int32_t)a[0];
  uint64_t size = a[1];
  int flag = (int)a[2];
  return ipc_get(t, ns.shm, key, flag, [&] { return new_segment(t, ns, key, size, flag); },
                 [&](IpcObject& o) { return static_cast<ShmSegment&>(o).size < size ? -EINVAL : 0; });
}

long sys_shmat(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  IpcNamespace& ns = ns_of(t);
  int id = (int)a[0];
  uintptr_t addr = a[1];
  int flag = (int)a[2];
  if (id < 0) return -EINVAL;
  if (addr & (kPageSize - 1)) {  // SHMLBA is a page on x86
    if (!(flag & SHM_RND)) return -EINVAL;
    addr = page_down(addr);
    if (!addr && (flag & SHM_REMAP)) return -EINVAL;
  }
  if (!addr && (flag & SHM_REMAP)) return -EINVAL;
  int prot = PROT_READ, need = 0444;
  if (!(flag & SHM_RDONLY)) prot |= PROT_WRITE, need |= 0222;
  if (flag & SHM_EXEC) prot |= PROT_EXEC, need |= 0111;
  ShmSegment* s;
  {
    // Counted as attached before the mapping is made, so an IPC_RMID in
    // between cannot take the segment away.
    Guard g(ns.shm.lock);
    s = find_id(ns, id);
    if (!s) return -EINVAL;
    if (ipc_permitted(t, *s, need)) return -EACCES;
    s->get();
    s->nattch++;
  }
  size_t len = page_up(s->size);
  auto* rec = static_cast<ShmAttach*>(k.heap->alloc(sizeof(ShmAttach)));
  long r = rec ? 0 : -ENOMEM;
  Mm& mm = *t.proc->mm;
  {
    Guard g(mm.lock);
    if (r == 0 && addr && !(flag & SHM_REMAP) && mm.regions.overlaps(addr, addr + len)) r = -EINVAL;
    if (r == 0) {
      // Shown in /proc/PID/maps as Linux shows it: the deleted SYSV file.
      char name[32];
      KFmt n(name, sizeof name);
      n.str("/SYSV").hexraw((uint32_t)s->key, 8).str(" (deleted)");
      RegionAttrs attrs;
      attrs.name = region_name_make(k.heap, n.c_str(), 1, (uint64_t)s->id);
      r = mm_map(mm, addr, len, prot, MAP_SHARED, s->memfd, 0, kRegionShm, addr != 0, attrs);
      region_name_put(k.heap, attrs.name);
      if (r == -EEXIST) r = -EINVAL;  // someone else's memory there
    }
    if (r >= 0) {
      // SHM_REMAP over whole attachments replaces them (their mapping is
      // this one's now, which the unmap check cannot tell).
      for (ShmAttach* old = mm.shm; old;) {
        ShmAttach* next = old->next;
        if (old->addr >= (uintptr_t)r && old->addr + old->len <= (uintptr_t)r + len) {
          ShmSegment* os = old->seg;
          drop_record(k.heap, mm, old);
          Guard i(ns.shm.lock);
          detach_locked(k.heap, ns, os, t.proc->pid);
        }
        old = next;
      }
      *rec = ShmAttach{(uintptr_t)r, len, s, mm.shm};
      mm.shm = rec;
    }
    Guard i(ns.shm.lock);
    if (r >= 0) {
      s->atime = ipc_now();
      s->lpid = t.proc->pid;
    } else {
      detach_locked(k.heap, ns, s, 0);
    }
  }
  if (r < 0) k.heap->free(rec);
  return r;
}

long sys_shmdt(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  uintptr_t addr = a[0];
  if (addr & (kPageSize - 1)) return -EINVAL;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  ShmAttach* at = mm.shm;
  while (at && at->addr != addr) at = at->next;
  if (!at) return -EINVAL;
  // The record goes first, so the unmapping below does not detach it again.
  ShmSegment* s = at->seg;
  size_t len = at->len;
  drop_record(k.heap, mm, at);
  // Only the segment's own mappings go, not what was mapped over parts of it.
  for (const Region* r = mm.regions.first(); r;) {
    const Region* next = r->next;
    uintptr_t b = r->start > addr ? r->start : addr;
    uintptr_t e = r->end < addr + len ? r->end : addr + len;
    if (r->kind == kRegionShm && b < e) {
      mm_unmap(mm, b, e - b);
      next = mm.regions.first();  // the list changed: start over
    }
    r = next;
  }
  IpcNamespace& ns = *s->ns;
  Guard i(ns.shm.lock);
  detach_locked(k.heap, ns, s, t.proc->pid);
  return 0;
}

long sys_shmctl(Task& t, SyscallArgs a) {
  IpcNamespace& ns = ns_of(t);
  int id = (int)a[0], cmd = (int)a[1];
  if (id < 0 && cmd != IPC_INFO && cmd != SHM_INFO) return -EINVAL;
  switch (cmd) {
    case IPC_INFO: case SHM_INFO: {
      Guard g(ns.shm.lock);
      return info_cmd(ns, cmd, a[2]);
    }
    case IPC_STAT: case SHM_STAT: case SHM_STAT_ANY:
      return ipc_stat<ShmSegment, shmid64_ds>(t, ns.shm, id, cmd != IPC_STAT, cmd == SHM_STAT_ANY, a[2], fill_ds);
    case IPC_SET: case IPC_RMID:
      return ipc_change<ShmSegment, shmid64_ds>(t, ns.shm, id, cmd == IPC_SET, a[2], [&](ShmSegment& s, shmid64_ds& in) {
        if (cmd == IPC_RMID) return remove(t, ns, s);
        ipc_set_perm(s, in.shm_perm);
        return 0L;
      });
    case SHM_LOCK: case SHM_UNLOCK: return lock_cmd(t, ns, id, cmd);
    default: return -EINVAL;
  }
}

void shm_detach_all(Mm& mm) {
  while (ShmAttach* at = mm.shm) {
    mm.shm = at->next;
    ShmSegment* s = at->seg;
    Heap* heap = mm.regions.heap();
    heap->free(at);
    Guard g(s->ns->shm.lock);
    detach_locked(heap, *s->ns, s, 0);
  }
}

void shm_forget_unmapped(Mm& mm) {
  for (ShmAttach* at = mm.shm; at;) {
    ShmAttach* next = at->next;
    if (!any_shm_region(mm, at->addr, at->addr + at->len)) {
      ShmSegment* s = at->seg;
      Heap* heap = mm.regions.heap();
      drop_record(heap, mm, at);
      Guard g(s->ns->shm.lock);
      detach_locked(heap, *s->ns, s, 0);
    }
    at = next;
  }
}

void shm_moved(Mm& mm, uintptr_t from, uintptr_t to, size_t len) {
  for (ShmAttach* at = mm.shm; at; at = at->next)
    if (at->addr == from && at->len <= len) at->addr = to;
}

long shm_copy_attachments(const Mm& parent, Mm& child) {
  Heap* heap = child.regions.heap();
  for (const ShmAttach* at = parent.shm; at; at = at->next) {
    auto* rec = static_cast<ShmAttach*>(heap->alloc(sizeof(ShmAttach)));
    if (!rec) return -ENOMEM;
    *rec = ShmAttach{at->addr, at->len, at->seg, child.shm};
    child.shm = rec;
    Guard g(at->seg->ns->shm.lock);
    at->seg->get();
    at->seg->nattch++;
  }
  return 0;
}

void shm_proc_show(Kernel& k, SynthText& o) {
  const char* header = "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid"
                       "      atime      dtime      ctime                   rss                  swap\n";
  ipc_proc_show<ShmSegment>(k.ipc->shm, o, header, [](ShmSegment& s, KFmt& f) {
    f.pad_dec(s.key, 10).ch(' ').pad_dec(s.id, 10).str("  ").pad_oct(s.mode, 4).ch(' ');
    f.udec_padded(s.size, 21).ch(' ').udec_padded((uint32_t)s.cpid, 5).ch(' ');
    f.udec_padded((uint32_t)s.lpid, 5).str("  ").udec_padded(s.nattch, 5).ch(' ');
    f.udec_padded(s.uid, 5).ch(' ').udec_padded(s.gid, 5).ch(' ').udec_padded(s.cuid, 5).ch(' ');
    f.udec_padded(s.cgid, 5).ch(' ').udec_padded((uint64_t)s.atime, 10).ch(' ');
    f.udec_padded((uint64_t)s.dtime, 10).ch(' ').udec_padded((uint64_t)s.ctime, 10).ch(' ');
    struct stat st {};
    host::sys(SYS_fstat, s.memfd, &st);  // resident: the pages the memfd holds
    f.udec_padded((uint64_t)st.st_blocks * 512, 21).ch(' ').udec_padded(0, 21).ch('\n');
  });
}

}  // namespace flatux
