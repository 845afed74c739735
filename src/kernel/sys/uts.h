// UTS namespaces: the host and domain names a process sees (uname,
// /proc/sys/kernel) and sets (sethostname, setdomainname). A process starts
// in its parent's; unshare(CLONE_NEWUTS) or clone(CLONE_NEWUTS) gives it a
// copy of its own, so its changes are seen only by it and its children.
#pragma once
#include "kernel/kernel.h"

namespace flatux {

UtsNames& uts_of(Process& p);
// The child joins its parent's namespace.
void uts_inherit(Process& child, const Process& parent);
// The process leaves its namespace (freed with its last holder).
void uts_leave(Heap* heap, Process& p);
// Lets go of a reference (a process's or an nsfs descriptor's; nullptr:
// the kernel's first, never freed).
void uts_put(Heap* heap, UtsNames* u);
// A new namespace for p holding its current names (needs CAP_SYS_ADMIN:
// EPERM); ENOMEM.
long uts_unshare(Task& t, Process& p);
// The same for a process clone is making (tasks_lock held).
long uts_unshare_locked(Task& t, Process& p);

}  // namespace flatux
