// tmpfs names: the walk (plain names only; symlinks become redirects for
// the VFS to follow) and the namespace operations with Linux's errno rules.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/task/task.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

// Where a walk ended: the directory holding the last component, its name,
// and the entry if it exists ("/" has no entry: inode is the root).
struct Walk {
  TmpInode* dir = nullptr;
  const char* name = "";
  size_t len = 0;
  TmpDirent* entry = nullptr;
  TmpInode* inode = nullptr;
};

// A symlink met at `link` (a prefix of lk.path) with `rest` after it.
long redirect(Lookup& lk, const char* link_end, const TmpInode& link, const char* rest) {
  return vfs_make_redirect(lk, std::string_view(lk.path, (size_t)(link_end - lk.path)), link.target, rest);
}

// The folder the VFS's walk ended in, as an inode of fs: the walk checked
// search permission on every folder up to it, so the operation starts
// there. nullptr: walk the path.
TmpInode* walked_folder(Tmpfs& fs, const Lookup& p) {
  if (!p.dir || p.name.empty() || !p.mount || p.dir->fs != p.mount->fs) return nullptr;
  return tmp_dentry_node(fs, *p.dir);
}

// Walks every component but the last, which it looks up without following.
// Search permission is the VFS walk's, which passed every folder of the
// path before the operation runs.
long walk(Task& t, Tmpfs& fs, Lookup& p, Walk* w) {
  if (TmpInode* dir = walked_folder(fs, p)) {
    if (!S_ISDIR(dir->mode)) return -ENOTDIR;
    size_t len = p.name.size();
    if (len > kTmpNameMax) return -ENAMETOOLONG;
    TmpDirent* d = dir->dentry || dir == fs.root ? tmp_find(fs, dir, p.name.data(), len) : nullptr;
    w->dir = dir;
    w->name = p.path + strlen(p.path) - len;  // inside p.path, as a redirect's link path needs
    w->len = len;
    w->entry = d;
    w->inode = d ? d->inode : nullptr;
    return 0;
  }
  TmpInode* cur = fs.root;
  const char* s = p.path;
  while (*s == '/') s++;
  if (!*s) {
    w->dir = fs.root;
    w->inode = fs.root;
    return 0;
  }
  for (;;) {
    const char* e = s;
    while (*e && *e != '/') e++;
    size_t len = (size_t)(e - s);
    if (!S_ISDIR(cur->mode)) return -ENOTDIR;
    if (len > kTmpNameMax) return -ENAMETOOLONG;
    TmpDirent* d = tmp_find(fs, cur, s, len);
    const char* next = e;
    while (*next == '/') next++;
    if (!*next) {
      w->dir = cur;
      w->name = s;
      w->len = len;
      w->entry = d;
      w->inode = d ? d->inode : nullptr;
      return 0;
    }
    if (!d) return -ENOENT;
    if (S_ISLNK(d->inode->mode)) return redirect(p, e, *d->inode, next);
    cur = d->inode;
    s = next;
  }
}

// The last component must exist; a symlink there is followed if asked.
long walk_existing(Task& t, Tmpfs& fs, Lookup& p, Walk* w, bool follow) {
  long r = walk(t, fs, p, w);
  if (r < 0) return r;
  if (!w->inode) return -ENOENT;
  if (follow && S_ISLNK(w->inode->mode))
    return redirect(p, w->name + w->len, *w->inode, "");
  return 0;
}

// A new inode named by w (which must not exist yet), owned as the
// permission policy says (init_owner).
long create(Task& t, Tmpfs& fs, Walk& w, uint32_t mode, TmpInode** out) {
  if (w.inode) return -EEXIST;
  if (w.dir->nlink == 0) return -ENOENT;  // removed while we held it
  const Creds& c = creds_of(t);
  if (long r = may_create(c, perms_of(*w.dir))) return r;
  FilePerms owner = init_owner(c, perms_of(*w.dir), mode);
  long err = 0;
  TmpInode* n = tmp_new_inode(fs, owner.mode, owner.uid, owner.gid, &err);
  if (!n) return err;
  if (S_ISDIR(mode)) n->size = 40;
  if (long r = tmp_add_entry(fs, w.dir, w.name, w.len, n)) {
    tmp_get(n);
    tmp_put(n);
    return r;
  }
  w.dir->size += 20;
  w.dir->mtime = w.dir->ctime = n->ctime;
  *out = n;
  return 0;
}

bool is_ancestor(const TmpInode* a, const TmpInode* n) {
  for (; n; n = n->parent)
    if (n == a) return true;
  return false;
}

// Moves entry d to (dir, name): a fresh entry there, then the old one goes.
long move_entry(Tmpfs& fs, TmpDirent* d, TmpInode* dir, const char* name, size_t len) {
  TmpInode* n = d->inode;
  TmpInode* old_dir = d->dir;
  uint32_t links = n->nlink;
  tmp_get(n);  // removing the old entry must not free it
  long r = tmp_add_entry(fs, dir, name, len, n);
  if (r == 0) {
    tmp_remove_entry(fs, d);
    // The entry counts balance out; a directory also keeps its ".." in the
    // new parent, which add_entry counted and remove_entry took from the old.
    n->nlink = links;
    if (S_ISDIR(n->mode)) n->parent = dir;  // add_entry set its dentry
    old_dir->size -= 20;
    dir->size += 20;
  }
  tmp_put(n);
  return r;
}

long do_rename(Task& t, Tmpfs& fs, Walk& o, Walk& n, unsigned flags) {
  if (!o.entry) return o.inode ? -EBUSY : -ENOENT;  // "/" has no entry
  if (!n.entry && n.inode) return -EBUSY;
  if ((flags & RENAME_EXCHANGE) && !n.inode) return -ENOENT;
  if (n.inode && (flags & RENAME_NOREPLACE)) return -EEXIST;
  if (n.inode == o.inode) return 0;  // the same file under both names: nothing happens
  FilePerms target = n.inode ? perms_of(*n.inode) : FilePerms{};
  if (long r = may_rename(creds_of(t), perms_of(*o.dir), perms_of(*o.inode), perms_of(*n.dir),
                          n.inode ? &target : nullptr, o.dir == n.dir, flags))
    return r;
  bool odir = S_ISDIR(o.inode->mode);
  if (flags & RENAME_EXCHANGE) {
    bool ndir = S_ISDIR(n.inode->mode);
    if ((odir && is_ancestor(o.inode, n.dir)) || (ndir && is_ancestor(n.inode, o.dir))) return -EINVAL;
    TmpInode* a = o.inode;
    TmpInode* b = n.inode;
    o.entry->inode = b;
    n.entry->inode = a;
    if (S_ISDIR(a->mode) != S_ISDIR(b->mode)) {
      // A directory changed parents: the ".." counts follow it.
      TmpInode* gets_dir = S_ISDIR(a->mode) ? n.dir : o.dir;
      TmpInode* loses_dir = S_ISDIR(a->mode) ? o.dir : n.dir;
      gets_dir->nlink++;
      loses_dir->nlink--;
    }
    if (S_ISDIR(a->mode)) a->parent = n.dir, a->dentry = n.entry;
    if (S_ISDIR(b->mode)) b->parent = o.dir, b->dentry = o.entry;
    timespec now = tmp_now();
    a->ctime = b->ctime = o.dir->mtime = o.dir->ctime = n.dir->mtime = n.dir->ctime = now;
    return 0;
  }
  if (odir && is_ancestor(o.inode, n.dir)) return -EINVAL;
  if (n.inode) {
    bool ndir = S_ISDIR(n.inode->mode);
    if (odir && !ndir) return -ENOTDIR;
    if (!odir && ndir) return -EISDIR;
    if (ndir && n.inode->entries) return -ENOTEMPTY;
  }
  TmpInode* moved = o.inode;
  tmp_get(moved);
  if (n.entry) {
    n.inode->ctime = tmp_now();
    n.dir->size -= 20;
    tmp_remove_entry(fs, n.entry);
  }
  long r = move_entry(fs, o.entry, n.dir, n.name, n.len);
  if (r == 0) {
    timespec now = tmp_now();
    moved->ctime = o.dir->mtime = o.dir->ctime = n.dir->mtime = n.dir->ctime = now;
  }
  tmp_put(moved);
  return r;
}

}  // namespace

void tmp_fill_stat(const TmpInode& n, struct stat* out) {
  memset(out, 0, sizeof *out);
  out->st_dev = n.fs->dev;
  out->st_ino = n.ino;
  out->st_mode = n.mode;
  out->st_nlink = n.nlink;
  out->st_uid = n.uid;
  out->st_gid = n.gid;
  out->st_rdev = n.rdev;
  out->st_size = n.size;
  out->st_blksize = kTmpPage;
  out->st_blocks = (blkcnt_t)(n.blocks * (kTmpPage / 512));
  out->st_atim = n.atime;
  out->st_mtim = n.mtime;
  out->st_ctim = n.ctime;
}

long tmp_stat_path(Task& t, Tmpfs& fs, Lookup& p, struct stat* out) {
  Guard g(fs.lock);
  Walk w;
  long r = walk_existing(t, fs, p, &w, p.follow);
  if (r < 0) return r;
  tmp_fill_stat(*w.inode, out);
  return 0;
}

long tmp_readlink(Task& t, Tmpfs& fs, Lookup& p, char* buf, size_t n) {
  Guard g(fs.lock);
  Walk w;
  long r = walk_existing(t, fs, p, &w, false);
  if (r < 0) return r;
  if (!S_ISLNK(w.inode->mode)) return -EINVAL;
  size_t len = strlen(w.inode->target);
  if (len > n) len = n;
  memcpy(buf, w.inode->target, len);
  w.inode->atime = tmp_now();
  return (long)len;
}

long tmp_access(Task& t, Tmpfs& fs, Lookup& p, int mode) {
  Guard g(fs.lock);
  Walk w;
  long r = walk_existing(t, fs, p, &w, p.follow);
  if (r < 0 || mode == F_OK) return r;
  return permission(creds_of(t), perms_of(*w.inode), mode);
}

long tmp_mknod(Task& t, Tmpfs& fs, Lookup& p, uint32_t mode, uint64_t dev) {
  Guard g(fs.lock);
  Walk w;
  long r = walk(t, fs, p, &w);
  if (r < 0) return r;
  if (w.len > kTmpNameMax) return -ENAMETOOLONG;
  TmpInode* n = nullptr;
  r = create(t, fs, w, mode, &n);
  if (r < 0) return r;
  if (S_ISCHR(mode) || S_ISBLK(mode)) n->rdev = dev;
  return 0;
}

long tmp_symlink(Task& t, Tmpfs& fs, Lookup& p, const char* target) {
  size_t tl = strlen(target);
  if (tl == 0) return -ENOENT;
  if (tl >= kTmpPage) return -ENAMETOOLONG;
  Guard g(fs.lock);
  Walk w;
  long r = walk(t, fs, p, &w);
  if (r < 0) return r;
  char* copy = static_cast<char*>(fs.heap->alloc(tl + 1));
  if (!copy) return -ENOMEM;
  memcpy(copy, target, tl + 1);
  TmpInode* n = nullptr;
  r = create(t, fs, w, S_IFLNK | 0777, &n);
  if (r < 0) {
    fs.heap->free(copy);
    return r;
  }
  n->target = copy;
  n->size = (int64_t)tl;
  return 0;
}

long tmp_unlink(Task& t, Tmpfs& fs, Lookup& p, bool dir) {
  Guard g(fs.lock);
  Walk w;
  long r = walk_existing(t, fs, p, &w, false);
  if (r < 0) return r;
  if (!w.entry) return dir ? -EBUSY : -EISDIR;  // the root
  if (long e = may_delete(creds_of(t), perms_of(*w.dir), perms_of(*w.inode))) return e;
  bool isdir = S_ISDIR(w.inode->mode);
  if (dir && !isdir) return -ENOTDIR;
  if (!dir && isdir) return -EISDIR;
  if (dir && w.inode->entries) return -ENOTEMPTY;
  timespec now = tmp_now();
  w.inode->ctime = w.dir->mtime = w.dir->ctime = now;
  w.dir->size -= 20;
  tmp_remove_entry(fs, w.entry);
  return 0;
}

long tmp_link_inode(Task& t, Tmpfs& fs, TmpInode* n, Lookup& new_p) {
  if (S_ISDIR(n->mode)) return -EPERM;
  if (n->nlink == 0 && !n->linkable) return -ENOENT;
  if (long r = may_link(creds_of(t), perms_of(*n))) return r;
  Walk w;
  long r = walk(t, fs, new_p, &w);
  if (r < 0) return r;
  if (w.inode) return -EEXIST;
  if (w.dir->nlink == 0) return -ENOENT;
  if ((r = may_create(creds_of(t), perms_of(*w.dir)))) return r;
  if ((r = tmp_add_entry(fs, w.dir, w.name, w.len, n))) return r;
  timespec now = tmp_now();
  n->ctime = w.dir->mtime = w.dir->ctime = now;
  w.dir->size += 20;
  return 0;
}

long tmp_link(Task& t, Tmpfs& fs, Lookup& old_p, Lookup& new_p) {
  Guard g(fs.lock);
  Walk o;
  long r = walk_existing(t, fs, old_p, &o, old_p.follow);
  if (r < 0) return r;
  tmp_get(o.inode);
  r = tmp_link_inode(t, fs, o.inode, new_p);
  tmp_put(o.inode);
  return r;
}

long tmp_rename(Task& t, Tmpfs& fs, Lookup& old_p, Lookup& new_p, unsigned flags) {
  if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) return -EINVAL;
  if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE)) return -EINVAL;
  Guard g(fs.lock);
  Walk o, n;
  long r = walk(t, fs, old_p, &o);
  if (r < 0) return r;
  if ((r = walk(t, fs, new_p, &n)) < 0) return r;
  return do_rename(t, fs, o, n, flags);
}

long tmp_setattr(Tmpfs& fs, TmpInode& n, const Attr& a) {
  if (a.mask & kAttrSize) {
    if (S_ISDIR(n.mode)) return -EISDIR;
    if (!S_ISREG(n.mode)) return -EINVAL;
    if (long r = tmp_truncate(fs, n, a.size)) return r;
  }
  // Truncating a file or giving it an owner drops its capabilities.
  if ((a.mask & kAttrSize) || ((a.mask & (kAttrUid | kAttrGid)) && !S_ISDIR(n.mode))) tmp_kill_file_caps(fs, n);
  if (a.mask & kAttrMode) n.mode = (n.mode & S_IFMT) | (a.mode & 07777);
  if (a.mask & kAttrUid) n.uid = a.uid;
  if (a.mask & kAttrGid) n.gid = a.gid;
  if (a.mask & kAttrAtime) n.atime = a.atime;
  if (a.mask & kAttrMtime) n.mtime = a.mtime;
  n.ctime = tmp_now();
  return 0;
}

long tmp_setattr_path(Task& t, Tmpfs& fs, Lookup& p, const Attr& a) {
  Guard g(fs.lock);
  Walk w;
  long r = walk_existing(t, fs, p, &w, p.follow);
  if (r < 0) return r;
  return tmp_setattr(fs, *w.inode, a);
}

long tmp_xattr_path(Task& t, Tmpfs& fs, Lookup& p, XattrOp& op) {
  Guard g(fs.lock);
  Walk w;
  long r = walk_existing(t, fs, p, &w, p.follow);
  if (r < 0) return r;
  return tmp_xattr(t, fs, *w.inode, op);
}

long tmp_open_dentry_inode(Task& t, Tmpfs& fs, const Dentry& d, int flags, TmpInode** out) {
  Guard g(fs.lock);
  TmpInode* n = tmp_dentry_node(fs, d);
  if (!n) return -ENOENT;
  if ((flags & O_DIRECTORY) && !S_ISDIR(n->mode)) return -ENOTDIR;
  if (long e = may_open(creds_of(t), perms_of(*n), flags)) return e;
  tmp_get(n);
  *out = n;
  return 0;
}

long tmp_open_inode(Task& t, Tmpfs& fs, Lookup& p, int flags, uint32_t mode, TmpInode** out) {
  // Linux (since 6.4) refuses the pair outright rather than create a file.
  if ((flags & O_CREAT) && (flags & O_DIRECTORY) && (flags & __O_TMPFILE) != __O_TMPFILE) return -EINVAL;
  Guard g(fs.lock);
  Walk w;
  long r = walk(t, fs, p, &w);
  if (r < 0) return r;
  int acc = flags & O_ACCMODE;
  if ((flags & __O_TMPFILE) == __O_TMPFILE) {
    if (!w.inode) return -ENOENT;
    if (S_ISLNK(w.inode->mode)) return redirect(p, w.name + w.len, *w.inode, "");
    if (!S_ISDIR(w.inode->mode)) return -ENOTDIR;
    if (acc != O_WRONLY && acc != O_RDWR) return -EINVAL;
    const Creds& c = creds_of(t);
    if (long e = may_create(c, perms_of(*w.inode))) return e;
    FilePerms owner = init_owner(c, perms_of(*w.inode), S_IFREG | (mode & 07777));
    long err = 0;
    TmpInode* n = tmp_new_inode(fs, owner.mode, owner.uid, owner.gid, &err);
    if (!n) return err;
    n->linkable = !(flags & O_EXCL);
    tmp_get(n);
    *out = n;
    return 0;
  }
  bool created = false;
  if (!w.inode) {
    if (!(flags & O_CREAT)) return -ENOENT;
    if (w.len > kTmpNameMax) return -ENAMETOOLONG;
    TmpInode* n = nullptr;
    if ((r = create(t, fs, w, S_IFREG | (mode & 07777), &n)) < 0) return r;
    w.inode = n;
    created = true;
  } else if ((flags & O_CREAT) && (flags & O_EXCL)) {
    return -EEXIST;
  }
  TmpInode* n = w.inode;
  if (S_ISLNK(n->mode)) {
    if (p.follow && !(flags & O_NOFOLLOW))
      return redirect(p, w.name + w.len, *n, "");
    if (!(flags & O_PATH)) return -ELOOP;
  }
  if ((flags & O_DIRECTORY) && !S_ISDIR(n->mode)) return -ENOTDIR;
  if (!(flags & O_PATH) && !created) {
    if (long e = may_open(creds_of(t), perms_of(*n), flags)) return e;
    if ((flags & O_TRUNC) && S_ISREG(n->mode)) {
      tmp_truncate(fs, *n, 0);
      tmp_touch(n, true, true);
    }
  }
  tmp_get(n);
  *out = n;
  return 0;
}

}  // namespace flatux
