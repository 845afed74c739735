// mlock, mlock2, munlock, mlockall, munlockall: the process's own regions
// are locked on the host (within what the host lets flatux lock) and
// marked, so /proc/PID/status counts them (VmLck); RLIMIT_MEMLOCK bounds
// what an ordinary user locks, as on Linux.
#include <linux/errno.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/mm.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

constexpr int kMlockOnfault = 1;  // MLOCK_ONFAULT

// Linux's can_do_mlock and the RLIMIT_MEMLOCK check: root may lock
// anything; others nothing with a zero limit (EPERM), and no more than it
// (ENOMEM).
long may_lock(Task& t, const Mm& mm, size_t more) {
  if (capable(t.proc->creds, CAP_IPC_LOCK)) return 0;
  uint64_t limit = t.proc->rlimits[RLIMIT_MEMLOCK][0];
  if (limit == 0) return -EPERM;
  if (limit != RLIM_INFINITY && mm.regions.locked_bytes() + more > limit) return -ENOMEM;
  return 0;
}

// The host locks (or unlocks) the accessible parts of [start, end); the
// process's PROT_NONE reservations have no pages to lock.
long host_lock(Mm& mm, uintptr_t start, uintptr_t end, bool lock, bool onfault) {
  for (const Region* r = mm.regions.first(); r; r = r->next) {
    uintptr_t s = r->start > start ? r->start : start;
    uintptr_t e = r->end < end ? r->end : end;
    if (s >= e || r->prot == PROT_NONE) continue;
    long res = lock ? host::sys(SYS_mlock2, s, e - s, onfault ? kMlockOnfault : 0) : host::sys(SYS_munlock, s, e - s);
    if (res < 0) return res;
  }
  return 0;
}

bool reservation(const Region& r) {
  return r.prot == PROT_NONE && (r.kind == kRegionBrk || r.kind == kRegionStack || r.kind == kRegionImage);
}

long do_mlock(Task& t, uint64_t addr, uint64_t len, bool lock, int flags) {
  uintptr_t start = page_down(addr);
  uintptr_t end = page_up(addr + len);
  if (addr + len < addr) return -EINVAL;
  if (end == start) return 0;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  if (!mm.regions.covers(start, end)) return -ENOMEM;
  if (mm_too_many_maps(mm, mm_splits_for(mm, start, end))) return -ENOMEM;
  if (lock) {
    size_t more = 0;
    for (const Region* r = mm.regions.first(); r; r = r->next) {
      uintptr_t s = r->start > start ? r->start : start;
      uintptr_t e = r->end < end ? r->end : end;
      if (s < e && !r->attrs.locked) more += e - s;
    }
    if (long e = may_lock(t, mm, more)) return e;
  }
  if (long e = host_lock(mm, start, end, lock, flags & kMlockOnfault)) return e;
  return mm.regions.set_locked(start, end, lock) ? 0 : -ENOMEM;
}

}  // namespace

long sys_mlock(Task& t, SyscallArgs a) { return do_mlock(t, a[0], a[1], true, 0); }

long sys_mlock2(Task& t, SyscallArgs a) {
  if (a[2] & ~(uint64_t)kMlockOnfault) return -EINVAL;
  return do_mlock(t, a[0], a[1], true, (int)a[2]);
}

long sys_munlock(Task& t, SyscallArgs a) { return do_mlock(t, a[0], a[1], false, 0); }

long sys_mlockall(Task& t, SyscallArgs a) {
  int flags = (int)a[0];
  if (!flags || (flags & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)) || flags == MCL_ONFAULT) return -EINVAL;
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  if (flags & MCL_CURRENT) {
    size_t all = 0;
    for (const Region* r = mm.regions.first(); r; r = r->next)
      if (!reservation(*r)) all += r->end - r->start;
    if (long e = may_lock(t, mm, all - mm.regions.locked_bytes())) return e;
    for (const Region* r = mm.regions.first(); r; r = r->next) {
      if (reservation(*r)) continue;
      if (long e = host_lock(mm, r->start, r->end, true, flags & MCL_ONFAULT)) return e;
    }
    for (const Region* r = mm.regions.first(); r; r = r->next)
      if (!reservation(*r)) mm.regions.set_locked(r->start, r->end, true);  // whole regions: no split
  } else if (long e = may_lock(t, mm, 0)) {
    return e;
  }
  mm.lock_future = (flags & MCL_FUTURE) ? flags : 0;
  return 0;
}

long sys_munlockall(Task& t, SyscallArgs) {
  Mm& mm = *t.proc->mm;
  Guard g(mm.lock);
  for (const Region* r = mm.regions.first(); r; r = r->next) {
    if (!r->attrs.locked) continue;
    host_lock(mm, r->start, r->end, false, false);
    mm.regions.set_locked(r->start, r->end, false);  // whole regions: no split
  }
  mm.lock_future = 0;
  return 0;
}

}  // namespace flatux
