// hostfs's inodes in the dentry cache: a cached folder keeps a host
// O_PATH descriptor, opened one name at a time from its parent's, so a
// lookup below it is one host call on that descriptor (FsOps::lookup), and
// the operations whose walk ends in it act on (descriptor, name) instead
// of walking the path from the root folder again (hostfs.cpp, base_of).
//
// Confinement: a descriptor is opened with openat(parent, name,
// O_PATH | O_DIRECTORY | O_NOFOLLOW) where name is a single component
// (never "", ".", ".." nor holding '/'), from the root folder's descriptor
// or another such descriptor: the host follows no link and never goes up,
// so every descriptor names a folder that was inside the root when it was
// opened. Names the guest changes (rename, unlink, rmdir) reach the cache
// through the VFS (dcache_name_moved / dcache_name_removed), which moves
// or retires the dentry holding the descriptor.
//
// Changes made by another host process are found by revalidation: a
// cached dentry is checked against its parent's descriptor (one statx:
// same inode number, type and birth time) before it is walked, so a
// folder removed, replaced (even by one reusing its inode number) or
// renamed away on the host is dropped and looked up afresh. A name
// checked less than kTrustNs (100 ms) ago is trusted without asking
// (NFS's attribute cache does the same with acregmin/acdirmin, 3 s and
// 30 s by default; this one is short because a host user editing the
// folder expects the guest to see it at once, and long enough that a
// program's burst of calls through the same folders asks once). Files
// are trusted as folders are: the operation on the last name asks the
// host itself (a symlink swapped in is still handed back as a redirect).
// Within the window a host process's change is not yet seen; the guest's
// own changes are, at once.
//
// The window is measured with the TSC, not the host's clock_gettime: the
// kernel has no vDSO, so each clock read is a host system call (about
// 0.5 µs on the development machine, a quarter of a native stat), and a
// walk asks the window two or three times; rdtsc costs about 15 ns. The
// rate is measured once per mount against monotonic_ns. A TSC that
// differs between CPUs or jumps only makes a stamp look old or from the
// future, and such a stamp is checked again, never trusted.
//
// A descriptor follows its folder wherever a host process moves it, out
// of the root folder too. So before a descriptor serves (a lookup in it,
// an operation on a name in it) the folder is checked to be inside the
// root (where /proc/self/fd/N says it is: one readlink), again after
// kInsideNs (10 ms: a readlink every 10 ms per folder in use costs nothing
// measurable, and bounds the exposure tighter than the 100 ms of names);
// one found outside serves no more, and the path from the root folder
// (RESOLVE_BENEATH) takes its place. What is left: for up to kInsideNs
// after a host process moves a cached folder out of the root, the guest
// may still reach into it (attack test e2e.hostfs.host_move_out bounds it).
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <x86intrin.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/heap.h"
#include "kernel/kernel.h"
#include "kernel/time.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

void release_host_inode(Inode* n) {
  HostInode* hn = static_cast<HostInode*>(n);
  if (hn->fd >= 0) {
    host::sys(SYS_close, hn->fd);
    hostfs_of(*hn->fs).dir_fds.fetch_sub(1, std::memory_order_relaxed);
  }
  // Inodes carry no heap pointer: the kernel heap lives at its fixed address.
  reinterpret_cast<Heap*>(kHeapBase)->destroy_obj(hn);
}

HostInode* host_inode(Inode* n) {
  return n && n->release == release_host_inode ? static_cast<HostInode*>(n) : nullptr;
}

// One component, nothing the host could take as a way up or down.
bool single_name(std::string_view name) {
  return !name.empty() && name.size() <= kNameMax && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

struct Identity {
  uint64_t ino = 0;
  uint32_t type = 0;
  bool has_btime = false;
  int64_t btime_sec = 0;
  uint32_t btime_nsec = 0;
};

constexpr unsigned kStatxWant = STATX_BASIC_STATS | STATX_BTIME;

Identity identity_of(const struct statx& sx) {
  Identity id;
  id.ino = sx.stx_ino;
  id.type = sx.stx_mode & S_IFMT;
  id.has_btime = sx.stx_mask & STATX_BTIME;
  id.btime_sec = sx.stx_btime.tv_sec;
  id.btime_nsec = sx.stx_btime.tv_nsec;
  return id;
}

// The same object: number and type, and where the host tells the birth
// time (a number reused for a new folder), that too.
bool same_object(const Identity& a, const Identity& b) {
  if (a.ino != b.ino || a.type != b.type) return false;
  if (a.has_btime && b.has_btime) return a.btime_sec == b.btime_sec && a.btime_nsec == b.btime_nsec;
  return true;
}

void stat_of(const struct statx& sx, struct stat* st) {
  memset(st, 0, sizeof *st);
  st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st->st_ino = sx.stx_ino;
  st->st_mode = sx.stx_mode;
  st->st_nlink = sx.stx_nlink;
  st->st_uid = sx.stx_uid;
  st->st_gid = sx.stx_gid;
  st->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
  st->st_size = (off_t)sx.stx_size;
  st->st_blksize = sx.stx_blksize;
  st->st_blocks = (blkcnt_t)sx.stx_blocks;
  st->st_atim = {sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec};
  st->st_mtim = {sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec};
  st->st_ctim = {sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec};
}

long statx_at(int dir, const char* name, struct statx* sx) {
  return host::sys(SYS_statx, dir, name, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH), kStatxWant, sx);
}

// The guest's mode and owner for the inode's fields.
void set_fields(HostInode& n, const GuestNode& g) {
  n.ino = g.st.st_ino;
  // Walks read the bits and owner meanwhile (hostfs_dir_perms).
  __atomic_store_n(&n.mode, g.st.st_mode, __ATOMIC_RELAXED);
  __atomic_store_n(&n.uid, g.st.st_uid, __ATOMIC_RELAXED);
  __atomic_store_n(&n.gid, g.st.st_gid, __ATOMIC_RELAXED);
}

// A descriptor for one more folder, unless the cap is reached.
bool reserve_dir_fd(HostFs& h) {
  if (h.dir_fds.fetch_add(1, std::memory_order_relaxed) < h.dir_fds_max) return true;
  h.dir_fds.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

HostInode* new_inode(HostFs& h, Filesystem& fs, const GuestNode& g, const Identity& id, long fd) {
  HostInode* n = h.heap->make<HostInode>();
  if (!n) return nullptr;
  n->fs = &fs;
  n->release = release_host_inode;
  n->fd = (int)fd;
  n->id_ino = id.ino;
  n->id_type = id.type;
  n->id_has_btime = id.has_btime;
  n->id_btime_sec = id.btime_sec;
  n->id_btime_nsec = id.btime_nsec;
  uint64_t now = hostfs_ticks();
  n->checked_at.store(now, std::memory_order_relaxed);
  n->inside_at.store(now, std::memory_order_relaxed);  // opened from a folder inside
  set_fields(*n, g);
  return n;
}

Identity identity_of(const HostInode& n) {
  Identity id;
  id.ino = n.id_ino;
  id.type = n.id_type;
  id.has_btime = n.id_has_btime;
  id.btime_sec = n.id_btime_sec;
  id.btime_nsec = n.id_btime_nsec;
  return id;
}

// `name` in the folder open as `dir`: the host's statx of it, what the
// guest sees, and for a folder a descriptor of its own when the cap allows
// (-1 otherwise).
long lookup_at(HostFs& h, int dir, const char* name, struct statx* sx, GuestNode* g, long* fd) {
  *fd = -1;
  long r = statx_at(dir, name, sx);
  if (r < 0) return r;
  if (S_ISDIR(sx->stx_mode) && reserve_dir_fd(h)) {
    long d = host::sys(SYS_openat, dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d >= 0 && statx_at((int)d, "", sx) < 0) {
      host::sys(SYS_close, d);
      d = -1;
    }
    if (d < 0) {
      h.dir_fds.fetch_sub(1, std::memory_order_relaxed);
      // Replaced by something else between the two calls: asked again.
      if ((r = statx_at(dir, name, sx)) < 0) return r;
    }
    *fd = d;
  }
  struct stat host;
  stat_of(*sx, &host);
  if (*fd >= 0) guest_view(h, (int)*fd, host, g);
  else guest_view_at(h, dir, name, host, g);
  return 0;
}

// Without a descriptor for the parent: the path from the root folder.
long lookup_path(HostFs& h, Dentry& dir, std::string_view name, struct statx* sx, GuestNode* g, long* fd) {
  *fd = -1;
  char path[kPathMax];
  long len = dir.cache->path_in_fs(&dir, path, sizeof path);
  if (len < 0) return len;
  if ((size_t)len + 1 + name.size() >= sizeof path) return -ENAMETOOLONG;
  if (len > 1) path[len++] = '/';
  memcpy(path + len, name.data(), name.size());
  path[len + (long)name.size()] = 0;
  long f = hostfs_open_beneath(h, h.root_fd, hostfs_relative(path), O_PATH | O_NOFOLLOW, 0);
  if (f == -ELOOP) return -ENOENT;  // a link on the way: not a name of this folder's
  if (f < 0) return f;
  long r = statx_at((int)f, "", sx);
  if (r == 0) {
    struct stat host;
    stat_of(*sx, &host);
    guest_view(h, (int)f, host, g);
  }
  if (r < 0 || !S_ISDIR(sx->stx_mode) || !reserve_dir_fd(h)) {
    host::sys(SYS_close, f);
    return r;
  }
  *fd = f;
  return 0;
}

}  // namespace

uint64_t hostfs_ticks() { return __rdtsc(); }

bool hostfs_fresh(const HostFs& h, uint64_t stamp, uint64_t now, uint64_t window_ns) {
  if (!stamp || !h.ticks_per_ms) return false;
  // now < stamp wraps to a huge age: not fresh.
  return now - stamp < window_ns * h.ticks_per_ms / 1000000;
}

uint64_t hostfs_measure_ticks_per_ms() {
  uint64_t n0 = monotonic_ns(), t0 = hostfs_ticks(), n1, t1;
  do {
    n1 = monotonic_ns();
    t1 = hostfs_ticks();
  } while (n1 - n0 < 1000000 && n1 >= n0);
  if (n1 <= n0 || t1 <= t0) return 0;
  return (t1 - t0) * 1000000 / (n1 - n0);
}

HostInode* hostfs_inode(Inode* n) { return host_inode(n); }

int hostfs_dentry_fd(HostFs& h, const Dentry* d) {
  if (!d || !d->fs || d->fs->priv != &h) return -1;
  if (__atomic_load_n(&d->flags, __ATOMIC_RELAXED) & Dentry::kRoot) return h.root_fd;
  HostInode* n = host_inode(d->inode);
  if (!n || n->fd < 0) return -1;
  // A descriptor follows its folder wherever a host process moves it: it
  // serves only while the folder is still inside the root (asked again
  // after kInsideNs). Otherwise the path from the root serves.
  uint64_t now = hostfs_ticks();
  if (hostfs_fresh(h, n->inside_at.load(std::memory_order_relaxed), now, h.inside_ns)) return n->fd;
  char where[kPathMax];
  if (hostfs_inner_path(h, n->fd, where, sizeof where) < 0) return -1;
  n->inside_at.store(now, std::memory_order_relaxed);
  return n->fd;
}

long hostfs_lookup(Task&, Filesystem& fs, Mount&, Dentry& dir, std::string_view name, Inode** out) {
  HostFs& h = hostfs_of(fs);
  if (!single_name(name)) return -ENOENT;
  int dfd = hostfs_dentry_fd(h, &dir);
  struct statx sx;
  long fd = -1;
  long r;
  char cname[kNameMax + 1];
  memcpy(cname, name.data(), name.size());
  cname[name.size()] = 0;
  GuestNode g;
  if (dfd >= 0) r = lookup_at(h, dfd, cname, &sx, &g, &fd);
  else r = lookup_path(h, dir, name, &sx, &g, &fd);
  if (r < 0) return r;
  HostInode* n = new_inode(h, fs, g, identity_of(sx), fd);
  if (!n) {
    if (fd >= 0) {
      host::sys(SYS_close, fd);
      h.dir_fds.fetch_sub(1, std::memory_order_relaxed);
    }
    return -ENOMEM;
  }
  *out = n;
  return 0;
}

bool hostfs_revalidate(Task&, Filesystem& fs, Mount&, Dentry& d) {
  HostFs& h = hostfs_of(fs);
  HostInode* n = host_inode(d.inode);
  if (!n) return false;  // not one of ours (made before the mount was ours): asked afresh
  uint64_t now = hostfs_ticks();
  if (hostfs_fresh(h, n->checked_at.load(std::memory_order_relaxed), now, h.trust_ns)) return true;
  Dentry* parent = d.cache->get_parent(d);
  char path[kPathMax];
  long len = d.cache->path_in_fs(&d, path, sizeof path);
  int pfd = hostfs_dentry_fd(h, parent);
  const char* name = len > 1 ? path + len : nullptr;
  while (name && name > path && name[-1] != '/') name--;
  struct statx sx;
  long r = -ENOENT;
  if (name && pfd >= 0) {
    r = statx_at(pfd, name, &sx);
  } else if (name) {
    long f = hostfs_open_beneath(h, h.root_fd, hostfs_relative(path), O_PATH | O_NOFOLLOW, 0);
    r = f < 0 ? f : statx_at((int)f, "", &sx);
    if (f >= 0) host::sys(SYS_close, f);
  }
  bool same = r == 0 && same_object(identity_of(sx), identity_of(*n));
  if (same) {
    // Its guest attributes as they are now (a record or a node link read
    // again where there is one; without the parent's descriptor those
    // wait for a lookup).
    struct stat host;
    stat_of(sx, &host);
    bool view = S_ISLNK(host.st_mode) || ((host.st_mode & S_ISVTX) && (S_ISREG(host.st_mode) || S_ISDIR(host.st_mode)));
    GuestNode g;
    g.st = host;
    if (view && pfd >= 0) guest_view_at(h, pfd, name, host, &g);
    if (!view || pfd >= 0) set_fields(*n, g);
    n->checked_at.store(now, std::memory_order_relaxed);
  }
  dput(parent);
  return same;
}

FilePerms hostfs_dir_perms(Task& t, Filesystem& fs, Mount& m, Dentry& d) {
  HostInode* n = host_inode(d.inode);
  if (n && !hostfs_fresh(hostfs_of(fs), n->checked_at.load(std::memory_order_relaxed), hostfs_ticks(),
                         hostfs_of(fs).trust_ns))
    hostfs_revalidate(t, fs, m, d);  // reads them again
  return {__atomic_load_n(&d.inode->mode, __ATOMIC_RELAXED), __atomic_load_n(&d.inode->uid, __ATOMIC_RELAXED),
          __atomic_load_n(&d.inode->gid, __ATOMIC_RELAXED)};
}

void hostfs_attrs_changed(Task& t, Lookup& lk) {
  if (!lk.dir || !single_name(lk.name)) return;
  Dentry* d = t.kernel->dcache->lookup(*lk.dir, lk.name);
  if (!d) return;
  // Asked again at the next walk through it, which reads the new mode and owner.
  if (HostInode* n = host_inode(d->inode)) n->checked_at.store(0, std::memory_order_relaxed);
  dput(d);
}

}  // namespace flatux
