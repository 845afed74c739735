// Copying between files without a trip through the guest: sendfile,
// copy_file_range, splice, tee; and readahead.
//
// When both files are host descriptors the host does the copy. Otherwise
// the kernel copies through a bounce buffer mapped for the call outside the
// kernel heap, so each filesystem's read and write see an ordinary user
// buffer.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/memfd/memfd.h"
#include "kernel/kernel.h"
#include "kernel/net/net.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr size_t kBounce = 64 * 1024;
constexpr size_t kMaxCount = 0x7ffff000;  // Linux's MAX_RW_COUNT

bool readable(const File& f) { return (f.flags & O_ACCMODE) != O_WRONLY && !(f.flags & O_PATH); }
bool writable(const File& f) { return (f.flags & O_ACCMODE) != O_RDONLY && !(f.flags & O_PATH); }

// Reads `n` bytes from `in` (at *off when off is set) into a user buffer
// and writes them to `out` (at *out_off when set). Stops at EOF, a short
// write, or an error after progress.
long copy_through(Task& t, File& in, int64_t* off, File& out, int64_t* out_off, size_t count) {
  if (off ? !in.ops->pread : !in.ops->read) return -EINVAL;
  if (out_off ? !out.ops->pwrite : !out.ops->write) return -EINVAL;
  long map = host::sys(SYS_mmap, 0, kBounce, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map < 0) return -ENOMEM;
  char* buf = reinterpret_cast<char*>(map);
  KernelBuffers bounce_is_ours;
  size_t done = 0;
  long err = 0;
  while (done < count) {
    size_t want = count - done < kBounce ? count - done : kBounce;
    long got = off ? in.ops->pread(t, in, buf, want, *off) : in.ops->read(t, in, buf, want);
    if (got <= 0) {
      err = got;
      break;
    }
    long put = out_off ? out.ops->pwrite(t, out, buf, (size_t)got, *out_off)
                       : out.ops->write(t, out, buf, (size_t)got);
    if (put < 0) {
      err = put;
      // What was read but not written is lost unless we step back.
      if (!off && in.ops->lseek) in.ops->lseek(t, in, -got, SEEK_CUR);
      break;
    }
    if (off) *off += put;
    if (out_off) *out_off += put;
    done += (size_t)put;
    if (put < got) {
      if (!off && in.ops->lseek) in.ops->lseek(t, in, put - got, SEEK_CUR);
      break;
    }
  }
  host::sys(SYS_munmap, map, kBounce);
  return done ? (long)done : err;
}

// An optional guest loff_t: read it in, write it back when the call is done.
struct Offset {
  uint64_t guest;
  int64_t value = 0;
  explicit Offset(uint64_t g) : guest(g) {}
  bool present() const { return guest != 0; }
  long load() { return guest ? copy_from_user(&value, (const void*)guest, sizeof value) : 0; }
  long store() { return guest ? copy_to_user((void*)guest, &value, sizeof value) : 0; }
  int64_t* ptr() { return guest ? &value : nullptr; }
};

bool is_pipe(Task& t, File& f) {
  struct stat st;
  return f.ops->stat && f.ops->stat(t, f, &st) == 0 && S_ISFIFO(st.st_mode);
}

}  // namespace

long sys_sendfile(Task& t, SyscallArgs a) {
  FdRef out(t, a[0]), in(t, a[1]);
  if (!out || !in || !readable(*in) || !writable(*out)) return -EBADF;
  if (out->flags & O_APPEND) return -EINVAL;
  Offset off(a[2]);
  if (off.load() < 0) return -EFAULT;
  if (off.present() && off.value < 0) return -EINVAL;
  size_t count = a[3] < kMaxCount ? a[3] : kMaxCount;
  MemfdCopy room;
  long r = room.reserve(*out, &count);
  if (r < 0) return r;
  if (in->host_fd >= 0 && out->host_fd >= 0 && !sock_checks_writes(*out)) {
    r = restartable(isys(t, SYS_sendfile, out->host_fd, in->host_fd, off.ptr(), count));
  } else {
    r = copy_through(t, *in, off.ptr(), *out, nullptr, count);
  }
  if (r >= 0 && off.store() < 0) return -EFAULT;
  return r;
}

long sys_copy_file_range(Task& t, SyscallArgs a) {
  if (a[5]) return -EINVAL;
  FdRef in(t, a[0]), out(t, a[2]);
  if (!in || !out || !readable(*in) || !writable(*out)) return -EBADF;
  if (out->flags & O_APPEND) return -EBADF;
  struct stat si, so;
  if (!in->ops->stat || !out->ops->stat || in->ops->stat(t, *in, &si) < 0 || out->ops->stat(t, *out, &so) < 0)
    return -EINVAL;
  if (S_ISDIR(si.st_mode) || S_ISDIR(so.st_mode)) return -EISDIR;
  if (!S_ISREG(si.st_mode) || !S_ISREG(so.st_mode)) return -EINVAL;
  Offset off_in(a[1]), off_out(a[3]);
  if (off_in.load() < 0 || off_out.load() < 0) return -EFAULT;
  if ((off_in.present() && off_in.value < 0) || (off_out.present() && off_out.value < 0)) return -EINVAL;
  if (out->mount && out->mount->readonly()) return -EROFS;
  size_t count = a[4] < kMaxCount ? a[4] : kMaxCount;
  MemfdCopy room;
  long r = room.reserve(*out, &count);
  if (r < 0) return r;
  if (in->host_fd >= 0 && out->host_fd >= 0) {
    r = host::sys(SYS_copy_file_range, in->host_fd, off_in.ptr(), out->host_fd, off_out.ptr(), count, 0);
  } else {
    r = copy_through(t, *in, off_in.ptr(), *out, off_out.ptr(), count);
  }
  if (r >= 0 && (off_in.store() < 0 || off_out.store() < 0)) return -EFAULT;
  return r;
}

long sys_splice(Task& t, SyscallArgs a) {
  FdRef in(t, a[0]), out(t, a[2]);
  if (!in || !out || !readable(*in) || !writable(*out)) return -EBADF;
  bool in_pipe = is_pipe(t, *in), out_pipe = is_pipe(t, *out);
  if (!in_pipe && !out_pipe) return -EINVAL;
  if ((in_pipe && a[1]) || (out_pipe && a[3])) return -ESPIPE;
  Offset off_in(a[1]), off_out(a[3]);
  if (off_in.load() < 0 || off_out.load() < 0) return -EFAULT;
  size_t count = a[4] < kMaxCount ? a[4] : kMaxCount;
  MemfdCopy room;
  long r = room.reserve(*out, &count);
  if (r < 0) return r;
  if (in->host_fd >= 0 && out->host_fd >= 0 && !sock_checks_writes(*out)) {
    r = restartable(isys(t, SYS_splice, in->host_fd, off_in.ptr(), out->host_fd, off_out.ptr(), count, a[5]));
  } else {
    r = copy_through(t, *in, off_in.ptr(), *out, off_out.ptr(), count);
  }
  if (r >= 0 && (off_in.store() < 0 || off_out.store() < 0)) return -EFAULT;
  return r;
}

long sys_tee(Task& t, SyscallArgs a) {
  FdRef in(t, a[0]), out(t, a[1]);
  if (!in || !out || !readable(*in) || !writable(*out)) return -EBADF;
  if (!is_pipe(t, *in) || !is_pipe(t, *out) || &*in == &*out) return -EINVAL;
  if (in->host_fd < 0 || out->host_fd < 0) return -EINVAL;
  return restartable(isys(t, SYS_tee, in->host_fd, out->host_fd, a[2], a[3]));
}

long sys_readahead(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || !readable(*f)) return -EBADF;
  struct stat st;
  if (!f->ops->stat || f->ops->stat(t, *f, &st) < 0 || !S_ISREG(st.st_mode)) return -EINVAL;
  // A hint: the host may act on it; a kernel-kept file is in memory anyway.
  return f->host_fd >= 0 ? host::sys(SYS_readahead, f->host_fd, a[1], a[2]) : 0;
}

long sys_name_to_handle_at(Task&, SyscallArgs) { return -EOPNOTSUPP; }

}  // namespace flatux
