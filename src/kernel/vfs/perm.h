// Permission checks with the guest's own credentials, as Linux's
// generic_permission: owner, group, other bits, and root's override.
#pragma once
#include <sys/stat.h>

#include "kernel/task/task.h"

namespace flatux {

// 0 when the caller's fsuid/fsgid may access a file with these attributes
// for `mask` (R_OK | W_OK | X_OK), else -EACCES.
long may_access(Task& t, const struct stat& st, int mask);

// Whether the caller is root (fsuid 0) or owns a file with owner `uid`.
bool owner_or_root(Task& t, uint32_t uid);

// Whether the caller's fsgid (or a supplementary group) is `gid`.
bool in_group(Task& t, uint32_t gid);

}  // namespace flatux
