#include "kernel/vfs/mount_ns.h"
#include "kernel/vfs/path_ops.h"

#include "kernel/vfs/dnotify.h"
#include "kernel/vfs/fsnotify.h"

#include <cstring>
#include <string_view>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/lib/error_or.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/lease.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/perm.h"
#include "kernel/task/caps.h"

namespace flatux {

Vfs& vfs_of(Task& t) { return *t.kernel->vfs; }

long walk_scope_at(Task& t, int dirfd, unsigned resolve, WalkScope* out) {
  out->resolve = resolve;
  long r = vfs_of(t).absolute(t, dirfd, ".", out->root, sizeof out->root);
  if (r < 0) return r;
  char inner[kPathMax];
  Mount* m = vfs_of(t).find(mnt_ns_of(t), out->root, inner, sizeof inner);
  if (!m) return -ENAMETOOLONG;
  out->mount = m;  // compared only: the dirfd or cwd holds it meanwhile
  m->put();
  return 0;
}

long redirect_target(Task& t, const Mount& m, const Lookup& lk, char* out, size_t n, const WalkScope* scope) {
  if (lk.redirect_absolute) {
    if (scope && (scope->resolve & WalkScope::kBeneath)) return -EXDEV;
    if (scope && (scope->resolve & WalkScope::kInRoot)) return rooted_path(scope->root, lk.redirect, out, n);
    char root[kPathMax];
    long r = fs_root(t, root, sizeof root);
    return r < 0 ? r : rooted_path(root, lk.redirect, out, n);
  }
  // Inner path -> guest path: drop what the mount hides, put its mount
  // point in front; ".." in the target then climbs across mounts lexically.
  std::string_view rel(lk.redirect);
  char joined[kPathMax];
  KFmt j(joined, sizeof joined);
  m.with_place([&](std::string_view point, std::string_view root) {
    if (root.size() > 1 && starts_with(rel, root)) rel = tail(rel, root.size());
    if (point.size() > 1) j.str(point);
  });
  j.str("/").str(rel);
  if (j.truncated()) return -ENAMETOOLONG;
  return normalize_path(j.c_str(), out, n, false);
}

namespace {

bool trailing_slash(const char* path) {
  size_t len = strlen(path);
  return len > 1 && path[len - 1] == '/';
}

}  // namespace

namespace {

// A write open on a read-only mount: EROFS unless the name is a device,
// FIFO or socket (their data lives elsewhere), or the open fails earlier.
// 1: go on with the open.
long open_on_readonly(Task& t, Lookup& lk, int flags) {
  Filesystem& fs = *lk.mount->fs;
  struct stat st;
  long e = fs.ops->stat(t, fs, lk, &st);
  if (e == kRedirect || (e == 0 && (flags & O_CREAT) && (flags & O_EXCL))) return e ? e : -EEXIST;
  if (e == 0 && S_ISDIR(st.st_mode)) return -EISDIR;
  if (e == 0 && !S_ISREG(st.st_mode)) return 1;
  if (e == 0 || e == -ENOENT) return e == -ENOENT && !(flags & O_CREAT) ? e : -EROFS;
  return e;
}

// Linux's open with the guest's credentials: a name that does not exist
// yet is created (O_EXCL underneath, so "created by this open" is certain)
// after the directory's check, and belongs to the caller; an existing
// file is checked against its bits (may_open).
long open_checked(Task& t, Lookup& lk, int flags, int mode, File** out) {
  Filesystem& fs = *lk.mount->fs;
  bool tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
  if (tmpfile) {
    // An unnamed file is made in the directory lk names: write and search on it.
    struct stat dir;
    long e = fs.ops->stat(t, fs, lk, &dir);
    if (e == 0 && S_ISDIR(dir.st_mode)) e = may_create(creds_of(t), perms_of(dir));
    if (e < 0 && e != -ENOTDIR) return e;
  }
  for (int tries = 0; tries < 3; tries++) {
    bool creating = tmpfile;
    if ((flags & O_CREAT) && !(flags & O_PATH)) {
      // O_EXCL does not follow a last symlink: any name there exists.
      bool follow = lk.follow;
      lk.follow = follow && !(flags & O_EXCL);
      struct stat st;
      long e = fs.ops->stat(t, fs, lk, &st);
      lk.follow = follow;
      if (e == kRedirect) return e;
      if (e == 0 && (flags & O_EXCL)) return -EEXIST;
      if (e < 0 && e != -ENOENT) return e;
      creating = e == -ENOENT;
      if (creating) TRY_LONG(vfs_may_create(t, lk));
    }
    long r = fs.ops->open(t, fs, lk, creating && !tmpfile ? flags | O_EXCL : flags, mode, out);
    if (r == -EEXIST && creating && !tmpfile && !(flags & O_EXCL)) continue;  // made meanwhile: open it
    if (r < 0) return r;
    if (!creating && fs.ops->open_checks_access) return 0;
    File& f = **out;
    struct stat st;
    if (!f.ops->stat || f.ops->stat(t, f, &st) < 0) return 0;
    if (creating) {
      claim_new_node(t, lk, &f, st, tmpfile);
      return 0;
    }
    if (long e = may_open(t, st, flags)) {
      f.put();
      *out = nullptr;
      return e;
    }
    return 0;
  }
  return -EEXIST;
}

}  // namespace

namespace {

// A file opened by path on a filesystem whose names the VFS alone changes
// holds its dentry, so as a dirfd, a cwd or a /proc fd link it follows
// renames and knows when its name is removed.
void attach_dentry(Task& t, Lookup& lk, File& f, int flags) {
  if (!f.mount || f.dentry || !f.path || !f.mount->fs->ops->dcache_trusted) return;
  if ((flags & O_TMPFILE) == O_TMPFILE) return;  // no name: the path is its folder's
  auto d = dentry_of(t, lk);
  if (!d.is_error()) f.dentry = d.value();  // else the path recorded at open serves
}

bool root_only(const char* path);
bool dot_components_only(const char* path);
bool dots_only(const char* path);
File* removed_root_file(Task& t);

bool cwd_is_root(Task& t) {
  FsContext& fc = *t.proc->fs;
  Guard g(fc.lock);
  return fc.root && fc.cwd && fc.cwd.dentry == fc.root.dentry && fc.cwd.mnt == fc.root.mnt;
}

// Whether the folder a walk from dirfd starts in is the process's root
// (the cwd for AT_FDCWD, else the open folder), where ".." stays.
bool starts_at_root(Task& t, int dirfd) {
  if (dirfd == AT_FDCWD) return cwd_is_root(t);
  FdRef f(t, (uint64_t)(unsigned)dirfd);
  if (!f) return false;
  FsContext& fc = *t.proc->fs;
  Guard g(fc.lock);
  return fc.root && (&*f == fc.root_file || (f->dentry == fc.root.dentry && f->mount == fc.root.mnt));
}

// A removed chroot directory stays the process's root, as on Linux: "/",
// or "." and ".." from a cwd that is that root, still open it as a
// folder (O_PATH: for chdir and the *at calls), though no walk finds it
// (its old path may name another folder by now) and nothing is found or
// made in it. An O_PATH description has no state its holder could change,
// so the one chroot opened serves. nullptr where this is not the case.
File* removed_root_opened(Task& t, int dirfd, const char* path, int flags) {
  if ((flags & (O_PATH | O_CREAT)) != O_PATH) return nullptr;
  bool names_root = root_only(path) || (dot_components_only(path) && starts_at_root(t, dirfd));
  return names_root ? removed_root_file(t) : nullptr;
}

// The removed folder `path` names, with references: the process's root
// ("/", or dots from a cwd that is it) or its cwd ("." from AT_FDCWD),
// once its name was removed. An empty Path otherwise.
Path removed_folder_named(Task& t, int dirfd, const char* path) {
  bool names_root = root_only(path) || (dot_components_only(path) && starts_at_root(t, dirfd));
  bool names_cwd = dirfd == AT_FDCWD && path[0] == '.' && dots_only(path);
  FsContext& fc = *t.proc->fs;
  Guard g(fc.lock);
  const Path& p = names_root ? fc.root : fc.cwd;
  if ((!names_root && !names_cwd) || !p) return {};
  char guest[kPathMax];
  bool deleted = false;
  if (guest_path_of(p, guest, sizeof guest, &deleted) < 0 || !deleted) return {};
  return path_get(p);
}

// Opens the removed folder p for reading (or as O_PATH), through the
// filesystem's open_dentry (no path leads to it any more). It keeps its
// dentry, so the *at calls start in it and getdents knows it is gone.
long open_removed_folder(Task& t, const Path& p, int flags, File** out) {
  if ((flags & O_CREAT) || (flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
  Filesystem& fs = *p.mnt->fs;
  if (!fs.ops->open_dentry) return -ENOENT;
  TRY_LONG(fs.ops->open_dentry(t, fs, *p.mnt, *p.dentry, flags, out));
  File& f = **out;
  struct stat st;
  long e = 0;
  if (!fs.ops->open_checks_access) e = f.ops->stat ? f.ops->stat(t, f, &st) : -ENOENT;
  if (e == 0 && !fs.ops->open_checks_access) e = may_open(t, st, flags);
  char inner[kPathMax];
  if (e == 0 && p.dentry->cache->path_in_fs(p.dentry, inner, sizeof inner) < 0) e = -ENOENT;
  if (e < 0) {
    f.put();
    *out = nullptr;
    return e;
  }
  f.set_origin(p.mnt, inner);
  f.dentry = dget(p.dentry);
  return 0;
}

// The open itself, once the walk found the place.
long open_looked_up(Task& t, Lookup& lk, int flags, int mode, File** out) {
  Filesystem& fs = *lk.mount->fs;
  constexpr int kWrites = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC;
  // Root's opens need no check of its own (root may open anything, and
  // owns what it creates), so they take the shortest way.
  bool root = t.proc->creds.fsuid == 0 && t.proc->creds.fsgid == 0 && passes_dac(t.proc->creds);
  if ((flags & kWrites) && !(flags & O_PATH) && lk.mount->readonly()) {
    long r = open_on_readonly(t, lk, flags);
    if (r <= 0) return r;
  }
  // Whether the open makes a new name, for watchers (only asked while
  // something is watched).
  struct stat before;
  bool create = (flags & O_CREAT) && (dnotify_watching(t) || inotify_watching(t)) &&
                fs.ops->stat(t, fs, lk, &before) == -ENOENT;
  long r = root ? fs.ops->open(t, fs, lk, flags, mode, out) : open_checked(t, lk, flags, mode, out);
  if (r < 0) return r;
  (*out)->set_origin(lk.mount, lk.path);
  attach_dentry(t, lk, **out, flags);
  if (create) notify_created(t, lk, 0);
  notify_open(t, **out);
  // Leases on the file are broken before an open that conflicts returns.
  if (t.kernel->leases->any() && (r = t.kernel->leases->break_for_open(t, **out, flags)) < 0) {
    (*out)->put();
    *out = nullptr;
  }
  return r;
}

}  // namespace

long vfs_open(Task& t, int dirfd, const char* path, int flags, int mode, File** out, const WalkScope* scope) {
  if (File* root = removed_root_opened(t, dirfd, path, flags)) {
    *out = root;
    return 0;
  }
  if (Path gone = removed_folder_named(t, dirfd, path)) {
    long r = open_removed_folder(t, gone, flags, out);
    path_put(gone);
    return r;
  }
  if (trailing_slash(path)) {
    if (flags & O_CREAT) return -EISDIR;
    flags |= O_DIRECTORY;
  }
  return vfs_walk(t, dirfd, path, !(flags & O_NOFOLLOW), [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    if (scope && lk.follow && (scope->no_magic() || scope->scoped()) && fs.ops->magic_file) {
      // A magic link (/proc/PID/fd/N) jumps to a file, not a path: refused
      // where links or the walk's confinement are limited, as Linux's
      // nd_jump_link.
      File* f = nullptr;
      if (fs.ops->magic_file(t, fs, lk, &f) == 0) {
        f->put();
        return scope->no_magic() ? -ELOOP : -EXDEV;
      }
    }
    return open_looked_up(t, lk, flags, mode, out);
  }, scope);
}

long vfs_reopen(Task& t, File& f, int flags, File** out) {
  if (!f.mount || !f.path) return -ENOENT;
  Lookup lk(f.path, false, f.mount);
  long r = open_looked_up(t, lk, flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | __O_TMPFILE), 0, out);
  return r == kRedirect ? -ENOENT : r;  // a link has taken the name meanwhile
}

namespace {

// Whether a path names its starting folder itself ("." and "./." and such).
bool dots_only(const char* path) {
  for (const char* p = path; *p; p++)
    if ((*p != '.' && *p != '/') || (p[0] == '.' && p[1] == '.')) return false;
  return true;
}

// Whether an absolute path names the root itself ("/", "/.", "/..").
bool root_only(const char* path) { return path[0] == '/' && dot_components_only(path); }

// Whether every component of path is "." or "..".
bool dot_components_only(const char* path) {
  for (const char* p = path; *p;) {
    while (*p == '/') p++;
    const char* s = p;
    while (*p && *p != '/') p++;
    std::string_view c(s, (size_t)(p - s));
    if (!c.empty() && c != "." && c != "..") return false;
  }
  return true;
}

// The process's root as chroot opened it, with a reference, when that
// folder was removed (an absolute walk then finds nothing); otherwise nullptr.
File* removed_root_file(Task& t) {
  FsContext& fc = *t.proc->fs;
  char path[kPathMax];
  bool removed = false;
  Guard g(fc.lock);
  if (!fc.root_file || fs_root_path(fc, path, sizeof path, &removed) < 0 || !removed) return nullptr;
  fc.root_file->get();
  return fc.root_file;
}

long stat_open(Task& t, File* f, struct stat* out) {
  long r = f->ops->stat ? f->ops->stat(t, *f, out) : -ENOENT;
  f->put();
  return r;
}

}  // namespace

long vfs_stat(Task& t, int dirfd, const char* path, bool follow, struct stat* out, MountSpot* spot) {
  // A removed cwd or root has no path, but "." or "/" is still the folder
  // (nlink 0).
  if (dirfd == AT_FDCWD && path[0] == '.' && dots_only(path)) {
    if (File* cwd = fs_removed_cwd_file(t)) return stat_open(t, cwd, out);
  }
  if (root_only(path) || (dot_components_only(path) && starts_at_root(t, dirfd))) {
    if (File* root = removed_root_file(t)) return stat_open(t, root, out);
  }
  bool dir_only = trailing_slash(path);
  long r = vfs_walk(t, dirfd, path, follow || dir_only, [&](Lookup& lk) {
    if (spot) *spot = {lk.mount->id, lk.mount->is_root(lk.path)};
    return lk.mount->fs->ops->stat(t, *lk.mount->fs, lk, out);
  });
  if (r == 0 && dir_only && !S_ISDIR(out->st_mode)) return -ENOTDIR;
  return r;
}

long vfs_readlink(Task& t, int dirfd, const char* path, char* buf, size_t n) {
  return vfs_walk(t, dirfd, path, false, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    return fs.ops->readlink ? fs.ops->readlink(t, fs, lk, buf, n) : -EINVAL;
  });
}

long vfs_readlink_file(Task& t, File& f, char* buf, size_t n) {
  struct stat st;
  if (!f.ops->stat || f.ops->stat(t, f, &st) < 0 || !S_ISLNK(st.st_mode)) return -ENOENT;
  TRY(p, path_of_file(t, f));
  // Read where the link now is (its dentry follows renames).
  char inner[kPathMax];
  long r = p.dentry->cache->path_in_fs(p.dentry, inner, sizeof inner);
  if (r >= 0) {
    Filesystem& fs = *p.mnt->fs;
    Lookup lk(inner, false, p.mnt);
    r = fs.ops->readlink ? fs.ops->readlink(t, fs, lk, buf, n) : -EINVAL;
  }
  path_put(p);
  return r == kRedirect ? -ENOENT : r;
}

long vfs_access(Task& t, int dirfd, const char* path, int mode, bool follow) {
  return vfs_walk(t, dirfd, path, follow, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    long r = fs.ops->access(t, fs, lk, mode);
    if (r == 0 && (mode & W_OK) && lk.mount->readonly()) {
      struct stat st;
      if (fs.ops->stat(t, fs, lk, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ||
                                                S_ISLNK(st.st_mode)))
        return -EROFS;
    }
    return r;
  });
}

long vfs_statfs(Task& t, int dirfd, const char* path, struct statfs* out) {
  return vfs_walk(t, dirfd, path, true, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    long r = fs.ops->statfs ? fs.ops->statfs(t, fs, lk, out) : -ENOSYS;
    if (r == 0) statfs_mount_flags(*lk.mount, out);
    return r;
  });
}

void statfs_mount_flags(const Mount& m, struct statfs* out) {
  // f_flags are the mount's, as Linux's statfs reports them.
  unsigned long f = 0x20;  // ST_VALID: f_flags are meaningful
  unsigned long flags = m.flags_now();
  if ((flags & MS_RDONLY) || m.fs->readonly.load(std::memory_order_relaxed)) f |= ST_RDONLY;
  if (flags & MS_NOSUID) f |= ST_NOSUID;
  if (flags & MS_NODEV) f |= ST_NODEV;
  if (flags & MS_NOEXEC) f |= ST_NOEXEC;
  if (flags & MS_NOATIME) f |= ST_NOATIME;
  else f |= ST_RELATIME;
  out->f_flags = (long)f;
}

}  // namespace flatux
