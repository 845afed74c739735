// Creating, removing and renaming names (mkdir, mknod, unlink, rmdir,
// symlink, link, rename): the checks every filesystem shares (read-only
// mounts, mount points, crossing mounts, and Linux's namei permission
// checks through perm.h on what the filesystem's stat says), then the
// filesystem's own operation.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include "kernel/vfs/fsnotify.h"
#include "kernel/vfs/namei.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/perm.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

bool is_mount_root(const Lookup& lk) { return lk.mount->is_root(lk.path); }

// Whether a mount stands on the name at lk, whichever mount it was
// reached through (a bind mount of its folder shows no mount there):
// rmdir and rename leave it alone, as Linux's is_local_mountpoint.
bool is_mount_point(const Lookup& lk) {
  return lk.dir && !lk.name.empty() && lk.dir->cache->mounted(*lk.dir, lk.name);
}

bool busy(const Lookup& lk) { return is_mount_root(lk) || is_mount_point(lk); }

// Stats the directory holding lk's last component. A symlink on the way
// redirects lk itself (the name appended to the parent's target).
long stat_parent(Task& t, Lookup& lk, struct stat* st) {
  std::string_view parent, name;
  split_last(lk.path, &parent, &name);
  char dir[kPathMax];
  if (!copy_cstr(dir, sizeof dir, parent)) return -ENAMETOOLONG;
  Lookup plk(dir, true, lk.mount);
  Filesystem& fs = *lk.mount->fs;
  long r = fs.ops->stat(t, fs, plk, st);
  if (r != kRedirect) return r;
  KFmt f(lk.redirect, sizeof lk.redirect);
  f.str(plk.redirect).str("/").str(name);
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  lk.redirect_absolute = plk.redirect_absolute;
  lk.redirected = true;
  return kRedirect;
}

// The directory holding lk's last component and, with `victim`, the
// entry itself (lstat): what the permission policy judges.
long stat_dir_and_victim(Task& t, Lookup& lk, struct stat* dir, struct stat* victim) {
  if (long r = stat_parent(t, lk, dir)) return r;
  if (!victim) return 0;
  Filesystem& fs = *lk.mount->fs;
  Lookup own(lk.path, false, lk.mount);
  return fs.ops->stat(t, fs, own, victim);
}

// A new name at lk (may_create). A name that exists is EEXIST before the
// directory's write permission, once the caller may search it.
long may_create_at(Task& t, Lookup& lk) {
  const Creds& c = creds_of(t);
  if (passes_dac(c)) return 0;
  struct stat dir, there;
  if (long r = stat_dir_and_victim(t, lk, &dir, nullptr)) return r;
  long r = may_create(c, perms_of(dir));
  if (r && may_lookup(c, perms_of(dir)) == 0 && stat_dir_and_victim(t, lk, &dir, &there) == 0) return -EEXIST;
  return r;
}

// Removing the name at lk (may_delete: the sticky rule).
long may_delete_at(Task& t, Lookup& lk) {
  const Creds& c = creds_of(t);
  if (passes_dac(c)) return 0;
  struct stat dir, victim;
  if (long r = stat_dir_and_victim(t, lk, &dir, &victim)) return r;
  return may_delete(c, perms_of(dir), perms_of(victim));
}

// Renaming a to b (both on one mount): may_rename on what is there.
long may_rename_at(Task& t, Lookup& a, Lookup& b, unsigned flags) {
  const Creds& c = creds_of(t);
  if (passes_dac(c)) return 0;
  struct stat adir, source, bdir, target;
  if (long r = stat_dir_and_victim(t, a, &adir, &source)) return r;
  if (long r = stat_dir_and_victim(t, b, &bdir, nullptr)) return r;
  // The new name may be free (ENOENT); its directory must be there.
  Filesystem& fs = *b.mount->fs;
  Lookup own(b.path, false, b.mount);
  long r = fs.ops->stat(t, fs, own, &target);
  if (r && r != -ENOENT) return r;
  bool same_dir = adir.st_dev == bdir.st_dev && adir.st_ino == bdir.st_ino;
  FilePerms there = perms_of(target);
  return may_rename(c, perms_of(adir), perms_of(source), perms_of(bdir), r == 0 ? &there : nullptr, same_dir,
                    flags);
}

// A name about to be created on a read-only mount: EEXIST if it exists
// (Linux looks the name up first), else EROFS.
long create_on_readonly(Task& t, Lookup& lk) {
  Filesystem& fs = *lk.mount->fs;
  struct stat st;
  long e = fs.ops->stat(t, fs, lk, &st);
  if (e == kRedirect) return e;
  return e == 0 ? -EEXIST : e == -ENOENT ? -EROFS : e;
}

// After a filesystem made a node at lk: its owner is the caller's.
long claimed(Task& t, Lookup& lk, long r) {
  if (r < 0 || (creds_of(t).fsuid == 0 && creds_of(t).fsgid == 0)) return r;
  Filesystem& fs = *lk.mount->fs;
  Lookup own(lk.path, false, lk.mount);
  struct stat st;
  if (fs.ops->stat(t, fs, own, &st) == 0) claim_new_node(t, lk, nullptr, st, false);
  return r;
}

// The checks before the name at lk is removed or renamed.
long may_remove(Task& t, Lookup& lk) {
  if (busy(lk)) return -EBUSY;
  if (lk.mount->readonly()) {
    struct stat st;
    Filesystem& fs = *lk.mount->fs;
    long e = fs.ops->stat(t, fs, lk, &st);
    return e < 0 ? e : -EROFS;
  }
  return may_delete_at(t, lk);
}

// unlink and rmdir: the checks, then the filesystem's `remove` with the
// dentry cache in step (a removed directory's inode is dead), then watchers.
long remove_name(Task& t, Lookup& lk, long (*remove)(Task&, Filesystem&, Lookup&), bool dir) {
  long r = may_remove(t, lk);
  if (r) return r;
  if (!remove) return -EPERM;
  Filesystem& fs = *lk.mount->fs;
  NotifyObject gone = notify_before(t, lk);
  {
    Guard g(fs.names_lock);
    if ((r = remove(t, fs, lk)) == 0) dcache_name_removed(t, lk, dir);
  }
  return notify_removed(t, lk, r, gone);
}

// Two-path calls: the first path's walk runs the second's inside it, so
// each side can be redirected by its own symlinks.
template <typename Op>
long walk2(Task& t, int dfd1, const char* p1, bool follow1, int dfd2, const char* p2, Op&& op) {
  return vfs_walk(t, dfd1, p1, follow1, [&](Lookup& a) {
    return vfs_walk(t, dfd2, p2, false, [&](Lookup& b) { return op(a, b); });
  });
}

long link_open_file(Task& t, File& f, Lookup& lk);

}  // namespace

long vfs_may_create(Task& t, Lookup& lk) {
  if (is_mount_root(lk)) return -EEXIST;
  if (lk.mount->readonly()) return create_on_readonly(t, lk);
  return may_create_at(t, lk);
}

long vfs_mkdir(Task& t, int dirfd, const char* path, int mode) {
  return vfs_walk(t, dirfd, path, false, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    long r = vfs_may_create(t, lk);
    if (r) return r;
    return notify_created(t, lk, claimed(t, lk, fs.ops->mkdir ? fs.ops->mkdir(t, fs, lk, mode & 07777) : -EPERM));
  });
}

long vfs_mknod(Task& t, int dirfd, const char* path, int mode, uint64_t dev) {
  switch (mode & S_IFMT) {
    case 0: mode |= S_IFREG; break;
    case S_IFREG: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK: break;
    case S_IFDIR: return -EPERM;
    default: return -EINVAL;
  }
  if ((S_ISCHR(mode) || S_ISBLK(mode)) && !capable(t.proc->creds, CAP_MKNOD)) return -EPERM;
  return vfs_walk(t, dirfd, path, false, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    long r = vfs_may_create(t, lk);
    if (r) return r;
    return notify_created(t, lk, claimed(t, lk, fs.ops->mknod ? fs.ops->mknod(t, fs, lk, mode, dev) : -EPERM));
  });
}

long vfs_unlink(Task& t, int dirfd, const char* path) {
  size_t len = strlen(path);
  bool slash = len > 1 && path[len - 1] == '/';
  return vfs_walk(t, dirfd, path, false, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    if (is_mount_root(lk)) return -EISDIR;
    if (slash) {  // "name/": a directory (EISDIR) or not one (ENOTDIR)
      struct stat st;
      long e = fs.ops->stat(t, fs, lk, &st);
      return e < 0 ? e : S_ISDIR(st.st_mode) ? -EISDIR : -ENOTDIR;
    }
    return remove_name(t, lk, fs.ops->unlink, false);
  });
}

long vfs_rmdir(Task& t, int dirfd, const char* path) {
  std::string_view p(path);
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  if (p == "." || (p.size() >= 2 && p.substr(p.size() - 2) == "/.")) return -EINVAL;
  if (p == ".." || (p.size() >= 3 && p.substr(p.size() - 3) == "/..")) return -ENOTEMPTY;
  return vfs_walk(t, dirfd, path, false,
                  [&](Lookup& lk) { return remove_name(t, lk, lk.mount->fs->ops->rmdir, true); });
}

long vfs_symlink(Task& t, const char* target, int dirfd, const char* path) {
  if (!*target) return -ENOENT;
  return vfs_walk(t, dirfd, path, false, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    long r = vfs_may_create(t, lk);
    if (r) return r;
    return notify_created(t, lk, claimed(t, lk, fs.ops->symlink ? fs.ops->symlink(t, fs, lk, target) : -EPERM));
  });
}

namespace {

// A new name at lk for the open file f.
long link_open_file(Task& t, File& f, Lookup& lk) {
  Filesystem& fs = *lk.mount->fs;
  long r = vfs_may_create(t, lk);
  if (r) return r;
  if (lk.mount != f.mount) return -EXDEV;
  return fs.ops->link_file ? fs.ops->link_file(t, fs, f, lk) : -ENOENT;
}

}  // namespace

long vfs_link(Task& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
              bool follow) {
  return walk2(t, olddirfd, oldpath, follow, newdirfd, newpath, [&](Lookup& a, Lookup& b) -> long {
    Filesystem& fs = *a.mount->fs;
    File* f = nullptr;
    if (follow && fs.ops->magic_file && fs.ops->magic_file(t, fs, a, &f) == 0) {
      // linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW): the open file itself.
      long r = f->mount ? notify_created(t, b, link_open_file(t, *f, b), true) : -ENOENT;
      f->put();
      return r;
    }
    long r = vfs_may_create(t, b);
    if (r) return r;
    if (a.mount != b.mount) return -EXDEV;
    return notify_created(t, b, fs.ops->link ? fs.ops->link(t, fs, a, b) : -EPERM, true);
  });
}

long vfs_link_file(Task& t, File& f, int newdirfd, const char* newpath) {
  if (!f.mount) return -ENOENT;
  return vfs_walk(t, newdirfd, newpath, false,
                  [&](Lookup& lk) { return notify_created(t, lk, link_open_file(t, f, lk), true); });
}

long vfs_rename(Task& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
                unsigned flags) {
  if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) return -EINVAL;
  if ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT))) return -EINVAL;
  if (flags & RENAME_WHITEOUT) return -EINVAL;  // overlayfs's business
  return walk2(t, olddirfd, oldpath, false, newdirfd, newpath, [&](Lookup& a, Lookup& b) -> long {
    Filesystem& fs = *a.mount->fs;
    if (busy(a) || busy(b)) return -EBUSY;
    if (a.mount->readonly()) return may_remove(t, a);
    if (a.mount != b.mount) return -EXDEV;
    long r = may_rename_at(t, a, b, flags);
    if (r) return r;
    if (!fs.ops->rename) return -EPERM;
    NotifyObject moved = notify_before(t, a), was = notify_before(t, b);
    {
      // The filesystem and the cache change together: a walk sees the old
      // name or the new one.
      Guard g(fs.names_lock);
      r = fs.ops->rename(t, fs, a, b, flags);
      if (r == 0) {
        dcache_name_moved(t, a, b, flags & RENAME_EXCHANGE);
        t.kernel->vfs->follow_rename(&fs, a.path, b.path, flags & RENAME_EXCHANGE);
      }
    }
    return notify_renamed(t, a, b, r, moved, was, flags & RENAME_EXCHANGE);
  });
}

}  // namespace flatux
