// hostfs: a host folder as a guest filesystem, confined to that folder.
//
// Confinement: every lookup is an openat2(2) from the root folder with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS. The VFS hands over normalised
// paths (no "..") and the host follows no symlink at all, so nothing can
// lead outside the folder. When a path does contain a symlink the host
// refuses it (ELOOP); the walk is then redone one component at a time to
// find the link, and the link goes back to the VFS as a redirect, which
// resolves it in the guest's namespace (mounts, chroot, "..").
//
// No check-then-use: a path is looked up once, and the operation acts on
// what the lookup returned. Either that is a descriptor of the file itself
// (an O_PATH one, from openat2 beneath the root, not following the last
// component) and the call takes the descriptor (fstat, readlinkat and
// fchownat with an empty path, fchmodat2 with AT_EMPTY_PATH, utimensat,
// /proc/self/fd/N for the calls that only take a path); or it is the pair
// (descriptor of the parent folder, final name), opened the same way, with
// calls that never follow a symlink in the name (mkdirat, mknodat,
// symlinkat, unlinkat, linkat without AT_SYMLINK_FOLLOW, renameat2).
// When the VFS's walk ends in a folder the dentry cache holds with a host
// descriptor (dentries.cpp), that descriptor and the last name take the
// place of the root folder and the whole path (base_of): open_beneath()
// and open_parent() are the two places that resolve.
#include "kernel/fs/hostfs/hostfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/open_how_table.h"
#include "host/raw_syscall.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/perm.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

// open(2) ignores unknown flag bits, openat2(2) rejects them: keep the known ones.
constexpr uint32_t kKnownOpenFlags = O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |
                                     O_NONBLOCK | O_DSYNC | O_ASYNC | O_DIRECT | kOLargeFile |
                                     O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_SYNC |
                                     O_PATH | O_TMPFILE;

}  // namespace

const char* hostfs_relative(const char* inner) {
  while (*inner == '/') inner++;
  return *inner ? inner : ".";
}

namespace {

// Creation: the folder beneath `dir` through the sealed table, then openat
// of the last name in it, not following a link there, so the host filter
// sees the mode (host/open_how_table.h).
long create_beneath(int dir, const char* rel, uint64_t flags, uint64_t mode) {
  bool tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
  std::string_view path(rel), parent, name;
  if (tmpfile) {
    parent = path;
    name = ".";
  } else {
    size_t slash = path.rfind('/');
    parent = slash == std::string_view::npos ? std::string_view() : head(path, slash);
    name = slash == std::string_view::npos ? path : tail(path, slash + 1);
    if (name.empty() || name == "..") return -EXDEV;  // what RESOLVE_BENEATH says of a way out
  }
  long pfd = dir;
  if (!parent.empty()) {
    char p[kPathMax];
    if (!copy_cstr(p, sizeof p, parent)) return -ENAMETOOLONG;
    pfd = host::openat2_listed(dir, p, O_PATH | O_DIRECTORY);
    if (pfd < 0) return pfd;
  }
  char last[kNameMax + 1];
  long fd = copy_cstr(last, sizeof last, name)
                ? host::sys(SYS_openat, pfd, last, (flags & kKnownOpenFlags) | (tmpfile ? 0 : O_NOFOLLOW) | O_CLOEXEC | O_NOCTTY,
                            mode & 07777)
                : -ENAMETOOLONG;
  if (pfd != dir) host::sys(SYS_close, pfd);
  return fd;
}

}  // namespace

long hostfs_open_beneath(HostFs&, int dir, const char* rel, uint64_t flags, uint64_t mode) {
  if ((flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE) return create_beneath(dir, rel, flags, mode);
  // openat2 takes only these with O_PATH, and ignores nothing.
  uint64_t keep = (flags & O_PATH) ? (O_PATH | O_DIRECTORY | O_NOFOLLOW) : kKnownOpenFlags;
  return host::openat2_listed(dir, rel, flags & keep);
}

long hostfs_inner_path(HostFs& h, int fd, char* out, size_t n) {
  FdPath p(fd);
  char host_path[kPathMax];
  long len = host::sys(SYS_readlinkat, AT_FDCWD, p.s, host_path, sizeof host_path - 1);
  if (len < 0) return len;
  host_path[len] = 0;
  if (host_path[0] != '/') return -ENOENT;
  if (h.root_is_slash) return copy_cstr(out, n, host_path) ? 0 : -ENAMETOOLONG;
  std::string_view hp(host_path, (size_t)len);
  std::string_view root(h.root, h.root_len);
  if (!starts_with(hp, root) || (hp.size() > root.size() && hp[root.size()] != '/')) return -ENOENT;
  std::string_view rest = tail(hp, root.size());
  return copy_cstr(out, n, rest.empty() ? std::string_view("/") : rest) ? 0 : -ENAMETOOLONG;
}

namespace {

// Where an operation's walk ended, when the walk's last folder is a cached
// one of this filesystem: its descriptor and the last name, so the host
// call resolves one component (dentries.cpp) instead of the whole path.
struct Base {
  int dir = -1;
  char name[kNameMax + 1];
};

bool base_of(HostFs& h, const Lookup& lk, Base* b) {
  std::string_view n = lk.name;
  if (!lk.dir || n.empty() || n.size() > kNameMax || n == "." || n == ".." ||
      n.find('/') != std::string_view::npos || n.find('\0') != std::string_view::npos)
    return false;
  int fd = hostfs_dentry_fd(h, lk.dir);
  if (fd < 0) return false;
  b->dir = fd;
  memcpy(b->name, n.data(), n.size());
  b->name[n.size()] = 0;
  return true;
}

// Opens lk's path beneath the root folder, or its last name beneath the
// cached folder holding it.
long open_beneath(HostFs& h, Lookup& lk, uint64_t flags, uint64_t mode) {
  Base b;
  if (base_of(h, lk, &b)) return hostfs_open_beneath(h, b.dir, b.name, flags, mode);
  return hostfs_open_beneath(h, h.root_fd, hostfs_relative(lk.path), flags, mode);
}

void close_fd(long fd, int keep) {
  if (fd >= 0 && fd != keep) host::sys(SYS_close, fd);
}

// After the host refused a path with ELOOP: walks it a component at a
// time and turns the first symlink into a redirect. 0 when the only link
// is the last component and `follow_last` is off (the caller's ELOOP or
// "operate on the link" case) or the last component is a device node, or
// an errno from the walk.
long find_link(HostFs& h, Lookup& lk, const char* inner, bool follow_last) {
  std::string_view p(inner);
  long dir = h.root_fd;
  size_t pos = 0;
  while (true) {
    while (pos < p.size() && p[pos] == '/') pos++;
    if (pos >= p.size()) break;
    size_t end = p.find('/', pos);
    if (end == std::string_view::npos) end = p.size();
    char name[256];
    if (end - pos >= sizeof name) {
      close_fd(dir, h.root_fd);
      return -ENAMETOOLONG;
    }
    memcpy(name, p.data() + pos, end - pos);
    name[end - pos] = 0;
    bool last = p.find_first_not_of('/', end) == std::string_view::npos;
    long fd = host::sys(SYS_openat, dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    close_fd(dir, h.root_fd);
    if (fd < 0) return fd;
    struct stat st;
    long r = host::sys(SYS_fstat, fd, &st);
    if (r == 0 && S_ISLNK(st.st_mode)) {
      char target[kPathMax];
      long len = host::sys(SYS_readlinkat, fd, "", target, sizeof target - 1);
      host::sys(SYS_close, fd);
      if (len < 0) return len;
      struct stat node;
      if (parse_node_link(std::string_view(target, (size_t)len), &node)) return last ? 0 : -ENOTDIR;
      if (last && !follow_last) return 0;
      std::string_view rest = last ? std::string_view() : tail(p, end + 1);
      return vfs_make_redirect(lk, head(p, end), std::string_view(target, (size_t)len), rest);
    }
    if (r == 0 && !last && !S_ISDIR(st.st_mode)) r = -ENOTDIR;
    if (r < 0) {
      host::sys(SYS_close, fd);
      return r;
    }
    dir = fd;
    pos = end;
  }
  close_fd(dir, h.root_fd);
  return 0;
}

// The symlink that made a one-name open in a cached folder fail with
// ELOOP, as find_link does for a path: a redirect with `follow`, else 0.
long link_in_base(HostFs& h, Lookup& lk, const Base& b, bool follow) {
  char target[kPathMax];
  long len = host::sys(SYS_readlinkat, b.dir, b.name, target, sizeof target - 1);
  if (len < 0) return find_link(h, lk, lk.path, follow);  // changed meanwhile: the long way
  struct stat node;
  if (!follow || parse_node_link(std::string_view(target, (size_t)len), &node)) return 0;
  return vfs_make_redirect(lk, lk.path, std::string_view(target, (size_t)len), std::string_view());
}

// Opens lk's path, following (or not) its last component. A symlink on the
// way comes back as kRedirect.
long open_path(HostFs& h, Lookup& lk, uint64_t flags, uint64_t mode) {
  long fd = open_beneath(h, lk, flags, mode);
  if (fd != -ELOOP) return fd;
  Base b;
  bool follow = !(flags & O_NOFOLLOW);
  long r = base_of(h, lk, &b) ? link_in_base(h, lk, b, follow) : find_link(h, lk, lk.path, follow);
  return r < 0 ? r : -ELOOP;
}

// The folder holding lk's last component, and that component: the cached
// folder's own descriptor (borrowed) or one opened from the root folder.
struct Parent {
  long fd = -1;
  bool owned = false;
  const char* name = nullptr;
  Base base;
  Parent() = default;
  Parent(const Parent&) = delete;
  Parent& operator=(const Parent&) = delete;
  ~Parent() {
    if (owned && fd >= 0) host::sys(SYS_close, fd);
  }
};

long open_parent(HostFs& h, Lookup& lk, Parent* p) {
  if (base_of(h, lk, &p->base)) {
    p->fd = p->base.dir;
    p->name = p->base.name;
    return 0;
  }
  std::string_view parent, last;
  split_last(lk.path, &parent, &last);
  if (last.empty()) return -EBUSY;  // the root folder itself
  char dir[kPathMax];
  if (!copy_cstr(dir, sizeof dir, parent)) return -ENAMETOOLONG;
  long fd = hostfs_open_beneath(h, h.root_fd, hostfs_relative(dir), O_PATH | O_DIRECTORY, 0);
  if (fd == -ELOOP) {
    long r = find_link(h, lk, lk.path, false);
    return r < 0 ? r : -ELOOP;
  }
  if (fd < 0) return fd;
  p->fd = fd;
  p->owned = true;
  p->name = last.data();  // the tail of lk.path: NUL-terminated
  return 0;
}

long redirect_to(Lookup& lk, const char* target, long len) {
  return vfs_make_redirect(lk, lk.path, std::string_view(target, (size_t)len), std::string_view());
}

// With lk.follow, a symlink as the last component is the VFS's to follow
// (a device node is not a link to the guest).
long redirect_last(Lookup& lk, int dir, const char* name) {
  if (!lk.follow) return 0;
  char target[kPathMax];
  long len = host::sys(SYS_readlinkat, dir, name, target, sizeof target - 1);
  if (len < 0) return len == -EINVAL || len == -ENOENT ? 0 : len;
  struct stat node;
  if (parse_node_link(std::string_view(target, (size_t)len), &node)) return 0;
  return redirect_to(lk, target, len);
}

// Runs op(dirfd, name) in lk's parent directory.
template <typename Op>
long in_parent(Filesystem& fs, Lookup& lk, Op op) {
  Parent p;
  long r = open_parent(hostfs_of(fs), lk, &p);
  if (r < 0) return r;
  return op((int)p.fd, p.name);
}

// lk's file looked up once: an O_PATH descriptor of it (its last component
// not followed), the host's stat of it and what the guest sees. With
// lk.follow an ordinary symlink comes back as kRedirect instead.
struct Found {
  long fd = -1;
  struct stat host;
  GuestNode guest;
  ~Found() {
    if (fd >= 0) host::sys(SYS_close, fd);
  }
};

long look_up(HostFs& h, Lookup& lk, Found* f) {
  long fd = open_beneath(h, lk, O_PATH | O_NOFOLLOW, 0);
  if (fd == -ELOOP) {  // a link on the way
    long r = find_link(h, lk, lk.path, false);
    return r < 0 ? r : -ELOOP;
  }
  if (fd < 0) return fd;
  f->fd = fd;
  long r = host::sys(SYS_fstat, fd, &f->host);
  if (r < 0) return r;
  guest_view(h, (int)fd, f->host, &f->guest);
  if (lk.follow && S_ISLNK(f->host.st_mode) && !f->guest.device) {
    char target[kPathMax];
    long len = host::sys(SYS_readlinkat, fd, "", target, sizeof target - 1);
    return len < 0 ? len : redirect_to(lk, target, len);
  }
  return 0;
}

// A device node (kept as a node link) opens the kernel's device of that number.
long open_device(Task& t, Lookup& lk, const struct stat& st, int flags, File** out) {
  if (lk.mount && (lk.mount->flags & MS_NODEV)) return -EACCES;
  if (!passes_dac(creds_of(t)))
    if (long r = may_open(t, st, flags)) return r;
  return S_ISCHR(st.st_mode) ? devfs_open_rdev(t, st.st_rdev, flags, out) : devfs_open_block(t, st.st_rdev, flags, out);
}

// open(2)'s O_CREAT with the guest's owner kept when the host cannot hold
// it: the file is made exclusively first, so only a file this call made
// gets the record.
long open_creating(Task& t, HostFs& h, Lookup& lk, int flags, int mode, bool* made) {
  const Creds& c = creds_of(t);
  // The host file never gets set-id bits unless they are the host's to keep.
  uint32_t host_mode = (uint32_t)mode & (h.host_owners ? 07777 : 0777);
  *made = false;
  bool tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
  if (!((flags & O_CREAT) || tmpfile) || !new_file_needs_adoption(h, (uint32_t)mode, c.fsuid, c.fsgid))
    return open_path(h, lk, (uint32_t)flags, (flags & (O_CREAT | __O_TMPFILE)) ? host_mode : 0);
  if (tmpfile || (flags & O_EXCL)) {
    long fd = open_path(h, lk, (uint32_t)flags, host_mode);
    *made = fd >= 0;
    return fd;
  }
  long fd = open_path(h, lk, (uint32_t)(flags | O_EXCL), host_mode);
  if (fd != -EEXIST) {
    *made = fd >= 0;
    return fd;
  }
  return open_path(h, lk, (uint32_t)(flags & ~O_CREAT), 0);
}

// The host checks the host user's rights; a guest user's own are the
// VFS's (perm.h), on what fs_stat shows the guest.
// The open file of host descriptor fd (which moves in).
long file_of_host_fd(Filesystem& fs, long fd, int flags, File** out) {
  File* f = file_alloc(hostfs_of(fs).heap, &kHostFileOps, (uint32_t)flags & ~O_CLOEXEC, (int)fd);
  if (!f) {
    host::sys(SYS_close, fd);
    return -ENOMEM;
  }
  f->fs = &fs;
  *out = f;
  return 0;
}

long fs_open(Task& t, Filesystem& fs, Lookup& lk, int flags, int mode, File** out) {
  HostFs& h = hostfs_of(fs);
  bool made = false;
  long fd = open_creating(t, h, lk, flags, mode, &made);
  if (fd == -ELOOP && !(flags & O_PATH)) {
    // A device node is a link to the host; to the guest it is a device.
    Lookup node = lk;
    node.follow = false;
    Found f;
    if (look_up(h, node, &f) == 0 && f.guest.device) return open_device(t, lk, f.guest.st, flags, out);
  }
  if (fd < 0) return fd;
  if (made) adopt_new_file(h, (int)fd, (uint32_t)mode, creds_of(t).fsuid, creds_of(t).fsgid);
  return file_of_host_fd(fs, fd, flags, out);
}

// A removed folder (FsOps::open_dentry) reopened from its dentry's own
// descriptor: one removed on the host too (no links left) is nowhere a
// host process could have moved it, so its descriptor serves even where
// it no longer lies inside the root.
long fs_open_dentry(Task&, Filesystem& fs, Mount&, Dentry& d, int flags, File** out) {
  HostFs& h = hostfs_of(fs);
  int dir = hostfs_dentry_fd(h, &d);
  HostInode* n = d.fs == &fs ? hostfs_inode(d.inode) : nullptr;
  struct stat st;
  if (dir < 0 && n && n->fd >= 0 && host::sys(SYS_fstat, n->fd, &st) == 0 && st.st_nlink == 0) dir = n->fd;
  if (dir < 0) return -ENOENT;
  long fd = hostfs_open_beneath(h, dir, ".", (uint64_t)(flags & ~(O_CREAT | O_TRUNC | O_EXCL)), 0);
  if (fd < 0) return fd;
  return file_of_host_fd(fs, fd, flags, out);
}

// stat of a name in a cached folder: one fstatat, no descriptor of the
// file (only a symlink or a file with a guest record asks again).
long stat_in_base(HostFs& h, Lookup& lk, const Base& b, struct stat* out) {
  struct stat host;
  long r = host::sys(SYS_newfstatat, b.dir, b.name, &host, AT_SYMLINK_NOFOLLOW);
  if (r < 0) return r;
  GuestNode g;
  guest_view_at(h, b.dir, b.name, host, &g);
  if (lk.follow && S_ISLNK(host.st_mode) && !g.device) {
    char target[kPathMax];
    long len = host::sys(SYS_readlinkat, b.dir, b.name, target, sizeof target - 1);
    if (len == -EINVAL) return -EAGAIN;  // no longer a link: asked again by the caller
    return len < 0 ? len : redirect_to(lk, target, len);
  }
  *out = g.st;
  return 0;
}

long fs_stat(Task&, Filesystem& fs, Lookup& lk, struct stat* out) {
  HostFs& h = hostfs_of(fs);
  Base b;
  if (base_of(h, lk, &b)) {
    long r = stat_in_base(h, lk, b, out);
    if (r != -EAGAIN) return r;
  }
  Found f;
  long r = look_up(h, lk, &f);
  if (r == 0) *out = f.guest.st;
  return r;
}

long fs_readlink(Task&, Filesystem& fs, Lookup& lk, char* buf, size_t n) {
  Lookup link = lk;
  link.follow = false;
  Found f;
  long r = look_up(hostfs_of(fs), link, &f);
  if (r < 0) return r;
  if (!S_ISLNK(f.host.st_mode) || f.guest.device) return -EINVAL;  // not a symlink
  return host::sys(SYS_readlinkat, f.fd, "", buf, n);
}

long fs_access(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  Found f;
  long r = look_up(hostfs_of(fs), lk, &f);
  if (r < 0) return r;
  // The host's rights first (a read-only host file system, the host
  // user's own permissions); a device node is judged by its guest mode.
  if (!f.guest.device) r = host::sys(SYS_faccessat2, f.fd, "", mode, AT_EMPTY_PATH);
  if (r == 0 && (!passes_dac(creds_of(t)) || f.guest.device)) r = may_access(t, f.guest.st, mode);
  return r;
}

long fs_statfs(Task&, Filesystem& fs, Lookup& lk, struct statfs* out) {
  long fd = open_path(hostfs_of(fs), lk, O_PATH, 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_fstatfs, fd, out);
  host::sys(SYS_close, fd);
  return r;
}

// After the host made `name` in `dir` for the guest: its guest owner and
// set-id bits, when the host file cannot show them.
void adopt_named(Task& t, HostFs& h, int dir, const char* name, uint32_t mode, uint32_t extra_flags) {
  const Creds& c = creds_of(t);
  if (!new_file_needs_adoption(h, mode, c.fsuid, c.fsgid)) return;
  long fd = host::sys(SYS_openat, dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | extra_flags);
  if (fd < 0) return;
  adopt_new_file(h, (int)fd, mode, c.fsuid, c.fsgid);
  host::sys(SYS_close, fd);
}

long fs_mkdir(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  HostFs& h = hostfs_of(fs);
  return in_parent(fs, lk, [&](int dir, const char* name) {
    // mkdir ignores set-id bits (a folder inherits set-group-ID from its
    // folder); the host filter refuses them, so they are not passed.
    long r = host::sys(SYS_mkdirat, dir, name, mode & (h.host_owners ? 07777 : 01777));
    if (r == 0) adopt_named(t, h, dir, name, (uint32_t)mode & ~(uint32_t)(S_ISVTX | S_ISGID), O_DIRECTORY);
    return r;
  });
}

long fs_mknod(Task& t, Filesystem& fs, Lookup& lk, int mode, uint64_t dev) {
  HostFs& h = hostfs_of(fs);
  uint32_t type = (uint32_t)mode & S_IFMT;
  return in_parent(fs, lk, [&](int dir, const char* name) -> long {
    if ((type == S_IFCHR || type == S_IFBLK) && !h.host_owners) {
      char target[96];
      long r = format_node_link((uint32_t)mode, dev, creds_of(t).fsuid, creds_of(t).fsgid, target, sizeof target);
      return r < 0 ? r : host::sys(SYS_symlinkat, target, dir, name);
    }
    uint32_t host_mode = h.host_owners ? (uint32_t)mode : type | ((uint32_t)mode & 0777);
    long r = host::sys(SYS_mknodat, dir, name, host_mode, dev);
    if (r == 0 && type == S_IFREG) adopt_named(t, h, dir, name, (uint32_t)mode & 07777, 0);
    return r;
  });
}

long fs_unlink(Task&, Filesystem& fs, Lookup& lk) {
  return in_parent(fs, lk, [&](int dir, const char* name) { return host::sys(SYS_unlinkat, dir, name, 0); });
}

long fs_rmdir(Task&, Filesystem& fs, Lookup& lk) {
  return in_parent(fs, lk, [&](int dir, const char* name) {
    return host::sys(SYS_unlinkat, dir, name, AT_REMOVEDIR);
  });
}

long fs_symlink(Task&, Filesystem& fs, Lookup& lk, const char* target) {
  // A guest's link must not pass for one of flatux's device nodes.
  if (starts_with(target, kNodeMagic)) return -EINVAL;
  return in_parent(fs, lk, [&](int dir, const char* name) {
    return host::sys(SYS_symlinkat, target, dir, name);
  });
}

long fs_link(Task&, Filesystem& fs, Lookup& a, Lookup& b) {
  return in_parent(fs, a, [&](int adir, const char* aname) {
    long r = redirect_last(a, adir, aname);
    if (r) return r;
    // linkat without AT_SYMLINK_FOLLOW: a link swapped in meanwhile is
    // linked itself, never followed.
    return in_parent(fs, b, [&](int bdir, const char* bname) {
      return host::sys(SYS_linkat, adir, aname, bdir, bname, 0);
    });
  });
}

long fs_link_file(Task&, Filesystem& fs, File& f, Lookup& lk) {
  if (f.host_fd < 0) return -ENOENT;
  // Through /proc/self/fd: linkat's AT_EMPTY_PATH wants privileges this
  // process does not have.
  FdPath p(f.host_fd);
  return in_parent(fs, lk, [&](int dir, const char* name) {
    return host::sys(SYS_linkat, AT_FDCWD, p.s, dir, name, AT_SYMLINK_FOLLOW);
  });
}

long fs_rename(Task&, Filesystem& fs, Lookup& a, Lookup& b, unsigned flags) {
  return in_parent(fs, a, [&](int adir, const char* aname) {
    return in_parent(fs, b, [&](int bdir, const char* bname) {
      return host::sys(SYS_renameat2, adir, aname, bdir, bname, flags);
    });
  });
}

// A device node's owner or mode: its link written anew, then moved over
// the old one.
long set_node_attrs(Task&, HostFs& h, Lookup& lk, const GuestNode& g, const Attr& a) {
  uint32_t mode = (g.st.st_mode & S_IFMT) | ((a.mask & kAttrMode) ? a.mode & 07777 : g.st.st_mode & 07777);
  uint32_t uid = (a.mask & kAttrUid) ? a.uid : g.st.st_uid;
  uint32_t gid = (a.mask & kAttrGid) ? a.gid : g.st.st_gid;
  char target[96];
  long r = format_node_link(mode, g.st.st_rdev, uid, gid, target, sizeof target);
  if (r < 0) return r;
  Parent p;
  if ((r = open_parent(h, lk, &p)) < 0) return r;
  int dir = (int)p.fd;
  const char* name = p.name;
  char tmp[64];
  KFmt tf(tmp, sizeof tmp);
  uint64_t nonce = 0;
  host::sys(SYS_getrandom, &nonce, sizeof nonce, 0);
  tf.str(".flatux-node-").hexraw(nonce).c_str();
  r = host::sys(SYS_symlinkat, target, dir, tmp);
  if (r == 0) {
    r = host::sys(SYS_renameat2, dir, tmp, dir, name, 0);
    if (r < 0) host::sys(SYS_unlinkat, dir, tmp, 0);
  }
  return r;
}

long fs_setattr(Task& t, Filesystem& fs, Lookup& lk, const Attr& a) {
  HostFs& h = hostfs_of(fs);
  Found f;
  long r = look_up(h, lk, &f);
  if (r < 0) return r;
  // A host device node (the host's /dev under the whole host as root) is
  // the host's: its owner, mode and times are not the guest's to change.
  // (A device node a guest made is a node link, and changes freely.)
  bool host_device = S_ISCHR(f.host.st_mode) || S_ISBLK(f.host.st_mode);
  if (host_device && !h.host_owners && (a.mask & (kAttrUid | kAttrGid | kAttrMode | kAttrAtime | kAttrMtime)))
    return -EPERM;
  if (a.mask & (kAttrUid | kAttrGid | kAttrMode)) {
    r = f.guest.device ? set_node_attrs(t, h, lk, f.guest, a) : set_guest_owner_mode(h, (int)f.fd, f.host, f.guest, a);
    hostfs_attrs_changed(t, lk);
    if (r < 0) return r;
  }
  if (a.mask & kAttrSize) {
    if (!S_ISREG(f.host.st_mode)) return -EINVAL;
    // The file looked up, through its magic link: no open of it, which a
    // host inotify watch would report as one.
    FdPath p(f.fd);
    r = host::sys(SYS_truncate, p.s, a.size);
    if (r < 0) return r;
  }
  if (a.mask & (kAttrAtime | kAttrMtime)) {
    timespec ts[2] = {a.atime, a.mtime};
    if (!(a.mask & kAttrAtime)) ts[0].tv_nsec = UTIME_OMIT;
    if (!(a.mask & kAttrMtime)) ts[1].tv_nsec = UTIME_OMIT;
    r = host::sys(SYS_utimensat, f.fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
  }
  return r;
}

// The current host path of an open directory, made relative to the root
// (so a renamed directory keeps working as a dirfd and a cwd).
long fs_dir_path(Task&, Filesystem& fs, File& f, char* out, size_t n) {
  if (f.host_fd < 0) return -ENOTDIR;
  return hostfs_inner_path(hostfs_of(fs), f.host_fd, out, n);
}

long fs_xattr(Task&, Filesystem& fs, Lookup& lk, XattrOp& op) {
  HostFs& h = hostfs_of(fs);
  Found f;
  long r = look_up(h, lk, &f);
  if (r < 0) return r;
  if (f.guest.device) return op.kind == XattrOp::kSet ? -EPERM : op.kind == XattrOp::kList ? 0 : -ENODATA;
  return hostfs_fd_xattr(h.heap, (int)f.fd, op);
}

// mountinfo's root field: the host folder it shows (not for the host's /).
const char* shown_root(Filesystem& fs) {
  const HostFs& h = *static_cast<HostFs*>(fs.priv);
  return h.root_is_slash ? nullptr : h.root;
}

const FsOps kHostFsOps = {
    .name = "hostfs",
    .open = fs_open,
    .stat = fs_stat,
    .readlink = fs_readlink,
    .access = fs_access,
    .statfs = fs_statfs,
    .mkdir = fs_mkdir,
    .mknod = fs_mknod,
    .unlink = fs_unlink,
    .rmdir = fs_rmdir,
    .symlink = fs_symlink,
    .link = fs_link,
    .rename = fs_rename,
    .setattr = fs_setattr,
    .link_file = fs_link_file,
    .dir_path = fs_dir_path,
    .xattr = fs_xattr,
    .lookup = hostfs_lookup,
    .open_dentry = fs_open_dentry,
    .revalidate = hostfs_revalidate,
    .dir_perms = hostfs_dir_perms,
    .shown_root = shown_root,
};

// A hostfs over host folder `fd` (taken over), whose host path is `path`.
long create_at(Kernel& k, long fd, const char* path, Filesystem** out) {
  HostFs* h = k.heap->make<HostFs>();
  Filesystem* fs = k.heap->make<Filesystem>();
  if (!h || !fs || !copy_cstr(h->root, sizeof h->root, path)) {
    k.heap->destroy_obj(h);
    k.heap->destroy_obj(fs);
    host::sys(SYS_close, fd);
    return -ENOMEM;
  }
  h->heap = k.heap;
  h->root_fd = (int)fd;
  h->root_len = strlen(h->root);
  while (h->root_len > 1 && h->root[h->root_len - 1] == '/') h->root[--h->root_len] = 0;
  h->root_is_slash = h->root_len == 1 && h->root[0] == '/';
  h->host_owners = k.cfg.hostfs_host_owners;
  h->ticks_per_ms = hostfs_measure_ticks_per_ms();
  h->host_uid = (uint32_t)host::sys(SYS_geteuid);
  h->host_gid = (uint32_t)host::sys(SYS_getegid);
  struct stat st;
  if (host::sys(SYS_fstat, fd, &st) == 0) fs->dev = st.st_dev;
  fs->ops = &kHostFsOps;
  fs->priv = h;
  *out = fs;
  return 0;
}

// mount -t hostfs none /mnt -o /host/dir (UML's syntax); no option: the
// kernel's host root. The folder is resolved beneath the kernel's host root
// (flatux run --root, or hostfs= when booting) in one host call that
// follows no link out of it, and that descriptor becomes the mount: a
// folder swapped for a link meanwhile leads nowhere.
long hostfs_mount(Kernel& k, const char*, unsigned long, const char* data, Filesystem** out) {
  std::string_view want(data && *data ? data : k.cfg.root);
  std::string_view root(k.cfg.root);
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (want.empty() || want[0] != '/') return -EINVAL;
  bool slash = root == "/";
  if (!slash && !(starts_with(want, root) && (want.size() == root.size() || want[root.size()] == '/')))
    return -EPERM;  // a guest confined to a folder must not mount its way out of it
  char rel[kPathMax];
  std::string_view inside = tail(want, slash ? 1 : root.size());
  while (!inside.empty() && inside[0] == '/') inside = tail(inside, 1);
  if (!copy_cstr(rel, sizeof rel, inside.empty() ? std::string_view(".") : inside)) return -ENAMETOOLONG;
  long anchor = host::sys(SYS_open, k.cfg.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (anchor < 0) return anchor;
  long fd = host::openat2_listed((int)anchor, rel, O_PATH | O_DIRECTORY, host::Beneath::kMount);
  host::sys(SYS_close, anchor);
  if (fd == -EXDEV) return -EPERM;
  if (fd < 0) return fd;
  char canon[kPathMax];
  FdPath p(fd);
  long len = host::sys(SYS_readlinkat, AT_FDCWD, p.s, canon, sizeof canon - 1);
  if (len < 0) {
    host::sys(SYS_close, fd);
    return len;
  }
  canon[len] = 0;
  return create_at(k, fd, canon, out);
}

void hostfs_unmount(Filesystem& fs) {
  HostFs& h = hostfs_of(fs);
  Heap* heap = h.heap;
  host::sys(SYS_close, h.root_fd);
  heap->destroy_obj(&h);
  heap->destroy_obj(&fs);
}

}  // namespace

const FsType kHostFsType = {.name = "hostfs", .mount = hostfs_mount, .unmount = hostfs_unmount};

long hostfs_open_object(Filesystem& fs, Lookup& lk) {
  if (fs.ops != &kHostFsOps) return -EXDEV;
  return open_path(hostfs_of(fs), lk, O_PATH | (lk.follow ? 0 : O_NOFOLLOW), 0);
}

HostFs* hostfs_of_file(const File& f) {
  return f.fs && f.fs->ops == &kHostFsOps ? &hostfs_of(*f.fs) : nullptr;
}

long hostfs_create(Kernel& k, const char* host_root, Filesystem** out) {
  long fd = host::sys(SYS_open, host_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fd;
  return create_at(k, fd, host_root, out);
}

}  // namespace flatux
