// Extended attributes: getxattr, setxattr, listxattr, removexattr and their
// l (no following) and f (descriptor) forms. The VFS checks what Linux's
// xattr_permission checks, copies names and values through kernel memory,
// and the filesystem (FsOps::xattr, FileOps::xattr) does the rest; one
// without them answers EOPNOTSUPP, as Linux's filesystems without xattrs.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/patharg.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

constexpr size_t kNameMax = 255;      // XATTR_NAME_MAX
constexpr size_t kSizeMax = 65536;    // XATTR_SIZE_MAX, XATTR_LIST_MAX

// A request with its name and value in kernel memory.
struct Request {
  XattrOp op;
  char name[kNameMax + 1];
  void* buf = nullptr;  // kernel copy of the value (heap)
  Heap* heap;
  explicit Request(Heap* h) : heap(h) {}
  ~Request() { heap->free(buf); }
};

long copy_name(uint64_t guest, Request& rq) {
  long r = strncpy_from_user(rq.name, (const char*)guest, sizeof rq.name);
  if (r == -ENAMETOOLONG || r == 0) return -ERANGE;
  if (r < 0) return r;
  rq.op.name = rq.name;
  return 0;
}

// Names, value and flags from the guest; the buffer a get or list fills.
long prepare(Request& rq, XattrOp::Kind kind, uint64_t name, uint64_t value, uint64_t size, uint64_t flags) {
  rq.op.kind = kind;
  if (kind != XattrOp::kList) {
    long r = copy_name(name, rq);
    if (r < 0) return r;
  }
  if (kind == XattrOp::kSet) {
    if (flags & ~(uint64_t)(XATTR_CREATE | XATTR_REPLACE)) return -EINVAL;
    if (size > kSizeMax) return -E2BIG;
    rq.op.flags = (int)flags;
  }
  if (kind == XattrOp::kRemove) return 0;
  size_t n = size > kSizeMax ? kSizeMax : (size_t)size;
  if (n) {
    rq.buf = rq.heap->alloc(n);
    if (!rq.buf) return -ENOMEM;
    if (kind == XattrOp::kSet && copy_from_user(rq.buf, (const void*)value, n) < 0) return -EFAULT;
  }
  rq.op.value = rq.buf;
  rq.op.size = n;
  return 0;
}

// The syscall's arguments after the path or descriptor: (name, value,
// size, flags) for get and set, (list, size) for list, (name) for remove.
long prepare_args(Request& rq, XattrOp::Kind kind, SyscallArgs a, uint64_t* value) {
  bool list = kind == XattrOp::kList;
  *value = list ? a[1] : a[2];
  return prepare(rq, kind, a[1], *value, list ? a[2] : a[3], a[4]);
}

// A get or list hands its result back to the guest.
long finish(Request& rq, long r, uint64_t value) {
  if (r <= 0 || (rq.op.kind != XattrOp::kGet && rq.op.kind != XattrOp::kList) || !rq.op.size) return r;
  return copy_to_user((void*)value, rq.buf, (size_t)r) < 0 ? -EFAULT : r;
}

bool known_namespace(const char* name) {
  return starts_with(name, "user.") || starts_with(name, "trusted.") || starts_with(name, "security.") ||
         starts_with(name, "system.");
}

// Linux's xattr_permission for the file `st`, on a mount read-only or not.
long permitted(Task& t, const struct stat& st, bool readonly, const XattrOp& op) {
  bool write = op.kind == XattrOp::kSet || op.kind == XattrOp::kRemove;
  if (write && readonly) return -EROFS;
  if (op.kind == XattrOp::kList) return 0;
  if (!known_namespace(op.name)) return -EOPNOTSUPP;
  const Creds& c = t.proc->creds;
  if (starts_with(op.name, "trusted.") && !capable(c, CAP_SYS_ADMIN)) return write ? -EPERM : -ENODATA;
  if (write && starts_with(op.name, "security.")) {
    // Linux's cap_inode_setxattr and cap_convert_nscap: file capabilities
    // need CAP_SETFCAP and a well-formed value; other security labels
    // CAP_SYS_ADMIN.
    if (!strcmp(op.name, "security.capability")) {
      if (op.kind == XattrOp::kSet)
        if (long r = check_file_caps_value(op.value, op.size)) return r;
      return capable(c, CAP_SETFCAP) ? 0 : -EPERM;
    }
    return capable(c, CAP_SYS_ADMIN) ? 0 : -EPERM;
  }
  if (starts_with(op.name, "user.")) {
    // Only regular files and folders carry user attributes; in a sticky
    // folder only its owner may change them.
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return write ? -EPERM : -ENODATA;
    if (write && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && !owner_or_root(t, st.st_uid)) return -EPERM;
  }
  if (starts_with(op.name, "security.") || starts_with(op.name, "system.")) return 0;
  return may_access(t, st, write ? W_OK : R_OK);
}

long path_xattr(Task& t, SyscallArgs a, bool follow, XattrOp::Kind kind) {
  PathArg path(a[0]);
  if (!path.ok()) return path.err;
  Request rq(t.kernel->heap);
  uint64_t value;
  long r = prepare_args(rq, kind, a, &value);
  if (r < 0) return r;
  r = vfs_walk(t, AT_FDCWD, path.buf, follow, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    struct stat st;
    long s = fs.ops->stat(t, fs, lk, &st);
    if (s < 0) return s;
    XattrOp op = rq.op;  // a redirect starts again from the request
    s = permitted(t, st, lk.mount->readonly(), op);
    if (s < 0) return s;
    return fs.ops->xattr ? fs.ops->xattr(t, fs, lk, op) : -EOPNOTSUPP;
  });
  return finish(rq, r, value);
}

long fd_xattr(Task& t, SyscallArgs a, XattrOp::Kind kind) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  Request rq(t.kernel->heap);
  uint64_t value;
  long r = prepare_args(rq, kind, a, &value);
  if (r < 0) return r;
  struct stat st;
  if (!f->ops->stat || (r = f->ops->stat(t, *f, &st)) < 0) return r < 0 ? r : -EOPNOTSUPP;
  r = permitted(t, st, f->mount && f->mount->readonly(), rq.op);
  if (r < 0) return r;
  r = f->ops->xattr ? f->ops->xattr(t, *f, rq.op) : -EOPNOTSUPP;
  return finish(rq, r, value);
}

}  // namespace

long sys_getxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, true, XattrOp::kGet); }
long sys_lgetxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, false, XattrOp::kGet); }
long sys_fgetxattr(Task& t, SyscallArgs a) { return fd_xattr(t, a, XattrOp::kGet); }
long sys_listxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, true, XattrOp::kList); }
long sys_llistxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, false, XattrOp::kList); }
long sys_flistxattr(Task& t, SyscallArgs a) { return fd_xattr(t, a, XattrOp::kList); }
long sys_setxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, true, XattrOp::kSet); }
long sys_lsetxattr(Task& t, SyscallArgs a) { return path_xattr(t, a, false, XattrOp::kSet); }
long sys_fsetxattr(Task& t, SyscallArgs a) { return fd_xattr(t, a, XattrOp::kSet); }
long sys_removexattr(Task& t, SyscallArgs a) { return path_xattr(t, a, true, XattrOp::kRemove); }
long sys_lremovexattr(Task& t, SyscallArgs a) { return path_xattr(t, a, false, XattrOp::kRemove); }
long sys_fremovexattr(Task& t, SyscallArgs a) { return fd_xattr(t, a, XattrOp::kRemove); }

}  // namespace flatux
