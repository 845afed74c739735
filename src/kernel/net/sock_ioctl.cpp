// ioctl on sockets: queue sizes, and the interface queries of ifconfig,
// if_nametoindex and friends, answered by the host socket behind the
// guest's (any family answers them on Linux). Each request's struct is
// copied into kernel memory and back; interface changes (SIOCS*, routes,
// ARP) are EPERM, as for an unprivileged caller on Linux.
#include <cstring>
#include <linux/errno.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/net/sock.h"

namespace flatux {
namespace {

// SIOCGIFCONF answers at most this much (about 1600 interfaces).
constexpr size_t kMaxIfconf = 64 * 1024;

// Queries whose argument is one struct ifreq, read and written whole.
bool is_ifreq_query(unsigned cmd) {
  switch (cmd) {
    case SIOCGIFNAME: case SIOCGIFINDEX: case SIOCGIFFLAGS: case SIOCGIFADDR:
    case SIOCGIFDSTADDR: case SIOCGIFBRDADDR: case SIOCGIFNETMASK: case SIOCGIFMETRIC:
    case SIOCGIFMTU: case SIOCGIFHWADDR: case SIOCGIFMAP: case SIOCGIFTXQLEN:
    case SIOCGIFPFLAGS:
      return true;
    default:
      return false;
  }
}

bool is_change(unsigned cmd) {
  switch (cmd) {
    case SIOCSIFNAME: case SIOCSIFFLAGS: case SIOCSIFADDR: case SIOCSIFDSTADDR:
    case SIOCSIFBRDADDR: case SIOCSIFNETMASK: case SIOCSIFMETRIC: case SIOCSIFMTU:
    case SIOCSIFHWADDR: case SIOCSIFMAP: case SIOCSIFTXQLEN: case SIOCSIFPFLAGS:
    case SIOCSIFHWBROADCAST: case SIOCDIFADDR: case SIOCADDMULTI: case SIOCDELMULTI:
    case SIOCADDRT: case SIOCDELRT: case SIOCSARP: case SIOCDARP: case SIOCSRARP:
    case SIOCDRARP: case SIOCSIFLINK: case SIOCSIFENCAP: case SIOCSIFBR:
    case SIOCBRADDBR: case SIOCBRDELBR: case SIOCBRADDIF: case SIOCBRDELIF:
      return true;
    default:
      return false;
  }
}

long ifreq_query(File& f, unsigned cmd, uint64_t arg) {
  ifreq r;
  if (copy_from_user(&r, (const void*)arg, sizeof r) < 0) return -EFAULT;
  long res = host::sys(SYS_ioctl, f.host_fd, cmd, &r);
  if (res < 0) return res;
  return copy_to_user((void*)arg, &r, sizeof r) < 0 ? -EFAULT : res;
}

// SIOCGIFCONF: with no buffer, the length needed; else as many whole
// entries as fit, and the length used.
long ifconf_query(Task& t, File& f, uint64_t arg) {
  ifconf c;
  if (copy_from_user(&c, (const void*)arg, sizeof c) < 0) return -EFAULT;
  char* guest_buf = c.ifc_buf;
  size_t cap = c.ifc_len <= 0 ? 0 : (size_t)c.ifc_len < kMaxIfconf ? (size_t)c.ifc_len : kMaxIfconf;
  if (guest_buf && cap && !access_ok(guest_buf, cap)) return -EFAULT;
  Heap* heap = t.kernel->heap;
  char* kbuf = nullptr;
  if (guest_buf) {
    kbuf = static_cast<char*>(heap->alloc(cap ? cap : 1));
    if (!kbuf) return -ENOMEM;
    c.ifc_len = c.ifc_len < 0 ? c.ifc_len : (int)cap;
  }
  c.ifc_buf = kbuf;
  long r = host::sys(SYS_ioctl, f.host_fd, SIOCGIFCONF, &c);
  if (r >= 0 && guest_buf && c.ifc_len > 0 && copy_to_user(guest_buf, kbuf, (size_t)c.ifc_len) < 0)
    r = -EFAULT;
  heap->free(kbuf);
  if (r < 0) return r;
  c.ifc_buf = guest_buf;
  return copy_to_user((void*)arg, &c, sizeof c) < 0 ? -EFAULT : r;
}

}  // namespace

long sock_ioctl(Task& t, File& f, unsigned cmd, uint64_t arg) {
  if (cmd == SIOCGIFCONF) return ifconf_query(t, f, arg);
  if (is_ifreq_query(cmd)) return ifreq_query(f, cmd, arg);
  if (is_change(cmd)) return -EPERM;
  switch (cmd) {
    case FIONREAD: case SIOCOUTQ: case SIOCATMARK: case SIOCOUTQNSD: break;
    default: return -ENOTTY;
  }
  // Queue sizes: an int written back through kernel memory.
  int v = 0;
  long r = host::sys(SYS_ioctl, f.host_fd, cmd, &v);
  if (r < 0) return r;
  return put_user((void*)arg, v) < 0 ? -EFAULT : r;
}

}  // namespace flatux
