// Open hostfs files: a host descriptor each; every call is one host call.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/fs/memfd/memfd.h"
#include "kernel/lib/kfmt.h"
#include "kernel/signal/signal.h"

namespace flatux {
namespace {

constexpr long kPipeFsMagic = 0x50495045, kSockFsMagic = 0x534F434B;

// A pipe, a socket or a memfd: an object of the host's that no folder
// names, so its owner and mode reach no file of the host's.
bool host_object_is_anonymous(int fd, const struct stat& st) {
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
    struct statfs sf;
    if (host::sys(SYS_fstatfs, fd, &sf) < 0) return false;
    return sf.f_type == (S_ISFIFO(st.st_mode) ? kPipeFsMagic : kSockFsMagic);
  }
  if (!S_ISREG(st.st_mode) || st.st_nlink != 0 || host::sys(SYS_fcntl, fd, F_GET_SEALS) < 0) return false;
  // An unlinked tmpfs file answers the same; a memfd's link says so.
  char link[32], target[16];
  KFmt lf(link, sizeof link);
  lf.str("/proc/self/fd/").dec(fd);
  long n = host::sys(SYS_readlinkat, AT_FDCWD, lf.c_str(), target, sizeof target);
  return n >= 7 && memcmp(target, "/memfd:", 7) == 0;
}

long file_read(Task& t, File& f, void* buf, size_t n) {
  if (!access_ok(buf, n)) return -EFAULT;
  return restartable(isys(t, SYS_read, f.host_fd, buf, n));
}
long file_write(Task& t, File& f, const void* buf, size_t n) {
  if (!access_ok(buf, n)) return -EFAULT;
  return restartable(isys(t, SYS_write, f.host_fd, buf, n));
}
long file_pread(Task&, File& f, void* buf, size_t n, int64_t off) {
  if (!access_ok(buf, n)) return -EFAULT;
  return host::sys(SYS_pread64, f.host_fd, buf, n, off);
}
long file_pwrite(Task&, File& f, const void* buf, size_t n, int64_t off) {
  if (!access_ok(buf, n)) return -EFAULT;
  return host::sys(SYS_pwrite64, f.host_fd, buf, n, off);
}
long file_lseek(Task&, File& f, int64_t off, int whence) {
  return host::sys(SYS_lseek, f.host_fd, off, whence);
}
long file_stat(Task&, File& f, struct stat* out) {
  long r = host::sys(SYS_fstat, f.host_fd, out);
  HostFs* h = hostfs_of_file(f);
  if (r < 0 || !h) return r;  // a pipe, a socket, a stdio stream: the host's view
  GuestNode g;
  guest_view(*h, f.host_fd, *out, &g);
  *out = g.st;
  return 0;
}
long file_getdents64(Task&, File& f, void* buf, size_t n) {
  if (!access_ok(buf, n)) return -EFAULT;
  return host::sys(SYS_getdents64, f.host_fd, buf, n);
}

// Terminal ioctls are forwarded with their argument bounced through kernel
// memory: the host must never be handed a raw guest pointer it could write
// through into kernel memory.
long file_ioctl(Task&, File& f, unsigned cmd, uint64_t arg) {
  unsigned char buf[64];
  size_t in = 0, out = 0;
  switch (cmd) {
    case TCGETS: out = 36; break;                                  // struct termios (kernel)
    case TCSETS: case TCSETSW: case TCSETSF: in = 36; break;
    case TIOCGWINSZ: out = 8; break;
    case TIOCSWINSZ: in = 8; break;
    case FIONREAD: out = sizeof(int); break;
    default: return -ENOTTY;
  }
  if (in && copy_from_user(buf, (const void*)arg, in) < 0) return -EFAULT;
  long r = host::sys(SYS_ioctl, f.host_fd, cmd, buf);
  if (r < 0) return r;
  if (out && copy_to_user((void*)arg, buf, out) < 0) return -EFAULT;
  return r;
}

long file_statfs(Task&, File& f, struct statfs* out) { return host::sys(SYS_fstatfs, f.host_fd, out); }

long file_setattr(Task&, File& f, const Attr& a) {
  long r = 0;
  // A host device node is the host's, whatever way it was opened: its
  // owner, mode and times are not the guest's to change.
  HostFs* hfs = hostfs_of_file(f);
  if ((a.mask & (kAttrUid | kAttrGid | kAttrMode | kAttrAtime | kAttrMtime)) && !(hfs && hfs->host_owners)) {
    struct stat st;
    if (host::sys(SYS_fstat, f.host_fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) return -EPERM;
  }
  if (a.mask & (kAttrUid | kAttrGid | kAttrMode)) {
    struct stat host;
    r = host::sys(SYS_fstat, f.host_fd, &host);
    if (r < 0) return r;
    if (HostFs* h = hostfs_of_file(f)) {
      GuestNode g;
      guest_view(*h, f.host_fd, host, &g);
      r = set_guest_owner_mode(*h, f.host_fd, host, g, a);
      // A folder's cached inode reads its new mode and owner at the next walk.
      if (HostInode* n = f.dentry ? hostfs_inode(f.dentry->inode) : nullptr)
        n->checked_at.store(0, std::memory_order_relaxed);
    } else {  // a pipe, a socket, a memfd, a stream handed over from the host
      // Only an object no host folder names may change: a stdio stream,
      // a descriptor a host peer passed in, a host device (devfs's null
      // and kin) or a guest's file passed through SCM_RIGHTS is a host
      // file whose owner and mode are not the guest's to set.
      if (!host_object_is_anonymous(f.host_fd, host)) return -EPERM;
      if (a.mask & (kAttrUid | kAttrGid))
        r = host::sys(SYS_fchown, f.host_fd, (a.mask & kAttrUid) ? a.uid : -1u, (a.mask & kAttrGid) ? a.gid : -1u);
      if (r == 0 && (a.mask & kAttrMode)) r = host::sys(SYS_fchmod, f.host_fd, a.mode & 0777);
    }
  }
  if (r == 0 && (a.mask & kAttrSize)) r = host::sys(SYS_ftruncate, f.host_fd, a.size);
  if (r == 0 && (a.mask & (kAttrAtime | kAttrMtime))) {
    timespec ts[2] = {a.atime, a.mtime};
    if (!(a.mask & kAttrAtime)) ts[0].tv_nsec = UTIME_OMIT;
    if (!(a.mask & kAttrMtime)) ts[1].tv_nsec = UTIME_OMIT;
    r = host::sys(SYS_utimensat, f.host_fd, nullptr, ts, 0);
  }
  return r;
}

long file_fsync(Task&, File& f, bool datasync) {
  return host::sys(datasync ? SYS_fdatasync : SYS_fsync, f.host_fd);
}

long file_fallocate(Task&, File& f, int mode, int64_t off, int64_t len) {
  return host::sys(SYS_fallocate, f.host_fd, mode, off, len);
}

// preadv/pwritev take the offset as (low, high) halves; on x86_64 the low
// word holds all of it. RWF_* flags go to the host's preadv2/pwritev2.
long file_readv(Task& t, File& f, const iovec* iov, int cnt, int64_t off, int flags) {
  if (flags) return restartable(isys(t, SYS_preadv2, f.host_fd, iov, cnt, off, 0, flags));
  if (off >= 0) return host::sys(SYS_preadv, f.host_fd, iov, cnt, off, 0);
  return restartable(isys(t, SYS_readv, f.host_fd, iov, cnt));
}
long file_writev(Task& t, File& f, const iovec* iov, int cnt, int64_t off, int flags) {
  if (flags) return restartable(isys(t, SYS_pwritev2, f.host_fd, iov, cnt, off, 0, flags));
  if (off >= 0) return host::sys(SYS_pwritev, f.host_fd, iov, cnt, off, 0);
  return restartable(isys(t, SYS_writev, f.host_fd, iov, cnt));
}

}  // namespace

const FileOps kHostFileOps = {
    .read = file_read,
    .write = file_write,
    .pread = file_pread,
    .pwrite = file_pwrite,
    .lseek = file_lseek,
    .stat = file_stat,
    .getdents64 = file_getdents64,
    .ioctl = file_ioctl,
    .statfs = file_statfs,
    .release = nullptr,
    .poll = nullptr,
    .setattr = file_setattr,
    .fsync = file_fsync,
    .fallocate = file_fallocate,
    .readv = file_readv,
    .writev = file_writev,
    .xattr = hostfs_file_xattr,
};

// A memfd's: its growth is charged to mem= (fs/memfd).
const FileOps kMemfdFileOps = {
    .read = file_read,
    .write = memfd_write,
    .pread = file_pread,
    .pwrite = memfd_pwrite,
    .lseek = file_lseek,
    .stat = file_stat,
    .getdents64 = file_getdents64,
    .ioctl = file_ioctl,
    .statfs = file_statfs,
    .release = nullptr,
    .poll = nullptr,
    .setattr = memfd_setattr,
    .fsync = file_fsync,
    .fallocate = memfd_fallocate,
    .readv = file_readv,
    .writev = memfd_writev,
    .xattr = hostfs_file_xattr,
};

File* hostfs_adopt_host_fd(Heap* heap, int host_fd, uint32_t flags) {
  File* f = file_alloc(heap, &kHostFileOps, flags, host_fd);
  if (!f) host::sys(SYS_close, host_fd);
  return f;
}

File* hostfs_wrap_host_fd(Heap* heap, int host_fd, uint32_t flags) {
  long fd = host::sys(SYS_fcntl, host_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  return hostfs_adopt_host_fd(heap, (int)fd, flags);
}

}  // namespace flatux
