// Extended attributes: no filesystem here stores them yet, so every call
// checks its arguments and the file exactly as Linux would, then reports
// EOPNOTSUPP -- what Linux says for a filesystem without xattr support.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>

#include "host/usercopy.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/ops.h"

namespace flatux {
namespace {

constexpr size_t kXattrNameMax = 255;

long check_name(uint64_t guest_name) {
  char name[kXattrNameMax + 1];
  long r = strncpy_from_user(name, (const char*)guest_name, sizeof name);
  if (r == -ENAMETOOLONG) return -ERANGE;
  if (r < 0) return r;
  return r == 0 ? -ERANGE : 0;
}

long check_path(Task& t, uint64_t guest_path, bool follow) {
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)guest_path, sizeof path);
  if (r < 0) return r;
  if (r == 0) return -ENOENT;
  struct stat st;
  return vfs_stat(t, AT_FDCWD, path, follow, &st);
}

long path_xattr(Task& t, SyscallArgs a, bool follow, bool named) {
  long r = check_path(t, a[0], follow);
  if (r < 0) return r;
  if (named && (r = check_name(a[1])) < 0) return r;
  return -EOPNOTSUPP;
}

long fd_xattr(Task& t, SyscallArgs a, bool named) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  if (named) {
    long r = check_name(a[1]);
    if (r < 0) return r;
  }
  return -EOPNOTSUPP;
}

}  // namespace

long sys_getxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, true, true); }
long sys_lgetxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, false, true); }
long sys_fgetxattr(Task& t, SyscallArgs a) { return fd_xattr(t, a, true); }
long sys_listxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, true, false); }
long sys_llistxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, false, false); }
long sys_flistxattr(Task& t, SyscallArgs a) { return fd_xattr(t, a, false); }
long sys_setxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, true, true); }
long sys_lsetxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, false, true); }
long sys_fsetxattr(Task& t, SyscallArgs a) { return fd_xattr(t, a, true); }

}  // namespace flatux
