#include "kernel/mm/mm.h"

#include "kernel/lib/kfmt.h"

#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/mm/site_survey.h"
#include "kernel/mm/syscall_sites.h"

namespace flatux {

namespace {

// Its share of the host process's vm.max_map_count (kernel/sys/host_share.h):
// would `extra` more regions fit?
bool maps_share_allows(const Mm& mm, int extra) {
  return !mm.map_pool || share_check(*mm.map_pool, mm.maps_charged, extra) == ShareVerdict::kOk;
}

}  // namespace

bool mm_too_many_maps(const Mm& mm, int extra) {
  if (extra <= 0) return false;
  if (!maps_share_allows(mm, extra)) return true;
  return mm.acct && mm.regions.count() + extra > mm.acct->max_map_count.load(std::memory_order_relaxed);
}

void mm_set_map_pool(Mm& mm, HostPool* pool) {
  if (mm.map_pool) {
    mm.map_pool->used.fetch_sub(mm.maps_charged, std::memory_order_relaxed);
    host_pool_put(mm.regions.heap(), mm.map_pool);
  }
  mm.map_pool = pool;
  mm.maps_charged = 0;
  if (!pool) return;
  pool->refs.fetch_add(1, std::memory_order_relaxed);
  mm.maps_charged = mm.regions.count();
  pool->used.fetch_add(mm.maps_charged, std::memory_order_relaxed);
}

Mm::~Mm() {
  mm_set_map_pool(*this, nullptr);
}

int mm_splits_for(const Mm& mm, uintptr_t start, uintptr_t end) {
  int n = 0;
  for (const Region* r = mm.regions.first(); r; r = r->next) {
    if (r->start < start && start < r->end) n++;
    if (r->start < end && end < r->end) n++;
  }
  return n;
}

long mm_map(Mm& mm, uintptr_t hint, size_t len, int prot, int host_flags, int host_fd,
            uint64_t off, RegionKind kind, bool fixed, const RegionAttrs& attrs) {
  // Linux's do_mmap: no new mapping once the count is past vm.max_map_count.
  if (mm.acct && mm.regions.count() > mm.acct->max_map_count.load(std::memory_order_relaxed)) return -ENOMEM;
  if (!maps_share_allows(mm, 1)) return -ENOMEM;
  RegionAttrs a = attrs;
  if (mm.lock_future && kind != kRegionStack && kind != kRegionBrk) {
    a.locked = true;
    if (!(mm.lock_future & 4 /*MCL_ONFAULT*/)) host_flags |= MAP_LOCKED;
  }
  if (host_flags & MAP_LOCKED) a.locked = true;
  if (fixed) {
    if (!user_range_ok((void*)hint, len)) return -ENOMEM;
    if (mm.regions.covers(hint, hint + len)) {
      host_flags |= MAP_FIXED;  // replacing our own mapping is safe
      syscall_sites_forget(mm, hint, hint + len);
    } else if (mm.regions.overlaps(hint, hint + len)) {
      return -ENOMEM;           // part ours, part someone else's
    } else {
      host_flags |= MAP_FIXED_NOREPLACE;  // free space only, never another's memory
    }
  }
  if (mm_chargeable(prot, kind) && !mm_charge_fits(mm, len)) return -ENOMEM;
  if (!(fixed && mm.regions.covers(hint, hint + len))) {  // a replacement adds none
    bool data = mm_is_data(prot, (host_flags & MAP_TYPE) == MAP_SHARED, kind);
    if (!mm_may_expand(mm, len, data ? len : 0)) return -ENOMEM;
  }
  long r = host::sys(SYS_mmap, hint, len, prot, host_flags, host_fd, off);
  if (r < 0 && r > -4096) return r;
  uintptr_t addr = (uintptr_t)r;
  uint8_t flags = (host_flags & MAP_TYPE) == MAP_SHARED ? kRegionShared : 0;
  if (!user_range_ok((void*)addr, len) || !mm.regions.add(addr, addr + len, prot, kind, flags, a)) {
    host::sys(SYS_munmap, addr, len);
    return -ENOMEM;
  }
  mm_recharge(mm);
  if (fixed) shm_forget_unmapped(mm);  // it may have replaced an attachment
  return (long)addr;
}

long mm_unmap(Mm& mm, uintptr_t addr, size_t len) {
  uintptr_t end = addr + len;
  // Cutting a hole in one region makes two: not past vm.max_map_count.
  if (mm.regions.splits(addr, end) && mm_too_many_maps(mm, 1)) return -ENOMEM;
  syscall_sites_forget(mm, addr, end);
  for (const Region* r = mm.regions.first(); r; r = r->next) {
    uintptr_t s = r->start > addr ? r->start : addr;
    uintptr_t e = r->end < end ? r->end : end;
    if (s < e) host::sys(SYS_munmap, s, e - s);
  }
  bool ok = mm.regions.remove(addr, end);
  mm_recharge(mm);
  shm_forget_unmapped(mm);
  return ok ? 0 : -ENOMEM;
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

namespace {

uintptr_t stack_low_for(const Mm& mm, uint64_t limit) {
  uint64_t usable = kStackReserve - kStackGuard;
  if (limit < usable) usable = limit < (128u << 10) ? (128u << 10) : limit;
  return page_down(mm.stack_top - usable);
}

}  // namespace

long mm_setup_stack(Mm& mm, uint64_t limit) {
  long r = mm_map(mm, 0, kStackReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                  -1, 0, kRegionStack, false);
  if (r < 0) return r;
  mm.stack_floor = (uintptr_t)r;
  mm.stack_top = mm.stack_floor + kStackReserve;
  mm.stack_low = mm.stack_top;
  mm_set_stack_limit(mm, limit, mm.stack_top);
  return mm.stack_low < mm.stack_top ? 0 : -ENOMEM;
}

void mm_set_stack_limit(Mm& mm, uint64_t limit, uintptr_t sp) {
  if (!mm.stack_top) return;
  uintptr_t want = stack_low_for(mm, limit);
  if (want > page_down(sp) && sp > mm.stack_floor && sp <= mm.stack_top) want = page_down(sp);
  if (want < mm.stack_low) {
    if (host::sys(SYS_mprotect, want, mm.stack_low - want, PROT_READ | PROT_WRITE) == 0) {
      mm.regions.set_prot(want, mm.stack_low, PROT_READ | PROT_WRITE);
      mm.stack_low = want;
    }
  } else if (want > mm.stack_low) {
    host::sys(SYS_mprotect, mm.stack_low, want - mm.stack_low, PROT_NONE);
    mm.regions.set_prot(mm.stack_low, want, PROT_NONE);
    mm.stack_low = want;
  }
  mm_recharge(mm);
}

void mm_release(Mm& mm) {
  Guard g(mm.lock);
  site_survey_fold(mm);
  syscall_sites_release(mm);
  shm_detach_all(mm);
  for (const Region* r = mm.regions.first(); r; r = r->next)
    host::sys(SYS_munmap, r->start, r->end - r->start);
  mm.regions.clear();
  mm_recharge(mm);
}

Mm* mm_fork(Heap* heap, Mm& parent) {
  Mm* mm = heap->make<Mm>(heap);
  if (!mm) return nullptr;
  if (!mm->regions.copy_from(parent.regions)) {
    heap->destroy_obj(mm);
    return nullptr;
  }
  mm->brk_start = parent.brk_start;
  mm->brk_cur = parent.brk_cur;
  mm->brk_mapped = parent.brk_mapped;
  mm->brk_limit = parent.brk_limit;
  mm->stack_floor = parent.stack_floor;
  mm->stack_low = parent.stack_low;
  mm->stack_top = parent.stack_top;
  mm->arg_start = parent.arg_start;
  mm->arg_end = parent.arg_end;
  mm->env_start = parent.env_start;
  mm->env_end = parent.env_end;
  mm->acct = parent.acct;
  if (!syscall_sites_fork(parent, *mm)) {
    mm_forget(heap, mm);
    return nullptr;
  }
  // Linux's strict overcommit charges a forked child for its private
  // writable memory (dup_mmap); shared mappings stay charged once.
  uint64_t charge = 0;
  for (const Region* r = mm->regions.first(); r; r = r->next)
    if (!(r->flags & kRegionUncharged) && mm_chargeable(r->prot, r->kind)) charge += r->end - r->start;
  if (!mm_charge_fits(*mm, charge)) {
    mm_forget(heap, mm);
    return nullptr;
  }
  mm_recharge(*mm);
  // System V attachments are inherited: the child's count too.
  if (shm_copy_attachments(parent, *mm) < 0) {
    mm_forget(heap, mm);
    return nullptr;
  }
  shm_forget_unmapped(*mm);  // but not those the child does not get (MADV_DONTFORK)
  return mm;
}

void mm_forget(Heap* heap, Mm* mm) {
  if (!mm) return;
  syscall_sites_release(*mm, false);
  shm_detach_all(*mm);  // the records and counts only: nothing is unmapped
  mm->regions.clear();
  mm_recharge(*mm);
  heap->destroy_obj(mm);
}

void mem_limit_sysinfo(const MemAccount& acct, struct sysinfo* si) {
  if (!acct.limit) return;
  uint64_t unit = si->mem_unit ? si->mem_unit : 1;
  uint64_t used = acct.used.load(std::memory_order_relaxed);
  uint64_t total = acct.shown_total && acct.shown_total < acct.limit ? acct.shown_total : acct.limit;
  uint64_t free = (used < total ? total - used : 0) / unit;
  si->totalram = total / unit;
  if (si->freeram > free) si->freeram = free;
  if (si->bufferram > si->freeram) si->bufferram = 0;
}

bool mem_charge(MemAccount& acct, uint64_t bytes) {
  uint64_t used = acct.used.load(std::memory_order_relaxed);
  do {
    if (acct.limit && used + bytes > acct.limit) return false;
  } while (!acct.used.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

void mem_uncharge(MemAccount& acct, uint64_t bytes) { acct.used.fetch_sub(bytes, std::memory_order_relaxed); }

bool mm_charge_fits(Mm& mm, uint64_t extra) {
  if (!mm.acct || !mm.acct->limit) return true;
  return mm.acct->used.load(std::memory_order_relaxed) + extra <= mm.acct->limit;
}

bool mm_may_expand(const Mm& mm, uint64_t more, uint64_t more_data) {
  if (more > mm.as_limit || mm.total_vm > mm.as_limit - more) return false;
  return !more_data || (more_data <= mm.data_limit && mm.data_vm <= mm.data_limit - more_data);
}

void mm_set_rlimits(Mm& mm, const uint64_t (*rlimits)[2]) {
  mm.as_limit = rlimits[RLIMIT_AS][0];
  mm.data_limit = rlimits[RLIMIT_DATA][0];
}

void mm_recharge(Mm& mm) {
  uint64_t now = 0, total = 0, data = 0;
  for (const Region* r = mm.regions.first(); r; r = r->next) {
    uint64_t len = r->end - r->start;
    if (r->prot || (r->kind != kRegionBrk && r->kind != kRegionStack)) total += len;
    if (mm_is_data(r->prot, r->flags & kRegionShared, r->kind)) data += len;
    if (!(r->flags & kRegionUncharged) && mm_chargeable(r->prot, r->kind)) now += len;
  }
  mm.total_vm = total;
  mm.data_vm = data;
  if (mm.map_pool) {
    long count = mm.regions.count();
    mm.map_pool->used.fetch_add(count - mm.maps_charged, std::memory_order_relaxed);
    mm.maps_charged = count;
  }
  if (!mm.acct) {
    mm.charged = now;
    return;
  }
  mm.acct->used.fetch_add(now - mm.charged, std::memory_order_relaxed);  // wraps to a decrease
  mm.charged = now;
}

long mm_name_anon(Mm& mm, uintptr_t addr, size_t len, const char* name) {
  uintptr_t end = addr + page_up(len);
  Guard g(mm.lock);
  if (!mm.regions.covers(addr, end)) return -ENOMEM;
  for (const Region* r = mm.regions.first(); r; r = r->next) {
    if (r->end <= addr || r->start >= end) continue;
    bool anon = (r->kind == kRegionAnon && !(r->flags & kRegionShared) && !r->attrs.name) ||
                r->kind == kRegionBrk || r->kind == kRegionStack ||
                (r->kind == kRegionAnon && !(r->flags & kRegionShared) && r->attrs.name && !r->attrs.name->ino &&
                 !r->attrs.name->charge);
    if (!anon) return -EBADF;
  }
  RegionName* n = nullptr;
  if (name) {
    char full[96];
    KFmt f(full, sizeof full);
    f.str("[anon:").str(name).str("]");
    if (!(n = region_name_make(mm.regions.heap(), f.c_str(), 0, 0))) return -ENOMEM;
  }
  bool ok = !mm_too_many_maps(mm, mm_splits_for(mm, addr, end)) && mm.regions.set_name(addr, end, n);
  region_name_put(mm.regions.heap(), n);  // the regions hold their own
  if (!ok) return -ENOMEM;
  mm_recharge(mm);
  return 0;
}

}  // namespace flatux
