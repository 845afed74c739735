// The mount table: a tree of mounts (each knows the mount holding its
// mount point), walked from the root to find the mount showing a path, and
// shared-subtree propagation between peer groups and their slaves, as
// Linux's fs/pnode.c does it (Documentation/filesystems/sharedsubtree.rst):
//
// - a mount in a peer group (`group`) passes every mount and unmount made
//   on it to the other members and to the slaves of the group (`master`);
// - a bind mount of a shared mount joins its group, of a slave becomes a
//   slave of the same group;
// - a mount landing on a shared mount is made shared itself, and a copy of
//   it (with the mounts below it) lands at the same place in every peer
//   (joining its groups) and every slave (as a slave of it);
// - an unmount takes the copies at the same place in the receivers along,
//   unless something is mounted on them.
//
// Every table operation runs under the one lock, and the mounts it creates
// are marked with its number: they receive nothing from it.
#include <cstring>
#include <linux/errno.h>
#include <sys/mount.h>

#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/vfs.h"

namespace flatux {
namespace {

// Whether guest path p lies at or below dir.
bool under(std::string_view p, std::string_view dir) {
  if (dir == "/") return true;
  return starts_with(p, dir) && (p.size() == dir.size() || p[dir.size()] == '/');
}

// What p adds to dir, which holds it: "" or "/x/y".
std::string_view below(std::string_view p, std::string_view dir) {
  if (dir == "/") return p == "/" ? std::string_view() : p;
  return tail(p, dir.size());
}

// dir followed by rest ("" or "/x").
bool join(char* out, size_t n, std::string_view dir, std::string_view rest) {
  KFmt f(out, n);
  if (dir != "/") f.str(dir);
  if (!rest.empty()) f.str(rest);
  else if (dir == "/") f.str("/");
  if (f.truncated()) return false;
  f.c_str();
  return true;
}

std::string_view path_of(const Mount& m) { return std::string_view(m.path, m.len); }
std::string_view root_of(const Mount& m) { return std::string_view(m.root, m.root_len); }

// Whether m's mount point is path or a folder above it.
bool covers(const Mount& m, const char* path) {
  return m.len == 1 || (strncmp(path, m.path, m.len) == 0 && (path[m.len] == 0 || path[m.len] == '/'));
}

// p after its folder `from` (or, with `exchange`, `to`) took the other's
// name; false when p lies below neither.
bool renamed(std::string_view p, std::string_view from, std::string_view to, bool exchange, char* out, size_t n) {
  if (under(p, from)) return join(out, n, to, below(p, from));
  if (exchange && under(p, to)) return join(out, n, from, below(p, to));
  return false;
}

// Where receiver r shows the inner path `inner` of fs: false when its
// root does not hold it (a bind of another folder) or it shows another
// filesystem.
bool place(const Mount& r, const Filesystem* fs, std::string_view inner, char* out, size_t n) {
  if (r.fs != fs || !under(inner, root_of(r))) return false;
  return join(out, n, path_of(r), below(inner, root_of(r)));
}

// The inner path of fs at guest path p, which mount m holds.
bool inner_of(const Mount& m, std::string_view p, char* out, size_t n) {
  return join(out, n, root_of(m), below(p, path_of(m)));
}

}  // namespace

bool Mount::readonly() const {
  return (flags_now() & MS_RDONLY) || fs->readonly.load(std::memory_order_relaxed);
}

bool Mount::is_root(std::string_view inner) const {
  return with_place([&](std::string_view, std::string_view r) { return inner == r; });
}

void Mount::put() {
  if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // The last reference of a detached mount: nothing can reach it any more.
  // Its filesystem goes when no other mount shows it.
  dput(mnt_root.exchange(nullptr));
  dput(point.exchange(nullptr));
  if (fs->mounts.fetch_sub(1, std::memory_order_acq_rel) == 1 && type && type->unmount) {
    fs_drop_dentries(*fs);
    type->unmount(*fs);
  }
  heap->destroy_obj(this);
}

Mount* Vfs::make_mount(const char* guest_path, Filesystem* fs, const FsType* type, unsigned long flags,
                       const char* source, const char* fs_root, const char* options, long* err) {
  Mount* m = heap_->make<Mount>();
  if (!m) {
    *err = -ENOMEM;
    return nullptr;
  }
  long len = normalize_path(guest_path, m->path, sizeof m->path);
  long rlen = len < 0 ? len : normalize_path(fs_root, m->root, sizeof m->root);
  if (len < 0 || rlen < 0) {
    heap_->destroy_obj(m);
    *err = len < 0 ? len : rlen;
    return nullptr;
  }
  m->len = (size_t)len;
  m->root_len = (size_t)rlen;
  m->heap = heap_;
  m->fs = fs;
  fs->mounts.fetch_add(1, std::memory_order_relaxed);
  m->type = type;
  m->flags = flags;
  copy_cstr(m->source, sizeof m->source, source ? source : "none");
  copy_cstr(m->options, sizeof m->options, options ? options : "");
  return m;
}

// A new mount of what src shows (Linux's clone_mnt): a bind of a shared
// mount is its peer, of a slave a slave of the same master.
Mount* Vfs::clone_mount(const Mount& src, const char* guest_path, const char* fs_root, long* err) {
  Mount* m = make_mount(guest_path, src.fs, src.type, src.flags, src.source, fs_root, src.options, err);
  if (!m) return nullptr;
  m->group = src.group;
  m->master = src.master;
  return m;
}

long Vfs::attach_locked(Mount* m, Mount* parent) {
  if (nmounts_ == kMaxMounts) return -ENOMEM;
  m->id = next_id_++;
  m->parent = parent;
  if (parent) m->ns = parent->ns;  // a root comes with its namespace set
  m->parent_id = parent ? parent->id : m->id;
  m->op = op_;
  mounts_[nmounts_++] = m;
  if (parent) {
    parent->children.fetch_add(1, std::memory_order_relaxed);
    unpinned_.fetch_add(1, std::memory_order_relaxed);
    to_pin_.fetch_add(1, std::memory_order_release);
  }
  update_walk_hints_locked();
  touch();
  return 0;
}

void Vfs::remove_locked(Mount* m) {
  for (int i = 0; i < nmounts_; i++) {
    if (mounts_[i] != m) continue;
    for (int j = i; j + 1 < nmounts_; j++) mounts_[j] = mounts_[j + 1];
    nmounts_--;
    break;
  }
  m->attached = false;
  m->ns = nullptr;  // an unmounted mount belongs to no namespace
  if (m->parent) m->parent->children.fetch_sub(1, std::memory_order_relaxed);
  unpin_locked(m);
  update_walk_hints_locked();
  leave_group_locked(m);
  touch();
}

// m leaves the table: its mount point is no longer one (the dentry's
// reference goes once the table lock is let go: umount).
void Vfs::unpin_locked(Mount* m) {
  if (!m->parent) return;
  if (Dentry* d = m->point.load(std::memory_order_relaxed)) {
    d->cache->unmount_from(*d);
    return;
  }
  unpinned_.fetch_sub(1, std::memory_order_release);
  if (!m->pin_tried) to_pin_.fetch_sub(1, std::memory_order_relaxed);
}

bool Vfs::pin_locked(Mount* m, const Mount* parent, uint32_t place_seq, Dentry* d, bool stacked) {
  // Not when m moved meanwhile (a rename above it, MS_MOVE): d is the
  // dentry of the place it left.
  if (!m->attached || m->parent != parent || m->point.load(std::memory_order_relaxed) ||
      m->place_seq.load(std::memory_order_relaxed) != place_seq)
    return false;
  d->cache->mount_on(*d);
  m->stacked = stacked;
  m->point.store(d, std::memory_order_release);
  update_walk_hints_locked();
  unpinned_.fetch_sub(1, std::memory_order_release);
  return true;
}

void Vfs::pin_points(Task& t) {
  while (pins_pending()) {
    Mount* m = nullptr;
    Mount* parent = nullptr;
    char inner[kPathMax];
    bool named = false, stacked = false;
    uint32_t seq = 0;
    {
      Guard g(lock_);
      for (int i = 0; i < nmounts_ && !m; i++)
        if (mounts_[i]->parent && !mounts_[i]->pin_tried) m = mounts_[i];
      if (!m) return;
      m->pin_tried = true;
      to_pin_.fetch_sub(1, std::memory_order_relaxed);
      parent = m->parent;
      seq = m->place_seq.load(std::memory_order_relaxed);
      named = inner_of(*parent, path_of(*m), inner, sizeof inner);
      stacked = path_of(*m) == path_of(*parent);
      m->get();
      parent->get();
    }
    // A mount that finds no dentry stays unpinned: walks then match
    // mount points by path, as they did before any was pinned.
    auto d = named ? mount_point_dentry(t, *parent, inner) : ErrorOr<Dentry*>(kerr(-ENAMETOOLONG));
    Dentry* unused = nullptr;
    if (!d.is_error()) {
      Guard g(lock_);
      if (!pin_locked(m, parent, seq, d.value(), stacked)) unused = d.value();
    }
    dput(unused);
    parent->put();
    m->put();
  }
}

// From the root down: at each mount, the child whose mount point is the
// shortest prefix of the path is what a walk enters first (a child mounted
// deeper under it is hidden); among equals the latest.
Mount* Vfs::visible_locked(const MountNs& ns, const char* norm) {
  Mount* cur = nullptr;
  for (;;) {
    Mount* next = nullptr;
    for (int i = 0; i < nmounts_; i++) {
      Mount* x = mounts_[i];
      if (x->parent != cur || !covers(*x, norm)) continue;
      if (!cur && x->ns != &ns) continue;  // another namespace's root
      if (!next || x->len <= next->len) next = x;
    }
    if (!next) return cur;
    cur = next;
  }
}

bool Vfs::descends_locked(const Mount* m, const Mount* ancestor) const {
  for (const Mount* p = m->parent; p; p = p->parent)
    if (p == ancestor) return true;
  return false;
}

bool Vfs::has_children_locked(const Mount* m) const {
  for (int i = 0; i < nmounts_; i++)
    if (mounts_[i]->parent == m) return true;
  return false;
}

// The smallest group number no mount uses, as Linux's IDA hands them out.
int Vfs::new_group_locked() const {
  for (int id = 1;; id++) {
    bool used = false;
    for (int i = 0; i < nmounts_ && !used; i++) used = mounts_[i]->group == id || mounts_[i]->master == id;
    if (!used) return id;
  }
}

// m leaves its peer group; when it was the last member, the group's
// slaves move to m's own master (or stop being slaves), as do_make_slave.
void Vfs::leave_group_locked(Mount* m) {
  if (!m->group) return;
  bool others = false;
  for (int i = 0; i < nmounts_ && !others; i++)
    others = mounts_[i] != m && mounts_[i]->attached && mounts_[i]->group == m->group;
  if (!others)
    for (int i = 0; i < nmounts_; i++)
      if (mounts_[i]->master == m->group) mounts_[i]->master = m->master;
  m->group = 0;
}

// Every mount of the new tree at `top` that is not shared gets a group of
// its own (Linux's invent_group_ids), before it propagates.
void Vfs::share_tree_locked(Mount* top) {
  for (int i = 0; i < nmounts_; i++) {
    Mount* x = mounts_[i];
    if (x->op == op_ && !x->group && (x == top || descends_locked(x, top))) x->group = new_group_locked();
  }
}

// A copy at `path` in dest of src and the new mounts below it. Copies in
// a peer join their originals' groups; copies in a slave are slaves of
// them, and shared (new groups) when the slave is shared.
Mount* Vfs::copy_tree_locked(Mount* src, Mount* dest, const char* path, bool slave, long* err) {
  Mount* orig[kMaxMounts];
  Mount* copy[kMaxMounts];
  int n = 0, count = nmounts_;
  for (int i = -1; i < count; i++) {
    Mount* x = i < 0 ? src : mounts_[i];
    int j = -1;
    if (i >= 0) {
      if (x->op != op_ || x == src) continue;
      for (int k = 0; k < n && j < 0; k++)
        if (orig[k] == x->parent) j = k;
      if (j < 0) continue;
    }
    char at[kPathMax];
    if (i >= 0 && !join(at, sizeof at, path_of(*copy[0]), below(path_of(*x), path_of(*src)))) {
      *err = -ENAMETOOLONG;
      return nullptr;
    }
    Mount* c = make_mount(i < 0 ? path : at, x->fs, x->type, x->flags, x->source, x->root, x->options, err);
    if (!c) return nullptr;
    if (slave) {
      c->master = x->group;
      c->group = dest->group ? new_group_locked() : 0;
    } else {
      c->group = x->group;
      c->master = x->master;
    }
    if ((*err = attach_locked(c, j < 0 ? dest : copy[j])) < 0) {
      discard(c, *err);
      return nullptr;
    }
    orig[n] = x;
    copy[n++] = c;
  }
  return copy[0];
}

// Copies the new tree at `top`, which landed on dest, into every receiver
// of dest's peer group (Linux's propagate_mnt).
long Vfs::propagate_locked(Mount* dest, Mount* top, int depth) {
  if (!dest->group) return 0;
  // Each level of shared slaves below slaves costs kernel stack; deeper
  // chains than this fail the whole operation (rolled back), as running
  // over Linux's mount limit does.
  if (depth > 8) return -ENOSPC;
  char inner[kPathMax], at[kPathMax];
  if (!inner_of(*dest, path_of(*top), inner, sizeof inner)) return -ENAMETOOLONG;
  long err = 0;
  int count = nmounts_;
  for (int i = 0; i < count; i++) {
    Mount* r = mounts_[i];
    if (r == dest || r->op == op_ || r->group != dest->group) continue;
    if (place(*r, dest->fs, inner, at, sizeof at) && !copy_tree_locked(top, r, at, false, &err)) return err;
  }
  // One copy per slave peer group; its own peers and slaves get theirs
  // from that copy.
  int done[kMaxMounts], ndone = 0;
  for (int i = 0; i < count; i++) {
    Mount* r = mounts_[i];
    if (r->op == op_ || r->master != dest->group) continue;
    bool seen = false;
    for (int k = 0; k < ndone && !seen; k++) seen = done[k] == r->group;
    if (seen || !place(*r, dest->fs, inner, at, sizeof at)) continue;
    Mount* c = copy_tree_locked(top, r, at, true, &err);
    if (!c) return err;
    if (r->group) {
      done[ndone++] = r->group;
      if ((err = propagate_locked(r, c, depth + 1)) < 0) return err;
    }
  }
  return 0;
}

long Vfs::mount(const char* guest_path, Filesystem* fs, const FsType* type, unsigned long flags,
                const char* source, const char* fs_root, const char* options, MountNs* ns) {
  long err = 0;
  Mount* m = make_mount(guest_path, fs, type, flags, source, fs_root, options, &err);
  if (!m) return err;
  m->ns = ns ? ns : &init_ns_;
  Guard g(lock_);
  op_++;
  Mount* parent = visible_locked(*m->ns, m->path);
  if ((err = attach_locked(m, parent)) < 0) return discard(m, err);
  if (parent && parent->group) {
    share_tree_locked(m);
    if ((err = propagate_locked(parent, m, 0)) < 0) rollback_locked();
  }
  return err;
}

long Vfs::bind(MountNs& ns, const char* guest_path, Mount& src, const char* fs_root, const char* src_guest,
               bool recursive) {
  if (src.unbindable) return -EINVAL;
  long err = 0;
  Mount* top = clone_mount(src, guest_path, fs_root, &err);
  if (!top) return err;
  Guard g(lock_);
  op_++;
  top->ns = &ns;
  Mount* parent = visible_locked(ns, top->path);
  if ((err = attach_locked(top, parent)) < 0) return discard(top, err);
  // With MS_REC, the mounts below the source folder come along, each on
  // the copy of its parent (Linux's copy_tree); unbindable ones and what
  // lies below them stay behind.
  Mount* orig[kMaxMounts];
  Mount* copy[kMaxMounts];
  int n = 0, count = nmounts_;
  orig[n] = &src;
  copy[n++] = top;
  for (int i = 0; recursive && i < count && err == 0; i++) {
    Mount* x = mounts_[i];
    int j = -1;
    for (int k = 0; k < n && j < 0; k++)
      if (orig[k] == x->parent) j = k;
    if (j < 0 || x->op == op_ || x->unbindable) continue;
    if (!under(path_of(*x), src_guest) || path_of(*x) == std::string_view(src_guest)) continue;
    char at[kPathMax];
    if (!join(at, sizeof at, path_of(*top), below(path_of(*x), src_guest))) {
      err = -ENAMETOOLONG;
      break;
    }
    Mount* c = clone_mount(*x, at, x->root, &err);
    if (c && (err = attach_locked(c, copy[j])) < 0) discard(c, err);
    if (err == 0) {
      orig[n] = x;
      copy[n++] = c;
    }
  }
  if (err == 0 && parent && parent->group) {
    share_tree_locked(top);
    err = propagate_locked(parent, top, 0);
  }
  if (err < 0) rollback_locked();
  return err;
}

// Frees a mount that never made it into the table.
long Vfs::discard(Mount* m, long err) {
  dput(m->point.exchange(nullptr));
  m->fs->mounts.fetch_sub(1);
  heap_->destroy_obj(m);
  return err;
}

// Takes back every mount the current operation made (its references were
// never handed out: the lock has been held since).
void Vfs::rollback_locked() {
  for (int i = nmounts_ - 1; i >= 0; i--) {
    Mount* m = mounts_[i];
    if (m->op != op_) continue;
    for (int j = i; j + 1 < nmounts_; j++) mounts_[j] = mounts_[j + 1];
    nmounts_--;
    if (m->parent) m->parent->children.fetch_sub(1, std::memory_order_relaxed);
    unpin_locked(m);
    discard(m, 0);
    update_walk_hints_locked();
  }
}

// The copies that propagation made of m, which go with it: in each
// receiver of its parent's group, the topmost mount at the same place, when
// nothing is mounted on it (Linux's propagate_umount).
int Vfs::umount_copies_locked(Mount* m, Mount** out, int max) {
  Mount* p = m->parent;
  if (!p || !p->group) return 0;
  char inner[kPathMax], at[kPathMax];
  if (!inner_of(*p, path_of(*m), inner, sizeof inner)) return 0;
  // The groups that receive from p's: p's own, and those of its slaves.
  int groups[kMaxMounts], ng = 0;
  groups[ng++] = p->group;
  for (int k = 0; k < ng; k++)
    for (int i = 0; i < nmounts_; i++) {
      Mount* r = mounts_[i];
      if (r->master != groups[k] || !r->group) continue;
      bool seen = false;
      for (int q = 0; q < ng && !seen; q++) seen = groups[q] == r->group;
      if (!seen && ng < kMaxMounts) groups[ng++] = r->group;
    }
  int n = 0;
  for (int i = 0; i < nmounts_ && n < max; i++) {
    Mount* r = mounts_[i];
    bool receives = false;
    for (int k = 0; k < ng && !receives; k++) receives = r->group == groups[k] || r->master == groups[k];
    if (r == p || !receives || !place(*r, p->fs, inner, at, sizeof at)) continue;
    Mount* top = nullptr;
    for (int j = 0; j < nmounts_; j++)
      if (mounts_[j]->parent == r && strcmp(mounts_[j]->path, at) == 0) top = mounts_[j];
    if (top && top != m && !has_children_locked(top)) out[n++] = top;
  }
  return n;
}

long Vfs::umount(Mount* m, bool lazy) {
  Mount* victims[kMaxMounts];
  int n = 0;
  {
    Guard g(lock_);
    if (!m->attached) return -EINVAL;
    if (!m->parent) return -EBUSY;  // the root stays
    if (!lazy && has_children_locked(m)) return -EBUSY;
    // Ours (the caller's find) and the table's: anything else is a user.
    if (!lazy && m->refs.load() > 2) return -EBUSY;
    if (lazy) {  // the whole tree below, deepest first
      for (int i = nmounts_ - 1; i >= 0; i--)
        if (descends_locked(mounts_[i], m)) victims[n++] = mounts_[i];
    }
    victims[n++] = m;
    int copies = umount_copies_locked(m, victims + n, kMaxMounts - n);
    for (int i = n; i < n + copies; i++)
      if (!lazy && victims[i]->refs.load() > 1) return -EBUSY;
    n += copies;
    for (int i = 0; i < n; i++) remove_locked(victims[i]);
  }
  // The table's references, dropped outside the lock: the last one may
  // write a filesystem back. The mount points go first: a detached mount
  // kept by an open file must not keep a dentry of its parent's
  // filesystem, which may go before it.
  for (int i = 0; i < n; i++) dput(victims[i]->point.exchange(nullptr));
  for (int i = 0; i < n; i++) victims[i]->put();
  return 0;
}

long Vfs::set_propagation(Mount* m, unsigned long type, bool recursive) {
  Guard g(lock_);
  if (!m->attached) return -EINVAL;
  for (int i = 0; i < nmounts_; i++) {
    Mount* x = mounts_[i];
    if (x != m && !(recursive && descends_locked(x, m))) continue;
    if (type == MS_SHARED) {
      if (!x->group) x->group = new_group_locked();
    } else if (type == MS_SLAVE) {
      int group = x->group;
      if (!group) continue;  // a slave stays one; a private mount stays private
      bool others = false;
      for (int j = 0; j < nmounts_ && !others; j++) others = mounts_[j] != x && mounts_[j]->group == group;
      if (others) {  // a slave of its former peers, which keep its slaves
        x->group = 0;
        x->master = group;
      } else {
        leave_group_locked(x);
      }
    } else {  // MS_PRIVATE, MS_UNBINDABLE
      leave_group_locked(x);
      x->master = 0;
    }
    x->unbindable = type == MS_UNBINDABLE;
  }
  return 0;
}

// top and the mounts below it, in table order (parents first).
int Vfs::tree_locked(Mount* top, Mount** out) const {
  int n = 0;
  for (int i = 0; i < nmounts_; i++)
    if (mounts_[i] == top || descends_locked(mounts_[i], top)) out[n++] = mounts_[i];
  return n;
}

// Puts the n mounts of tree (in table order) last in the table, as the
// latest mounts: their new parent comes before them, and they show on top
// of what was mounted at their place.
void Vfs::to_back_locked(Mount* const* tree, int n) {
  int k = 0;
  for (int i = 0; i < nmounts_; i++) {
    bool moving = false;
    for (int j = 0; j < n && !moving; j++) moving = mounts_[i] == tree[j];
    if (!moving) mounts_[k++] = mounts_[i];
  }
  for (int j = 0; j < n; j++) mounts_[k++] = tree[j];
}

// m leaves its mount point (whose dentry *old_point the caller lets go
// outside the lock) and waits for pin_points to pin its new one.
void Vfs::repin_locked(Mount* m, Dentry** old_point) {
  unpin_locked(m);
  *old_point = m->point.exchange(nullptr);
  m->pin_tried = false;
  m->stacked = false;
  unpinned_.fetch_add(1, std::memory_order_relaxed);
  to_pin_.fetch_add(1, std::memory_order_release);
}

long Vfs::move(Mount* m, const char* guest_path) {
  char to[kPathMax], from[kPathMax], path[kPathMax];
  long len = normalize_path(guest_path, to, sizeof to);
  if (len < 0) return len;
  Dentry* old_point = nullptr;
  long err = 0;
  {
    Guard g(lock_);
    // Linux's do_move_mount: the root stays; a mount whose parent shares
    // its events stays (its peers would lose track of it).
    if (!m->attached || !m->parent || m->parent->group) return -EINVAL;
    Mount* parent = visible_locked(*m->ns, to);
    if (!parent) return -EINVAL;
    if (parent == m || descends_locked(parent, m)) return -ELOOP;
    Mount* tree[kMaxMounts];
    int n = tree_locked(m, tree);
    if (parent->group)
      for (int i = 0; i < n; i++)
        if (tree[i]->unbindable) return -EINVAL;
    memcpy(from, m->path, m->len + 1);
    for (int i = 0; i < n; i++)
      if (!renamed(path_of(*tree[i]), from, to, false, path, sizeof path)) return -ENAMETOOLONG;
    op_++;
    m->parent->children.fetch_sub(1, std::memory_order_relaxed);
    m->parent = parent;
    m->parent_id = parent->id;
    parent->children.fetch_add(1, std::memory_order_relaxed);
    repin_locked(m, &old_point);
    for (int i = 0; i < n; i++) {
      Mount* x = tree[i];
      renamed(path_of(*x), from, to, false, path, sizeof path);
      x->change_place([&] {
        x->len = strlen(path);
        memcpy(x->path, path, x->len + 1);
      });
    }
    to_back_locked(tree, n);
    update_walk_hints_locked();
    touch();
    if (parent->group) {
      // Landing on a shared mount: the tree is shared and copied into the
      // parent's receivers, as a new mount would be. Marked as this
      // operation's so they receive nothing, then given back their own
      // marks so that a rollback takes only the copies.
      uint32_t ops[kMaxMounts];
      for (int i = 0; i < n; i++) ops[i] = tree[i]->op, tree[i]->op = op_;
      share_tree_locked(m);
      err = propagate_locked(parent, m, 0);
      for (int i = 0; i < n; i++) tree[i]->op = ops[i];
      if (err < 0) rollback_locked();  // the move itself stays
    }
  }
  dput(old_point);
  return err;
}

Mount* Vfs::find(const MountNs& ns, const char* norm, char* inner, size_t n) {
  // Under the lock: follow_rename may move the mount point or the root.
  Guard g(lock_);
  Mount* best = visible_locked(ns, norm);
  if (!best) return nullptr;
  const char* rest = best->len == 1 ? norm : norm + best->len;
  KFmt f(inner, n);
  if (best->root_len > 1) f.str(best->root);
  if (*rest) f.str(rest);
  else if (best->root_len <= 1) f.str("/");
  if (f.truncated()) return nullptr;
  f.c_str();
  best->get();
  return best;
}

void Vfs::follow_rename(const Filesystem* fs, std::string_view from, std::string_view to, bool exchange) {
  Guard g(lock_);
  // The mounts below the renamed folder, wherever a mount of fs shows it,
  // go along (worked out from the roots as they were, each mount once).
  bool moved[kMaxMounts] = {};
  char old_at[kPathMax], new_at[kPathMax], path[kPathMax];
  for (int i = 0; i < nmounts_; i++) {
    Mount* x = mounts_[i];
    if (!place(*x, fs, from, old_at, sizeof old_at) || !place(*x, fs, to, new_at, sizeof new_at)) continue;
    for (int j = 0; j < nmounts_; j++) {
      Mount* y = mounts_[j];
      // A pinned mount point follows its dentry (follow_points_locked).
      if (moved[j] || y->point.load(std::memory_order_relaxed) || !descends_locked(y, x)) continue;
      if (!renamed(path_of(*y), old_at, new_at, exchange, path, sizeof path)) continue;
      y->change_place([&] {
        y->len = strlen(path);
        memcpy(y->path, path, y->len + 1);
      });
      moved[j] = true;
    }
  }
  // Bind mounts of the renamed folder or one below it show it still.
  for (int i = 0; i < nmounts_; i++) {
    Mount* x = mounts_[i];
    if (x->fs != fs) continue;
    if (!renamed(root_of(*x), from, to, exchange, path, sizeof path)) continue;
    x->change_place([&] {
      x->root_len = strlen(path);
      memcpy(x->root, path, x->root_len + 1);
    });
  }
  follow_points_locked();
  update_walk_hints_locked();
}

// Each pinned mount's mount point as a guest path: where its parent shows
// the dentry now (Linux's d_path), parents first (table order). A mount
// point moved out of what its parent shows keeps its last path.
void Vfs::follow_points_locked() {
  char inner[kPathMax], at[kPathMax];
  for (int i = 0; i < nmounts_; i++) {
    Mount* y = mounts_[i];
    Dentry* d = y->point.load(std::memory_order_relaxed);
    if (!d || !y->parent) continue;
    long len = d->cache->path_in_fs(d, inner, sizeof inner);
    if (len < 0 || !place(*y->parent, d->fs, std::string_view(inner, (size_t)len), at, sizeof at)) continue;
    if (path_of(*y) == std::string_view(at)) continue;
    y->change_place([&] {
      y->len = strlen(at);
      memcpy(y->path, at, y->len + 1);
    });
  }
}

uint64_t Vfs::name_bit(std::string_view name) { return uint64_t{1} << (point_hash(name) % 64); }

uint32_t Vfs::point_hash(std::string_view path) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (char c : path) h = (h ^ (unsigned char)c) * 16777619u;
  return h;
}

void Vfs::update_walk_hints_locked() {
  uint64_t bits = 0;
  for (int i = 0; i < nmounts_; i++) {
    std::string_view p = path_of(*mounts_[i]);
    bits |= name_bit(tail(p, p.rfind('/') + 1));
    Mount* m = mounts_[i];
    points_[i] = {m->parent, m, point_hash(p), m->stacked, m->point.load(std::memory_order_relaxed)};
  }
  point_names_.store(bits, std::memory_order_relaxed);
  for (int i = 0; i < nns_; i++) {
    MountNs& ns = *nss_[i];
    ns.top_root = visible_locked(ns, "/");
    ns.bare_root.store(ns.top_root && !ns.top_root->parent ? ns.top_root : nullptr, std::memory_order_release);
  }
}

Mount* Vfs::root_mount(const MountNs& ns) {
  Guard g(lock_);
  if (ns.top_root) ns.top_root->get();
  return ns.top_root;
}

Mount* Vfs::mounted_at(const Mount* parent, std::string_view at) {
  Guard g(lock_);
  Mount* top = nullptr;
  // A mount stacked on another has it for parent: where no mount has
  // `under` for parent, nothing is stacked there (one pass, not two).
  uint32_t hash = point_hash(at);
  for (const Mount* under = parent; under->children.load(std::memory_order_relaxed) > 0;) {
    Mount* next = nullptr;
    for (int i = 0; i < nmounts_; i++) {
      const PointKey& k = points_[i];
      if (k.parent == under && k.hash == hash && path_of(*k.mount) == at) next = k.mount;  // among equals the latest
    }
    if (!next) break;
    top = next;
    under = next;
  }
  if (top) top->get();
  return top;
}

Mount* Vfs::mounted_on(const Mount* parent, const Dentry* point) {
  Guard g(lock_);
  Mount* top = nullptr;
  for (int i = 0; i < nmounts_; i++)
    if (points_[i].parent == parent && points_[i].point == point) top = points_[i].mount;  // among equals the latest
  // Mounts stacked on it stand on its root.
  while (top && top->children.load(std::memory_order_relaxed) > 0) {
    Mount* next = nullptr;
    for (int i = 0; i < nmounts_; i++)
      if (points_[i].parent == top && points_[i].stacked) next = points_[i].mount;
    if (!next) break;
    top = next;
  }
  if (top) top->get();
  return top;
}

Path Vfs::mount_point_of(const Mount& m) {
  Guard g(lock_);
  Dentry* d = m.point.load(std::memory_order_relaxed);
  if (!m.attached || !m.parent || !d) return Path{};
  m.parent->get();
  return Path{m.parent, dget(d)};
}

Mount* Vfs::parent_of(const Mount& m) {
  Guard g(lock_);
  if (!m.attached || !m.parent) return nullptr;
  m.parent->get();
  return m.parent;
}

Mount* Vfs::find_exact(const MountNs& ns, const char* norm) {
  Guard g(lock_);
  Mount* m = visible_locked(ns, norm);
  if (!m || strcmp(m->path, norm) != 0) return nullptr;
  m->get();
  return m;
}

}  // namespace flatux
