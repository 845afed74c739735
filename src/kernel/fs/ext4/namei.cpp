// Namespace changes on an ext4 volume: the permission and type checks Linux
// makes (generic_permission, the sticky bit, may_delete's EISDIR/ENOTDIR),
// then the change through libext2fs in one gate call, then the caches.
#include <cstring>
#include <linux/errno.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/fs/ext4/ext4.h"
#include "kernel/fs/ext4/internal.h"
#include "kernel/kernel.h"
#include "kernel/vfs/perm.h"

namespace flatux::ext4 {

namespace {

bool is_dot_name(const char* n) { return (n[0] == '.' && !n[1]) || (n[0] == '.' && n[1] == '.' && !n[2]); }

// Ownership of a new node, as the permission policy gives it (init_owner).
ext2glue::NewNode new_node(const Cred& c, const Attr& dir, uint32_t mode, Time now) {
  FilePerms owner = init_owner(c.creds, perms_of(dir), mode);
  return ext2glue::NewNode{owner.mode, owner.uid, owner.gid, 0, now};
}

}  // namespace

// After a failed change the directory's state on disk is not known for
// sure: the name is forgotten and the directory no longer complete.
// After the gate created `name` in `dir` (r: its result): the caches learn
// the new inode and the directory's new times, or forget what may be stale.
long Volume::finish_create(uint32_t dir, const char* name, size_t len, long r, const Attr& dir_after,
                           const Attr& created) {
  names_added_.added(dir);  // also after a failure: the name may be there
  if (r < 0) {
    forget_inode(dir);  // its times may have changed
    return failed_change(dir, name, len, r);
  }
  update_inode(dir_after);
  cache_inode(created);
  remember_name(dir, name, len, created.ino);
  return 0;
}

long Volume::failed_change(uint32_t dir, const char* name, size_t len, long err) {
  forget_name(dir, name, len);
  set_complete(dir, false);
  return err;
}

// A directory whose names may change: on a writable volume, a directory
// still linked. Its attributes go to *out.
long Volume::changeable_dir(uint32_t dir, Attr* out) {
  if (readonly_) return -EROFS;
  long err = 0;
  Inode* d = inode(dir, &err);
  if (!d) return err;
  if (!S_ISDIR(d->a.mode)) return -ENOTDIR;
  if (d->a.nlink == 0) return -ENOENT;  // removed while we held it
  *out = d->a;
  return 0;
}

// A change to `dir`: a new name (victim 0, may_create) or the removal of
// `victim` (may_delete, with the sticky rule).
long Volume::check_dir_change(const Cred& c, uint32_t dir, uint32_t victim) {
  Attr d;
  if (long r = changeable_dir(dir, &d)) return r;
  if (!victim) return may_create(c.creds, perms_of(d));
  long err = 0;
  Inode* v = inode(victim, &err);
  if (!v) return err;
  return may_delete(c.creds, perms_of(d), perms_of(v->a));
}

// Before a new name goes into `dir`: the caller may change it and the name
// is free. Returns the directory's cache entry, or nullptr with *err set.
Inode* Volume::dir_for_new_name(const Cred& c, uint32_t dir, const char* name, long* err) {
  long r = check_dir_change(c, dir, 0);
  if (r == 0) {
    uint32_t existing;
    long found = lookup_name(dir, name, strlen(name), &existing);
    if (found != -ENOENT) r = found < 0 ? found : -EEXIST;
  }
  Inode* d = r == 0 ? inode(dir, &r) : nullptr;
  if (!d) *err = r;
  return d;
}

long Volume::create(const Cred& c, uint32_t dir, const char* name, uint32_t mode, uint64_t rdev, Attr* out) {
  Guard g(lock_);
  long r = 0;
  Inode* d = dir_for_new_name(c, dir, name, &r);
  if (!d) return r;
  size_t len = strlen(name);
  ext2glue::NewNode n = new_node(c, d->a, mode, now());
  n.rdev = rdev;
  Attr dir_after;
  r = gate([&] {
    long e = ext2glue::create_node(vol_, dir, name, n, out);
    return e == 0 ? ext2glue::read_attr(vol_, dir, &dir_after) : e;
  });
  r = finish_create(dir, name, len, r, dir_after, *out);
  if (r < 0) return r;
  return 0;
}

long Volume::mkdir(const Cred& c, uint32_t dir, const char* name, uint32_t mode, Attr* out) {
  Guard g(lock_);
  long r = 0, err = 0;
  Inode* d = dir_for_new_name(c, dir, name, &r);
  if (!d) return r;
  size_t len = strlen(name);
  if (d->a.nlink >= 65000 - 1 && d->a.nlink != 1) return -EMLINK;
  ext2glue::NewNode n = new_node(c, d->a, S_IFDIR | (mode & 07777), now());
  Attr dir_after;
  r = gate([&] {
    long e = ext2glue::make_dir(vol_, dir, name, n, out);
    return e == 0 ? ext2glue::read_attr(vol_, dir, &dir_after) : e;
  });
  r = finish_create(dir, name, len, r, dir_after, *out);
  if (r < 0) return r;
  // A new directory is known whole: "." and "..".
  remember_name(out->ino, ".", 1, out->ino);
  remember_name(out->ino, "..", 2, dir);
  if (inode(out->ino, &err)) set_complete(out->ino, true);
  return 0;
}

long Volume::symlink(const Cred& c, uint32_t dir, const char* name, const char* target, Attr* out) {
  size_t len = strlen(name), tlen = strlen(target);
  if (tlen == 0) return -ENOENT;  // the target is checked first, as Linux reads it first
  if (tlen >= 4096) return -ENAMETOOLONG;
  Guard g(lock_);
  long r = 0;
  Inode* d = dir_for_new_name(c, dir, name, &r);
  if (!d) return r;
  ext2glue::NewNode n = new_node(c, d->a, S_IFLNK | 0777, now());
  Attr dir_after;
  r = gate([&] {
    long e = ext2glue::make_symlink(vol_, dir, name, target, n, out);
    return e == 0 ? ext2glue::read_attr(vol_, dir, &dir_after) : e;
  });
  r = finish_create(dir, name, len, r, dir_after, *out);
  if (r < 0) return r;
  return 0;
}

long Volume::link(const Cred& c, uint32_t ino, uint32_t dir, const char* name) {
  Guard g(lock_);
  long r = check_dir_change(c, dir, 0);
  if (r < 0) return r;
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  if (S_ISDIR(in->a.mode)) return -EPERM;
  if (in->a.nlink == 0) return -ENOENT;
  if (in->a.nlink >= 65000) return -EMLINK;
  size_t len = strlen(name);
  uint32_t existing;
  if ((r = lookup_name(dir, name, len, &existing)) != -ENOENT) return r < 0 ? r : -EEXIST;
  uint32_t mode = in->a.mode;
  Time t = now();
  r = gate([&] {
    long e = ext2glue::add_entry(vol_, dir, name, ino, mode);
    if (e == 0) e = ext2glue::adjust_links(vol_, ino, +1, t, nullptr);
    if (e == 0) e = ext2glue::touch_dir(vol_, dir, t);
    return e;
  });
  names_added_.added(dir);
  forget_inode(ino);
  forget_inode(dir);
  if (r < 0) return failed_change(dir, name, len, r);
  remember_name(dir, name, len, ino);
  return 0;
}

// Removes dir/name (naming `ino`) and its links, freeing the inode when
// nothing holds it. Lock held; the checks are done.
long Volume::drop_link(uint32_t dir, const char* name, uint32_t ino, bool is_dir) {
  Time t = now();
  uint32_t left = 0;
  long r = gate([&] {
    long e = ext2glue::del_entry(vol_, dir, name);
    if (e == 0 && is_dir) e = ext2glue::adjust_links(vol_, dir, -1, t, nullptr);  // its ".."
    if (e == 0 && is_dir) e = ext2glue::clear_links(vol_, ino, t);
    else if (e == 0) e = ext2glue::adjust_links(vol_, ino, -1, t, &left);
    if (e == 0) e = ext2glue::touch_dir(vol_, dir, t);
    return e;
  });
  forget_inode(dir);
  if (r < 0) {
    forget_inode(ino);
    return failed_change(dir, name, strlen(name), r);
  }
  forget_name(dir, name, strlen(name));
  if (is_dir) {
    forget_name(ino, "..", 2);
    forget_inode(ino);  // its link count is 0 now, for whoever still holds it open
  }
  if (is_dir || left == 0) return release_if_unused(ino);
  forget_inode(ino);
  return 0;
}

long Volume::unlink(const Cred& c, uint32_t dir, const char* name, bool want_dir) {
  Guard g(lock_);
  if (is_dot_name(name)) return want_dir ? (name[1] ? -ENOTEMPTY : -EINVAL) : -EISDIR;
  uint32_t ino;
  long r = lookup_name(dir, name, strlen(name), &ino);
  if (r < 0) return r;
  if ((r = check_dir_change(c, dir, ino)) < 0) return r;
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  bool is_dir = S_ISDIR(in->a.mode);
  if (want_dir && !is_dir) return -ENOTDIR;
  if (!want_dir && is_dir) return -EISDIR;
  if (is_dir) {
    r = gate([&] { return ext2glue::dir_is_empty(vol_, ino); });
    if (r < 0) return r;
    if (r == 0) return -ENOTEMPTY;
  }
  return drop_link(dir, name, ino, is_dir);
}

// 1 when `ancestor` is `dir` or one of its ancestors (walking "..").
long Volume::is_ancestor(uint32_t ancestor, uint32_t dir) {
  for (int depth = 0; depth < 4096; depth++) {
    if (dir == ancestor) return 1;
    if (dir == 2) return 0;
    uint32_t up;
    long r = lookup_name(dir, "..", 2, &up);
    if (r < 0) return r;
    dir = up;
  }
  return -ELOOP;
}

long Volume::rename(const Cred& c, uint32_t odir, const char* oname, uint32_t ndir, const char* nname,
                    unsigned flags) {
  Guard g(lock_);
  return rename_locked(c, odir, oname, ndir, nname, flags);
}

long Volume::rename_locked(const Cred& c, uint32_t odir, const char* oname, uint32_t ndir, const char* nname,
                           unsigned flags) {
  if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
      ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE)))
    return -EINVAL;
  if (is_dot_name(oname) || is_dot_name(nname)) return -EBUSY;
  size_t olen = strlen(oname), nlen = strlen(nname);
  uint32_t src, dst = 0;
  long r = lookup_name(odir, oname, olen, &src);
  if (r < 0) return r;
  r = lookup_name(ndir, nname, nlen, &dst);
  if (r < 0 && r != -ENOENT) return r;
  if ((flags & RENAME_EXCHANGE) && !dst) return -ENOENT;
  if ((flags & RENAME_NOREPLACE) && dst) return -EEXIST;
  Attr od, nd;
  if ((r = changeable_dir(odir, &od)) < 0 || (r = changeable_dir(ndir, &nd)) < 0) return r;
  long err = 0;
  Inode* si = inode(src, &err);
  if (!si) return err;
  Attr sa = si->a, da{};
  if (dst) {
    Inode* di = inode(dst, &err);
    if (!di) return err;
    da = di->a;
  }
  if (src == dst) return 0;  // two names of one inode: nothing happens (Linux)
  FilePerms target = perms_of(da);
  r = may_rename(c.creds, perms_of(od), perms_of(sa), perms_of(nd), dst ? &target : nullptr, odir == ndir, flags);
  if (r < 0) return r;
  bool sdir = S_ISDIR(sa.mode), ddir = dst && S_ISDIR(da.mode);
  bool exchange = flags & RENAME_EXCHANGE;
  // A directory cannot move below itself (nor, exchanged, the other one).
  if (sdir && odir != ndir && (r = is_ancestor(src, ndir)) != 0) return r < 0 ? r : -EINVAL;
  if (exchange && ddir && odir != ndir && (r = is_ancestor(dst, odir)) != 0) return r < 0 ? r : -EINVAL;
  if (dst && !exchange) {
    if (sdir && !ddir) return -ENOTDIR;
    if (!sdir && ddir) return -EISDIR;
    if (ddir) {
      r = gate([&] { return ext2glue::dir_is_empty(vol_, dst); });
      if (r < 0) return r;
      if (r == 0) return -ENOTEMPTY;
    }
  }
  Time t = now();
  uint32_t dst_left = 1;
  r = gate([&] {
    long e;
    if (exchange) {
      e = ext2glue::retarget_entry(vol_, ndir, nname, src, sa.mode);
      if (e == 0) e = ext2glue::retarget_entry(vol_, odir, oname, dst, da.mode);
      if (e == 0 && odir != ndir && sdir != ddir) {  // a directory changed parent alone
        e = ext2glue::adjust_links(vol_, sdir ? ndir : odir, +1, t, nullptr);
        if (e == 0) e = ext2glue::adjust_links(vol_, sdir ? odir : ndir, -1, t, nullptr);
      }
      if (e == 0 && sdir && odir != ndir) e = ext2glue::set_dotdot(vol_, src, ndir);
      if (e == 0 && ddir && odir != ndir) e = ext2glue::set_dotdot(vol_, dst, odir);
    } else {
      e = dst ? ext2glue::retarget_entry(vol_, ndir, nname, src, sa.mode)
              : ext2glue::add_entry(vol_, ndir, nname, src, sa.mode);
      if (e == 0) e = ext2glue::del_entry(vol_, odir, oname);
      if (e == 0 && sdir && odir != ndir) {
        e = ext2glue::set_dotdot(vol_, src, ndir);
        if (e == 0 && !ddir) e = ext2glue::adjust_links(vol_, ndir, +1, t, nullptr);
        if (e == 0) e = ext2glue::adjust_links(vol_, odir, -1, t, nullptr);
      } else if (e == 0 && ddir) {
        e = ext2glue::adjust_links(vol_, ndir, -1, t, nullptr);  // the replaced directory's ".."
      }
      if (e == 0 && dst) {
        // A replaced directory has no links left, also while still open.
        e = ddir ? ext2glue::clear_links(vol_, dst, t) : ext2glue::adjust_links(vol_, dst, -1, t, &dst_left);
      }
      if (e == 0 && ddir) dst_left = 0;
    }
    if (e == 0) e = ext2glue::adjust_links(vol_, src, 0, t, nullptr);  // ctime
    if (e == 0) e = ext2glue::touch_dir(vol_, odir, t);
    if (e == 0 && ndir != odir) e = ext2glue::touch_dir(vol_, ndir, t);
    return e;
  });
  names_added_.added(ndir);
  names_added_.added(odir);  // a failed change may have left either name
  forget_inode(odir);
  forget_inode(ndir);
  forget_inode(src);
  if (dst) forget_inode(dst);
  if (r < 0) {
    failed_change(odir, oname, olen, r);
    failed_change(src, "..", 2, r);
    if (dst) failed_change(dst, "..", 2, r);
    return failed_change(ndir, nname, nlen, r);
  }
  // The caches follow the change (complete directories must stay exact).
  remember_name(ndir, nname, nlen, src);
  if (exchange) remember_name(odir, oname, olen, dst);
  else forget_name(odir, oname, olen);
  if (sdir && odir != ndir) remember_name(src, "..", 2, ndir);
  if (exchange && ddir && odir != ndir) remember_name(dst, "..", 2, odir);
  if (ddir && !exchange) forget_name(dst, "..", 2);
  if (dst && !exchange && dst_left == 0) return release_if_unused(dst);
  return 0;
}

}  // namespace flatux::ext4
