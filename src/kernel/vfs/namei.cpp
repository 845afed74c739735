// Dentries for the walk's answers: a canonical inner path to its dentry,
// a Path back to a guest path, the working directory as a Path, and the
// cache kept in step with rename, unlink and rmdir (see namei.h).
#include "kernel/vfs/mount_ns.h"
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

}  // namespace

ErrorOr<Inode*> plain_inode(Task& t, Filesystem& fs, uint64_t ino, const FilePerms& p, uint32_t generation) {
  StatInode* n = t.kernel->heap->make<StatInode>();
  if (!n) return kerr(-ENOMEM);
  n->fs = &fs;
  n->release = release_stat_inode;
  n->ino = ino;
  n->mode = p.mode;
  n->uid = p.uid;
  n->gid = p.gid;
  n->generation = generation;
  return static_cast<Inode*>(n);
}

namespace {

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
  uint32_t gen = fs.ops->inode_generation ? fs.ops->inode_generation(fs, st.st_ino) : 0;
  return plain_inode(t, fs, st.st_ino, FilePerms{st.st_mode, st.st_uid, st.st_gid}, gen);
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
  Inode& n = *d.inode;
  if (st.st_ino != n.ino || (st.st_mode & S_IFMT) != (n.mode & S_IFMT)) return false;
  // The same file: its bits and owner as found now, for the walk's search
  // check (walks read them meanwhile).
  __atomic_store_n(&n.mode, st.st_mode, __ATOMIC_RELAXED);
  __atomic_store_n(&n.uid, st.st_uid, __ATOMIC_RELAXED);
  __atomic_store_n(&n.gid, st.st_gid, __ATOMIC_RELAXED);
  return true;
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

// Where the filesystem's own lookup said so, negative dentries are kept
// (FsOps::dcache_trusted, Filesystem::names_added): the count of names
// added to dir now, which a negative child must still carry to be
// believed. Null: negatives are not kept.
const NameSeqs* negatives_of(Filesystem& fs) { return fs.ops->dcache_trusted ? fs.names_added : nullptr; }

bool still_absent(const NameSeqs& seqs, Dentry& dir, const Dentry& d) {
  return d.seq.load(std::memory_order_relaxed) == seqs.now(dir.inode->ino);
}

// The filesystem's answer for `name` in dir, into the cache: a positive
// dentry, or -ENOENT (remembered as a negative where negatives are kept).
// `neg`: a negative already cached for the name, with a reference (moves
// in). names_lock held.
ErrorOr<Dentry*> ask_fs(Task& t, Mount& m, Dentry& dir, std::string_view name, Dentry* neg) {
  Dcache& cache = *dir.cache;
  const NameSeqs* seqs = negatives_of(*m.fs);
  // Read before asking: a name added after this read changes the count.
  uint64_t seq = seqs ? seqs->now(dir.inode->ino) : NameSeqs::kNone;
  Inode* n = nullptr;
  long r = fs_lookup(t, m, dir, name, &n);
  if (r == 0 && neg) {
    cache.instantiate(*neg, n);
    return neg;
  }
  if (r == -ENOENT && seqs) {
    if (neg) {
      neg->seq.store(seq, std::memory_order_relaxed);
      dput(neg);
      return kerr(-ENOENT);
    }
    if (Dentry* fresh = cache.alloc(dir, name)) {
      fresh->seq.store(seq, std::memory_order_relaxed);
      dput(cache.add(fresh, nullptr));
    }
    return kerr(-ENOENT);
  }
  if (neg) {
    cache.drop(*neg);
    dput(neg);
  }
  if (r < 0) return kerr(r);
  Dentry* fresh = cache.alloc(dir, name);
  if (!fresh) {
    inode_put(n);
    return kerr(-ENOMEM);
  }
  Dentry* d = cache.add(fresh, n);
  if (!d->negative()) return d;
  dput(d);  // an unlink made it negative meanwhile: gone again
  return kerr(-ENOENT);
}

// The child `name` of dir, positive, with a reference. `locked`: the
// caller holds the filesystem's names_lock.
ErrorOr<Dentry*> lookup_child(Task& t, Mount& m, Dentry& dir, std::string_view name, bool locked) {
  Filesystem& fs = *m.fs;
  Dcache& cache = *dir.cache;
  bool trusted = fs.ops->dcache_trusted;
  const NameSeqs* seqs = negatives_of(fs);
  Dentry* d = cache.lookup(dir, name);
  if (d && !d->negative() && (trusted || still_true(t, m, *d))) return d;
  if (d && d->negative() && seqs && still_absent(*seqs, dir, *d)) {
    dput(d);
    return kerr(-ENOENT);
  }
  if (!locked) fs.names_lock.lock();
  // Asked again under the lock: a rename or lookup may have finished meanwhile.
  if (d) {
    if (!trusted || (d->negative() && !seqs)) cache.drop(*d);
    dput(d);
  }
  d = trusted ? cache.lookup(dir, name) : nullptr;
  ErrorOr<Dentry*> got = kerr(-ENOENT);
  if (d && !d->negative()) got = d;
  else if (d && seqs && still_absent(*seqs, dir, *d)) dput(d);
  else got = ask_fs(t, m, dir, name, d);
  if (!locked) fs.names_lock.unlock();
  return got;
}

// The component of an inner path at i (after any slashes), i moved past
// it; "" at the end.
std::string_view next_component(std::string_view inner, size_t& i) {
  while (i < inner.size() && inner[i] == '/') i++;
  size_t s = i;
  while (i < inner.size() && inner[i] != '/') i++;
  return std::string_view(inner.data() + s, i - s);  // not substr: it may throw
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
    std::string_view name = next_component(inner, i);
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
    std::string_view name = next_component(inner, i);
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

ErrorOr<Dentry*> mount_point_dentry(Task& t, Mount& m, std::string_view inner) {
  auto root = walk_inner(t, m, "/", false);
  if (root.is_error()) return root;
  Dentry* cur = root.value();
  size_t i = 0;
  while (i < inner.size()) {
    std::string_view name = next_component(inner, i);
    if (name.empty()) continue;
    auto r = lookup_child(t, m, *cur, name, false);
    Dentry* next = nullptr;
    if (!r.is_error()) {
      next = r.value();
    } else if (r.error() == -ENOENT) {
      // Added negative with no count (NameSeqs::kNone): the filesystem
      // is asked again whenever anything but the mount looks at it.
      Dcache& cache = *cur->cache;
      if (Dentry* fresh = cache.alloc(*cur, name)) next = cache.add(fresh, nullptr);
    }
    dput(cur);
    if (!next) return kerr(r.is_error() && r.error() != -ENOENT ? r.error() : -ENOMEM);
    cur = next;
  }
  return cur;
}

ErrorOr<Dentry*> dentry_of(Task& t, Lookup& lk) {
  if (lk.dir && !lk.name.empty()) return lookup_child(t, *lk.mount, *lk.dir, lk.name, false);
  return dentry_of(t, *lk.mount, lk.path);
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
    fc.has_root.store(bool(p), std::memory_order_relaxed);
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

// --- the walk ----------------------------------------------------------------
//
// One component at a time, over the dentry cache: a name is looked up in
// the directory's dentry (lookup_child), a dentry that is a mount point
// leads to the root of what is mounted there, ".." goes to the parent
// dentry, or from a mount's root to the dentry it is mounted on, and stops
// at the process root; symlinks are read and their targets walked in
// place of the link. A mount is found by (the mount the walk is on, the
// dentry it stands on), as Linux's __lookup_mnt: a folder none of whose
// children is a mount point costs one test (Dentry::mounted_children).
// The walk keeps the canonical guest path of where it stands, for
// operations and /proc; until a new mount's point is pinned
// (Vfs::pin_points, at the next walk), mounts are matched by that path.

namespace flatux {
namespace {

bool is_dir(const Dentry& d) { return d.inode && S_ISDIR(d.inode->mode); }
bool is_link(const Dentry& d) { return d.inode && S_ISLNK(d.inode->mode); }

// Search permission on the directory the walk stands in, before a name is
// looked up in it: from its inode as the filesystem has it now, so a
// chmod or chown by anyone is seen by the next walk through it.
long may_search(Walk& w) {
  Filesystem& fs = *w.mnt->fs;
  Dentry& d = *w.dentry;
  FilePerms p = fs.ops->dir_perms ? fs.ops->dir_perms(w.t, fs, *w.mnt, d)
                                  : FilePerms{__atomic_load_n(&d.inode->mode, __ATOMIC_RELAXED),
                                              __atomic_load_n(&d.inode->uid, __ATOMIC_RELAXED),
                                              __atomic_load_n(&d.inode->gid, __ATOMIC_RELAXED)};
  return may_lookup(creds_of(w.t), p);
}

std::string_view guest_of(const Walk& w) { return std::string_view(w.guest, w.glen); }

bool scope_has(const Walk& w, unsigned flag) { return w.scope && (w.scope->resolve & flag); }

// The inner path of guest path `g` on m: m's root, then what g adds to
// its mount point.
long inner_at(const Mount& m, std::string_view g, std::string_view name, char* out, size_t n) {
  KFmt f(out, n);
  m.with_place([&](std::string_view point, std::string_view root) {
    if (root.size() > 1) f.str(root);
    if (g.size() > point.size() && point.size() > 1) f.str(tail(g, point.size()));
    else if (point.size() == 1 && g.size() > 1) f.str(g);
  });
  if (!name.empty()) f.str("/").str(name);
  if (f.size() == 0) f.str("/");
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  return 0;
}

void set_place(Walk& w, Mount* m, Dentry* d) {
  w.leave();
  w.mnt = m;
  w.dentry = d;
}

// The dentry the walk stands on becomes d (whose reference moves in).
void set_dentry(Walk& w, Dentry* d) {
  if (!w.dentry_borrowed) dput(w.dentry);
  w.dentry_borrowed = false;
  w.dentry = d;
}

// The dentry of what m shows at its mount point, with a reference.
ErrorOr<Dentry*> mount_root(Task& t, Mount& m) {
  if (Dentry* d = m.mnt_root.load(std::memory_order_acquire)) return dget(d);
  char root[kPathMax];
  // The root follows renames (Vfs::follow_rename): read it whole.
  if (!m.with_place([&](std::string_view, std::string_view r) { return copy_cstr(root, sizeof root, r); }))
    return kerr(-ENAMETOOLONG);
  auto d = dentry_of(t, m, root);
  if (d.is_error()) return d;
  Dentry* expected = nullptr;
  if (!m.mnt_root.compare_exchange_strong(expected, dget(d.value()), std::memory_order_acq_rel)) dput(d.value());
  return d;
}

// Stands the walk at guest path g (canonical: links resolved, no "..").
long jump_to(Walk& w, const char* g) {
  char inner[kPathMax];
  bool top = g[0] == '/' && g[1] == 0;
  MountNs& ns = mnt_ns_of(w.t);
  Mount* m = top ? w.t.kernel->vfs->root_mount(ns) : w.t.kernel->vfs->find(ns, g, inner, sizeof inner);
  if (!m) return -ENAMETOOLONG;
  auto d = top ? mount_root(w.t, *m) : dentry_of(w.t, *m, inner);
  if (d.is_error()) {
    m->put();
    return d.error();
  }
  set_place(w, m, d.value());
  if (!copy_cstr(w.guest, sizeof w.guest, g)) return -ENAMETOOLONG;
  w.glen = strlen(w.guest);
  return 0;
}

// Stands the walk at p (references move in), whose guest path it computes.
long stand_at(Walk& w, Path p) {
  set_place(w, p.mnt, p.dentry);
  bool deleted = false;
  long r = guest_path_of(p, w.guest, sizeof w.guest, &deleted);
  if (r < 0) return r;
  if (deleted) return -ENOENT;  // nothing is found or made in a removed folder
  w.glen = strlen(w.guest);
  return 0;
}

// The guest path absolute paths start at and ".." stops at, worked out
// at its first use in the walk; nullptr when it has none (a removed
// chroot directory: nothing is found through it).
const char* root_of(Walk& w) {
  if (w.root[0]) return w.root;
  if (scope_has(w, WalkScope::kInRoot)) {
    if (!copy_cstr(w.root, sizeof w.root, w.scope->root)) return nullptr;
  } else if (fs_root(w.t, w.root, sizeof w.root) < 0) {
    w.root[0] = 0;
    return nullptr;
  }
  return w.root;
}

// Stands the walk on the namespace's bare root, without references;
// false when something is mounted over it (or its root dentry is not made
// yet): the caller takes the counted way.
bool borrow_bare_root(Walk& w) {
  Mount* m = Vfs::bare_root(mnt_ns_of(w.t));
  Dentry* d = m ? m->mnt_root.load(std::memory_order_acquire) : nullptr;
  if (!d) return false;
  w.leave();
  w.mnt = m;
  w.dentry = d;
  w.mnt_borrowed = w.dentry_borrowed = true;
  w.guest[0] = '/';
  w.guest[1] = 0;
  w.glen = 1;
  return true;
}

long go_to_root(Walk& w) {
  if (!scope_has(w, WalkScope::kInRoot)) {
    FsContext& fc = *w.t.proc->fs;
    if (!fc.has_root.load(std::memory_order_relaxed) && borrow_bare_root(w)) return 0;
    Path root;
    {
      Guard g(fc.lock);
      if (fc.root) root = path_get(fc.root);
    }
    if (root) return stand_at(w, root);
    return jump_to(w, "/");
  }
  const char* root = root_of(w);
  return root ? jump_to(w, root) : -ENOENT;
}

long start(Walk& w, int dirfd, const char* path, bool from_top) {
  w.root[0] = 0;
  if (w.from) {
    Path at = w.from;
    w.from = Path{};
    return stand_at(w, at);
  }
  if (from_top) return borrow_bare_root(w) ? 0 : jump_to(w, "/");
  if (path[0] == '/') return scope_has(w, WalkScope::kBeneath) ? -EXDEV : go_to_root(w);
  if (dirfd == AT_FDCWD) {
    auto cwd = fs_cwd(w.t);
    if (cwd.is_error()) return cwd.error();
    return stand_at(w, cwd.release_value());
  }
  File* f = w.t.proc->files->get(dirfd);
  if (!f) return -EBADF;
  auto p = path_of_file(w.t, *f);
  // An O_PATH descriptor of a symlink itself is no folder to start from.
  bool link_itself = (f->flags & O_NOFOLLOW) && !p.is_error() && is_link(*p.value().dentry);
  f->put();
  if (p.is_error()) return p.error();
  Path start = p.release_value();
  if (link_itself) {
    path_put(start);
    return -ENOTDIR;
  }
  return stand_at(w, start);
}

bool at_guest(const Walk& w, const char* g) { return guest_of(w) == std::string_view(g); }

// One folder up inside the filesystem: the parent dentry, and the guest
// path without its last component.
void to_parent(Walk& w) {
  set_dentry(w, w.dentry->cache->get_parent(*w.dentry));
  while (w.glen > 1 && w.guest[w.glen - 1] != '/') w.glen--;
  if (w.glen > 1) w.glen--;
  w.guest[w.glen] = 0;
}

// ".." from where the walk stands.
long step_up(Walk& w) {
  if (scope_has(w, WalkScope::kBeneath) && at_guest(w, w.scope->root)) return -EXDEV;
  const char* root = root_of(w);
  if (!root) return -ENOENT;
  if (at_guest(w, root)) return 0;  // ".." at the root is the root
  // At a mount's root: first down to the dentry it is mounted on.
  while (w.mnt->with_place([&](std::string_view point, std::string_view) { return point == guest_of(w); })) {
    Mount* parent = w.t.kernel->vfs->parent_of(*w.mnt);
    if (!parent) return 0;  // the namespace's root, or a detached mount's
    if (scope_has(w, WalkScope::kNoXdev)) {
      parent->put();
      return -EXDEV;
    }
    // The dentry it is mounted on, pinned by the mount.
    Path point = w.t.kernel->vfs->mount_point_of(*w.mnt);
    if (point) {
      parent->put();
      set_place(w, point.mnt, point.dentry);
      continue;
    }
    char inner[kPathMax];
    long r = inner_at(*parent, guest_of(w), {}, inner, sizeof inner);
    auto d = r < 0 ? ErrorOr<Dentry*>(kerr(r)) : dentry_of(w.t, *parent, inner);
    if (d.is_error()) {
      parent->put();
      return d.error();
    }
    set_place(w, parent, d.value());
  }
  to_parent(w);
  return 0;
}

long append(Walk& w, std::string_view name) {
  size_t need = w.glen + (w.glen > 1) + name.size();
  if (need >= sizeof w.guest) return -ENAMETOOLONG;
  if (w.glen > 1) w.guest[w.glen++] = '/';
  memcpy(w.guest + w.glen, name.data(), name.size());
  w.glen += name.size();
  w.guest[w.glen] = 0;
  return 0;
}

// The mount on the child `name` of the walk's place, with a reference;
// nullptr when nothing is mounted there.
Mount* mounted_below(Walk& w, std::string_view name) {
  if (w.mnt->children.load(std::memory_order_relaxed) == 0) return nullptr;
  Vfs& vfs = *w.t.kernel->vfs;
  if (vfs.points_pinned()) {
    if (w.dentry->mounted_children.load(std::memory_order_relaxed) == 0) return nullptr;
    // The cached child as it is, unchecked: a mount point stays hashed
    // (Dcache::drop), and a name the folder lacks may hold one.
    Dentry* d = w.dentry->cache->lookup(*w.dentry, name);
    if (!d) return nullptr;
    Mount* top = __atomic_load_n(&d->mounts, __ATOMIC_RELAXED) ? vfs.mounted_on(w.mnt, d) : nullptr;
    dput(d);
    return top;
  }
  if (!vfs.may_be_mount_point(name)) return nullptr;
  size_t keep = w.glen;
  if (append(w, name) < 0) return nullptr;
  Mount* top = vfs.mounted_at(w.mnt, guest_of(w));
  w.glen = keep;
  w.guest[keep] = 0;
  return top;
}

// Steps onto the root of `top` (its reference moves in), mounted on the
// child `name` of the walk's place.
long enter_mount(Walk& w, Mount* top, std::string_view name) {
  if (scope_has(w, WalkScope::kNoXdev)) {
    top->put();
    return -EXDEV;
  }
  auto root = mount_root(w.t, *top);
  if (root.is_error()) {
    top->put();
    return root.error();
  }
  set_place(w, top, root.value());
  return append(w, name);
}

// Steps into the child directory d (a reference moves in) named `name`.
long step_into(Walk& w, Dentry* d, std::string_view name) {
  set_dentry(w, d);
  return append(w, name);
}

// The link at (w's place, name) read; `rest` (the components after it)
// appended, into buf. Returns whether the target is absolute, or an error.
long read_link(Walk& w, std::string_view name, std::string_view rest, char* buf, size_t n) {
  char inner[kPathMax];
  TRY_LONG(inner_at(*w.mnt, guest_of(w), name, inner, sizeof inner));
  Filesystem& fs = *w.mnt->fs;
  Lookup lk(inner, false, w.mnt);
  char target[kPathMax];
  long len = fs.ops->readlink ? fs.ops->readlink(w.t, fs, lk, target, sizeof target - 1) : -EINVAL;
  if (len == kRedirect) return -ENOENT;  // changed meanwhile
  if (len < 0) return len;
  if (len == 0) return -ENOENT;
  KFmt f(buf, n);
  f.str(std::string_view(target, (size_t)len));
  if (!rest.empty()) f.str("/").str(rest);
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  return target[0] == '/';
}

// Whether the link at (w's place, name) is a magic one (/proc/PID/fd/N),
// which the filesystem's operation follows itself.
bool is_magic(Walk& w, std::string_view name) {
  Filesystem& fs = *w.mnt->fs;
  if (!fs.ops->magic_file) return false;
  char inner[kPathMax];
  if (inner_at(*w.mnt, guest_of(w), name, inner, sizeof inner) < 0) return false;
  Lookup lk(inner, true, w.mnt);
  File* f = nullptr;
  if (fs.ops->magic_file(w.t, fs, lk, &f) != 0) return false;
  f->put();
  return true;
}

// Whether the walk must look the last component up itself: to follow it
// when it is a symlink. Otherwise the operation looks the name up (one
// lookup, not two: on hostfs each is a host call); a link it meets comes
// back as a redirect, and the walk goes on from its target. Where the
// filesystem changes behind the cache (hostfs), a link the cache already
// knows is followed here, which spares the operation's host call; where
// it does not, the operation's own lookup is in memory and links last are
// rare. A confined walk (openat2) always looks, so no fresh start from
// the namespace's top meets its limits on the way.
bool needs_last_lookup(Walk& w, std::string_view name, bool follow) {
  if (!follow) return false;
  if (w.scope) return true;
  if (w.mnt->fs->ops->dcache_trusted) return false;
  return S_ISLNK(w.dentry->cache->cached_mode(*w.dentry, name));
}

// The Lookup for the place itself (".", "..", a mount's root).
long finish_here(Walk& w, bool follow, Lookup& lk) {
  TRY_LONG(inner_at(*w.mnt, guest_of(w), {}, w.inner, sizeof w.inner));
  lk.path = w.inner;
  lk.follow = follow;
  lk.mount = w.mnt;
  return 0;
}

// The Lookup for `name` in the place's directory.
long finish_name(Walk& w, std::string_view name, bool follow, Lookup& lk) {
  TRY_LONG(inner_at(*w.mnt, guest_of(w), name, w.inner, sizeof w.inner));
  memcpy(w.last, name.data(), name.size());
  w.last[name.size()] = 0;
  lk.path = w.inner;
  lk.follow = follow;
  lk.mount = w.mnt;
  lk.dir = w.dentry;
  lk.name = std::string_view(w.last, name.size());
  return 0;
}

}  // namespace

void Walk::leave() {
  if (!dentry_borrowed) dput(dentry);
  if (mnt && !mnt_borrowed) mnt->put();
  dentry = nullptr;
  mnt = nullptr;
  dentry_borrowed = mnt_borrowed = false;
}

uint32_t rename_seq_now(Task& t) { return t.kernel->dcache->rename_seq(); }
bool renamed_since(Task& t, uint32_t seq) { return t.kernel->dcache->rename_seq() != seq; }

namespace {

// Steps back from a starting link to its folder; `out` is then the link's
// name followed by `path`.
long prepend_start_link(Walk& w, const char* path, char* out, size_t n) {
  char name[kNameMax + 1];
  TRY_LONG(w.dentry->cache->name_of(*w.dentry, name, sizeof name));
  if (w.dentry->flags & Dentry::kRoot) return -ENOTDIR;
  to_parent(w);
  KFmt f(out, n);
  f.str(name).str("/").str(path);
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  return 0;
}

}  // namespace

long walk_path(Walk& w, int dirfd, const char* path, bool follow, bool from_top, Lookup& lk) {
  if (w.t.kernel->vfs->pins_pending()) w.t.kernel->vfs->pin_points(w.t);
  TRY_LONG(start(w, dirfd, path, from_top));
  // Root searches every folder: one test here, none per component.
  bool check_search = !searches_every_dir(creds_of(w.t));
  char bufs[2][kPathMax];  // a link's target and the rest of the path
  int cur = 1;
  const char* p = path;
  if (is_link(*w.dentry)) {
    // A dirfd opened through a link its filesystem followed itself
    // (/proc/self): the walk starts at the link, from its folder.
    cur = 0;
    TRY_LONG(prepend_start_link(w, path, bufs[cur], kPathMax));
    p = bufs[cur];
  }
  for (;;) {
    while (*p == '/') p++;
    const char* s = p;
    while (*p && *p != '/') p++;
    std::string_view name(s, (size_t)(p - s));
    const char* rest = p;
    while (*rest == '/') rest++;
    bool last = *rest == 0;
    if (name.empty()) return finish_here(w, follow, lk);  // "/", or slashes at the end
    bool dir = is_dir(*w.dentry);
    // Linux's may_lookup, for every component: "." and ".." too.
    if (check_search && dir) TRY_LONG(may_search(w));
    if (name == ".") {
      if (last) return finish_here(w, follow, lk);
      continue;
    }
    if (!dir) return -ENOTDIR;
    if (name == "..") {
      TRY_LONG(step_up(w));
      if (last) return finish_here(w, follow, lk);
      continue;
    }
    if (name.size() > kNameMax) return -ENAMETOOLONG;
    if (w.dentry->inode->dead.load(std::memory_order_acquire)) return -ENOENT;
    // A mount point first: the kernel's own mounts (/proc, /dev) may stand
    // on names the folder below does not have.
    if (Mount* top = mounted_below(w, name)) {
      TRY_LONG(enter_mount(w, top, name));
      if (last) return finish_here(w, follow, lk);  // what is mounted there
      continue;
    }
    if (last && !needs_last_lookup(w, name, follow)) return finish_name(w, name, follow, lk);
    auto child = lookup_child(w.t, *w.mnt, *w.dentry, name, false);
    if (child.is_error()) {
      if (last && child.error() == -ENOENT) return finish_name(w, name, follow, lk);
      return child.error();
    }
    Dentry* d = child.value();
    if (is_link(*d) && (!last || follow)) {
      if (last && is_magic(w, name)) {
        dput(d);
        return finish_name(w, name, follow, lk);
      }
      dput(d);
      if (scope_has(w, WalkScope::kNoSymlinks) || ++w.links > kMaxSymlinks) return -ELOOP;
      int next = cur ^ 1;
      long abs = read_link(w, name, rest, bufs[next], kPathMax);
      if (abs < 0) return abs;
      if (abs) {
        if (scope_has(w, WalkScope::kBeneath)) return -EXDEV;
        TRY_LONG(go_to_root(w));
      }
      cur = next;
      p = bufs[cur];
      continue;
    }
    if (last) {
      dput(d);
      return finish_name(w, name, follow, lk);
    }
    if (!is_dir(*d)) {
      dput(d);
      return -ENOTDIR;
    }
    TRY_LONG(step_into(w, d, name));
  }
}

}  // namespace flatux
