#include "kernel/vfs/dcache.h"

#include <cstring>
#include <linux/errno.h>

#include "kernel/lib/kstring.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

namespace {

// Drops a reference without the lock where that is allowed: another one
// remains, or the dentry is cached and listed (kSlowPut clear). False:
// the caller takes the lock (put_last).
bool put_fast(Dentry* d) {
  int r = d->refs.load(std::memory_order_relaxed);
  for (;;) {
    if ((r & ~Dentry::kSlowPut) <= 1 && (r & Dentry::kSlowPut)) return false;
    if (d->refs.compare_exchange_weak(r, r - 1, std::memory_order_acq_rel)) return true;
  }
}

// The count before a reference dropped under the lock.
int put_locked(Dentry* d) { return d->refs.fetch_sub(1, std::memory_order_acq_rel) & ~Dentry::kSlowPut; }

}  // namespace

void dput(Dentry* d) {
  if (d && !put_fast(d)) d->cache->put_last(d);
}

Path path_get(const Path& p) {
  if (p.mnt) p.mnt->get();
  dget(p.dentry);
  return p;
}

void path_put(Path& p) {
  dput(p.dentry);
  if (p.mnt) p.mnt->put();
  p = Path{};
}

namespace {

uint32_t hash_name(const Dentry* parent, std::string_view name) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)parent;
  for (char c : name) h = (h ^ (unsigned char)c) * 1099511628211ull;
  return (uint32_t)(h ^ (h >> 32));
}

size_t name_bytes(const Dentry& d) { return d.name != d.inline_name ? d.len + 1u : 0u; }

}  // namespace

size_t dcache_bound(uint64_t mem_bytes) {
  uint64_t n = mem_bytes / (16 * 1024);
  return n < 4096 ? 4096 : n > 131072 ? 131072 : (size_t)n;
}

Dcache::Dcache(Heap* h, size_t max) : heap_(h), max_(max) {
  size_t n = 256;
  while (n < max / 2 && n < (1u << 18)) n <<= 1;
  buckets_ = static_cast<Dentry**>(h->alloc(n * sizeof(Dentry*)));
  nbuckets_ = buckets_ ? n : 0;  // without buckets nothing is found: still correct, only slower
  bytes_ = nbuckets_ * sizeof(Dentry*);
}

Dcache::~Dcache() { heap_->free(buckets_); }

void Dcache::set_max(size_t m) {
  // Rounds, as each one's victims may leave their parents unused.
  for (;;) {
    Dentry* victims = nullptr;
    {
      Guard g(lock_);
      max_ = m;
      if (count_ > max_) victims = evict_locked(count_ - max_);
    }
    if (!victims) return;
    free_list(victims);
  }
}

size_t Dcache::bucket_of(const Dentry* parent, std::string_view name, uint32_t* hash) const {
  *hash = hash_name(parent, name);
  return *hash & (nbuckets_ - 1);
}

bool Dcache::set_name_locked(Dentry& d, std::string_view name) {
  char* old = d.name != d.inline_name ? d.name : nullptr;
  size_t old_bytes = name_bytes(d);
  if (name.size() < sizeof d.inline_name) {
    memcpy(d.inline_name, name.data(), name.size());
    d.inline_name[name.size()] = 0;
    d.name = d.inline_name;
  } else {
    char* n = static_cast<char*>(heap_->alloc(name.size() + 1));
    if (!n) return false;
    memcpy(n, name.data(), name.size());
    n[name.size()] = 0;
    d.name = n;
    bytes_ += name.size() + 1;
  }
  if (old) heap_->free(old);
  bytes_ -= old_bytes;
  d.len = (uint16_t)name.size();
  return true;
}

Dentry* Dcache::find_locked(const Dentry* dir, std::string_view name, uint32_t hash, size_t b) {
  for (Dentry* d = buckets_[b]; d; d = d->hash_next)
    if (d->hash == hash && d->parent == dir && d->name_view() == name) return d;
  return nullptr;
}

void Dcache::hash_locked(Dentry& d) {
  if (!nbuckets_ || (d.flags & Dentry::kHashed)) return;
  size_t b = bucket_of(d.parent, d.name_view(), &d.hash);
  d.hash_next = buckets_[b];
  buckets_[b] = &d;
  d.flags |= Dentry::kHashed;
  sync_put_locked(d);
}

void Dcache::unhash_locked(Dentry& d) {
  if (!(d.flags & Dentry::kHashed)) return;
  Dentry** link = &buckets_[d.hash & (nbuckets_ - 1)];
  while (*link && *link != &d) link = &(*link)->hash_next;
  if (*link) *link = d.hash_next;
  d.hash_next = nullptr;
  d.flags &= ~Dentry::kHashed;
  sync_put_locked(d);
}

void Dcache::sync_put_locked(Dentry& d) {
  bool listed = (d.flags & Dentry::kHashed) && (d.flags & Dentry::kOnLru) && !d.fs->ops->dcache_drop_unused;
  if (listed) d.refs.fetch_and(~Dentry::kSlowPut, std::memory_order_acq_rel);
  else d.refs.fetch_or(Dentry::kSlowPut, std::memory_order_acq_rel);
}

// The unused list: dentries in order of their last release, oldest first;
// one taken again stays listed (eviction skips it), so its next release
// needs no lock.
void Dcache::lru_add_locked(Dentry& d) {
  if (d.flags & Dentry::kOnLru) lru_del_locked(d);
  d.lru_prev = lru_tail_;
  d.lru_next = nullptr;
  if (lru_tail_) lru_tail_->lru_next = &d;
  else lru_head_ = &d;
  lru_tail_ = &d;
  d.flags |= Dentry::kOnLru;
  unused_++;
  sync_put_locked(d);
}

void Dcache::lru_del_locked(Dentry& d) {
  if (!(d.flags & Dentry::kOnLru)) return;
  if (d.lru_prev) d.lru_prev->lru_next = d.lru_next;
  else lru_head_ = d.lru_next;
  if (d.lru_next) d.lru_next->lru_prev = d.lru_prev;
  else lru_tail_ = d.lru_prev;
  d.lru_prev = d.lru_next = nullptr;
  d.flags &= ~Dentry::kOnLru;
  unused_--;
  sync_put_locked(d);
}

void Dcache::forget_locked(Dentry& d) {
  lru_del_locked(d);  // a dentry taken again while listed stays listed
  count_--;
  bytes_ -= sizeof(Dentry) + name_bytes(d);
}

Dentry* Dcache::make_root(Filesystem* fs, Inode* root) {
  Dentry* d = heap_->make<Dentry>();
  if (!d) return nullptr;
  d->refs.store(1 | Dentry::kSlowPut, std::memory_order_relaxed);
  d->cache = this;
  d->parent = d;
  d->inode = root;
  d->fs = fs;
  d->flags = Dentry::kRoot;
  d->inline_name[0] = '/';
  d->inline_name[1] = 0;
  d->len = 1;
  Guard g(lock_);
  count_++;
  bytes_ += sizeof(Dentry);
  return d;
}

Dentry* Dcache::lookup(Dentry& dir, std::string_view name) {
  if (!nbuckets_) return nullptr;
  uint32_t hash;
  size_t b = bucket_of(&dir, name, &hash);
  Guard g(lock_);
  Dentry* d = find_locked(&dir, name, hash, b);
  if (d) d->refs.fetch_add(1, std::memory_order_relaxed);
  return d;
}

uint32_t Dcache::cached_mode(Dentry& dir, std::string_view name) {
  if (!nbuckets_) return 0;
  uint32_t hash;
  size_t b = bucket_of(&dir, name, &hash);
  Guard g(lock_);
  Dentry* d = find_locked(&dir, name, hash, b);
  return d && d->inode ? d->inode->mode : 0;
}

bool Dcache::mounted(Dentry& dir, std::string_view name) {
  if (!nbuckets_ || dir.mounted_children.load(std::memory_order_relaxed) == 0) return false;
  uint32_t hash;
  size_t b = bucket_of(&dir, name, &hash);
  Guard g(lock_);
  Dentry* d = find_locked(&dir, name, hash, b);
  return d && d->mounts;
}

Dentry* Dcache::alloc(Dentry& dir, std::string_view name) {
  if (name.empty() || name.size() > kNameMax) return nullptr;
  Dentry* d = heap_->make<Dentry>();
  if (!d) return nullptr;
  Guard g(lock_);
  if (!set_name_locked(*d, name)) {
    heap_->destroy_obj(d);
    return nullptr;
  }
  d->refs.store(1 | Dentry::kSlowPut, std::memory_order_relaxed);
  d->cache = this;
  d->parent = dget(&dir);
  d->fs = dir.fs;
  count_++;
  bytes_ += sizeof(Dentry);
  return d;
}

Dentry* Dcache::add(Dentry* d, Inode* inode) {
  Dentry* winner = nullptr;
  {
    Guard g(lock_);
    if (nbuckets_) {
      uint32_t hash;
      size_t b = bucket_of(d->parent, d->name_view(), &hash);
      winner = find_locked(d->parent, d->name_view(), hash, b);
      if (winner) winner->refs.fetch_add(1, std::memory_order_relaxed);
    }
    if (!winner) {
      d->inode = inode;
      hash_locked(*d);
      return d;
    }
  }
  // Someone else's lookup of the same name finished first: theirs stands.
  inode_put(inode);
  dput(d);
  return winner;
}

void Dcache::instantiate(Dentry& d, Inode* inode) {
  Inode* old;
  {
    Guard g(lock_);
    old = d.inode;
    d.inode = inode;
    d.flags &= ~Dentry::kDeleted;
    hash_locked(d);
  }
  inode_put(old);
}

void Dcache::remove(Dentry& d) {
  Inode* gone = nullptr;
  {
    Guard g(lock_);
    if (d.count() == 1 && (d.flags & Dentry::kHashed)) {
      gone = d.inode;  // only the caller holds it: it stays, as a negative name
      d.inode = nullptr;
      d.seq.store(NameSeqs::kNone, std::memory_order_relaxed);
    } else {
      unhash_locked(d);
      if (d.inode) d.flags |= Dentry::kDeleted;
    }
  }
  inode_put(gone);
}

void Dcache::drop(Dentry& d) {
  Guard g(lock_);
  if (d.mounts || d.mounted_children.load(std::memory_order_relaxed)) return;
  unhash_locked(d);
  if (d.inode) d.flags |= Dentry::kDeleted;
}

long Dcache::move(Dentry& d, Dentry& target, bool exchange) {
  Dentry* put_parent = nullptr;
  {
    Guard g(lock_);
    char dname[kNameMax + 1];
    size_t dlen = d.len;
    memcpy(dname, d.name, dlen + 1);
    Dentry* dparent = d.parent;
    // Both names are set before anything moves, so running out of memory
    // for a long name changes nothing.
    Dentry probe;
    if (!set_name_locked(probe, target.name_view())) return -ENOMEM;
    if (exchange && !set_name_locked(target, std::string_view(dname, dlen))) {
      set_name_locked(probe, "");
      return -ENOMEM;
    }
    rename_seq_.fetch_add(1, std::memory_order_acq_rel);
    unhash_locked(d);
    unhash_locked(target);
    // d takes the probe's name (moving the buffer across).
    if (d.name != d.inline_name) {
      bytes_ -= name_bytes(d);
      heap_->free(d.name);
    }
    if (probe.name != probe.inline_name) {
      d.name = probe.name;
    } else {
      memcpy(d.inline_name, probe.inline_name, probe.len + 1);
      d.name = d.inline_name;
    }
    d.len = probe.len;
    if (d.mounts) move_mounted_locked(dparent, target.parent);
    if (exchange && target.mounts) move_mounted_locked(target.parent, dparent);
    d.parent = target.parent;
    d.flags &= ~Dentry::kDeleted;
    if (exchange) {
      target.parent = dparent;
      hash_locked(target);
    } else {
      dget(target.parent);
      put_parent = dparent;
      if (target.inode) target.flags |= Dentry::kDeleted;
    }
    hash_locked(d);
    rename_seq_.fetch_add(1, std::memory_order_acq_rel);
  }
  dput(put_parent);
  return 0;
}

// A child with mounts on it moved from one folder to another.
void Dcache::move_mounted_locked(Dentry* from, Dentry* to) {
  if (from == to) return;
  from->mounted_children.fetch_sub(1, std::memory_order_relaxed);
  to->mounted_children.fetch_add(1, std::memory_order_relaxed);
}

void Dcache::mount_on(Dentry& d) {
  Guard g(lock_);
  if (d.mounts++ == 0 && d.parent != &d) d.parent->mounted_children.fetch_add(1, std::memory_order_relaxed);
}

void Dcache::unmount_from(Dentry& d) {
  Guard g(lock_);
  if (--d.mounts == 0 && d.parent != &d) d.parent->mounted_children.fetch_sub(1, std::memory_order_relaxed);
}

bool Dcache::is_subdir(Dentry* d, Dentry* ancestor) {
  Guard g(lock_);
  for (;;) {
    if (d == ancestor) return true;
    if (d->parent == d) return false;
    d = d->parent;
  }
}

long Dcache::name_of(Dentry& d, char* out, size_t n) {
  Guard g(lock_);
  return copy_cstr(out, n, d.name_view()) ? 0 : -ENAMETOOLONG;
}

Dentry* Dcache::get_parent(Dentry& d) {
  Guard g(lock_);
  return dget(d.parent);
}

long Dcache::path_in_fs(Dentry* d, char* out, size_t n, bool* deleted) {
  if (n < 2) return -ENAMETOOLONG;
  Guard g(lock_);
  bool gone = false;
  size_t at = n - 1;
  out[at] = 0;
  for (; d->parent != d; d = d->parent) {
    if (d->flags & Dentry::kDeleted) gone = true;
    if (at < d->len + 1u) return -ENAMETOOLONG;
    at -= d->len;
    memcpy(out + at, d->name, d->len);
    out[--at] = '/';
  }
  if (at == n - 1) out[--at] = '/';
  size_t len = n - 1 - at;
  memmove(out, out + at, len + 1);
  if (deleted) *deleted = gone;
  return (long)len;
}

void Dcache::free_one(Dentry* d) {
  inode_put(d->inode);
  if (d->name != d->inline_name) heap_->free(d->name);
  heap_->destroy_obj(d);
}

void Dcache::put_last(Dentry* d) {
  while (d) {
    Dentry* parent = nullptr;
    Dentry* victims = nullptr;
    {
      Guard g(lock_);
      if (put_locked(d) != 1) return;
      if ((d->flags & Dentry::kHashed) && !d->fs->ops->dcache_drop_unused) {
        // Unused but still true: kept, the oldest going first.
        lru_add_locked(*d);
        if (count_ > max_) victims = evict_locked(count_ - max_ + 16);
        d = nullptr;
      } else {
        if (d->flags & Dentry::kHashed) unhash_locked(*d);
        forget_locked(*d);
        parent = d->parent == d ? nullptr : d->parent;
      }
    }
    if (!d) {
      free_list(victims);
      return;
    }
    free_one(d);
    // The parent's reference, without recursion (a deep tree goes at once).
    d = parent;
    if (!d || put_fast(d)) return;
  }
}

// Takes up to `want` unused dentries off the LRU (oldest first) and out of
// the hash. A victim's parent may become unused in turn, joining the list's
// end for a later round.
Dentry* Dcache::evict_locked(size_t want) {
  Dentry* victims = nullptr;
  while (want && lru_head_) {
    Dentry* d = lru_head_;
    lru_del_locked(*d);
    if (d->count() != 0) continue;  // held: listed again at its last release
    unhash_locked(*d);
    forget_locked(*d);
    d->lru_next = victims;
    victims = d;
    want--;
  }
  return victims;
}

void Dcache::free_list(Dentry* list) {
  while (list) {
    Dentry* d = list;
    list = d->lru_next;
    Dentry* parent = d->parent == d ? nullptr : d->parent;
    free_one(d);
    if (!parent) continue;
    // The parent's last reference keeps it cached (no eviction from here).
    if (put_fast(parent)) continue;
    Guard g(lock_);
    if (put_locked(parent) != 1) continue;
    if (parent->flags & Dentry::kHashed) {
      lru_add_locked(*parent);
    } else {
      // Unhashed and unused: it goes too.
      forget_locked(*parent);
      parent->lru_next = list;
      list = parent;
    }
  }
}

void Dcache::shrink_fs(Filesystem* fs) {
  for (;;) {
    Dentry* victims = nullptr;
    {
      Guard g(lock_);
      for (Dentry* d = lru_head_; d;) {
        Dentry* next = d->lru_next;
        if (d->fs == fs && d->count() == 0) {
          lru_del_locked(*d);
          unhash_locked(*d);
          forget_locked(*d);
          d->lru_next = victims;
          victims = d;
        }
        d = next;
      }
    }
    if (!victims) return;
    free_list(victims);
  }
}

}  // namespace flatux
