#include <cstring>
#include <linux/errno.h>
#include <linux/random.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/mm/mm.h"
#include "kernel/syscalls.h"
#include "kernel/sys/uts.h"
#include "kernel/time.h"

namespace flatux {

long sys_uname(Task& t, SyscallArgs a) {
  struct utsname u;
  memset(&u, 0, sizeof u);
  // The machine and release are flatux's own identity, not the host's.
  copy_cstr(u.sysname, sizeof u.sysname, "Linux");
  {
    UtsNames& names = uts_of(*t.proc);
    Guard g(names.lock);
    copy_cstr(u.nodename, sizeof u.nodename, names.nodename);
    copy_cstr(u.domainname, sizeof u.domainname, names.domainname);
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
    procs = t.kernel->ntasks;
  }
  si.procs = (unsigned short)procs;
  return copy_to_user((void*)a[0], &si, sizeof si);
}

long sys_getrandom(Task& t, SyscallArgs a) {
  if (a[2] & ~(uint64_t)(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE)) return -EINVAL;
  size_t n = user_buffer_len((void*)a[0], a[1] > 0x1ffffff ? 0x1ffffff : a[1]);
  if (!access_ok((void*)a[0], n)) return -EFAULT;
  return host::sys(SYS_getrandom, a[0], n, a[2]);
}

}  // namespace flatux
