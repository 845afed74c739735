// ext4 (and ext3, ext2) on a block device (ubd, loop). libext2fs does the on-disk
// work behind the foreign-code gate (ext2_glue.h); this layer keeps what
// makes repeated work stay in the kernel: an inode cache (attributes and
// symlink targets), a dentry cache (directory, name) -> inode including
// negative entries, and a page cache of file contents. Every operation
// takes the volume's lock, so libext2fs (not thread-safe) sees one caller.
//
// Paths are the VFS's inner paths ("/", "/a/b", already normalised). The
// filesystem never follows a symlink itself: a walk that meets one returns
// kWalkRedirect with the link's directory, its target and the rest of the
// path, for the VFS to continue.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernel/block/cache.h"
#include "kernel/block/blockdev.h"
#include "kernel/fs/ext4/ext2_glue.h"
#include "kernel/lib/sync.h"
#include "kernel/vfs/dcache.h"
#include "kernel/task/task.h"

namespace flatux::ext4 {

using ext2glue::Attr;
using ext2glue::Time;

// Who is asking: the credentials the permission policy (vfs/perm.h)
// judges with, a guest's or given ids (tests, boot).
struct Cred {
  Creds creds;
  // A caller with these filesystem ids: root with its capabilities, any
  // other user with none (as after Linux's set*id fix-ups).
  Cred(uint32_t fsuid, uint32_t fsgid) {
    creds.fsuid = fsuid;
    creds.fsgid = fsgid;
    if (fsuid != 0) creds.cap_permitted = creds.cap_effective = 0;
  }
  explicit Cred(const Creds& c) : creds(c) {}
};

constexpr long kWalkRedirect = 1;

struct Walk {
  // In: the path, and whether a symlink as the last component is followed.
  const char* path;
  bool follow;
  bool want_parent;       // stop at the last component's directory
  char* target;           // where a symlink's target goes (kPathMax bytes)
  // In, optional: the walk starts in directory start_ino (not the root)
  // with the component at start_at, the last one of `path`.
  // start_generation: its i_generation then (the number may have been
  // freed and reused since: the walk then finds nothing).
  uint32_t start_ino;
  uint32_t start_generation;
  const char* start_at;
  // Out:
  uint32_t ino;           // the inode reached (0: last component missing, want_parent)
  uint32_t parent;        // its directory (want_parent)
  char name[256];         // the last component (want_parent)
  // kWalkRedirect: the link is path[0, link_len), `target` holds where it
  // points, and `rest` is what followed it in the path.
  size_t link_len;
  const char* rest;
};

struct Inode;
struct Dentry;

class Volume {
 public:
  static long mount(Kernel& k, BlockDevice& dev, bool readonly, Volume** out);
  long unmount();   // writes everything back and frees the volume
  long shutdown();  // writes everything back; later calls fail with EIO

  Kernel& kernel() const { return k_; }
  BlockDevice& device() const { return *dev_; }

  bool readonly() const { return readonly_; }
  uint64_t dev_number() const { return block_devnum(*dev_); }
  const char* dev_name() const { return dev_->name; }

  // Search permission on the folders passed is not checked here: the
  // VFS's walk checked every folder of the path before the operation.
  long walk(Walk& w);
  // The inode `name` (one component) names in directory `dir`, whose
  // i_generation must still be `generation` (a number freed and given to
  // a newer folder answers -ENOENT): one lookup in that directory, no
  // walk. -ENOENT for a missing name.
  long lookup(uint32_t dir, uint32_t generation, const char* name, size_t len, Attr* out);
  long getattr(uint32_t ino, Attr* out);
  long readlink(uint32_t ino, char* buf, size_t cap, size_t* len);

  // Data. `kernel_buf` false: buf is a guest pointer (copied with the user
  // copy helpers, so a bad pointer is EFAULT).
  long read(uint32_t ino, void* buf, size_t n, uint64_t off, bool kernel_buf);
  long write(uint32_t ino, const void* buf, size_t n, uint64_t off, bool kernel_buf);
  long setattr(uint32_t ino, const ext2glue::SetAttr& a, Attr* after);
  long fallocate(uint32_t ino, uint64_t off, uint64_t len);
  long fsync(bool durable);

  // A host descriptor (a new one, the caller's to close) of a memfd that
  // holds a copy of a regular file's contents, for exec and mappings: the
  // host maps it, and every exec or mapping of the unchanged file shares
  // one copy. A change of the contents drops the volume's copy; descriptors
  // handed out keep the contents they had.
  long snapshot_fd(uint32_t ino);

  // Directory listing from position `pos` (DirEntry::next resumes).
  long readdir(uint32_t dir, uint64_t pos, ext2glue::DirVisitor fn, void* ctx);
  long statfs(ext2glue::FsInfo* out);

  // Namespace: `dir` is a directory inode reached by walk (parent mode).
  long create(const Cred& c, uint32_t dir, const char* name, uint32_t mode, uint64_t rdev, Attr* out);
  long mkdir(const Cred& c, uint32_t dir, const char* name, uint32_t mode, Attr* out);
  long symlink(const Cred& c, uint32_t dir, const char* name, const char* target, Attr* out);
  long link(const Cred& c, uint32_t ino, uint32_t dir, const char* name);
  long unlink(const Cred& c, uint32_t dir, const char* name, bool want_dir);
  long rename(const Cred& c, uint32_t odir, const char* oname, uint32_t ndir, const char* nname,
              unsigned flags);

  // Open files keep an unlinked inode alive until the last close.
  void open_ref(uint32_t ino);
  void close_ref(uint32_t ino);

  // Names added to each directory (create, mkdir, symlink, link, rename
  // counted where they change the volume): the VFS keeps negative dentries
  // by it.
  const NameSeqs& names_added() const { return names_added_; }

  // name_lookups: names looked up in a directory (from the cache or the
  // image), one per component a walk or lookup passes.
  struct Stats { uint64_t gate_calls, data_hits, data_misses, dentry_hits, inode_hits, name_lookups; };
  Stats stats() const { return stats_; }

  Volume(Kernel& k, BlockDevice& dev);  // use mount()

 private:
  NameSeqs names_added_;
  template <typename F> long gate(F&& f);
  void log_failure(long err, const char* what);
  Time now() const;

  Inode* inode(uint32_t ino, long* err);     // cached, read in on a miss
  long live_dir(uint32_t ino, uint32_t generation);
  Inode* cache_inode(const Attr& a);
  void forget_inode(uint32_t ino);
  void update_inode(const Attr& a);
  long link_target(uint32_t ino, char* buf, size_t cap, size_t* len);
  Dentry* cached_name(uint32_t dir, const char* name, size_t len);
  long lookup_name(uint32_t dir, const char* name, size_t len, uint32_t* ino);
  void remember_name(uint32_t dir, const char* name, size_t len, uint32_t ino);
  void forget_name(uint32_t dir, const char* name, size_t len);
  void set_complete(uint32_t dir, bool complete);
  long fill_dir(uint32_t dir);
  static bool remember_entry(void* ctx, const ext2glue::DirEntry& e);
  long fill_pages(uint32_t ino, uint64_t first, uint64_t size);
  long read_locked(uint32_t ino, void* buf, size_t n, uint64_t off, bool kernel_buf);
  long make_snapshot(Inode* in);
  void drop_snapshot(Inode* in);
  void drop_snapshot(uint32_t ino);
  void drop_every_snapshot();
  void update_pages(uint32_t ino, const uint8_t* data, size_t n, uint64_t off);
  long failed_change(uint32_t dir, const char* name, size_t len, long err);
  long finish_create(uint32_t dir, const char* name, size_t len, long r, const Attr& dir_after,
                     const Attr& created);
  long changeable_dir(uint32_t dir, Attr* out);
  long check_dir_change(const Cred& c, uint32_t dir, uint32_t victim);
  Inode* dir_for_new_name(const Cred& c, uint32_t dir, const char* name, long* err);
  long drop_link(uint32_t dir, const char* name, uint32_t ino, bool is_dir);
  long release_if_unused(uint32_t ino);
  long rename_locked(const Cred& c, uint32_t odir, const char* oname, uint32_t ndir, const char* nname,
                     unsigned flags);
  long is_ancestor(uint32_t maybe_ancestor, uint32_t dir);

  Kernel& k_;
  BlockDevice* dev_;
  ext2glue::Volume* vol_ = nullptr;
  bool readonly_ = true;
  KMutex lock_;
  PageCache data_;  // file contents, clean copies (owner: inode number)
  static constexpr size_t kInodeBuckets = 4096, kDentryBuckets = 16384;
  static constexpr size_t kMaxInodes = 32768, kMaxDentries = 131072;
  static constexpr uint64_t kFillDirMax = 1 << 20;  // directories read whole into the dentry cache
  Inode* inodes_[kInodeBuckets]{};
  Dentry* dentries_[kDentryBuckets]{};
  size_t ninodes_ = 0, ndentries_ = 0;
  // Host memory held by the inodes' snapshots; past the budget, the
  // snapshots of other files are dropped before a new one is kept.
  static constexpr size_t kSnapshotBudget = size_t{256} << 20;
  size_t snapshot_bytes_ = 0;
  Stats stats_{};
};

}  // namespace flatux::ext4
