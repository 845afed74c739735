// Mount namespaces: which mounts a process sees. A process starts in its
// parent's; unshare(CLONE_NEWNS) or clone(CLONE_NEWNS) gives it a copy of
// every mount (Vfs::copy_ns), in which its mounts and unmounts are its own
// (but for propagation between shared peers, which crosses namespaces as
// on Linux). The namespace goes, with its mounts, when its last process
// does.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

struct Process;
struct FsContext;

MountNs& mnt_ns_of(const Process& p);
MountNs& mnt_ns_of(Task& t);
// The child joins its parent's namespace.
void mnt_ns_inherit(Process& child, const Process& parent);
// The process leaves its namespace (unmounted with its last process).
void mnt_ns_leave(Process& p);
// A copy of p's namespace for p, whose own (unshared) fs has its root and
// working folder moved onto the copies of their mounts. EPERM without
// CAP_SYS_ADMIN; ENOMEM; ENOSPC when the mount table is full.
long mnt_ns_unshare(Process& p, FsContext& fs);
// The same for a process clone is making (tasks_lock held).
long mnt_ns_unshare_locked(Process& p, FsContext& fs);
// setns(2): p moves into ns (a reference moves in) and its root and
// working folder become that namespace's "/" (Linux's mntns_install).
// EPERM without CAP_SYS_ADMIN; EINVAL while its fs is shared (CLONE_FS)
// or it has other threads.
long mnt_ns_enter(Task& t, MountNs* ns);

}  // namespace flatux
