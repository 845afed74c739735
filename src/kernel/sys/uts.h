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
// The process leaves its namespace (freed with its last process).
void uts_leave(Heap* heap, Process& p);
// A new namespace for p holding its current names (needs CAP_SYS_ADMIN:
// EPERM); ENOMEM.
long uts_unshare(Task& t, Process& p);

}  // namespace flatux
