// The dentry cache: names the VFS has resolved, in every filesystem, as
// (parent dentry, name) -> inode, or a negative dentry for a name known to
// be absent. A held dentry follows its object: rename moves it, unlink and
// rmdir mark it deleted, so a cwd or an open directory held as a Path
// names the directory itself, not the string it was reached by. See
// docs/ARCHITECTURE.md, "Paths and mounts".
//
// Locking: one lock guards the hash, every dentry's name, parent, inode
// and flags, and the LRU list of unused dentries. Reference counts are
// atomic: a holder may take another reference without the lock; a count
// goes from 0 to 1 only under it (a lookup). A cached dentry stays on the
// LRU list while in use (eviction skips held ones), so the last reference
// of one that is hashed and listed goes without the lock; any other last
// reference goes under it (Dentry::kSlowPut says which, in the count).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernel/heap.h"
#include "kernel/lib/sync.h"
#include "kernel/vfs/inode.h"

namespace flatux {

struct Filesystem;
struct Mount;
class Dcache;

constexpr size_t kNameMax = 255;  // NAME_MAX

// Names a filesystem added to its directories, counted per directory (by
// a hash of the directory's inode number: directories may share a count,
// which costs only a cache miss). The filesystem counts, in the one place
// it puts a name into a directory, after the name is findable and before
// the operation returns; a negative dentry remembers its directory's count
// from before the filesystem said the name was absent, and says "absent"
// only while the count is unchanged. So no path that creates a name (a
// system call, a rename, the kernel's own nodes) can be hidden by a stale
// negative dentry, whether or not it tells the cache.
class NameSeqs {
 public:
  static constexpr size_t kSlots = 64;
  // Never a count: a negative dentry that must be asked again.
  static constexpr uint64_t kNone = ~0ull;

  uint64_t now(uint64_t dir_ino) const { return slot(dir_ino).load(std::memory_order_acquire); }
  void added(uint64_t dir_ino) { slot(dir_ino).fetch_add(1, std::memory_order_acq_rel); }

 private:
  std::atomic<uint64_t>& slot(uint64_t ino) { return slots_[(ino * 0x9e3779b97f4a7c15ull) >> 58]; }
  const std::atomic<uint64_t>& slot(uint64_t ino) const { return slots_[(ino * 0x9e3779b97f4a7c15ull) >> 58]; }
  std::atomic<uint64_t> slots_[kSlots] = {};
};
static_assert(NameSeqs::kSlots == 64, "slot() takes the top 6 bits of the hash");

struct Dentry {
  // The count, and kSlowPut: set under the cache's lock while the dentry is
  // not both hashed and on the LRU list (its last reference must take the
  // lock then, to list or free it).
  std::atomic<int> refs{1};
  static constexpr int kSlowPut = 1 << 30;
  Dcache* cache = nullptr;
  Dentry* parent = nullptr;  // counted; a filesystem's root is its own parent
  Inode* inode = nullptr;    // counted; nullptr: negative (the name is absent)
  // A negative's: its directory's NameSeqs count from before the
  // filesystem said the name was absent (kNone: not to be trusted).
  std::atomic<uint64_t> seq{NameSeqs::kNone};
  Filesystem* fs = nullptr;
  uint32_t hash = 0;
  uint16_t len = 0;
  uint16_t flags = 0;
  // Mounts standing on it (Dcache::mount_on; under the lock): it stays
  // hashed while they do, whatever the filesystem says meanwhile.
  uint16_t mounts = 0;
  // Its children with mounts on them: the walk reads it without the lock,
  // one test per folder it passes; while it is 0 no name in the folder is
  // a mount point (Linux tests DCACHE_MOUNTED on the child instead, which
  // it has looked up already).
  std::atomic<uint16_t> mounted_children{0};
  Dentry* hash_next = nullptr;
  Dentry* lru_prev = nullptr;
  Dentry* lru_next = nullptr;
  char* name = inline_name;  // NUL-terminated
  char inline_name[40];

  static constexpr uint16_t kHashed = 1;   // findable by (parent, name)
  static constexpr uint16_t kOnLru = 2;    // on the unused list
  static constexpr uint16_t kDeleted = 4;  // its name was removed while in use
  static constexpr uint16_t kRoot = 8;     // a filesystem's root

  int count() const { return refs.load(std::memory_order_acquire) & ~kSlowPut; }
  bool negative() const { return inode == nullptr; }
  bool deleted() const { return flags & kDeleted; }
  std::string_view name_view() const { return {name, len}; }
};

inline Dentry* dget(Dentry* d) {
  if (d) d->refs.fetch_add(1, std::memory_order_relaxed);
  return d;
}
void dput(Dentry* d);

// A place in the namespace: a mount and a dentry of its filesystem, both
// counted where a Path is held (path_get / path_put).
struct Path {
  Mount* mnt = nullptr;
  Dentry* dentry = nullptr;
  bool operator==(const Path& o) const { return mnt == o.mnt && dentry == o.dentry; }
  explicit operator bool() const { return dentry != nullptr; }
};
Path path_get(const Path& p);
void path_put(Path& p);

class Dcache {
 public:
  // `max` bounds how many dentries are kept (held ones are never evicted).
  Dcache(Heap* h, size_t max);
  ~Dcache();
  Dcache(const Dcache&) = delete;
  Dcache& operator=(const Dcache&) = delete;

  // A filesystem's root dentry, holding `root` (the reference moves in).
  Dentry* make_root(Filesystem* fs, Inode* root);
  // The cached child `name` of dir, with a reference, or nullptr.
  Dentry* lookup(Dentry& dir, std::string_view name);
  // The type and permission bits of the cached child `name` of dir, or 0
  // when the cache holds no positive one (no reference taken).
  uint32_t cached_mode(Dentry& dir, std::string_view name);
  // Whether a mount stands on the cached child `name` of dir.
  bool mounted(Dentry& dir, std::string_view name);
  // A new child of dir (negative, not yet findable), with a reference.
  Dentry* alloc(Dentry& dir, std::string_view name);
  // Makes d (from alloc) findable, naming `inode` (nullptr: known absent);
  // the inode's reference moves in. When another dentry of the same name
  // got there first, that one is returned (with a reference) and d is
  // dropped; otherwise d.
  Dentry* add(Dentry* d, Inode* inode);
  // A name was created: the negative d now names `inode` (moved in).
  void instantiate(Dentry& d, Inode* inode);
  // A name was removed (unlink, rmdir): d becomes negative (one asked
  // again at its next use: the name may be back already), or, while
  // someone else holds it, leaves the hash marked deleted.
  void remove(Dentry& d);
  // d no longer says the truth (the filesystem changed behind the
  // cache): out of the hash, marked deleted when it named something. A
  // mount point stays (Linux keeps a mounted dentry), and so does the
  // folder holding one: the mount on it is found by the dentry, not by
  // what the filesystem names now.
  void drop(Dentry& d);
  // rename: d takes target's parent and name; target leaves the hash
  // (deleted when it named something). With `exchange`, they swap.
  // Returns -ENOMEM (nothing changed) when a long name finds no memory.
  long move(Dentry& d, Dentry& target, bool exchange);
  // A mount now stands on d (a Mount::point), or no longer does.
  void mount_on(Dentry& d);
  void unmount_from(Dentry& d);
  // Every unused dentry of fs goes (the filesystem is going away).
  void shrink_fs(Filesystem* fs);

  // Whether d is ancestor or lies below it.
  bool is_subdir(Dentry* d, Dentry* ancestor);
  // d's own name copied out whole (a rename may change it meanwhile);
  // -ENAMETOOLONG when it does not fit.
  long name_of(Dentry& d, char* out, size_t n);
  // The parent of d, with a reference.
  Dentry* get_parent(Dentry& d);
  // The path of d inside its filesystem ("/a/b"; "/" for its root) and
  // whether d or one of its ancestors was removed; -ENAMETOOLONG.
  long path_in_fs(Dentry* d, char* out, size_t n, bool* deleted = nullptr);

  // Bumped twice around every rename's change, so a reader that went up
  // with ".." can tell one ran meanwhile.
  uint32_t rename_seq() const { return rename_seq_.load(std::memory_order_acquire); }

  size_t count() const { return count_; }
  size_t unused() const { return unused_; }
  size_t bytes() const { return bytes_; }
  size_t max() const { return max_; }
  void set_max(size_t m);

  // Internal to dput: the last reference went.
  void put_last(Dentry* d);

 private:
  size_t bucket_of(const Dentry* parent, std::string_view name, uint32_t* hash) const;
  Dentry* find_locked(const Dentry* dir, std::string_view name, uint32_t hash, size_t b);
  void hash_locked(Dentry& d);
  void unhash_locked(Dentry& d);
  void lru_add_locked(Dentry& d);
  void lru_del_locked(Dentry& d);
  void move_mounted_locked(Dentry* from, Dentry* to);
  void sync_put_locked(Dentry& d);
  bool set_name_locked(Dentry& d, std::string_view name);
  void forget_locked(Dentry& d);   // out of the counts
  Dentry* evict_locked(size_t want);  // a list (through lru_next) of victims
  void free_list(Dentry* list);
  void free_one(Dentry* d);  // its inode and memory (the parent is the caller's)

  Heap* heap_;
  KMutex lock_;
  Dentry** buckets_ = nullptr;
  size_t nbuckets_ = 0;
  Dentry* lru_head_ = nullptr;
  Dentry* lru_tail_ = nullptr;
  size_t max_;
  size_t count_ = 0, unused_ = 0, bytes_ = 0;
  std::atomic<uint32_t> rename_seq_{0};
};

// How many dentries the cache keeps for `mem_bytes` of kernel memory: one
// per 16 KiB, between 4096 and 131072.
size_t dcache_bound(uint64_t mem_bytes);

}  // namespace flatux
