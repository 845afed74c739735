#include <fcntl.h>
#include <linux/errno.h>
#include <sys/uio.h>

#include "kernel/mm/usercopy.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/kernel.h"
#include "kernel/vfs/fsnotify.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr int kIovMax = 1024;
constexpr size_t kMaxRw = 0x7ffff000;  // Linux's MAX_RW_COUNT

// Writing to a pipe or socket nobody reads: SIGPIPE to the writing thread.
long check_epipe_of(Task& t, long r) {
  if (r == -EPIPE) send_signal(*t.proc, &t, SIGPIPE, user_siginfo(t, SIGPIPE, SI_USER), sent_by(*t.proc));
  return r;
}

bool readable(const File& f) { return !(f.flags & O_PATH) && (f.flags & O_ACCMODE) != O_WRONLY; }
bool writable(const File& f) { return !(f.flags & O_PATH) && (f.flags & O_ACCMODE) != O_RDONLY; }
size_t clamp(uint64_t n) { return n > kMaxRw ? kMaxRw : n; }

// The guest's iovec array copied in and checked as Linux's import_iovec
// does: at most 1024 entries, no negative length (EINVAL), the total cut
// to MAX_RW_COUNT; the transfer ends where the caller's memory does (EFAULT
// if that is the first buffer's start).
class Iovecs {
 public:
  explicit Iovecs(Heap* heap) : heap_(heap) {}
  ~Iovecs() {
    if (v != small_) heap_->free(v);
  }
  long load(uint64_t ptr, uint64_t cnt) {
    if (cnt > kIovMax) return -EINVAL;
    if (cnt > sizeof small_ / sizeof small_[0]) {
      v = static_cast<iovec*>(heap_->alloc(sizeof(iovec) * cnt));
      if (!v) return -ENOMEM;
    }
    if (cnt && copy_from_user(v, (const void*)ptr, sizeof(iovec) * cnt) < 0) return -EFAULT;
    size_t total = 0;
    for (uint64_t i = 0; i < cnt; i++) {
      if ((int64_t)v[i].iov_len < 0) return -EINVAL;
      if (v[i].iov_len > kMaxRw - total) v[i].iov_len = kMaxRw - total;
      total += v[i].iov_len;
    }
    size_t kept = cnt;
    if (long r = fit_iovecs(v, &kept); r < 0) return r;
    n = (int)kept;
    return 0;
  }
  iovec* v = small_;
  int n = 0;

 private:
  Heap* heap_;
  iovec small_[8];
};

constexpr int kRwfHipri = 0x1, kRwfKnown = 0x1f;  // RWF_HIPRI .. RWF_APPEND (Linux 6.1)

// Moves the data of `iov` with the file's vectored op, or else one buffer
// at a time (at off and onwards when off >= 0), stopping at the first
// short transfer as Linux does.
long vectored(Task& t, File& f, const Iovecs& iov, int64_t off, int flags, bool write) {
  if (auto op = write ? f.ops->writev : f.ops->readv) return op(t, f, iov.v, iov.n, off, flags);
  if (flags & ~kRwfHipri) return -EOPNOTSUPP;
  long total = 0;
  for (int i = 0; i < iov.n; i++) {
    void* b = iov.v[i].iov_base;
    size_t n = iov.v[i].iov_len;
    if (n == 0) continue;
    long r = off >= 0 ? (write ? f.ops->pwrite(t, f, b, n, off + total) : f.ops->pread(t, f, b, n, off + total))
                      : (write ? f.ops->write(t, f, b, n) : f.ops->read(t, f, b, n));
    if (r < 0) return total ? total : r;
    total += r;
    if ((size_t)r < n) break;
  }
  return total;
}

// readv, writev and their positioned forms; off < 0: the file position.
// Data moved through f: watchers hear of it (dnotify, inotify).
long data_event(Task& t, File& f, long r, bool write) {
  if (r > 0) notify_data(t, f, write);
  return r;
}

long do_vectored(Task& t, uint64_t fd, uint64_t iov_ptr, uint64_t cnt, int64_t off, int flags, bool write) {
  FdRef f(t, fd);
  if (!f || !(write ? writable(*f) : readable(*f))) return -EBADF;
  bool positioned = write ? f->ops->pwrite != nullptr : f->ops->pread != nullptr;
  bool streamed = write ? f->ops->write != nullptr : f->ops->read != nullptr;
  if (off >= 0 && !positioned) return -ESPIPE;
  if (off < 0 && !streamed) return -EINVAL;
  Iovecs iov(t.kernel->heap);
  if (long r = iov.load(iov_ptr, cnt); r < 0) return r;
  long r = vectored(t, *f, iov, off, flags, write);
  return data_event(t, *f, write ? check_epipe_of(t, r) : r, write);
}

}  // namespace

long sys_read(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !readable(*f)) return -EBADF;
  if (!f->ops->read) return -EINVAL;
  return data_event(t, *f, f->ops->read(t, *f, (void*)a[1], user_buffer_len((void*)a[1], clamp(a[2]))), false);
}

long sys_write(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !writable(*f)) return -EBADF;
  if (!f->ops->write) return -EINVAL;
  return data_event(t, *f, check_epipe_of(t, f->ops->write(t, *f, (const void*)a[1], user_buffer_len((void*)a[1], clamp(a[2])))), true);
}

long sys_pread64(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !readable(*f)) return -EBADF;
  if ((int64_t)a[3] < 0) return -EINVAL;
  if (!f->ops->pread) return -ESPIPE;
  return data_event(t, *f, f->ops->pread(t, *f, (void*)a[1], user_buffer_len((void*)a[1], clamp(a[2])), (int64_t)a[3]), false);
}

long sys_pwrite64(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !writable(*f)) return -EBADF;
  if ((int64_t)a[3] < 0) return -EINVAL;
  if (!f->ops->pwrite) return -ESPIPE;
  return data_event(t, *f, f->ops->pwrite(t, *f, (const void*)a[1], user_buffer_len((void*)a[1], clamp(a[2])), (int64_t)a[3]), true);
}

long sys_readv(Task& t, SyscallArgs a) { return do_vectored(t, a[0], a[1], a[2], -1, 0, false); }
long sys_writev(Task& t, SyscallArgs a) { return do_vectored(t, a[0], a[1], a[2], -1, 0, true); }

// preadv/pwritev(fd, iov, cnt, pos_l, pos_h): on x86_64 pos_l is the offset.
long sys_preadv(Task& t, SyscallArgs a) {
  if ((int64_t)a[3] < 0) return -EINVAL;
  return do_vectored(t, a[0], a[1], a[2], (int64_t)a[3], 0, false);
}
long sys_pwritev(Task& t, SyscallArgs a) {
  if ((int64_t)a[3] < 0) return -EINVAL;
  return do_vectored(t, a[0], a[1], a[2], (int64_t)a[3], 0, true);
}

// The *v2 forms: offset -1 is the file position; RWF_* flags unknown to
// Linux 6.1 are EOPNOTSUPP, the others are the file's to honour (a host
// file: the host's preadv2/pwritev2).
long sys_preadv2(Task& t, SyscallArgs a) {
  if (a[5] & ~(uint64_t)kRwfKnown) return -EOPNOTSUPP;
  if ((int64_t)a[3] < -1) return -EINVAL;
  return do_vectored(t, a[0], a[1], a[2], (int64_t)a[3], (int)a[5], false);
}
long sys_pwritev2(Task& t, SyscallArgs a) {
  if (a[5] & ~(uint64_t)kRwfKnown) return -EOPNOTSUPP;
  if ((int64_t)a[3] < -1) return -EINVAL;
  return do_vectored(t, a[0], a[1], a[2], (int64_t)a[3], (int)a[5], true);
}

long sys_lseek(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  if (!f->ops->lseek) return -ESPIPE;
  return f->ops->lseek(t, *f, (int64_t)a[1], (int)a[2]);
}

}  // namespace flatux
