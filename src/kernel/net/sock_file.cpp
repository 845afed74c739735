// Socket files: read/write/ioctl go to the host socket; the File also
// carries the names and peer facts the host cannot give back in guest terms.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/net/net.h"
#include "kernel/net/sock.h"

namespace flatux {
namespace {

// What was received on a netlink socket, made Linux's (netlink.cpp).
long netlink_fixed(File& f, const iovec* iov, size_t n, long r) {
  auto* p = static_cast<SockPriv*>(f.priv);
  if (r > 0 && p->netlink) netlink_received(*p, iov, n, (size_t)r, false);
  return r;
}

long sock_read(Task& t, File& f, void* buf, size_t n) {
  if (!access_ok(buf, n)) return -EFAULT;
  iovec v = {buf, n};
  return netlink_fixed(f, &v, 1, restartable(isys(t, SYS_read, f.host_fd, buf, n)));
}

long sock_write(Task& t, File& f, const void* buf, size_t n) {
  if (!access_ok(buf, n)) return -EFAULT;
  if (static_cast<SockPriv*>(f.priv)->netlink) {
    iovec v = {const_cast<void*>(buf), n};
    msghdr m{};
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    return netlink_sendmsg(t, f, m, 0);
  }
  // MSG_NOSIGNAL: the guest's SIGPIPE is raised by the write path, never
  // the host's.
  return restartable(isys(t, SYS_sendto, f.host_fd, buf, n, MSG_NOSIGNAL, 0, 0));
}

constexpr int kRwfHipri = 0x1;  // a polling hint, nothing to do

// readv/writev on a socket: one message (its offset is never used: sockets
// have no pread, so preadv gets ESPIPE before this).
long sock_readv(Task& t, File& f, const iovec* iov, int cnt, int64_t, int flags) {
  if (flags & ~kRwfHipri) return -EOPNOTSUPP;
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = (size_t)cnt;
  return netlink_fixed(f, iov, (size_t)cnt, restartable(isys(t, SYS_recvmsg, f.host_fd, &m, 0)));
}

long sock_writev(Task& t, File& f, const iovec* iov, int cnt, int64_t, int flags) {
  if (flags & ~kRwfHipri) return -EOPNOTSUPP;
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = (size_t)cnt;
  if (static_cast<SockPriv*>(f.priv)->netlink) return netlink_sendmsg(t, f, m, 0);
  return restartable(isys(t, SYS_sendmsg, f.host_fd, &m, MSG_NOSIGNAL));
}

long sock_stat(Task&, File& f, struct stat* out) { return host::sys(SYS_fstat, f.host_fd, out); }

void sock_release(File& f) {
  auto* p = static_cast<SockPriv*>(f.priv);
  if (!p) return;
  if (p->connect_registry) connect_forget(p);
  unix_name_put(f.heap, p->local);
  unix_name_put(f.heap, p->peer);
  netlink_release(f.heap, *p);
  // Messages still queued on the socket go with it, and so do the files
  // they carried: the host socket is closed here, before its tickets are
  // swept, rather than after this by File::put.
  if (p->net && p->net->tickets.count.load(std::memory_order_relaxed) && f.host_fd >= 0) {
    host::sys(SYS_close, f.host_fd);
    f.host_fd = -1;
    scm_tickets_sweep(*p->net);
  }
  f.heap->destroy_obj(p);
  f.priv = nullptr;
}

const FileOps kSockOps = {
    .read = sock_read,
    .write = sock_write,
    .pread = nullptr,
    .pwrite = nullptr,
    .lseek = nullptr,
    .stat = sock_stat,
    .getdents64 = nullptr,
    .ioctl = sock_ioctl,
    .statfs = nullptr,
    .release = sock_release,
    .readv = sock_readv,
    .writev = sock_writev,
};

}  // namespace

File* sock_file_adopt(Kernel& k, int host_fd, uint32_t flags) {
  Heap* heap = k.heap;
  auto* p = heap->make<SockPriv>();
  File* f = p ? file_alloc(heap, &kSockOps, flags, host_fd) : nullptr;
  if (!f) {
    heap->destroy_obj(p);
    host::sys(SYS_close, host_fd);
    return nullptr;
  }
  p->net = k.net;
  f->priv = p;
  return f;
}

bool is_sock_file(const File& f) { return f.ops == &kSockOps; }

bool sock_checks_writes(const File& f) {
  return is_sock_file(f) && static_cast<const SockPriv*>(f.priv)->netlink;
}

SockPriv* sock_priv(File& f) { return is_sock_file(f) ? static_cast<SockPriv*>(f.priv) : nullptr; }

long install_file(Task& t, File* f, bool cloexec) {
  int fd = t.proc->files->install(f, cloexec);
  f->put();
  return fd;
}

}  // namespace flatux
