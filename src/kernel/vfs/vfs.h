// The VFS: a mount table over filesystems, and the operations a path walk
// (namei.h) hands them as a `Lookup`.
//
// The walk decides mount points, "..", symlinks, absolute targets and
// confinement, once, for every filesystem. A filesystem never follows a
// symlink on its own: one it meets anyway is handed back as a *redirect*,
// from whose target the walk goes on (see docs/ARCHITECTURE.md, "Paths and
// mounts").
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string_view>

#include "kernel/task/task.h"
#include "kernel/vfs/file.h"

struct stat;
struct statfs;

namespace flatux {

struct Filesystem;
struct Mount;
struct Dentry;
struct Inode;
struct FilePerms;
class NameSeqs;

// Returned by a filesystem operation whose walk met a symlink it must not
// follow itself; Lookup::redirect says where to go on. Never reaches a guest.
constexpr long kRedirect = -4000;

// Symlinks followed in one walk before ELOOP, as Linux's MAXSYMLINKS.
constexpr int kMaxSymlinks = 40;

struct Lookup {
  Lookup() = default;
  Lookup(const char* p, bool f, Mount* m) : path(p), follow(f), mount(m) {}

  const char* path = nullptr;  // absolute and normalised inside the filesystem: "/", "/a/b"
  bool follow = false;         // follow a symlink in the last component
  Mount* mount = nullptr;      // the mount the path was reached through
  // From the walk: the dentry of the directory holding the last component
  // (held by the walk while the operation runs) and that component; dir is
  // nullptr where the walk names no such directory (a mount's root, a
  // magic link). `path` is then that directory's path and `name` joined.
  Dentry* dir = nullptr;
  std::string_view name;
  // Out, with kRedirect: an absolute target is a guest path; a relative one
  // is a path inside the same filesystem (it may contain "..").
  bool redirected = false;
  bool redirect_absolute = false;
  // A relative target of the last component itself (the link is `name`
  // in `dir`): where in `redirect` the target starts (0: another case).
  size_t redirect_rel = 0;
  char redirect[kPathMax];
};

// Fills lk's redirect for the symlink at `link_path` (inside the
// filesystem) whose target is `target`, with `rest` (the components after
// the link, possibly empty) appended. Returns kRedirect, or -ENAMETOOLONG.
long vfs_make_redirect(Lookup& lk, std::string_view link_path, std::string_view target,
                       std::string_view rest);

// Splits an inner path into its parent and last component ("/a/b" ->
// "/a", "b"; "/" -> "/", "").
void split_last(std::string_view path, std::string_view* parent, std::string_view* name);

// What setattr changes (chmod, chown, utimens, truncate), like Linux's iattr.
enum : unsigned {
  kAttrMode = 1, kAttrUid = 2, kAttrGid = 4, kAttrSize = 8, kAttrAtime = 16, kAttrMtime = 32,
  kAttrCtime = 64,
  kAttrTimesNow = 128,  // the times are "now" (utimensat(NULL)): owner or writer may
};
struct Attr {
  unsigned mask = 0;
  uint32_t mode = 0, uid = 0, gid = 0;
  int64_t size = 0;
  struct timespec atime{}, mtime{};
};

// One extended-attribute request: getxattr, setxattr, listxattr or
// removexattr, with the name and value already in kernel memory.
struct XattrOp {
  enum Kind : uint8_t { kGet, kSet, kList, kRemove };
  Kind kind = kGet;
  const char* name = nullptr;  // not for kList
  void* value = nullptr;       // kGet/kList: filled (size 0: only the size asked); kSet: the value
  size_t size = 0;
  int flags = 0;               // kSet: XATTR_CREATE or XATTR_REPLACE
};

// Operations of one filesystem type. A null entry means the filesystem does
// not support it (the VFS answers as Linux would for such a filesystem).
struct FsOps {
  const char* name;
  long (*open)(Task&, Filesystem&, Lookup&, int flags, int mode, File** out);
  long (*stat)(Task&, Filesystem&, Lookup&, struct stat* out);
  long (*readlink)(Task&, Filesystem&, Lookup&, char* buf, size_t n);
  long (*access)(Task&, Filesystem&, Lookup&, int mode);
  long (*statfs)(Task&, Filesystem&, Lookup&, struct statfs* out);
  long (*mkdir)(Task&, Filesystem&, Lookup&, int mode) = nullptr;
  long (*mknod)(Task&, Filesystem&, Lookup&, int mode, uint64_t dev) = nullptr;
  long (*unlink)(Task&, Filesystem&, Lookup&) = nullptr;
  long (*rmdir)(Task&, Filesystem&, Lookup&) = nullptr;
  long (*symlink)(Task&, Filesystem&, Lookup&, const char* target) = nullptr;
  long (*link)(Task&, Filesystem&, Lookup& old_lk, Lookup& new_lk) = nullptr;
  long (*rename)(Task&, Filesystem&, Lookup& old_lk, Lookup& new_lk, unsigned flags) = nullptr;
  long (*setattr)(Task&, Filesystem&, Lookup&, const Attr&) = nullptr;
  // linkat(fd, "", ..., AT_EMPTY_PATH): a name for an open file (O_TMPFILE's).
  long (*link_file)(Task&, Filesystem&, File& f, Lookup& new_lk) = nullptr;
  // The open file a magic link names (/proc/PID/fd/N), with a reference:
  // following one reaches the file itself, not a path. -ENOENT when lk is
  // no such link.
  long (*magic_file)(Task&, Filesystem&, Lookup&, File** out) = nullptr;
  // The current inner path of an open directory, where the filesystem can
  // tell (a renamed directory); otherwise the path recorded at open is used.
  long (*dir_path)(Task&, Filesystem&, File& dir, char* out, size_t n) = nullptr;
  void (*sync)(Filesystem&) = nullptr;
  // Extended attributes (the VFS has checked the name, the namespace and
  // the caller's rights); null: EOPNOTSUPP.
  long (*xattr)(Task&, Filesystem&, Lookup&, XattrOp&) = nullptr;
  // The inode of `name` in the directory `dir` (a dentry of this
  // filesystem reached through `m`), with a reference; -ENOENT when there
  // is no such name. Null: the generic answer from `stat` on the name's
  // path (namei.cpp).
  long (*lookup)(Task&, Filesystem&, Mount& m, Dentry& dir, std::string_view name, Inode** out) = nullptr;
  // Opens the inode the dentry d (of this filesystem, reached through m)
  // holds, not a path: a folder whose name was removed (a chroot or a
  // cwd) has none any more. A read-only open (no O_CREAT or O_TRUNC); the
  // filesystem checks access if it says open_checks_access. Null: such a
  // folder opens only as O_PATH.
  long (*open_dentry)(Task&, Filesystem&, Mount& m, Dentry& d, int flags, File** out) = nullptr;
  // Whether the cached positive dentry d still names what it named, for a
  // filesystem that is not dcache_trusted. Null: the generic check, a stat
  // of d's path compared by type and inode number (namei.cpp).
  bool (*revalidate)(Task&, Filesystem&, Mount& m, Dentry& d) = nullptr;
  // The mode and owner of the directory d (a dentry of this filesystem
  // reached through `m`) as they are now, for the walk's search check
  // (namei.cpp, may_lookup). Null: d's Inode fields, which such a
  // filesystem keeps current (and a revalidated dentry has as its last
  // check found them).
  FilePerms (*dir_perms)(Task&, Filesystem&, Mount& m, Dentry& d) = nullptr;
  // Names change only through the VFS (tmpfs, ext4), which keeps the
  // dentry cache in step: a cached dentry is trusted without asking the
  // filesystem again. Otherwise (the host's folder, generated trees) a
  // cached dentry is checked against the filesystem whenever it is walked.
  bool dcache_trusted = false;
  // Its names come and go with what it shows (procfs's processes, devpts's
  // terminals): a dentry nobody holds goes at once instead of waiting in
  // the cache's unused list (Linux's always_delete_dentry).
  bool dcache_drop_unused = false;
  // The generation of inode number `ino` (ext4's i_generation), which the
  // VFS keeps in the dentry's Inode: an operation starting in the walk's
  // folder tells that folder from a later file given its number. nullptr:
  // the filesystem has none.
  uint32_t (*inode_generation)(Filesystem&, uint64_t ino) = nullptr;
  // The filesystem's open applies may_open (perm.h) to the inode it opens,
  // under its own lock; otherwise the VFS does, to the open file's stat.
  bool open_checks_access = false;
  // Where its root lies in the filesystem it shows (a hostfs of a host
  // folder: that folder's host path), which /proc/PID/mountinfo's root
  // field starts with, as Linux's shows a bind mount's source path.
  // nullptr or "": its own root.
  const char* (*shown_root)(Filesystem&) = nullptr;
};

struct Filesystem {
  const FsOps* ops;
  void* priv = nullptr;
  uint64_t dev = 0;              // st_dev of its files
  std::atomic<int> mounts{0};    // mounts showing it
  // The superblock is read-only: every mount of it is. remount changes it
  // while walks and opens read it.
  std::atomic<bool> readonly{false};
  // Held while names change (rename, unlink, rmdir) together with the
  // dentry cache, and while a name missing from the cache is asked of the
  // filesystem, so a dentry never says what was true only before a
  // change (Linux's s_vfs_rename_mutex and i_rwsem in one).
  KMutex names_lock;
  Dentry* root_dentry = nullptr;  // made at its first walk (names_lock)
  // Set by a dcache_trusted filesystem that counts the names it adds to
  // its directories (dcache.h): the cache then keeps what its lookup says
  // is absent, as negative dentries. Null: a missing name is asked anew.
  const NameSeqs* names_added = nullptr;
};

// A mounted filesystem type: mount(2) finds it by name.
struct FsType {
  const char* name;
  // Creates the filesystem for mount(2)'s source/flags/data (data is a
  // kernel string or nullptr).
  long (*mount)(Kernel&, const char* source, unsigned long flags, const char* data, Filesystem** out);
  void (*unmount)(Filesystem&) = nullptr;  // last mount of it gone: flush and free
  bool needs_device = false;               // listed without "nodev" in /proc/filesystems
  // mount -o remount: applies the filesystem's own options (data may be nullptr).
  long (*remount)(Filesystem&, unsigned long flags, const char* data) = nullptr;
  // The filesystem's own options as /proc/mounts shows them ("size=1024k");
  // without it, the data given to mount(2).
  void (*show_options)(Filesystem&, char* out, size_t n) = nullptr;
};


// A mount namespace: the mounts a process sees. Every namespace's mounts
// live in the one table (Vfs), so that propagation between peers in
// different namespaces is one operation under one lock; a walk tells them
// apart only at the top (a root belongs to one namespace, and a mount's
// children to its own).
struct MountNs {
  std::atomic<int> refs{1};   // the processes in it, and open /proc/PID/ns/mnt (nsfs)
  uint64_t id = 0;            // the inode number /proc/PID/ns/mnt shows
  Mount* top_root = nullptr;  // the topmost mount on "/" (table lock)
  std::atomic<Mount*> bare_root{nullptr};
};

struct Mount {
  std::atomic<int> refs{1};   // the table's own, walks in flight, open files
  Heap* heap = nullptr;
  int id = 0, parent_id = 0;
  Mount* parent = nullptr;    // the mount holding the mount point (nullptr: a root)
  MountNs* ns = nullptr;      // its namespace while attached (table lock)
  // The mount point and root change when a folder above them is renamed
  // (Vfs::follow_rename, which holds the table lock and writes them through
  // change_place): outside the table lock, read them through with_place.
  char path[kPathMax];        // guest path of the mount point
  size_t len = 0;
  char root[kPathMax];        // inner path of fs shown at `path` ("/" but for bind mounts)
  size_t root_len = 0;
  mutable KMutex place_lock;  // a leaf: nothing else is taken under it
  // Odd while change_place writes; readers that saw the same even count
  // before and after their copy read a whole pair.
  std::atomic<uint32_t> place_seq{0};
  Filesystem* fs = nullptr;
  const FsType* type = nullptr;
  // MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_NOATIME...: remount
  // changes them while walks, opens and exec read them, so one atomic word
  // (read it once with flags_now() where several bits must agree).
  std::atomic<unsigned long> flags{0};
  char source[256];
  char options[256];          // the filesystem's own options, for /proc/mounts
  bool attached = true;       // false once unmounted (lazily, with MNT_DETACH)
  // Shared subtrees (Documentation/filesystems/sharedsubtree.rst): the
  // peer group this mount shares mount events with (0: not shared), the
  // group it receives them from (0: not a slave), and MS_UNBINDABLE.
  int group = 0;
  int master = 0;
  bool unbindable = false;
  uint32_t op = 0;            // the table operation that created it (new mounts receive nothing)
  std::atomic<int> children{0};          // attached mounts whose parent it is
  std::atomic<Dentry*> mnt_root{nullptr};  // the dentry of `root`, made at the first walk into it
  // The dentry it is mounted on, in the parent's filesystem (counted
  // while attached, and marked with Dcache::mount_on): set by Vfs::pin_points
  // soon after the mount is made; a walk finds the mount by (parent,
  // point). nullptr: a root, or not pinned yet.
  std::atomic<Dentry*> point{nullptr};
  bool pin_tried = false;     // pin_points has taken it up (table lock)
  bool stacked = false;       // mounted on its parent's root (the same mount point)

  bool readonly() const;
  unsigned long flags_now() const { return flags.load(std::memory_order_relaxed); }
  // Calls fn(point, root) with the mount point and root as one consistent
  // pair (fn keeps no view). Short places, nearly all of them, are copied
  // without a lock: a walk reads one per call, a rename rarely writes.
  template <typename F>
  decltype(auto) with_place(F&& fn) const {
    char p[kShortPlace], r[kShortPlace];
    size_t pl, rl;
    if (read_short_place(p, &pl, r, &rl)) return fn(std::string_view(p, pl), std::string_view(r, rl));
    Guard g(place_lock);
    return fn(std::string_view(path, len), std::string_view(root, root_len));
  }
  // Writes the mount point and root (write() changes path/len/root/root_len).
  template <typename F>
  void change_place(F&& write) {
    Guard g(place_lock);
    uint32_t s = place_seq.load(std::memory_order_relaxed);
    place_seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    write();
    place_seq.store(s + 2, std::memory_order_release);
  }
  // Whether `inner` (a path inside fs) is the folder shown at the mount point.
  bool is_root(std::string_view inner) const;
  void get() { refs.fetch_add(1, std::memory_order_relaxed); }

 private:
  static constexpr size_t kShortPlace = 128;
  bool read_short_place(char* p, size_t* pl, char* r, size_t* rl) const {
    uint32_t s = place_seq.load(std::memory_order_acquire);
    if (s & 1) return false;
    *pl = __atomic_load_n(&len, __ATOMIC_RELAXED);
    *rl = __atomic_load_n(&root_len, __ATOMIC_RELAXED);
    if (*pl > kShortPlace || *rl > kShortPlace) return false;
    __builtin_memcpy(p, path, *pl);
    __builtin_memcpy(r, root, *rl);
    std::atomic_thread_fence(std::memory_order_acquire);
    return place_seq.load(std::memory_order_relaxed) == s;
  }

 public:
  void put();
};

class Vfs {
 public:
  static constexpr int kMaxMounts = 512;  // in all namespaces together
  static constexpr int kMaxNamespaces = 64;

  explicit Vfs(Heap* h) : heap_(h) {
    init_ns_.id = 0xF0000000;  // Linux's first dynamic inode number, as its first mount namespace has
    nss_[nns_++] = &init_ns_;
  }

  // The namespace the kernel's first process starts in.
  MountNs& init_ns() { return init_ns_; }
  // An inode number for a namespace of another kind (nsfs), from the same
  // sequence as the mount namespaces' so that none is shown twice.
  uint64_t new_ns_inum() {
    Guard g(lock_);
    return next_ns_id_++;
  }

  // Mounts fs at guest_path in ns (the first namespace when nullptr),
  // showing its inner folder fs_root there; the new mount propagates to
  // the peers and slaves of the mount it lands on.
  long mount(const char* guest_path, Filesystem* fs, const FsType* type, unsigned long flags,
             const char* source, const char* fs_root = "/", const char* options = "", MountNs* ns = nullptr);
  long mount(const char* guest_path, Filesystem* fs) {
    return mount(guest_path, fs, nullptr, 0, "none");
  }
  // A bind mount at guest_path of what `src` shows at its inner folder
  // fs_root (src_guest: that folder's guest path). With `recursive`, the
  // mounts below it come along (unbindable ones excepted). The copies
  // share src's propagation (a bind of a shared mount is its peer).
  // EINVAL when src is unbindable.
  long bind(MountNs& ns, const char* guest_path, Mount& src, const char* fs_root, const char* src_guest,
            bool recursive);
  // Detaches m (already found by its mount point), and the copies that
  // propagation made of it. EBUSY while mounts lie beneath it or, unless
  // `lazy`, while anything still refers to it; `lazy` takes the mounts
  // beneath it along.
  long umount(Mount* m, bool lazy);
  // MS_SHARED, MS_PRIVATE, MS_SLAVE or MS_UNBINDABLE on m (and with
  // `recursive` every mount below it).
  long set_propagation(Mount* m, unsigned long type, bool recursive);
  // MS_MOVE: m (found by its root) and the mounts below it now show at
  // guest_path, on top of what shows there. EINVAL for the root mount or a
  // mount whose parent is shared; ELOOP when guest_path lies in m's tree.
  long move(Mount* m, const char* guest_path);

  // A folder of fs was renamed from one inner path to another (or, with
  // `exchange`, swapped with it): the mounts below it and the bind mounts
  // of it follow, as Linux's mounts follow their dentries.
  void follow_rename(const Filesystem* fs, std::string_view from, std::string_view to, bool exchange);

  // A copy of every mount of `from` (with the same propagation: a copy of
  // a shared mount is its peer), as Linux's copy_mnt_ns; `map` receives
  // pairs (mount of from, its copy) for up to kMaxMounts mounts, *n their
  // number. EPERM-free: the caller checked the capability. ENOMEM, ENOSPC.
  MountNs* copy_ns(MountNs& from, Mount** old_of, Mount** new_of, int* n, long* err);
  // A process leaves ns; with the last one its mounts are unmounted.
  void put_ns(MountNs* ns);

  // The mount holding a normalised guest path in ns, with a reference,
  // and the path inside its filesystem in `inner`.
  Mount* find(const MountNs& ns, const char* norm, char* inner, size_t n);
  // The mount showing `norm` in ns when it is a mount point, with a reference.
  Mount* find_exact(const MountNs& ns, const char* norm);
  // The mount a walk enters at guest path `at` below `parent` (the
  // topmost of those stacked there), with a reference; nullptr if none.
  // The walk's way while some mount point is not pinned (points_pinned).
  Mount* mounted_at(const Mount* parent, std::string_view at);
  // The mount a walk enters on the dentry `point` reached through
  // `parent` (the topmost of those stacked there), with a reference;
  // nullptr if none.
  Mount* mounted_on(const Mount* parent, const Dentry* point);
  // Whether every attached mount but the roots holds its mount point's
  // dentry, so the walk may find mounts by dentry alone.
  bool points_pinned() const { return unpinned_.load(std::memory_order_acquire) == 0; }
  // Whether a mount waits for pin_points.
  bool pins_pending() const { return to_pin_.load(std::memory_order_acquire) != 0; }
  // Gives every new mount its mount point's dentry, looked up in the
  // parent's filesystem as t (a name the folder lacks, such as /proc on
  // a host folder without one, gets a dentry that exists only as a mount
  // point). Not under the table lock or any names_lock: it walks.
  void pin_points(Task& t);
  // Where m is mounted, as (parent mount, pinned mount point), both
  // counted; empty for a root, a detached mount or one not pinned yet.
  Path mount_point_of(const Mount& m);
  // The mount `m` is mounted on, with a reference; nullptr for a root or
  // a detached mount.
  Mount* parent_of(const Mount& m);
  // The mount a walk from "/" of ns starts on, with a reference.
  Mount* root_mount(const MountNs& ns);
  // The namespace's first root while nothing is mounted over it, else
  // nullptr. Never removed while a process is in ns (umount refuses it),
  // so a walk may stand on it, and on its root dentry, without taking
  // references.
  static Mount* bare_root(const MountNs& ns) { return ns.bare_root.load(std::memory_order_acquire); }
  // False when no mount point's last component is `name` (a filter the
  // walk asks before it looks for a mount: most names are none).
  bool may_be_mount_point(std::string_view name) const {
    return point_names_.load(std::memory_order_relaxed) & name_bit(name);
  }

  // Absolute guest path of (dirfd, path): the cwd or the directory's path
  // joined with a relative path; "." collapsed, ".." left for the walk.
  long absolute(Task& t, int dirfd, const char* path, char* out, size_t n);

  // Guest path of an open file (for *at calls, fchdir and /proc fd links),
  // and, where it can tell, whether the file's name was removed since.
  long file_guest_path(Task& t, File& f, char* out, size_t n, bool* deleted = nullptr);

  Heap* heap() const { return heap_; }

  // Filesystem types mount(2) knows by name.
  static constexpr int kMaxFsTypes = 16;
  long register_type(const FsType* type);
  const FsType* find_type(std::string_view name);
  template <typename F>
  void for_each_type(F&& fn) {
    Guard g(lock_);
    for (int i = 0; i < ntypes_; i++) fn(*types_[i]);
  }

  // A count of the changes to the table (a mount attached or detached, a
  // mount's flags changed): /proc/PID/mountinfo's readers poll it, as
  // Linux's mounts_poll reports a namespace's events.
  const std::atomic<uint64_t>& mount_events() const { return events_; }
  void touch() { events_.fetch_add(1, std::memory_order_release); }

  // Calls fn(const Mount&) for each attached mount, in mount order (lock held).
  template <typename F>
  void for_each_mount(F&& fn) {
    Guard g(lock_);
    for (int i = 0; i < nmounts_; i++) fn(*mounts_[i]);
  }
  // The same, for the mounts of one namespace.
  template <typename F>
  void for_each_mount_in(const MountNs& ns, F&& fn) {
    Guard g(lock_);
    for (int i = 0; i < nmounts_; i++)
      if (mounts_[i]->ns == &ns) fn(*mounts_[i]);
  }
  // Newest first: a filesystem on a loop device goes before the one
  // holding the loop's file.
  template <typename F>
  void for_each_mount_newest_first(F&& fn) {
    Guard g(lock_);
    for (int i = nmounts_ - 1; i >= 0; i--) fn(*mounts_[i]);
  }

 private:
  Mount* make_mount(const char* guest_path, Filesystem* fs, const FsType* type, unsigned long flags,
                    const char* source, const char* fs_root, const char* options, long* err);
  Mount* clone_mount(const Mount& src, const char* guest_path, const char* fs_root, long* err);
  long attach_locked(Mount* m, Mount* parent);
  void remove_locked(Mount* m);
  void unpin_locked(Mount* m);
  bool pin_locked(Mount* m, const Mount* parent, uint32_t place_seq, Dentry* d, bool stacked);
  void follow_points_locked();
  Mount* visible_locked(const MountNs& ns, const char* norm);
  bool descends_locked(const Mount* m, const Mount* ancestor) const;
  bool has_children_locked(const Mount* m) const;
  int new_group_locked() const;
  void leave_group_locked(Mount* m);
  void share_tree_locked(Mount* top);
  long propagate_locked(Mount* dest, Mount* top, int depth);
  Mount* copy_tree_locked(Mount* src, Mount* dest, const char* path, bool slave, long* err);
  int umount_copies_locked(Mount* m, Mount** out, int max);
  void rollback_locked();
  int tree_locked(Mount* top, Mount** out) const;
  void to_back_locked(Mount* const* tree, int n);
  void repin_locked(Mount* m, Dentry** old_point);
  long discard(Mount* m, long err);
  static uint64_t name_bit(std::string_view name);
  static uint32_t point_hash(std::string_view path);
  void update_walk_hints_locked();

  Heap* heap_;
  KMutex lock_;
  Mount* mounts_[kMaxMounts]{};
  int nmounts_ = 0;
  int next_id_ = 1;
  uint32_t op_ = 0;
  // One bit (name_bit) per last component of an attached mount point.
  std::atomic<uint64_t> point_names_{0};
  // mounted_at's index, in table order: each mount's parent and the hash
  // of its mount point, side by side (a Mount is two pages: a scan of
  // the mounts themselves touches two per mount).
  struct PointKey {
    const Mount* parent;
    Mount* mount;
    uint32_t hash;
    bool stacked;
    const Dentry* point;
  };
  // Attached mounts with a parent and without a point; of those, the ones
  // pin_points has not taken up yet.
  std::atomic<int> unpinned_{0};
  std::atomic<uint64_t> events_{0};
  std::atomic<int> to_pin_{0};
  PointKey points_[kMaxMounts]{};
  MountNs init_ns_;
  MountNs* nss_[kMaxNamespaces]{};  // every namespace (init_ns_ first)
  int nns_ = 0;
  uint64_t next_ns_id_ = 0xF0000001;
  const FsType* types_[kMaxFsTypes]{};
  int ntypes_ = 0;
};

// The guest path of the process's root, as fs_root (vfs/namei.h) gives
// it, but also once that folder was removed (`deleted`): where Linux's
// d_path and getcwd see paths from. The FsContext form: fc.lock held.
long fs_root_path(Task& t, char* out, size_t n, bool* deleted);
long fs_root_path(const FsContext& fc, char* out, size_t n, bool* deleted);

// `path` (absolute, seen from inside `root`) placed under root, "." and
// "//" collapsed; ".." is left for the walk, which stops it at the root.
long rooted_path(const char* root, const char* path, char* out, size_t n);
// `path` as seen from inside `root` (unchanged when outside it).
std::string_view strip_root(const char* root, std::string_view path);

// Lexical normalisation: collapses "//", "." and, unless `resolve_dotdot`
// is off, ".." (never above "/"). `in` must be absolute. Returns the
// length, or -ENAMETOOLONG.
long normalize_path(const char* in, char* out, size_t n, bool resolve_dotdot = true);

}  // namespace flatux
