// Guests' extended attributes on hostfs files: the user.* namespace of the
// host file itself, through the descriptor the lookup returned. flatux's
// own records (user.flatux.*) are neither shown nor accepted.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/heap.h"
#include "kernel/lib/kstring.h"

namespace flatux {
namespace {

constexpr size_t kListMax = 65536;  // XATTR_LIST_MAX

bool reserved(const char* name) { return starts_with(name, kXattrReserved); }

// Copies the names of `raw` (n bytes of NUL-terminated names) a guest may
// see into out[cap] (cap 0: only counts). The size, or -ERANGE.
long filter_names(const char* raw, size_t n, char* out, size_t cap) {
  size_t used = 0;
  for (size_t i = 0; i < n;) {
    size_t len = strnlen(raw + i, n - i);
    std::string_view name(raw + i, len);
    if (starts_with(name, "user.") && !starts_with(name, kXattrReserved)) {
      if (cap) {
        if (used + len + 1 > cap) return -ERANGE;
        memcpy(out + used, name.data(), len);
        out[used + len] = 0;
      }
      used += len + 1;
    }
    i += len + 1;
  }
  return (long)used;
}

}  // namespace

long hostfs_fd_xattr(Heap* heap, int fd, XattrOp& op) {
  FdPath p(fd);
  if (op.kind != XattrOp::kList && !starts_with(op.name, "user.")) return -EOPNOTSUPP;
  if (op.kind != XattrOp::kList && reserved(op.name)) return op.kind == XattrOp::kSet ? -EPERM : -ENODATA;
  switch (op.kind) {
    case XattrOp::kGet: return host::sys(SYS_getxattr, p.s, op.name, op.value, op.size);
    case XattrOp::kSet: return host::sys(SYS_setxattr, p.s, op.name, op.value, op.size, op.flags);
    case XattrOp::kRemove: return host::sys(SYS_removexattr, p.s, op.name);
    case XattrOp::kList: break;
  }
  char* raw = static_cast<char*>(heap->alloc(kListMax));
  if (!raw) return -ENOMEM;
  long n = host::sys(SYS_listxattr, p.s, raw, kListMax);
  if (n >= 0) n = filter_names(raw, (size_t)n, static_cast<char*>(op.value), op.size);
  heap->free(raw);
  return n;
}

long hostfs_file_xattr(Task&, File& f, XattrOp& op) {
  if (f.host_fd < 0 || !hostfs_of_file(f)) return -EOPNOTSUPP;
  return hostfs_fd_xattr(f.heap, f.host_fd, op);
}

}  // namespace flatux
