#include <cstring>
#include <linux/errno.h>
#include <linux/random.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/mm/mm.h"
#include "kernel/task/process.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"

namespace flatux {

long sys_uname(Task& t, SyscallArgs a) {
  struct utsname u;
  memset(&u, 0, sizeof u);
  // The machine and release are flatux's own identity, not the host's.
  copy_cstr(u.sysname, sizeof u.sysname, "Linux");
  {
    Guard g(t.kernel->uts.lock);
    copy_cstr(u.nodename, sizeof u.nodename, t.kernel->uts.nodename);
    copy_cstr(u.domainname, sizeof u.domainname, t.kernel->uts.domainname);
  }
  copy_cstr(u.release, sizeof u.release, "6.1.0-flatux");
  copy_cstr(u.version, sizeof u.version, "#1 SMP flatux " FLATUX_VERSION_STRING);
  // PER_LINUX32 (setarch i686): a 32-bit machine, as Linux's override_architecture.
  bool linux32 = (t.proc->personality & 0xff) == 0x0008;
  copy_cstr(u.machine, sizeof u.machine, linux32 ? "i686" : "x86_64");
  return copy_to_user((void*)a[0], &u, sizeof u);
}

long sys_sysinfo(Task& t, SyscallArgs a) {
  struct sysinfo host_si;
  long r = host::sys(SYS_sysinfo, &host_si);
  if (r < 0) return r;
  mem_limit_sysinfo(t.kernel->mem, &host_si);
  struct sysinfo si;
  memset(&si, 0, sizeof si);
  si.uptime = (long)((monotonic_ns() - t.kernel->boot_ns) / 1000000000ull);
  si.totalram = host_si.totalram;
  si.freeram = host_si.freeram;
  si.sharedram = host_si.sharedram;
  si.bufferram = host_si.bufferram;
  si.mem_unit = host_si.mem_unit;
  int procs = 0;
  {
    Guard g(t.kernel->tasks_lock);
    for (Task* x : t.kernel->tasks) procs += x != nullptr;
  }
  si.procs = (unsigned short)procs;
  return copy_to_user((void*)a[0], &si, sizeof si);
}

long sys_getrandom(Task& t, SyscallArgs a) {
  if (a[2] & ~(uint64_t)(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE)) return -EINVAL;
  size_t n = a[1] > 0x1ffffff ? 0x1ffffff : a[1];
  if (!access_ok((void*)a[0], n)) return -EFAULT;
  return host::sys(SYS_getrandom, a[0], n, a[2]);
}

namespace {

// The host thread running guest task `tid` (0: the caller), or -ESRCH;
// `owner_uid` gets the owning process's euid for permission checks.
long host_thread_of(Task& t, uint64_t tid, uint32_t* owner_uid) {
  if (tid == 0) {
    *owner_uid = t.proc->creds.euid;
    return t.host_tid.load();
  }
  if (tid > 0x7fffffff) return -ESRCH;
  Guard g(t.kernel->tasks_lock);
  Task* x = find_task_locked(*t.kernel, (int)tid);
  if (!x || x->proc->state != ProcState::kRunning) return -ESRCH;
  *owner_uid = x->proc->creds.euid;
  return x->host_tid.load();
}

}  // namespace

// Guest tasks are host threads: their affinity is their host thread's.
long sys_sched_getaffinity(Task& t, SyscallArgs a) {
  if (a[1] < 8 || (a[1] & 7)) return -EINVAL;
  uint32_t uid;
  long host_tid = host_thread_of(t, a[0], &uid);
  if (host_tid <= 0) return host_tid < 0 ? host_tid : -ESRCH;
  uint8_t mask[128];
  size_t n = a[1] < sizeof mask ? a[1] : sizeof mask;
  long r = host::sys(SYS_sched_getaffinity, host_tid, n, mask);
  if (r < 0) return r;
  if (copy_to_user((void*)a[2], mask, (size_t)r) < 0) return -EFAULT;
  return r;
}

long sys_sched_setaffinity(Task& t, SyscallArgs a) {
  uint8_t mask[128] = {};
  size_t n = a[1] < sizeof mask ? a[1] : sizeof mask;
  if (copy_from_user(mask, (const void*)a[2], n) < 0) return -EFAULT;
  uint32_t uid;
  long host_tid = host_thread_of(t, a[0], &uid);
  if (host_tid <= 0) return host_tid < 0 ? host_tid : -ESRCH;
  const Creds& c = t.proc->creds;
  if (c.euid != 0 && c.euid != uid) return -EPERM;  // CAP_SYS_NICE or the same user
  return host::sys(SYS_sched_setaffinity, host_tid, n, mask);
}

long sys_sched_yield(Task&, SyscallArgs) { return host::sys(SYS_sched_yield); }

long sys_getcpu(Task&, SyscallArgs a) {
  unsigned cpu = 0, node = 0;
  long r = host::sys(SYS_getcpu, &cpu, &node, 0);
  if (r < 0) return r;
  if (a[0] && put_user((void*)a[0], cpu) < 0) return -EFAULT;
  if (a[1] && put_user((void*)a[1], node) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
