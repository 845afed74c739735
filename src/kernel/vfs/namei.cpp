// Dentries for the walk's answers: a canonical inner path to its dentry,
// a Path back to a guest path, the working directory as a Path, and the
// cache kept in step with rename, unlink and rmdir (see namei.h).
#include "kernel/vfs/namei.h"

#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>

#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/path_ops.h"

namespace flatux {
namespace {

// An inode known only by what the filesystem's stat says: identity (type
// and number) for the cache, the rest as last seen.
struct StatInode : Inode {};

void release_stat_inode(Inode* n) {
  // Inodes carry no heap pointer: the kernel heap lives at its fixed address.
  reinterpret_cast<Heap*>(kHeapBase)->destroy_obj(static_cast<StatInode*>(n));
}

long stat_inner(Task& t, Mount& m, const char* inner, struct stat* st) {
  Lookup lk(inner, false, &m);
  long r = m.fs->ops->stat(t, *m.fs, lk, st);
  // A link on the way: the path is not what the cache was told.
  return r == kRedirect ? -ENOENT : r;
}

long child_path(Dentry& dir, std::string_view name, char* out, size_t n) {
  long len = dir.cache->path_in_fs(&dir, out, n);
  if (len < 0) return len;
  KFmt f(out + len, n - (size_t)len);
  if (len > 1) f.str("/");
  f.str(name);
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  return 0;
}

ErrorOr<Inode*> inode_from_stat(Task& t, Filesystem& fs, const struct stat& st) {
  StatInode* n = t.kernel->heap->make<StatInode>();
  if (!n) return kerr(-ENOMEM);
  n->fs = &fs;
  n->release = release_stat_inode;
  n->ino = st.st_ino;
  n->mode = st.st_mode;
  n->uid = st.st_uid;
  n->gid = st.st_gid;
  return static_cast<Inode*>(n);
}

// The generic FsOps::lookup: the filesystem's stat of the name's path.
long stat_lookup(Task& t, Filesystem& fs, Mount& m, Dentry& dir, std::string_view name, Inode** out) {
  char path[kPathMax];
  long r = child_path(dir, name, path, sizeof path);
  if (r < 0) return r;
  struct stat st;
  if ((r = stat_inner(t, m, path, &st)) < 0) return r;
  auto n = inode_from_stat(t, fs, st);
  if (n.is_error()) return n.error();
  *out = n.value();
  return 0;
}

long fs_lookup(Task& t, Mount& m, Dentry& dir, std::string_view name, Inode** out) {
  Filesystem& fs = *m.fs;
  if (fs.ops->lookup) return fs.ops->lookup(t, fs, m, dir, name, out);
  return stat_lookup(t, fs, m, dir, name, out);
}

// Whether a cached dentry of a filesystem that changes behind the cache
// still names what it named (the same type and inode number).
bool still_true(Task& t, Mount& m, Dentry& d) {
  if (m.fs->ops->revalidate) return m.fs->ops->revalidate(t, *m.fs, m, d);
  char path[kPathMax];
  if (d.cache->path_in_fs(&d, path, sizeof path) < 0) return false;
  struct stat st;
  if (stat_inner(t, m, path, &st) < 0) return false;
  return st.st_ino == d.inode->ino && (st.st_mode & S_IFMT) == (d.inode->mode & S_IFMT);
}

// The filesystem's root dentry, with a reference (names_lock held).
ErrorOr<Dentry*> root_dentry_locked(Task& t, Mount& m) {
  Filesystem& fs = *m.fs;
  if (!fs.root_dentry) {
    struct stat st;
    long r = stat_inner(t, m, "/", &st);
    if (r < 0) return kerr(r);
    auto n = inode_from_stat(t, fs, st);
    if (n.is_error()) return kerr(n.error());
    Dentry* root = t.kernel->dcache->make_root(&fs, n.value());
    if (!root) {
      inode_put(n.value());
      return kerr(-ENOMEM);
    }
    __atomic_store_n(&fs.root_dentry, root, __ATOMIC_RELEASE);
  }
  return dget(fs.root_dentry);
}

// The child `name` of dir, positive, with a reference. `locked`: the
// caller holds the filesystem's names_lock.
ErrorOr<Dentry*> lookup_child(Task& t, Mount& m, Dentry& dir, std::string_view name, bool locked) {
  Filesystem& fs = *m.fs;
  Dcache& cache = *dir.cache;
  Dentry* d = cache.lookup(dir, name);
  if (d && !d->negative() && (fs.ops->dcache_trusted || still_true(t, m, *d))) return d;
  if (!locked) fs.names_lock.lock();
  // Asked again under the lock: a rename or lookup may have finished meanwhile.
  if (d) {
    if (!fs.ops->dcache_trusted || d->negative()) cache.drop(*d);
    dput(d);
  }
  d = fs.ops->dcache_trusted ? cache.lookup(dir, name) : nullptr;
  long r = 0;
  if (!d || d->negative()) {
    dput(d);
    d = nullptr;
    Inode* n = nullptr;
    r = fs_lookup(t, m, dir, name, &n);
    if (r == 0) {
      Dentry* fresh = cache.alloc(dir, name);
      if (fresh) d = cache.add(fresh, n);
      else {
        inode_put(n);
        r = -ENOMEM;
      }
    }
  }
  if (!locked) fs.names_lock.unlock();
  if (r < 0) return kerr(r);
  if (d->negative()) {
    dput(d);
    return kerr(-ENOENT);
  }
  return d;
}

ErrorOr<Dentry*> walk_inner(Task& t, Mount& m, std::string_view inner, bool locked) {
  // Made once, kept until the filesystem goes: read without the lock.
  Dentry* made = __atomic_load_n(&m.fs->root_dentry, __ATOMIC_ACQUIRE);
  ErrorOr<Dentry*> root = kerr(-ENOENT);
  if (made) {
    root = dget(made);
  } else if (locked) {
    root = root_dentry_locked(t, m);
  } else {
    Guard g(m.fs->names_lock);
    root = root_dentry_locked(t, m);
  }
  if (root.is_error()) return root;
  Dentry* cur = root.value();
  size_t i = 0;
  while (i < inner.size()) {
    while (i < inner.size() && inner[i] == '/') i++;
    size_t s = i;
    while (i < inner.size() && inner[i] != '/') i++;
    std::string_view name(inner.data() + s, i - s);
    if (name.empty() || name == ".") continue;
    Dentry* next;
    if (name == "..") {
      next = cur->cache->get_parent(*cur);
    } else {
      auto r = lookup_child(t, m, *cur, name, locked);
      if (r.is_error()) {
        dput(cur);
        return r;
      }
      next = r.value();
    }
    dput(cur);
    cur = next;
  }
  return cur;
}

// The cached dentry of `inner`, without asking the filesystem; nullptr
// when some part of it is not cached.
Dentry* peek_inner(Filesystem& fs, std::string_view inner) {
  if (!fs.root_dentry) return nullptr;
  Dentry* cur = dget(fs.root_dentry);
  size_t i = 0;
  while (cur && i < inner.size()) {
    while (i < inner.size() && inner[i] == '/') i++;
    size_t s = i;
    while (i < inner.size() && inner[i] != '/') i++;
    std::string_view name(inner.data() + s, i - s);
    if (name.empty() || name == ".") continue;
    Dentry* next = name == ".." ? cur->cache->get_parent(*cur) : cur->cache->lookup(*cur, name);
    dput(cur);
    cur = next;
  }
  return cur;
}

}  // namespace

ErrorOr<Dentry*> dentry_of(Task& t, Mount& m, std::string_view inner) {
  return walk_inner(t, m, inner, false);
}

ErrorOr<Path> path_of_file(Task& t, File& f) {
  if (!f.mount || !f.path) return kerr(-ENOTDIR);
  if (f.dentry) return path_get(Path{f.mount, f.dentry});
  Mount& m = *f.mount;
  char now[kPathMax];
  const char* inner = f.path;
  if (m.fs->ops->dir_path && m.fs->ops->dir_path(t, *m.fs, f, now, sizeof now) == 0) inner = now;
  auto d = dentry_of(t, m, inner);
  if (d.is_error()) return kerr(d.error());
  m.get();
  return Path{&m, d.value()};
}

long inner_to_guest(const Mount& m, std::string_view rel, char* out, size_t n) {
  return m.with_place([&](std::string_view point, std::string_view root) -> long {
    if (root.size() > 1) {
      if (!starts_with(rel, root) || (rel.size() > root.size() && rel[root.size()] != '/'))
        return -ENOENT;  // moved out of what the mount shows
      rel = tail(rel, root.size());
    }
    KFmt o(out, n);
    if (point.size() > 1) o.str(point);
    if (rel.size() > 1 || point.size() == 1) o.str(rel.empty() ? std::string_view("/") : rel);
    if (o.truncated()) return -ENAMETOOLONG;
    o.c_str();
    return 0;
  });
}

long guest_path_of(const Path& p, char* out, size_t n, bool* deleted) {
  char inner[kPathMax];
  long r = p.dentry->cache->path_in_fs(p.dentry, inner, sizeof inner, deleted);
  if (r < 0) return r;
  return inner_to_guest(*p.mnt, std::string_view(inner, (size_t)r), out, n);
}

long fs_root_path(const FsContext& fc, char* out, size_t n, bool* deleted) {
  *deleted = false;
  if (!fc.root) return copy_cstr(out, n, "/") ? 0 : -ENAMETOOLONG;
  return guest_path_of(fc.root, out, n, deleted);
}

long fs_root_path(Task& t, char* out, size_t n, bool* deleted) {
  FsContext& fc = *t.proc->fs;
  Guard g(fc.lock);
  return fs_root_path(fc, out, n, deleted);
}

long fs_root_locked(const FsContext& fc, char* out, size_t n) {
  bool deleted = false;
  long r = fs_root_path(fc, out, n, &deleted);
  // A removed root stays the root, but nothing is found below it: its
  // last path may name another folder by now.
  return r == 0 && deleted ? -ENOENT : r;
}

long fs_root(Task& t, char* out, size_t n) {
  FsContext& fc = *t.proc->fs;
  Guard g(fc.lock);
  return fs_root_locked(fc, out, n);
}

void fs_set_root(Task& t, Path p) {
  FsContext& fc = *t.proc->fs;
  Path old;
  {
    Guard g(fc.lock);
    old = fc.root;
    fc.root = p;
  }
  path_put(old);
}

ErrorOr<Path> fs_cwd(Task& t) {
  FsContext& fc = *t.proc->fs;
  {
    Guard g(fc.lock);
    if (fc.cwd) return path_get(fc.cwd);
  }
  // The first process's first use: the kernel's start folder (absolute,
  // so its walk needs no cwd).
  File* dir = nullptr;
  long r = vfs_open(t, AT_FDCWD, t.kernel->cfg.cwd, O_PATH | O_DIRECTORY, 0, &dir);
  if (r < 0) return kerr(r);
  auto p = path_of_file(t, *dir);
  if (p.is_error()) {
    dir->put();
    return p;
  }
  Path got = p.release_value();
  Guard g(fc.lock);
  if (!fc.cwd) {
    fc.cwd = path_get(got);
    fc.cwd_file = dir;
  } else {  // another thread was first
    path_put(got);
    dir->put();
    got = path_get(fc.cwd);
  }
  return got;
}

void fs_set_cwd(Task& t, Path p, File* opened) {
  FsContext& fc = *t.proc->fs;
  Path old;
  File* old_file;
  {
    Guard g(fc.lock);
    old = fc.cwd;
    old_file = fc.cwd_file;
    fc.cwd = p;
    fc.cwd_file = opened;
  }
  path_put(old);
  if (old_file) old_file->put();
}

File* fs_removed_cwd_file(Task& t) {
  FsContext& fc = *t.proc->fs;
  Guard g(fc.lock);
  if (!fc.cwd || !fc.cwd_file) return nullptr;
  char path[kPathMax];
  bool deleted = false;
  if (guest_path_of(fc.cwd, path, sizeof path, &deleted) < 0 || !deleted) return nullptr;
  fc.cwd_file->get();
  return fc.cwd_file;
}

void dcache_name_removed(Task&, Lookup& lk, bool dir) {
  Dentry* d = peek_inner(*lk.mount->fs, lk.path);
  if (!d) return;
  if (dir && d->inode) d->inode->dead.store(true, std::memory_order_release);
  d->cache->remove(*d);
  dput(d);
}

void dcache_name_moved(Task& t, Lookup& from, Lookup& to, bool exchange) {
  Filesystem& fs = *from.mount->fs;
  const char* src_path = from.path;
  const char* dst_path = to.path;
  Dentry* src = peek_inner(fs, src_path);
  Dentry* dst = peek_inner(fs, dst_path);
  if (src && src->negative()) {
    dput(src);
    src = nullptr;
  }
  if (!src && exchange && dst && !dst->negative()) {
    // Only the other side is cached: it is the one moving.
    src = dst;
    dst = nullptr;
    const char* p = src_path;
    src_path = dst_path;
    dst_path = p;
  }
  if (!src) {
    // What the destination's name now names is not cached: it is asked afresh.
    if (dst) {
      dst->cache->drop(*dst);
      dput(dst);
    }
    return;
  }
  Dcache& cache = *src->cache;
  bool swap = exchange && dst && !dst->negative();
  if (!dst) {
    // The destination's folder, made as needed: src may be someone's cwd.
    std::string_view parent, name;
    split_last(dst_path, &parent, &name);
    auto dir = walk_inner(t, *from.mount, parent, true);
    if (!dir.is_error()) {
      dst = cache.lookup(*dir.value(), name);
      if (!dst) dst = cache.alloc(*dir.value(), name);
      dput(dir.value());
    }
  }
  if (!dst || cache.move(*src, *dst, swap) < 0) cache.drop(*src);  // no memory: forgotten, not wrong
  dput(dst);
  dput(src);
}

void fs_drop_dentries(Filesystem& fs) {
  Dentry* root = fs.root_dentry;
  if (!root) return;
  root->cache->shrink_fs(&fs);
  fs.root_dentry = nullptr;
  dput(root);
}

}  // namespace flatux
