// sendto/recvfrom/sendmsg/recvmsg/sendmmsg/recvmmsg. The guest's msghdr,
// iovec array, address and control data are copied into kernel memory and
// the host is handed only those copies; the data itself moves straight
// between the host socket and guest buffers that passed access_ok().
// Control messages are translated: SCM_RIGHTS carries host descriptors on
// the host side and guest descriptors on the guest side, SCM_CREDENTIALS
// carries host identities on the host side (see peer_cred_to_guest).
#include <cstddef>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/netlink.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "kernel/task/isys.h"
#include "kernel/task/hostproc.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/memfd/memfd.h"
#include "kernel/kernel.h"
#include "kernel/net/sock.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr size_t kIovMax = 1024;            // UIO_MAXIOV
constexpr size_t kMaxControl = 64 * 1024;   // larger send control: ENOBUFS, as past optmem_max
constexpr size_t kMaxRw = 0x7ffff000;
constexpr unsigned kMmsgMax = 1024;

// The guest's iovec array, checked and held in kernel memory.
struct KIov {
  Heap* heap;
  iovec inline_v[8];
  iovec* v = inline_v;
  size_t n = 0;
  explicit KIov(Heap* h) : heap(h) {}
  KIov(const KIov&) = delete;
  KIov& operator=(const KIov&) = delete;
  ~KIov() {
    if (v != inline_v) heap->free(v);
  }
  long load(uint64_t guest, uint64_t count) {
    if (count > kIovMax) return -EMSGSIZE;
    if (count > 8) {
      v = static_cast<iovec*>(heap->alloc(sizeof(iovec) * count));
      if (!v) {
        v = inline_v;
        return -ENOMEM;
      }
    }
    if (count && copy_from_user(v, (const void*)guest, sizeof(iovec) * count) < 0) return -EFAULT;
    n = count;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
      if ((int64_t)v[i].iov_len < 0) return -EINVAL;
      if (v[i].iov_len > kMaxRw - total) v[i].iov_len = kMaxRw - total;
      total += v[i].iov_len;
    }
    return fit_iovecs(v, &n);
  }
  void one(void* base, size_t len) {
    v[0] = {base, user_buffer_len(base, len > kMaxRw ? kMaxRw : len)};
    n = 1;
  }
};

struct KBuf {
  Heap* heap;
  unsigned char* p = nullptr;
  ~KBuf() { heap->free(p); }
};

// Guest descriptors named in an outgoing SCM_RIGHTS, held until the host
// has taken its own references; and the write ends of the tickets sent for
// files with no host descriptor (scm_files.cpp), closed once sent.
struct HeldFiles {
  NetState& net;
  Heap* heap;
  struct Held {
    File* file;
    int ticket_fd;
  };
  Held* v = nullptr;
  size_t n = 0, cap = 0;
  HeldFiles(Kernel& k) : net(*k.net), heap(k.heap) {}
  ~HeldFiles() {
    bool tickets = false;
    for (size_t i = 0; i < n; i++) {
      if (v[i].ticket_fd >= 0) {
        host::sys(SYS_close, v[i].ticket_fd);
        tickets = true;
      }
      v[i].file->put();
    }
    heap->free(v);
    if (tickets) scm_tickets_sweep(net);  // those of a send that failed
  }
  bool add(File* x) {
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      auto* nv = static_cast<Held*>(heap->alloc(sizeof(Held) * nc));
      if (!nv) return false;
      if (n) memcpy(nv, v, sizeof(Held) * n);
      heap->free(v);
      v = nv;
      cap = nc;
    }
    v[n++] = {x, -1};
    return true;
  }
  // The host descriptor that stands for the last file added: its own for
  // what was made without a name (sockets, pipes, memfds...), which a
  // receiver outside the kernel can use as well; a ticket for what has no
  // host descriptor, and for what was opened by name: the host's
  // descriptor of a file or folder would arrive without the mount and path
  // the guest opened it by (a folder could not serve as a base for *at
  // calls), so a guest receiving it gets the kernel's open file itself.
  long host_form() {
    Held& h = v[n - 1];
    if (h.file->host_fd >= 0 && !h.file->mount) return h.file->host_fd;
    long r = scm_ticket_issue(net, h.file);
    if (r >= 0) h.ticket_fd = (int)r;
    return r;
  }
};

constexpr size_t cmsg_align(size_t n) { return (n + sizeof(size_t) - 1) & ~(sizeof(size_t) - 1); }

// The control message at `off` in a buffer of `len` bytes, or nullptr when
// none fits there.
cmsghdr* cmsg_at(unsigned char* buf, size_t len, size_t off) {
  if (off > len || len - off < sizeof(cmsghdr)) return nullptr;
  auto* c = reinterpret_cast<cmsghdr*>(buf + off);
  if (c->cmsg_len < sizeof(cmsghdr) || c->cmsg_len > len - off) return nullptr;
  return c;
}

// Rewrites outgoing control messages for the host, in place.
long control_to_host(Task& t, unsigned char* buf, size_t len, HeldFiles& held) {
  for (size_t off = 0; off < len && len - off >= sizeof(cmsghdr);) {
    cmsghdr* c = cmsg_at(buf, len, off);
    if (!c) return -EINVAL;
    off += cmsg_align(c->cmsg_len);
    if (c->cmsg_level != SOL_SOCKET) continue;  // plain data (IP_PKTINFO...): the host checks it
    size_t data = c->cmsg_len - CMSG_LEN(0);
    if (c->cmsg_type == SCM_RIGHTS) {
      int* fds = reinterpret_cast<int*>(CMSG_DATA(c));
      for (size_t i = 0; i < data / sizeof(int); i++) {
        File* f = t.proc->files->get(fds[i]);
        if (!f) return -EBADF;
        if (!held.add(f)) {
          f->put();
          return -ENOMEM;
        }
        long hfd = held.host_form();
        if (hfd < 0) return hfd;
        fds[i] = (int)hfd;
      }
    } else if (c->cmsg_type == SCM_CREDENTIALS) {
      if (data < sizeof(ucred)) return -EINVAL;
      // The host checks the sender's identity against its own; the
      // sender names the host process it runs in (all guests run as root, so any guest
      // identity would be allowed on Linux as well).
      ucred cr{(pid_t)task_host_pid(t), (uid_t)host::sys(SYS_getuid), (gid_t)host::sys(SYS_getgid)};
      memcpy(CMSG_DATA(c), &cr, sizeof cr);
    }
  }
  return 0;
}

File* adopt_received(Kernel& k, int hfd) {
  if (File* f = scm_ticket_redeem(*k.net, hfd)) return f;
  long fl = host::sys(SYS_fcntl, hfd, F_GETFL);
  uint32_t flags = fl < 0 ? O_RDWR : (uint32_t)fl & ~(uint32_t)O_CLOEXEC;
  struct stat st;
  if (host::sys(SYS_fstat, hfd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    File* f = hostfs_adopt_host_fd(k.heap, hfd, flags);
    if (f) host_charge_adopt(*f, k.mem);  // a pipe or memfd keeps its charge
    return f;
  }
  // A netlink socket keeps its requests checked in its new holder's hands;
  // one of another netlink family (from a host program) has no check to
  // keep, so it is not taken. Failing to tell counts as netlink.
  int domain = -1, protocol = -1;
  socklen_t len = sizeof domain;
  host::sys(SYS_getsockopt, hfd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
  bool netlink = domain == AF_NETLINK || domain < 0;
  if (netlink) {
    len = sizeof protocol;
    host::sys(SYS_getsockopt, hfd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len);
    if (protocol != NETLINK_ROUTE) {
      host::sys(SYS_close, hfd);
      return nullptr;
    }
  }
  File* f = sock_file_adopt(k, hfd, flags);
  if (f) sock_priv(*f)->netlink = netlink;
  return f;
}

// Rewrites incoming control messages for the guest, in place: host
// descriptors become new guest descriptors (closed on the host side when
// the guest's table is full, with MSG_CTRUNC, as Linux does).
void control_to_guest(Task& t, File* sock, msghdr& km, bool cloexec) {
  auto* buf = static_cast<unsigned char*>(km.msg_control);
  for (size_t off = 0;;) {
    cmsghdr* c = cmsg_at(buf, km.msg_controllen, off);
    if (!c) break;
    off += cmsg_align(c->cmsg_len);
    if (c->cmsg_level != SOL_SOCKET) continue;
    size_t data = c->cmsg_len - CMSG_LEN(0);
    if (c->cmsg_type == SCM_RIGHTS) {
      int* fds = reinterpret_cast<int*>(CMSG_DATA(c));
      size_t n = data / sizeof(int), kept = 0;
      for (size_t i = 0; i < n; i++) {
        long gfd = -1;
        if (kept == i) {
          File* f = adopt_received(*t.kernel, fds[i]);  // owns fds[i] from here
          gfd = f ? install_file(t, f, cloexec) : -ENOMEM;
        } else {
          host::sys(SYS_close, fds[i]);
        }
        if (gfd < 0) {
          km.msg_flags |= MSG_CTRUNC;
          continue;
        }
        fds[kept++] = (int)gfd;
      }
      if (kept < n) c->cmsg_len = CMSG_LEN(kept * sizeof(int));
    } else if (c->cmsg_type == SCM_CREDENTIALS && data >= sizeof(ucred)) {
      ucred cr;
      memcpy(&cr, CMSG_DATA(c), sizeof cr);
      peer_cred_to_guest(t, sock, cr);
      memcpy(CMSG_DATA(c), &cr, sizeof cr);
    }
  }
}

struct Sock {
  FdRef f;
  long err = 0;
  Sock(Task& t, uint64_t fd) : f(t, fd) {
    if (!f || (f->flags & O_PATH)) err = -EBADF;  // O_PATH: no descriptor to socket calls
    else if (f->host_fd < 0) err = -ENOTSOCK;
  }
};

long send_one(Task& t, Sock& s, KIov& iov, uint64_t name, uint64_t namelen, uint64_t control,
              uint64_t controllen, int flags) {
  msghdr km{};
  HostAddr ha;
  if (name && namelen) {
    long r = addr_from_user(t, s.f->host_fd, name, namelen, AddrUse::kSend, &ha);
    if (r < 0) return r;
    km.msg_name = &ha.sa;
    km.msg_namelen = ha.len;
  }
  km.msg_iov = iov.v;
  km.msg_iovlen = iov.n;
  KBuf ctl{t.kernel->heap};
  HeldFiles held{*t.kernel};
  if (controllen) {
    if (controllen > kMaxControl) return -ENOBUFS;
    ctl.p = static_cast<unsigned char*>(t.kernel->heap->alloc(controllen));
    if (!ctl.p) return -ENOMEM;
    if (copy_from_user(ctl.p, (const void*)control, controllen) < 0) return -EFAULT;
    long r = control_to_host(t, ctl.p, controllen, held);
    if (r < 0) return r;
    km.msg_control = ctl.p;
    km.msg_controllen = controllen;
  }
  SockPriv* p = sock_priv(*s.f);
  long r = p && p->netlink ? netlink_sendmsg(t, *s.f, km, flags)
                           : restartable(isys(t, SYS_sendmsg, s.f->host_fd, &km, flags | MSG_NOSIGNAL));
  if (r == -EPIPE && !(flags & MSG_NOSIGNAL))
    send_signal(*t.proc, &t, SIGPIPE, user_siginfo(t, SIGPIPE, SI_USER), sent_by(*t.proc));
  return r;
}

// One receive. `gmsg` is the guest's msghdr (for the fields written back),
// or 0 for recvfrom, whose address goes to name/namelenp instead.
long recv_one(Task& t, Sock& s, KIov& iov, int flags, uint64_t gmsg, const msghdr* gm,
              uint64_t name, uint64_t namelenp) {
  msghdr km{};
  sockaddr_storage sa{};
  bool want_name = gmsg ? gm->msg_name != nullptr : name != 0;
  if (want_name) {
    km.msg_name = &sa;
    km.msg_namelen = sizeof sa;
  }
  km.msg_iov = iov.v;
  km.msg_iovlen = iov.n;
  KBuf ctl{t.kernel->heap};
  size_t clen = gmsg && gm->msg_control ? gm->msg_controllen : 0;
  if (clen > kMaxControl) clen = kMaxControl;
  if (clen) {
    if (!access_ok(gm->msg_control, clen)) return -EFAULT;
    ctl.p = static_cast<unsigned char*>(t.kernel->heap->alloc(clen));
    if (!ctl.p) return -ENOMEM;
    km.msg_control = ctl.p;
    km.msg_controllen = clen;
  }
  long r = restartable(isys(t, SYS_recvmsg, s.f->host_fd, &km, flags | MSG_CMSG_CLOEXEC));
  if (r < 0) return r;
  if (SockPriv* p = sock_priv(*s.f); p && p->netlink) netlink_received(*p, km.msg_iov, km.msg_iovlen, (size_t)r, flags & MSG_PEEK);
  // Descriptors that found no room were closed (by the host, or by
  // control_to_guest below): tickets among them are done.
  struct CtruncSweep {
    NetState& net;
    msghdr& km;
    ~CtruncSweep() {
      if (km.msg_flags & MSG_CTRUNC) scm_tickets_sweep(net);
    }
  } ctrunc_sweep{*t.kernel->net, km};
  socklen_t alen = want_name ? km.msg_namelen : 0;
  if (want_name) addr_to_guest(t, &*s.f, sa, alen);
  if (!gmsg) {
    if (want_name && addr_put_user(sa, alen, name, namelenp) < 0) return -EFAULT;
    return r;
  }
  if (clen) {
    control_to_guest(t, &*s.f, km, flags & MSG_CMSG_CLOEXEC);
    if (km.msg_controllen && copy_to_user(gm->msg_control, ctl.p, km.msg_controllen) < 0) return -EFAULT;
  }
  if (want_name) {
    size_t n = gm->msg_namelen < alen ? gm->msg_namelen : alen;
    if (n && copy_to_user(gm->msg_name, &sa, n) < 0) return -EFAULT;
  }
  uint32_t nl = want_name ? alen : 0;
  uint64_t cl = clen ? km.msg_controllen : 0;
  // Linux echoes the caller's MSG_CMSG_CLOEXEC in msg_flags; the one added
  // here for the host's sake is not the guest's.
  int mf = (km.msg_flags & ~MSG_CMSG_CLOEXEC) | (flags & MSG_CMSG_CLOEXEC);
  if (put_user((char*)gmsg + offsetof(msghdr, msg_namelen), nl) < 0 ||
      put_user((char*)gmsg + offsetof(msghdr, msg_controllen), cl) < 0 ||
      put_user((char*)gmsg + offsetof(msghdr, msg_flags), mf) < 0)
    return -EFAULT;
  return r;
}

long sendmsg_at(Task& t, Sock& s, uint64_t gmsg, int flags) {
  msghdr gm;
  if (copy_from_user(&gm, (const void*)gmsg, sizeof gm) < 0) return -EFAULT;
  KIov iov(t.kernel->heap);
  long r = iov.load((uint64_t)gm.msg_iov, gm.msg_iovlen);
  if (r < 0) return r;
  // Linux takes MSG_EOR from msg_flags as well.
  return send_one(t, s, iov, (uint64_t)gm.msg_name, gm.msg_namelen, (uint64_t)gm.msg_control,
                  gm.msg_controllen, flags | (gm.msg_flags & MSG_EOR));
}

long recvmsg_at(Task& t, Sock& s, uint64_t gmsg, int flags) {
  msghdr gm;
  if (copy_from_user(&gm, (const void*)gmsg, sizeof gm) < 0) return -EFAULT;
  KIov iov(t.kernel->heap);
  long r = iov.load((uint64_t)gm.msg_iov, gm.msg_iovlen);
  if (r < 0) return r;
  return recv_one(t, s, iov, flags, gmsg, &gm, 0, 0);
}

}  // namespace

long sys_sendto(Task& t, SyscallArgs a) {
  Sock s(t, a[0]);
  if (s.err) return s.err;
  if (a[2] && !access_ok((void*)a[1], a[2])) return -EFAULT;
  KIov iov(t.kernel->heap);
  iov.one((void*)a[1], a[2]);
  return send_one(t, s, iov, a[4], a[5], 0, 0, (int)a[3]);
}

long sys_recvfrom(Task& t, SyscallArgs a) {
  Sock s(t, a[0]);
  if (s.err) return s.err;
  if (a[2] && !access_ok((void*)a[1], a[2])) return -EFAULT;
  if (a[4]) {
    int glen;
    if (get_user(glen, (const void*)a[5]) < 0) return -EFAULT;
    if (glen < 0) return -EINVAL;
  }
  KIov iov(t.kernel->heap);
  iov.one((void*)a[1], a[2]);
  return recv_one(t, s, iov, (int)a[3], 0, nullptr, a[4], a[5]);
}

long sys_sendmsg(Task& t, SyscallArgs a) {
  Sock s(t, a[0]);
  if (s.err) return s.err;
  return sendmsg_at(t, s, a[1], (int)a[2]);
}

long sys_recvmsg(Task& t, SyscallArgs a) {
  Sock s(t, a[0]);
  if (s.err) return s.err;
  return recvmsg_at(t, s, a[1], (int)a[2]);
}

long sys_sendmmsg(Task& t, SyscallArgs a) {
  Sock s(t, a[0]);
  if (s.err) return s.err;
  unsigned vlen = a[2] > kMmsgMax ? kMmsgMax : (unsigned)a[2];
  unsigned i = 0;
  long r = 0;
  for (; i < vlen; i++) {
    uint64_t m = a[1] + (uint64_t)i * sizeof(mmsghdr);
    r = sendmsg_at(t, s, m, (int)a[3]);
    if (r < 0) break;
    if (put_user((char*)m + offsetof(mmsghdr, msg_len), (unsigned)r) < 0) {
      r = -EFAULT;
      break;
    }
  }
  return i ? (long)i : r;
}

long sys_recvmmsg(Task& t, SyscallArgs a) {
  Sock s(t, a[0]);
  if (s.err) return s.err;
  uint64_t deadline = 0;
  if (a[4]) {
    timespec ts;
    if (copy_from_user(&ts, (const void*)a[4], sizeof ts) < 0) return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return -EINVAL;
    deadline = monotonic_ns() + (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  unsigned vlen = a[2] > kMmsgMax ? kMmsgMax : (unsigned)a[2];
  int flags = (int)a[3];
  unsigned i = 0;
  long r = 0;
  // As on Linux, the timeout is looked at between datagrams only.
  for (; i < vlen; i++) {
    uint64_t m = a[1] + (uint64_t)i * sizeof(mmsghdr);
    r = recvmsg_at(t, s, m, flags & ~MSG_WAITFORONE);
    if (r < 0) break;
    if (put_user((char*)m + offsetof(mmsghdr, msg_len), (unsigned)r) < 0) {
      r = -EFAULT;
      break;
    }
    if (flags & MSG_WAITFORONE) flags |= MSG_DONTWAIT;
    if (deadline && monotonic_ns() >= deadline) {
      i++;
      break;
    }
  }
  if (a[4]) {
    uint64_t now = monotonic_ns(), left = deadline > now ? deadline - now : 0;
    timespec rem{(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    copy_to_user((void*)a[4], &rem, sizeof rem);
  }
  return i ? (long)i : r;
}

}  // namespace flatux
