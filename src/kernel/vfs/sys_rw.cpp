#include <fcntl.h>
#include <linux/errno.h>
#include <sys/uio.h>

#include "host/usercopy.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr int kIovMax = 1024;
constexpr size_t kMaxRw = 0x7ffff000;  // Linux's MAX_RW_COUNT

bool readable(const File& f) { return !(f.flags & O_PATH) && (f.flags & O_ACCMODE) != O_WRONLY; }
bool writable(const File& f) { return !(f.flags & O_PATH) && (f.flags & O_ACCMODE) != O_RDONLY; }
size_t clamp(uint64_t n) { return n > kMaxRw ? kMaxRw : n; }

// Applies `one` to each iovec in turn, stopping at the first short transfer
// (as Linux does for files, pipes and terminals alike).
template <typename Op>
long for_each_iov(uint64_t iov_ptr, uint64_t cnt, Op one) {
  if (cnt > kIovMax) return -EINVAL;
  long total = 0;
  for (uint64_t i = 0; i < cnt; i++) {
    iovec v;
    if (copy_from_user(&v, (const iovec*)iov_ptr + i, sizeof v) < 0) return total ? total : -EFAULT;
    if ((int64_t)v.iov_len < 0) return -EINVAL;
    if (v.iov_len == 0) continue;
    long r = one(v.iov_base, clamp(v.iov_len));
    if (r < 0) return total ? total : r;
    total += r;
    if ((size_t)r < v.iov_len) break;
  }
  return total;
}

// Writing to a pipe or socket nobody reads: SIGPIPE to the writing thread.
long check_epipe(Task& t, long r) {
  if (r == -EPIPE) send_signal(*t.proc, &t, SIGPIPE, user_siginfo(t, SIGPIPE, SI_USER));
  return r;
}

}  // namespace

long sys_read(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !readable(*f)) return -EBADF;
  if (!f->ops->read) return -EINVAL;
  return f->ops->read(t, *f, (void*)a[1], clamp(a[2]));
}

long sys_write(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !writable(*f)) return -EBADF;
  if (!f->ops->write) return -EINVAL;
  return check_epipe(t, f->ops->write(t, *f, (const void*)a[1], clamp(a[2])));
}

long sys_pread64(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !readable(*f)) return -EBADF;
  if ((int64_t)a[3] < 0) return -EINVAL;
  if (!f->ops->pread) return -ESPIPE;
  return f->ops->pread(t, *f, (void*)a[1], clamp(a[2]), (int64_t)a[3]);
}

long sys_pwrite64(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !writable(*f)) return -EBADF;
  if ((int64_t)a[3] < 0) return -EINVAL;
  if (!f->ops->pwrite) return -ESPIPE;
  return f->ops->pwrite(t, *f, (const void*)a[1], clamp(a[2]), (int64_t)a[3]);
}

long sys_readv(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !readable(*f)) return -EBADF;
  if (!f->ops->read) return -EINVAL;
  return for_each_iov(a[1], a[2], [&](void* b, size_t n) { return f->ops->read(t, *f, b, n); });
}

long sys_writev(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !writable(*f)) return -EBADF;
  if (!f->ops->write) return -EINVAL;
  return check_epipe(t, for_each_iov(a[1], a[2], [&](void* b, size_t n) { return f->ops->write(t, *f, b, n); }));
}

long sys_lseek(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  if (!f->ops->lseek) return -ESPIPE;
  return f->ops->lseek(t, *f, (int64_t)a[1], (int)a[2]);
}

}  // namespace flatux
