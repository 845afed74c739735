// sethostname(2) and setdomainname(2) (uname(2) reports them), in the
// caller's UTS namespace (uts.h).
#include <cstring>
#include <linux/errno.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"
#include "kernel/sys/uts.h"
#include "kernel/task/caps.h"
#include "kernel/vfs/vfs.h"

namespace flatux {
namespace {

constexpr size_t kUtsLen = 64;  // __NEW_UTS_LEN

long set_name(Task& t, uint64_t guest, uint64_t len, char (UtsNames::*field)[kUtsLen + 1]) {
  if (!capable(t.proc->creds, CAP_SYS_ADMIN)) return -EPERM;
  if ((int64_t)len < 0 || len > kUtsLen) return -EINVAL;
  char tmp[kUtsLen + 1];
  if (len && copy_from_user(tmp, (const void*)guest, len) < 0) return -EFAULT;
  tmp[len] = 0;
  UtsNames& u = uts_of(*t.proc);
  Guard g(u.lock);
  memcpy(u.*field, tmp, len + 1);
  u.events.fetch_add(1, std::memory_order_release);
  return 0;
}

}  // namespace

long sys_sethostname(Task& t, SyscallArgs a) { return set_name(t, a[0], a[1], &UtsNames::nodename); }
long sys_setdomainname(Task& t, SyscallArgs a) { return set_name(t, a[0], a[1], &UtsNames::domainname); }

UtsNames& uts_of(Process& p) { return p.uts ? *p.uts : p.kernel->uts; }

void uts_inherit(Process& child, const Process& parent) {
  if ((child.uts = parent.uts)) child.uts->refs.fetch_add(1, std::memory_order_relaxed);
}

void uts_put(Heap* heap, UtsNames* u) {
  if (u && u->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) heap->destroy_obj(u);
}

void uts_leave(Heap* heap, Process& p) {
  UtsNames* u = p.uts;
  p.uts = nullptr;
  uts_put(heap, u);
}

namespace {

long unshare_into(Task& t, Process& p, bool tasks_lock_held) {
  if (!capable(p.creds, CAP_SYS_ADMIN)) return -EPERM;
  UtsNames* u = t.kernel->heap->make<UtsNames>();
  if (!u) return -ENOMEM;
  u->inum = t.kernel->vfs->new_ns_inum();
  UtsNames& old = uts_of(p);
  {
    Guard g(old.lock);
    memcpy(u->nodename, old.nodename, sizeof u->nodename);
    memcpy(u->domainname, old.domainname, sizeof u->domainname);
  }
  // /proc/PID/ns/uts takes its reference under tasks_lock.
  if (!tasks_lock_held) t.kernel->tasks_lock.lock();
  UtsNames* old_ns = p.uts;
  p.uts = u;
  if (!tasks_lock_held) t.kernel->tasks_lock.unlock();
  uts_put(t.kernel->heap, old_ns);
  return 0;
}

}  // namespace

long uts_unshare(Task& t, Process& p) { return unshare_into(t, p, false); }
long uts_unshare_locked(Task& t, Process& p) { return unshare_into(t, p, true); }

}  // namespace flatux
