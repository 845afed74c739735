#include "kernel/vfs/perm.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <unistd.h>

#include "kernel/task/task.h"

namespace flatux {

bool in_group(Task& t, uint32_t gid) {
  const Creds& c = t.proc->creds;
  if (c.fsgid == gid) return true;
  for (int i = 0; i < c.ngroups; i++)
    if (c.groups[i] == gid) return true;
  return false;
}

bool owner_or_root(Task& t, uint32_t uid) {
  const Creds& c = t.proc->creds;
  return c.fsuid == 0 || c.fsuid == uid;
}

long may_access(Task& t, const struct stat& st, int mask) {
  const Creds& c = t.proc->creds;
  mask &= R_OK | W_OK | X_OK;
  if (c.fsuid == 0) {
    // Root reads and writes anything, and executes what anyone may
    // execute; directories are always searchable.
    if (!(mask & X_OK) || S_ISDIR(st.st_mode) || (st.st_mode & 0111)) return 0;
    return -EACCES;
  }
  unsigned bits;
  if (c.fsuid == st.st_uid) bits = (st.st_mode >> 6) & 7;
  else if (in_group(t, st.st_gid)) bits = (st.st_mode >> 3) & 7;
  else bits = st.st_mode & 7;
  return ((unsigned)mask & ~bits) ? -EACCES : 0;
}

}  // namespace flatux
