// The permission policy, written once for every filesystem: Linux's
// generic_permission (owner, group, other bits, root's override) and the
// checks namei.c makes around it (may_lookup, may_create, may_delete with
// the sticky rule, the rename checks, may_open, may_link) and the owner a
// new inode gets. The policy itself works on credentials and a file's
// mode and owner only, so the VFS applies it to what a filesystem's stat
// or a dentry's inode says, and tmpfs and ext4 apply the same functions to
// their own inodes under their own locks, where the check and the change
// must be one step.
// Who may change attributes is attr.cpp's (Linux's setattr_prepare).
#pragma once
#include <sys/stat.h>

#include "kernel/task/caps.h"
#include "kernel/task/task.h"

namespace flatux {

struct Lookup;
struct File;

// What the policy needs of a file: its type and bits, and its owner.
struct FilePerms {
  uint32_t mode, uid, gid;
};
inline FilePerms perms_of(const struct stat& st) { return {st.st_mode, st.st_uid, st.st_gid}; }
// Any inode type with mode, uid and gid members (tmpfs's, ext4's).
template <typename Node>
FilePerms perms_of(const Node& n) {
  return {n.mode, n.uid, n.gid};
}

// The credentials permission checks use: the process's, or access(2)'s
// real ids while it runs (Task::creds_override).
inline const Creds& creds_of(Task& t) { return t.creds_override ? *t.creds_override : t.proc->creds; }

// Whether the fsgid (or a supplementary group) is `gid`.
bool in_group(const Creds& c, uint32_t gid);
// Whether the caller owns a file with owner `uid` or holds CAP_FOWNER
// (Linux's inode_owner_or_capable).
bool owner_or_root(const Creds& c, uint32_t uid);

// Linux's generic_permission: 0 when `c` may access the file for `mask`
// (R_OK | W_OK | X_OK), else -EACCES.
long permission(const Creds& c, FilePerms f, int mask);

// A walk through the directory `dir` (search permission): EACCES. The
// path walk (namei.cpp) asks it of every directory it looks a name up in,
// ".." included, as Linux's link_path_walk does.
long may_lookup(const Creds& c, FilePerms dir);
// Whether `c` passes every search check whatever the bits
// (CAP_DAC_READ_SEARCH or CAP_DAC_OVERRIDE): the walk then need not read them.
inline bool searches_every_dir(const Creds& c) {
  return capable(c, CAP_DAC_READ_SEARCH) || capable(c, CAP_DAC_OVERRIDE);
}

// Whether no read, write or search check and no ownership check can
// refuse `c` (root with its filesystem capabilities): callers may skip
// them. Execute bits are still checked (permission()).
inline bool passes_dac(const Creds& c) {
  return capable(c, CAP_DAC_OVERRIDE) && capable(c, CAP_DAC_READ_SEARCH) && capable(c, CAP_FOWNER);
}

// A new name in `dir` (the name was found absent): write and search
// permission on it, EACCES.
long may_create(const Creds& c, FilePerms dir);

// Linux's check_sticky: in a sticky directory only the owner of the
// victim or of the directory (or root) may remove or replace the victim.
bool sticky_blocks(const Creds& c, FilePerms dir, FilePerms victim);

// Removing (or renaming away, or replacing) `victim` in `dir`: write and
// search permission on the directory (EACCES), then the sticky rule (EPERM).
long may_delete(const Creds& c, FilePerms dir, FilePerms victim);

// rename(2)'s checks, in Linux's order: may_delete of the source in its
// directory; at the target, may_create when nothing is there, else
// may_delete of what is there; a directory that changes parents must be
// writable itself (its ".." changes), as must, exchanged, the other one.
// `target` is null when the new name is free.
long may_rename(const Creds& c, FilePerms old_dir, FilePerms source, FilePerms new_dir, const FilePerms* target,
                bool same_dir, unsigned flags);

// Linux's may_open for an existing file (not one this open created) opened
// with `flags`: EISDIR for a directory opened for writing, truncating or
// creating; the access mode (and O_TRUNC, which needs write) against the
// bits (EACCES); O_NOATIME only for the owner or root (EPERM). O_PATH
// opens nothing: 0.
long may_open(const Creds& c, FilePerms f, int flags);

// A new hard link to `f` (fs.protected_hardlinks): a caller who neither
// owns the file nor may read and write it, or for a set-user-ID,
// executable set-group-ID or not regular file, may not (EPERM).
long may_link(const Creds& c, FilePerms f);

// The owner and mode of a new node of `mode` (type and bits) made in
// `dir` (Linux's inode_init_owner and mode_strip_sgid): the caller's
// fsuid; the directory's group when it is set-group-ID (a new directory
// there is set-group-ID too), else the caller's fsgid; an executable
// set-group-ID bit for a group the caller is not in is dropped.
FilePerms init_owner(const Creds& c, FilePerms dir, uint32_t mode);

// The same checks with a guest task's credentials (creds_of).
inline long may_access(Task& t, const struct stat& st, int mask) { return permission(creds_of(t), perms_of(st), mask); }
inline bool owner_or_root(Task& t, uint32_t uid) { return owner_or_root(creds_of(t), uid); }
inline bool in_group(Task& t, uint32_t gid) { return in_group(creds_of(t), gid); }
inline long may_open(Task& t, const struct stat& st, int flags) { return may_open(creds_of(t), perms_of(st), flags); }

// After the filesystem made a new node at lk (its attributes in `st`):
// the owner Linux gives it (init_owner), set where the filesystem chose
// otherwise (hostfs creates as the host's user) through the open file
// `f`'s setattr, else the filesystem's. `lk_is_parent`: lk names the
// directory the node was made in (O_TMPFILE).
void claim_new_node(Task& t, Lookup& lk, File* f, const struct stat& st, bool lk_is_parent);

}  // namespace flatux
