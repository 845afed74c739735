// The VFS's permission policy, with the guest's own credentials: Linux's
// generic_permission (owner, group, other bits, root's override), may_open,
// the search permission of a walk, and the owner a new file gets. The VFS
// applies it for every filesystem; what it needs from one comes through the
// filesystem's stat and setattr.
#pragma once
#include <sys/stat.h>

#include "kernel/task/task.h"

namespace flatux {

struct Lookup;
struct File;

// The credentials permission checks use: the process's, or access(2)'s
// real ids while it runs (Task::creds_override).
inline const Creds& creds_of(Task& t) { return t.creds_override ? *t.creds_override : t.proc->creds; }

// 0 when the caller's fsuid/fsgid may access a file with these attributes
// for `mask` (R_OK | W_OK | X_OK), else -EACCES.
long may_access(Task& t, const struct stat& st, int mask);

// Whether the caller is root (fsuid 0) or owns a file with owner `uid`.
bool owner_or_root(Task& t, uint32_t uid);

// Whether the caller's fsgid (or a supplementary group) is `gid`.
bool in_group(Task& t, uint32_t gid);

// Linux's may_open for an existing file opened with `flags`: the access
// mode (and O_TRUNC) against its bits (EACCES), O_NOATIME only for its
// owner or root (EPERM). A file this open created is not checked.
long may_open(Task& t, const struct stat& st, int flags);

// Search permission on every directory lk's path passes through inside its
// filesystem (EACCES), for filesystems whose own walk does not check it
// (FsOps::walk_checks_search). Stops quietly at a symlink or a missing
// component: the operation itself meets them.
long may_walk(Task& t, Lookup& lk);

// After the filesystem made a new node at lk (its attributes in `st`):
// the owner Linux gives it, the caller's fsuid, and the group, the caller's
// fsgid or a set-group-ID parent directory's, set where the filesystem
// chose otherwise (hostfs creates as the host's user) through the open
// file `f`'s setattr, else the filesystem's. `lk_is_parent`: lk names the
// directory the node was made in (O_TMPFILE).
void claim_new_node(Task& t, Lookup& lk, File* f, const struct stat& st, bool lk_is_parent);

}  // namespace flatux
