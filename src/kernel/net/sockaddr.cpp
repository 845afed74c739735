// Socket addresses between guest and host: AF_UNIX paths resolved inside
// the guest's root, abstract names tagged per kernel, and the way back.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/netlink.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/sha256.h"
#include "kernel/net/net.h"
#include "kernel/net/sock.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

constexpr char kHex[] = "0123456789abcdef";

sockaddr_un& un(sockaddr_storage& sa) { return *reinterpret_cast<sockaddr_un*>(&sa); }

size_t bounded_len(const char* s, size_t max) {
  size_t n = 0;
  while (n < max && s[n]) n++;
  return n;
}

void set_host_path(HostAddr* out, const char* host, size_t len) {
  sockaddr_un& su = un(out->sa);
  memset(su.sun_path, 0, sizeof su.sun_path);
  memcpy(su.sun_path, host, len);
  out->len = (socklen_t)(kSunPathOff + len + 1);
}

void set_host_abstract(HostAddr* out, const char* host, size_t len) {
  sockaddr_un& su = un(out->sa);
  memset(su.sun_path, 0, sizeof su.sun_path);
  memcpy(su.sun_path, host, len);
  out->len = (socklen_t)(kSunPathOff + len);
}

// A socket node on a filesystem the kernel keeps: the host name of the
// socket bound there, found by the node's device and inode (the newest
// binding first: a node's inode number may come round again).
long node_to_reach(Task& t, File& f, HostAddr* out) {
  struct stat st;
  long r = f.ops->stat ? f.ops->stat(t, f, &st) : -ECONNREFUSED;
  if (r < 0) return r;
  if (!S_ISSOCK(st.st_mode)) return -ECONNREFUSED;
  // Linux's unix_find_bsd: connecting takes write permission on the node.
  if ((r = permission(creds_of(t), perms_of(st), W_OK)) < 0) return r;
  NetState& ns = *t.kernel->net;
  Guard g(ns.lock);
  for (UnixName* n = ns.names; n; n = n->next) {
    if (!n->on_node || n->node_dev != st.st_dev || n->node_ino != st.st_ino) continue;
    set_host_abstract(out, n->host, n->host_len);
    return 0;
  }
  return -ECONNREFUSED;  // a node whose socket is gone, as after a reboot
}

// Binding a path on a filesystem the kernel keeps (tmpfs, ext4): the node
// is made as Linux's unix_bind makes it (S_IFSOCK, 0777 less the umask;
// EADDRINUSE when the name exists) and the host socket gets an abstract
// name of the kernel's own, numbered, which connect finds by the node.
long node_to_bind(Task& t, int host_fd, const char* path, size_t path_len, HostAddr* out) {
  // A socket already bound is refused before anything is made (EINVAL).
  sockaddr_un now{};
  socklen_t now_len = sizeof now;
  if (host::sys(SYS_getsockname, host_fd, &now, &now_len) == 0 && now_len > kSunPathOff) return -EINVAL;
  long r = vfs_mknod(t, AT_FDCWD, path, (int)(S_IFSOCK | (0777 & ~t.proc->fs->umask)), 0);
  if (r == -EEXIST) return -EADDRINUSE;
  if (r < 0) return r;
  struct stat st;
  if ((r = vfs_stat(t, AT_FDCWD, path, false, &st)) < 0) return r;
  NetState& ns = *t.kernel->net;
  UnixName* n = t.kernel->heap->make<UnixName>();
  if (!n) return -ENOMEM;
  char host[kSunPathMax];
  memset(host, 0, sizeof host);
  memcpy(host + 1, ns.tag, kTagLen);
  host[1] = kNodeTagMark;
  uint64_t id = ns.node_names.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < kNodeIdLen; i++) host[1 + kTagLen + i] = kHex[(id >> (4 * (kNodeIdLen - 1 - i))) & 15];
  size_t hlen = 1 + kTagLen + kNodeIdLen;
  n->abstract = n->on_node = true;
  n->node_dev = st.st_dev;
  n->node_ino = st.st_ino;
  memcpy(n->host, host, hlen);
  n->host_len = hlen;
  memcpy(n->guest, path, path_len);
  n->guest_len = path_len + 1;
  n->owner = peer_cred_of(t);
  out->name = n;
  set_host_abstract(out, host, hlen);
  return 0;
}

// Reaching an existing socket: the whole guest path is opened through the
// VFS (symlinks included, confined to the root) and the host is given the
// magic link of that O_PATH descriptor, "/proc/self/fd/<fd>", which it
// follows to the socket itself.
long unix_path_to_reach(Task& t, const char* path, HostAddr* out) {
  File* f = nullptr;
  long r = vfs_open(t, AT_FDCWD, path, O_PATH, 0, &f);
  if (r < 0) return r;
  out->dir = f;
  if (f->host_fd < 0) return node_to_reach(t, *f, out);
  char host[kSunPathMax + 1];
  KFmt k(host, sizeof host);
  k.str("/proc/self/fd/").dec(f->host_fd);
  set_host_path(out, host, k.size());
  return 0;
}

// Binding a new name: the parent directory is opened through the VFS and
// the host creates "/proc/self/fd/<dir>/<base>". The base is one plain
// component, so the host cannot walk out of that directory.
long unix_path_to_bind(Task& t, int host_fd, const char* path, size_t path_len, HostAddr* out) {
  char dirpath[kSunPathMax + 2];
  const char* base;
  const char* slash = nullptr;
  for (const char* c = path; *c; c++)
    if (*c == '/') slash = c;
  if (!slash) {
    memcpy(dirpath, ".", 2);
    base = path;
  } else {
    size_t dl = slash == path ? 1 : (size_t)(slash - path);
    memcpy(dirpath, path, dl);
    dirpath[dl] = 0;
    base = slash + 1;
  }
  if (!*base) return -ENOENT;
  if (!strcmp(base, ".") || !strcmp(base, "..")) return -EADDRINUSE;  // exists: a directory
  File* dir = nullptr;
  long r = vfs_open(t, AT_FDCWD, dirpath, O_PATH | O_DIRECTORY, 0, &dir);
  if (r < 0) return r;
  out->dir = dir;
  if (dir->host_fd < 0) return node_to_bind(t, host_fd, path, path_len, out);
  if (dir->mount && dir->mount->readonly()) return -EROFS;
  char host[kSunPathMax + 1];
  KFmt f(host, sizeof host);
  f.str("/proc/self/fd/").dec(dir->host_fd).ch('/').str(base);
  if (f.truncated() || f.size() >= kSunPathMax) return -ENAMETOOLONG;
  set_host_path(out, host, f.size());
  UnixName* n = t.kernel->heap->make<UnixName>();
  if (!n) return -ENOMEM;
  memcpy(n->host, host, f.size());
  n->host_len = f.size() + 1;
  memcpy(n->guest, path, path_len);
  n->guest_len = path_len + 1;
  dir->get();
  n->dir = dir;
  n->owner = peer_cred_of(t);
  out->name = n;
  return 0;
}

bool same_host(const UnixName* n, const char* host_path, size_t len) {
  return n && !n->abstract && n->host_len == len + 1 && memcmp(n->host, host_path, len) == 0;
}

bool same_abstract(const UnixName* n, const char* host, size_t len) {
  return n && n->abstract && n->host_len == len && memcmp(n->host, host, len) == 0;
}

// An abstract name of the guest's on the host. One that fits after the
// kernel's tag keeps its bytes ("\0" tag name); a longer one (Linux allows
// 107 bytes) becomes "\0" long-tag SHA-256(name), whose spelling the
// kernel remembers while a socket is bound to it, so getsockname and the
// rest can give the guest its own back. The two tags differ in their first
// byte, so the forms never meet.
long abstract_to_host(Task& t, size_t plen, AddrUse use, HostAddr* out) {
  sockaddr_un& su = un(out->sa);
  const NetState& ns = *t.kernel->net;
  size_t nlen = plen - 1;
  if (1 + kTagLen + nlen <= kSunPathMax) {
    memmove(su.sun_path + 1 + kTagLen, su.sun_path + 1, nlen);
    memcpy(su.sun_path + 1, ns.tag, kTagLen);
    out->len = (socklen_t)(kSunPathOff + plen + kTagLen);
    return 0;
  }
  uint8_t digest[Sha256::kDigestSize];
  Sha256 h;
  h.update(su.sun_path + 1, nlen);
  h.finish(digest);
  char guest[kSunPathMax];
  memcpy(guest, su.sun_path, plen);
  memset(su.sun_path, 0, sizeof su.sun_path);
  memcpy(su.sun_path + 1, ns.tag, kTagLen);
  su.sun_path[1] = kLongTagMark;
  memcpy(su.sun_path + 1 + kTagLen, digest, sizeof digest);
  size_t hlen = 1 + kTagLen + sizeof digest;
  out->len = (socklen_t)(kSunPathOff + hlen);
  if (use != AddrUse::kBind) return 0;
  UnixName* n = t.kernel->heap->make<UnixName>();
  if (!n) return -ENOMEM;
  n->abstract = true;
  memcpy(n->host, su.sun_path, hlen);
  n->host_len = hlen;
  memcpy(n->guest, guest, plen);
  n->guest_len = plen;
  n->owner = peer_cred_of(t);
  out->name = n;
  return 0;
}

// A host name the kernel made for a name of the guest's (a long abstract
// one, or a path on the kernel's filesystems), which the registry maps back.
bool is_long_abstract(const NetState& ns, const char* sun_path, size_t plen) {
  if (plen < 1 + kTagLen || sun_path[0] != 0 || memcmp(sun_path + 2, ns.tag + 1, kTagLen - 1) != 0) return false;
  return (sun_path[1] == kLongTagMark && plen == 1 + kTagLen + Sha256::kDigestSize) ||
         (sun_path[1] == kNodeTagMark && plen == 1 + kTagLen + kNodeIdLen);
}

// The guest's spelling of a long abstract name the host reported, from the
// socket's own names or the registry; false when no bound socket has it.
bool long_abstract_to_guest(Task& t, File* sock, sockaddr_un& su, socklen_t& len) {
  size_t plen = len - kSunPathOff;
  SockPriv* p = sock ? sock_priv(*sock) : nullptr;
  NetState& ns = *t.kernel->net;
  Guard g(ns.lock);
  const UnixName* hit = nullptr;
  if (p && same_abstract(p->local, su.sun_path, plen)) hit = p->local;
  else if (p && same_abstract(p->peer, su.sun_path, plen)) hit = p->peer;
  for (UnixName* u = ns.names; !hit && u; u = u->next)
    if (same_abstract(u, su.sun_path, plen)) hit = u;
  if (!hit) return false;
  memset(su.sun_path, 0, sizeof su.sun_path);
  memcpy(su.sun_path, hit->guest, hit->guest_len);
  len = (socklen_t)(kSunPathOff + hit->guest_len);
  return true;
}

}  // namespace

NetState* net_state_create(Heap* heap) {
  NetState* ns = heap->make<NetState>();
  if (!ns) return nullptr;
  ns->heap = heap;
  unsigned char rnd[kTagLen / 2];
  if (host::sys(SYS_getrandom, rnd, sizeof rnd, 0) != (long)sizeof rnd) {
    // No randomness: still a tag (names stay apart from plain host ones).
    memset(rnd, 0x5a, sizeof rnd);
  }
  for (size_t i = 0; i < sizeof rnd; i++) {
    ns->tag[2 * i] = kHex[rnd[i] >> 4];
    ns->tag[2 * i + 1] = kHex[rnd[i] & 15];
  }
  return ns;
}

HostAddr::~HostAddr() {
  if (name) unix_name_put(heap, name);
  if (dir) dir->put();
}

void unix_name_register(Kernel& k, UnixName* n) {
  NetState& ns = *k.net;
  Guard g(ns.lock);
  n->registry = &ns;
  n->next = ns.names;
  ns.names = n;
}

void unix_name_put(Heap* heap, UnixName* n) {
  if (!n || n->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (NetState* ns = n->registry) {
    Guard g(ns->lock);
    for (UnixName** link = &ns->names; *link; link = &(*link)->next)
      if (*link == n) {
        *link = n->next;
        break;
      }
  }
  if (n->dir) n->dir->put();
  heap->destroy_obj(n);
}

UnixName* unix_name_find(Kernel& k, const char* host_path, size_t plen) {
  bool abstract = plen > 0 && host_path[0] == 0;
  size_t len = abstract ? plen : bounded_len(host_path, plen);
  NetState& ns = *k.net;
  Guard g(ns.lock);
  for (UnixName* n = ns.names; n; n = n->next) {
    if (abstract ? !same_abstract(n, host_path, len) : !same_host(n, host_path, len)) continue;
    // One on its way out (last reference gone) is no longer there.
    int r = n->refs.load();
    while (r > 0 && !n->refs.compare_exchange_weak(r, r + 1)) {}
    return r > 0 ? n : nullptr;
  }
  return nullptr;
}

long addr_from_user(Task& t, int host_fd, uint64_t guest, uint64_t len, AddrUse use, HostAddr* out) {
  out->heap = t.kernel->heap;
  if (len > sizeof(sockaddr_storage) || (int64_t)len < 0) return -EINVAL;
  if (len && copy_from_user(&out->sa, (const void*)guest, len) < 0) return -EFAULT;
  out->len = (socklen_t)len;
  if (out->sa.ss_family == AF_INET || out->sa.ss_family == AF_INET6)
    return forward_to_host(*t.kernel->net, host_fd, out->sa, out->len, use);
  if (len <= kSunPathOff || out->sa.ss_family != AF_UNIX) return 0;  // the host judges the rest
  int domain = AF_UNIX;
  socklen_t dlen = sizeof domain;
  if (host::sys(SYS_getsockopt, host_fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain != AF_UNIX)
    return 0;  // not a name for this socket: the host refuses it as Linux would
  sockaddr_un& su = un(out->sa);
  size_t plen = len - kSunPathOff;
  if (plen > kSunPathMax) return -EINVAL;
  if (su.sun_path[0] == 0) return abstract_to_host(t, plen, use, out);
  char path[kSunPathMax + 1];
  size_t n = bounded_len(su.sun_path, plen);
  memcpy(path, su.sun_path, n);
  path[n] = 0;
  return use == AddrUse::kBind ? unix_path_to_bind(t, host_fd, path, n, out) : unix_path_to_reach(t, path, out);
}

void addr_to_guest(Task& t, File* sock, sockaddr_storage& sa, socklen_t& len, bool local) {
  if ((sa.ss_family == AF_INET || sa.ss_family == AF_INET6) && sock) {
    forward_to_guest(*t.kernel->net, sock->host_fd, sa, len, local);
    return;
  }
  if (sa.ss_family == AF_NETLINK && len >= sizeof(sockaddr_nl)) {
    // A uevent socket's groups are its own, not the host socket's.
    if (SockPriv* p = sock ? sock_priv(*sock) : nullptr; p && p->uevent)
      reinterpret_cast<sockaddr_nl&>(sa).nl_groups = p->uevent_groups;
    return;
  }
  if (len <= kSunPathOff || sa.ss_family != AF_UNIX) return;
  sockaddr_un& su = un(sa);
  size_t plen = len - kSunPathOff;
  if (plen > kSunPathMax) plen = kSunPathMax;
  if (su.sun_path[0] == 0) {
    if (is_long_abstract(*t.kernel->net, su.sun_path, plen)) {
      if (!long_abstract_to_guest(t, sock, su, len)) len = (socklen_t)kSunPathOff;  // its socket is gone
      return;
    }
    if (plen >= 1 + kTagLen && memcmp(su.sun_path + 1, t.kernel->net->tag, kTagLen) == 0) {
      size_t nlen = plen - 1 - kTagLen;
      memmove(su.sun_path + 1, su.sun_path + 1 + kTagLen, nlen);
      memset(su.sun_path + 1 + nlen, 0, kSunPathMax - 1 - nlen);
      len = (socklen_t)(len - kTagLen);
    }
    return;
  }
  size_t n = bounded_len(su.sun_path, plen);
  char guest[kSunPathMax + 1];
  size_t glen = 0;
  {
    SockPriv* p = sock ? sock_priv(*sock) : nullptr;
    NetState& ns = *t.kernel->net;
    Guard g(ns.lock);
    const UnixName* hit = nullptr;
    if (p && same_host(p->local, su.sun_path, n)) hit = p->local;
    else if (p && same_host(p->peer, su.sun_path, n)) hit = p->peer;
    for (UnixName* u = ns.names; !hit && u; u = u->next)
      if (same_host(u, su.sun_path, n)) hit = u;
    if (hit) {
      glen = hit->guest_len;
      memcpy(guest, hit->guest, glen);
    }
  }
  if (!glen) {
    // Bound by a host program under the root: the host gave its real path.
    const char* root = t.kernel->cfg.root;
    size_t rl = strlen(root);
    bool slash_root = rl == 1 && root[0] == '/';
    if (slash_root && su.sun_path[0] == '/' && n < kSunPathMax) {
      return;  // guest and host paths agree
    } else if (!slash_root && n > rl && memcmp(su.sun_path, root, rl) == 0 && su.sun_path[rl] == '/') {
      glen = n - rl + 1;
      memcpy(guest, su.sun_path + rl, glen - 1);
      guest[glen - 1] = 0;
    } else {
      // A name the guest cannot see (outside its root, or the name's
      // socket is gone): reported unnamed.
      memset(su.sun_path, 0, sizeof su.sun_path);
      len = (socklen_t)kSunPathOff;
      return;
    }
  }
  memset(su.sun_path, 0, sizeof su.sun_path);
  memcpy(su.sun_path, guest, glen);
  len = (socklen_t)(kSunPathOff + glen);
}

long addr_put_user(const sockaddr_storage& sa, socklen_t len, uint64_t guest_addr,
                   uint64_t guest_lenp) {
  if (!guest_addr) return 0;
  int glen;
  if (get_user(glen, (const void*)guest_lenp) < 0) return -EFAULT;
  if (glen < 0) return -EINVAL;
  size_t n = (size_t)glen < len ? (size_t)glen : len;
  if (n && copy_to_user((void*)guest_addr, &sa, n) < 0) return -EFAULT;
  if (put_user((void*)guest_lenp, (int)len) < 0) return -EFAULT;
  return 0;
}

long unix_autobind(Task& t, int host_fd) {
  sockaddr_un su{};
  su.sun_family = AF_UNIX;
  memcpy(su.sun_path + 1, t.kernel->net->tag, kTagLen);
  long r = -EADDRINUSE;
  for (int tries = 0; tries < 64 && r == -EADDRINUSE; tries++) {
    unsigned char rnd[3];
    if (host::sys(SYS_getrandom, rnd, sizeof rnd, 0) != (long)sizeof rnd) return -EAGAIN;
    uint32_t v = ((uint32_t)rnd[0] << 16 | (uint32_t)rnd[1] << 8 | rnd[2]) & 0xfffff;
    for (int i = 0; i < 5; i++) su.sun_path[1 + kTagLen + i] = kHex[(v >> (16 - 4 * i)) & 15];
    r = host::sys(SYS_bind, host_fd, &su, kSunPathOff + 1 + kTagLen + 5);
  }
  return r;
}

}  // namespace flatux
