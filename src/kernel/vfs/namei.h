// The path walk: one component at a time over the dentry cache, from the
// process root, the cwd or a dirfd, to the directory holding the last
// component; then the operation, with a Lookup naming it (see
// docs/ARCHITECTURE.md, "Paths and mounts").
#pragma once
#include <linux/errno.h>

#include "kernel/kernel.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/perm.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

// The checks before a name is created at lk (names.cpp): EEXIST at a
// mount root, EROFS (or EEXIST) on a read-only mount, then the directory's
// write and search permission.
long vfs_may_create(Task& t, Lookup& lk);

// openat2's RESOLVE_* limits on one walk (RESOLVE_BENEATH and
// RESOLVE_IN_ROOT confine it to `root`, the guest path of the dirfd).
struct WalkScope {
  static constexpr unsigned kNoXdev = 0x01, kNoMagicLinks = 0x02, kNoSymlinks = 0x04, kBeneath = 0x08,
                            kInRoot = 0x10;
  unsigned resolve = 0;
  char root[kPathMax];
  const Mount* mount = nullptr;  // where it starts (RESOLVE_NO_XDEV)

  bool scoped() const { return resolve & (kBeneath | kInRoot); }
  bool no_magic() const { return resolve & (kNoMagicLinks | kNoSymlinks); }
};

// Fills a scope for a walk from dirfd (its guest path and mount).
long walk_scope_at(Task& t, int dirfd, unsigned resolve, WalkScope* out);

// Where the walk goes on after lk's redirect: the guest path of the target.
long redirect_target(Task& t, const Mount& m, const Lookup& lk, char* out, size_t n,
                     const WalkScope* scope = nullptr);

// One walk (namei.cpp): where it stands, a mount and a dentry of it (both
// counted), with that place's canonical guest path (links resolved, no
// ".."), which is what mount points and the process root are compared
// with. It ends at the directory holding the last component.
struct Walk {
  Task& t;
  const WalkScope* scope;
  Mount* mnt = nullptr;
  Dentry* dentry = nullptr;
  // Held without a reference: the namespace's bare root and its root
  // dentry, which live as long as the kernel (Vfs::bare_root).
  bool mnt_borrowed = false;
  bool dentry_borrowed = false;
  size_t glen = 0;
  int links = 0;  // symlinks followed, across restarts
  char guest[kPathMax];
  char root[kPathMax];   // the guest path absolute paths start at and ".." stops at
  char inner[kPathMax];  // what Lookup::path points to
  char last[256];        // what Lookup::name views
  // Where a walk after a link its operation met starts (the link's
  // folder; references move in at the start), instead of dirfd.
  Path from;

  Walk(Task& task, const WalkScope* s) : t(task), scope(s) {}
  ~Walk() {
    leave();
    path_put(from);
  }
  Walk(const Walk&) = delete;
  Walk& operator=(const Walk&) = delete;
  void leave();  // drops the place's references
};

// Walks (dirfd, path) component by component over the dentry cache and
// fills lk for the operation on its last component (lk.dir/lk.name set
// when that has a parent directory in the same filesystem). Every
// directory it looks a name up in (".." and "." too) must be searchable
// by the caller (may_lookup on its inode as it is now: EACCES), so the
// operation need not check the folders above lk.dir again. `from_top`:
// `path` is a guest path of the kernel's namespace (a redirect's target),
// not the caller's.
long walk_path(Walk& w, int dirfd, const char* path, bool follow, bool from_top, Lookup& lk);

// Whether a rename ran since `seq` (the walk's guest paths may be stale).
bool renamed_since(Task& t, uint32_t seq);
uint32_t rename_seq_now(Task& t);

// Runs op(Lookup&) on the filesystem holding (dirfd, path). `path` is a
// kernel string, non-empty. The walk resolves every symlink but a last
// one not followed (and a magic link, which the filesystem's operation
// follows itself); a symlink the operation meets anyway (the filesystem
// changed meanwhile) hands back a redirect, and the walk goes on from its
// target.
template <typename Op>
long vfs_walk(Task& t, int dirfd, const char* path, bool follow, Op&& op, const WalkScope* scope = nullptr) {
  const char* p = path;
  bool from_top = false;
  int links = 0;
  char target[kPathMax];
  Path from;  // the folder of a link with a relative target
  for (int tries = 0;;) {
    Walk w(t, scope);
    w.links = links;
    if (from) w.from = path_get(from);
    Lookup lk;
    uint32_t seq = rename_seq_now(t);
    long r = walk_path(w, dirfd, p, follow, from_top, lk);
    // A rename during the walk may have left its guest path behind: again.
    if (r != -ENAMETOOLONG && renamed_since(t, seq) && ++tries < 3) continue;
    if (r < 0) {
      path_put(from);
      return r;
    }
    Mount& m = *lk.mount;
    r = op(lk);
    path_put(from);
    // A redirect not ours belongs to an enclosing walk (two-path calls).
    if (r != kRedirect || !lk.redirected) return r;
    bool no_links = scope && (scope->resolve & WalkScope::kNoSymlinks);
    if (no_links || ++w.links > kMaxSymlinks) return -ELOOP;
    links = w.links;
    tries = 0;
    if (lk.redirect_rel && lk.dir && !scope) {
      // The last component's relative target: walked on from its folder,
      // as Linux does, not again from the top (whose folders the caller
      // need not be able to search).
      if (!copy_cstr(target, sizeof target, lk.redirect + lk.redirect_rel)) return -ENAMETOOLONG;
      from = path_get(Path{&m, lk.dir});
      p = target;
      from_top = false;
      continue;
    }
    r = redirect_target(t, m, lk, target, sizeof target, scope);
    if (r < 0) return r;
    p = target;
    from_top = true;
  }
}

}  // namespace flatux

// --- dentries: where the walk's answers are remembered ----------------------

namespace flatux {

// The dentry of `inner` (a path inside m's filesystem as a walk produced
// it: links followed, ".." resolved), with a reference. A name missing
// from the cache is asked of the filesystem (FsOps::lookup, or the generic
// answer from its stat); a cached one of a filesystem the VFS does not
// alone change is checked again.
ErrorOr<Dentry*> dentry_of(Task& t, Mount& m, std::string_view inner);
// The dentry of what a walk's Lookup names (from its parent's, when the
// walk gave one).
ErrorOr<Dentry*> dentry_of(Task& t, Lookup& lk);

// An inode known by its number, type, bits, owner and generation alone,
// which the heap frees at its last reference: for a filesystem whose
// lookup has no object of its own to hand the dentry cache.
ErrorOr<Inode*> plain_inode(Task& t, Filesystem& fs, uint64_t ino, const FilePerms& p, uint32_t generation);

// The dentry a mount on `inner` (a normalised path inside m's
// filesystem) stands on, with a reference: what the filesystem has there,
// or for a name it lacks (the kernel's /proc on a host folder without
// one), a negative dentry that exists only as a mount point, asked again
// at any other use.
ErrorOr<Dentry*> mount_point_dentry(Task& t, Mount& m, std::string_view inner);

// The Path of an open file: its dentry, or the one of the path it was
// opened by (as the filesystem now names it). -ENOTDIR for a file not
// opened by path.
ErrorOr<Path> path_of_file(Task& t, File& f);

// The guest path of p: its dentry's names up to the mount's root, under
// the mount point. `deleted` tells whether it (or a folder above it) was
// removed. -ENOENT when it no longer lies below what the mount shows.
long guest_path_of(const Path& p, char* out, size_t n, bool* deleted);

// A mount's inner path as a guest path: drops the mount's root, prefixes
// its mount point. -ENOENT when `inner` is not below the root.
long inner_to_guest(const Mount& m, std::string_view inner, char* out, size_t n);

// The process's working directory, with references (resolving the
// kernel's start folder the first time).
ErrorOr<Path> fs_cwd(Task& t);
// Makes p (whose references move in) the working directory; `opened`
// (a reference moves in, or nullptr) is it as an O_PATH file.
void fs_set_cwd(Task& t, Path p, File* opened);
// chdir(2) to a kernel-space path (the launcher's start folder of a
// process): 0 or -errno.
long fs_chdir_path(Task& t, const char* path);
// The process's root (chroot) as a guest path of the kernel's one
// namespace: "/" until chroot, then wherever that directory now is.
// fs_root_locked: fc.lock held.
long fs_root(Task& t, char* out, size_t n);
long fs_root_locked(const FsContext& fc, char* out, size_t n);
// Makes p (whose references move in) the process's root.
void fs_set_root(Task& t, Path p);
// The cwd's O_PATH file, with a reference, when the cwd was removed (a
// walk of "." then reaches it, not a path); otherwise nullptr.
File* fs_removed_cwd_file(Task& t);

// The dentry cache learns what a filesystem operation changed; called
// with fs.names_lock held, after the operation succeeded.
void dcache_name_removed(Task& t, Lookup& lk, bool dir);
void dcache_name_moved(Task& t, Lookup& from, Lookup& to, bool exchange);

// The filesystem is going away: its cached dentries go.
void fs_drop_dentries(Filesystem& fs);

}  // namespace flatux
