// hostfs: a host folder as a guest filesystem, confined to that folder.
//
// Confinement: every lookup is an openat2(2) from the root folder with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS. The VFS hands over normalised
// paths (no "..") and the host follows no symlink at all, so nothing can
// lead outside the folder. When a path does contain a symlink the host
// refuses it (ELOOP); the walk is then redone one component at a time to
// find the link, and the link goes back to the VFS as a redirect, which
// resolves it in the guest's namespace (mounts, chroot, "..").
#include "kernel/fs/hostfs/hostfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
// open(2) ignores unknown flag bits, openat2(2) rejects them: keep the known ones.
constexpr uint32_t kKnownOpenFlags = O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |
                                     O_NONBLOCK | O_DSYNC | O_ASYNC | O_DIRECT | O_LARGEFILE |
                                     O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_SYNC |
                                     O_PATH | O_TMPFILE;

// The inner path relative to the root folder ("." for the root).
const char* relative(const char* inner) {
  while (*inner == '/') inner++;
  return *inner ? inner : ".";
}

long open_beneath(HostFs& h, const char* inner, uint64_t flags, uint64_t mode) {
  open_how how{};
  // openat2 takes only these with O_PATH, and ignores nothing.
  uint64_t keep = (flags & O_PATH) ? (O_PATH | O_DIRECTORY | O_NOFOLLOW) : (kKnownOpenFlags | O_NOCTTY);
  how.flags = (flags & keep) | O_CLOEXEC;
  how.mode = (flags & (O_CREAT | __O_TMPFILE)) ? (mode & 07777) : 0;
  how.resolve = kResolve;
  return host::sys(SYS_openat2, h.root_fd, relative(inner), &how, sizeof how);
}

void close_fd(long fd, int keep) {
  if (fd >= 0 && fd != keep) host::sys(SYS_close, fd);
}

// After the host refused a path with ELOOP: walks it a component at a
// time and turns the first symlink into a redirect. 0 when the only link
// is the last component and `follow_last` is off (the caller's ELOOP or
// "operate on the link" case), or an errno from the walk.
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
      if (last && !follow_last) {
        host::sys(SYS_close, fd);
        return 0;
      }
      char target[kPathMax];
      long len = host::sys(SYS_readlinkat, fd, "", target, sizeof target - 1);
      host::sys(SYS_close, fd);
      if (len < 0) return len;
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

// Opens lk's path, following (or not) its last component. A symlink on the
// way comes back as kRedirect.
long open_path(HostFs& h, Lookup& lk, uint64_t flags, uint64_t mode) {
  long fd = open_beneath(h, lk.path, flags, mode);
  if (fd != -ELOOP) return fd;
  long r = find_link(h, lk, lk.path, !(flags & O_NOFOLLOW));
  return r < 0 ? r : -ELOOP;
}

// The parent directory of lk's path, opened, and the last component.
long open_parent(HostFs& h, Lookup& lk, const char** name) {
  std::string_view parent, last;
  split_last(lk.path, &parent, &last);
  if (last.empty()) return -EBUSY;  // the root folder itself
  char dir[kPathMax];
  if (!copy_cstr(dir, sizeof dir, parent)) return -ENAMETOOLONG;
  long fd = open_beneath(h, dir, O_PATH | O_DIRECTORY, 0);
  if (fd == -ELOOP) {
    long r = find_link(h, lk, lk.path, false);
    return r < 0 ? r : -ELOOP;
  }
  *name = last.data();  // the tail of lk.path: NUL-terminated
  return fd;
}

// With lk.follow, a symlink as the last component is the VFS's to follow.
long redirect_last(Lookup& lk, int dir, const char* name) {
  if (!lk.follow) return 0;
  char target[kPathMax];
  long len = host::sys(SYS_readlinkat, dir, name, target, sizeof target - 1);
  if (len < 0) return len == -EINVAL || len == -ENOENT ? 0 : len;
  return vfs_make_redirect(lk, lk.path, std::string_view(target, (size_t)len), std::string_view());
}

// Runs op(dirfd, name) in lk's parent directory.
template <typename Op>
long in_parent(Filesystem& fs, Lookup& lk, Op op) {
  const char* name = nullptr;
  long dir = open_parent(hostfs_of(fs), lk, &name);
  if (dir < 0) return dir;
  long r = op((int)dir, name);
  host::sys(SYS_close, dir);
  return r;
}

// The host checks the host user's rights; a guest user's own are the
// VFS's (perm.h).
long fs_open(Task&, Filesystem& fs, Lookup& lk, int flags, int mode, File** out) {
  HostFs& h = hostfs_of(fs);
  long fd = open_path(h, lk, (uint32_t)flags, (uint32_t)mode);
  if (fd < 0) return fd;
  File* f = file_alloc(h.heap, &kHostFileOps, (uint32_t)flags & ~O_CLOEXEC, (int)fd);
  if (!f) {
    host::sys(SYS_close, fd);
    return -ENOMEM;
  }
  f->fs = &fs;
  *out = f;
  return 0;
}

long fs_stat(Task&, Filesystem& fs, Lookup& lk, struct stat* out) {
  long fd = open_path(hostfs_of(fs), lk, O_PATH | (lk.follow ? 0 : O_NOFOLLOW), 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_fstat, fd, out);
  host::sys(SYS_close, fd);
  return r;
}

long fs_readlink(Task&, Filesystem& fs, Lookup& lk, char* buf, size_t n) {
  long fd = open_path(hostfs_of(fs), lk, O_PATH | O_NOFOLLOW, 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_readlinkat, fd, "", buf, n);
  host::sys(SYS_close, fd);
  return r == -ENOENT ? -EINVAL : r;  // not a symlink
}

long fs_access(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  long fd = open_path(hostfs_of(fs), lk, O_PATH | (lk.follow ? 0 : O_NOFOLLOW), 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_faccessat2, fd, "", mode, AT_EMPTY_PATH);
  if (r == 0 && creds_of(t).fsuid != 0) {
    struct stat st;
    r = host::sys(SYS_fstat, fd, &st);
    if (r == 0) r = may_access(t, st, mode);
  }
  host::sys(SYS_close, fd);
  return r;
}

long fs_statfs(Task&, Filesystem& fs, Lookup& lk, struct statfs* out) {
  long fd = open_path(hostfs_of(fs), lk, O_PATH, 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_fstatfs, fd, out);
  host::sys(SYS_close, fd);
  return r;
}

long fs_mkdir(Task&, Filesystem& fs, Lookup& lk, int mode) {
  return in_parent(fs, lk, [&](int dir, const char* name) { return host::sys(SYS_mkdirat, dir, name, mode); });
}

long fs_mknod(Task&, Filesystem& fs, Lookup& lk, int mode, uint64_t dev) {
  return in_parent(fs, lk, [&](int dir, const char* name) {
    return host::sys(SYS_mknodat, dir, name, mode, dev);
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
  return in_parent(fs, lk, [&](int dir, const char* name) {
    return host::sys(SYS_symlinkat, target, dir, name);
  });
}

long fs_link(Task&, Filesystem& fs, Lookup& a, Lookup& b) {
  return in_parent(fs, a, [&](int adir, const char* aname) {
    long r = redirect_last(a, adir, aname);
    if (r) return r;
    return in_parent(fs, b, [&](int bdir, const char* bname) {
      return host::sys(SYS_linkat, adir, aname, bdir, bname, 0);
    });
  });
}

// Through the descriptor's magic link, which needs no privilege
// (AT_EMPTY_PATH wants CAP_DAC_READ_SEARCH on older hosts).
long fs_link_file(Task&, Filesystem& fs, File& f, Lookup& lk) {
  if (f.host_fd < 0) return -ENOENT;
  char proc[48];
  KFmt p(proc, sizeof proc);
  p.str("/proc/self/fd/").dec(f.host_fd);
  return in_parent(fs, lk, [&](int dir, const char* name) {
    return host::sys(SYS_linkat, AT_FDCWD, p.c_str(), dir, name, AT_SYMLINK_FOLLOW);
  });
}

long fs_rename(Task&, Filesystem& fs, Lookup& a, Lookup& b, unsigned flags) {
  return in_parent(fs, a, [&](int adir, const char* aname) {
    return in_parent(fs, b, [&](int bdir, const char* bname) {
      return host::sys(SYS_renameat2, adir, aname, bdir, bname, flags);
    });
  });
}

long fs_setattr(Task&, Filesystem& fs, Lookup& lk, const Attr& a) {
  return in_parent(fs, lk, [&](int dir, const char* name) -> long {
    long r = redirect_last(lk, dir, name);
    if (r) return r;
    if (a.mask & (kAttrUid | kAttrGid)) {
      r = host::sys(SYS_fchownat, dir, name, (a.mask & kAttrUid) ? a.uid : -1u,
                    (a.mask & kAttrGid) ? a.gid : -1u, AT_SYMLINK_NOFOLLOW);
      if (r < 0) return r;
    }
    if (a.mask & kAttrMode) {
      struct stat st;
      r = host::sys(SYS_newfstatat, dir, name, &st, AT_SYMLINK_NOFOLLOW);
      if (r == 0 && S_ISLNK(st.st_mode)) r = -EOPNOTSUPP;  // links have no mode of their own
      if (r == 0) r = host::sys(SYS_fchmodat, dir, name, a.mode);
      if (r < 0) return r;
    }
    if (a.mask & kAttrSize) {
      long fd = host::sys(SYS_openat, dir, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) return fd;
      r = host::sys(SYS_ftruncate, fd, a.size);
      host::sys(SYS_close, fd);
      if (r < 0) return r;
    }
    if (a.mask & (kAttrAtime | kAttrMtime)) {
      timespec ts[2] = {a.atime, a.mtime};
      if (!(a.mask & kAttrAtime)) ts[0].tv_nsec = UTIME_OMIT;
      if (!(a.mask & kAttrMtime)) ts[1].tv_nsec = UTIME_OMIT;
      r = host::sys(SYS_utimensat, dir, name, ts, AT_SYMLINK_NOFOLLOW);
    }
    return r;
  });
}

// The current host path of an open directory, made relative to the root
// (so a renamed directory keeps working as a dirfd and a cwd).
long fs_dir_path(Task&, Filesystem& fs, File& f, char* out, size_t n) {
  HostFs& h = hostfs_of(fs);
  if (f.host_fd < 0) return -ENOTDIR;
  char proc[64];
  KFmt p(proc, sizeof proc);
  p.str("/proc/self/fd/").dec(f.host_fd);
  char host_path[kPathMax];
  long len = host::sys(SYS_readlinkat, AT_FDCWD, p.c_str(), host_path, sizeof host_path - 1);
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
};

// mount -t hostfs none /mnt -o /host/dir (UML's syntax); no option: "/".
long hostfs_mount(Kernel& k, const char*, unsigned long, const char* data, Filesystem** out) {
  char canon[kPathMax];
  const char* dir = data && *data ? data : "/";
  long fd = host::sys(SYS_open, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fd;
  char proc[48];
  KFmt p(proc, sizeof proc);
  p.str("/proc/self/fd/").dec(fd);
  long len = host::sys(SYS_readlinkat, AT_FDCWD, p.c_str(), canon, sizeof canon - 1);
  host::sys(SYS_close, fd);
  if (len < 0) return len;
  canon[len] = 0;
  // A guest confined to a folder (flatux run --root) must not mount its way
  // out of it: the host folder has to lie inside the kernel's own root.
  std::string_view c(canon), root(k.cfg.root);
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  bool inside = root == "/" || (starts_with(c, root) && (c.size() == root.size() || c[root.size()] == '/'));
  if (!inside) return -EPERM;
  return hostfs_create(k.heap, canon, out);
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

long hostfs_create(Heap* heap, const char* host_root, Filesystem** out) {
  long fd = host::sys(SYS_open, host_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fd;
  HostFs* h = heap->make<HostFs>();
  Filesystem* fs = heap->make<Filesystem>();
  if (!h || !fs || !copy_cstr(h->root, sizeof h->root, host_root)) {
    heap->destroy_obj(h);
    heap->destroy_obj(fs);
    host::sys(SYS_close, fd);
    return -ENOMEM;
  }
  h->heap = heap;
  h->root_fd = (int)fd;
  h->root_len = strlen(h->root);
  while (h->root_len > 1 && h->root[h->root_len - 1] == '/') h->root[--h->root_len] = 0;
  h->root_is_slash = h->root_len == 1 && h->root[0] == '/';
  struct stat st;
  if (host::sys(SYS_fstat, fd, &st) == 0) fs->dev = st.st_dev;
  fs->ops = &kHostFsOps;
  fs->priv = h;
  *out = fs;
  return 0;
}

}  // namespace flatux
