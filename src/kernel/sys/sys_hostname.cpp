// sethostname(2) and setdomainname(2); uname(2) reports them.
#include <cstring>
#include <linux/errno.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

constexpr size_t kUtsLen = 64;  // __NEW_UTS_LEN

long set_name(Task& t, uint64_t guest, uint64_t len, char (&dst)[kUtsLen + 1]) {
  if (!capable(t.proc->creds, CAP_SYS_ADMIN)) return -EPERM;
  if ((int64_t)len < 0 || len > kUtsLen) return -EINVAL;
  char tmp[kUtsLen + 1];
  if (len && copy_from_user(tmp, (const void*)guest, len) < 0) return -EFAULT;
  tmp[len] = 0;
  UtsNames& u = t.kernel->uts;
  Guard g(u.lock);
  memcpy(dst, tmp, len + 1);
  u.events.fetch_add(1, std::memory_order_release);
  return 0;
}

}  // namespace

long sys_sethostname(Task& t, SyscallArgs a) { return set_name(t, a[0], a[1], t.kernel->uts.nodename); }
long sys_setdomainname(Task& t, SyscallArgs a) { return set_name(t, a[0], a[1], t.kernel->uts.domainname); }

}  // namespace flatux
