// Confinement: every lookup is a single openat2(2) from the root folder with
// RESOLVE_IN_ROOT, so the host kernel itself clamps "..", absolute symlinks
// and symlink chains to the root, and RESOLVE_NO_MAGICLINKS keeps /proc's
// magic links (which point anywhere) from being followed.
#include "kernel/fs/hostfs/hostfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>

#include "host/entry.h"
#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/signal/signal.h"

namespace flatux {
namespace {

struct HostFs {
  Heap* heap;
  int root_fd;
  bool root_is_slash;
  size_t root_len;
  char root[kPathMax];
};

HostFs& hostfs_of(Filesystem& fs) { return *static_cast<HostFs*>(fs.priv); }

constexpr uint64_t kResolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
constexpr uint32_t kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
// open(2) ignores unknown flag bits, openat2(2) rejects them: keep the known ones.
constexpr uint32_t kKnownOpenFlags = O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |
                                     O_NONBLOCK | O_DSYNC | O_ASYNC | O_DIRECT | O_LARGEFILE |
                                     O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_SYNC |
                                     O_PATH | O_TMPFILE;

long host_open(HostFs& h, const char* path, uint64_t flags, uint64_t mode) {
  open_how how{};
  // openat2 takes only these with O_PATH, and ignores nothing.
  uint64_t keep = (flags & O_PATH) ? (O_PATH | O_DIRECTORY | O_NOFOLLOW) : (kKnownOpenFlags | O_NOCTTY);
  how.flags = (flags & keep) | O_CLOEXEC;
  how.mode = (flags & (O_CREAT | __O_TMPFILE)) ? (mode & 07777) : 0;
  how.resolve = kResolve;
  return host::sys(SYS_openat2, h.root_fd, path, &how, sizeof how);
}

// Pipes and terminals can block: a guest signal interrupts the host call,
// and the signal code then restarts it or reports EINTR (SA_RESTART).
long restartable(long r) { return r == -EINTR ? -ERESTARTSYS : r; }

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
long file_stat(Task&, File& f, struct stat* out) { return host::sys(SYS_fstat, f.host_fd, out); }
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
};

long fs_open(Task&, Filesystem& fs, const char* path, int flags, int mode, File** out) {
  if (fs.readonly && (flags & kWriteFlags)) return -EROFS;
  HostFs& h = hostfs_of(fs);
  long fd = host_open(h, path, (uint32_t)flags, (uint32_t)mode);
  if (fd < 0) return fd;
  File* f = file_alloc(h.heap, &kHostFileOps, (uint32_t)flags & ~O_CLOEXEC, (int)fd);
  if (!f) {
    host::sys(SYS_close, fd);
    return -ENOMEM;
  }
  f->fs = &fs;
  *out = f;
  return 0;
}

long fs_stat(Task&, Filesystem& fs, const char* path, bool follow, struct stat* out) {
  HostFs& h = hostfs_of(fs);
  if (h.root_is_slash)  // nothing to confine: one host call
    return host::sys(SYS_newfstatat, AT_FDCWD, path, out, follow ? 0 : AT_SYMLINK_NOFOLLOW);
  long fd = host_open(h, path, O_PATH | (follow ? 0 : O_NOFOLLOW), 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_fstat, fd, out);
  host::sys(SYS_close, fd);
  return r;
}

long fs_readlink(Task&, Filesystem& fs, const char* path, char* buf, size_t n) {
  HostFs& h = hostfs_of(fs);
  if (h.root_is_slash) return host::sys(SYS_readlinkat, AT_FDCWD, path, buf, n);
  long fd = host_open(h, path, O_PATH | O_NOFOLLOW, 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_readlinkat, fd, "", buf, n);
  host::sys(SYS_close, fd);
  return r;
}

long fs_access(Task&, Filesystem& fs, const char* path, int mode, bool follow) {
  HostFs& h = hostfs_of(fs);
  long fd = host_open(h, path, O_PATH | (follow ? 0 : O_NOFOLLOW), 0);
  if (fd < 0) return fd;
  long r = (fs.readonly && (mode & W_OK)) ? -EROFS
                                           : host::sys(SYS_faccessat2, fd, "", mode, AT_EMPTY_PATH);
  host::sys(SYS_close, fd);
  return r;
}

// The canonical host path of an open directory, made relative to the root.
long fs_dir_path(Task&, Filesystem& fs, File& f, char* out, size_t n) {
  HostFs& h = hostfs_of(fs);
  char proc[64];
  KFmt p(proc, sizeof proc);
  p.str("/proc/self/fd/").dec(f.host_fd);
  char host_path[kPathMax];
  long len = host::sys(SYS_readlinkat, AT_FDCWD, p.c_str(), host_path, sizeof host_path - 1);
  if (len < 0) return len;
  host_path[len] = 0;
  if (h.root_is_slash || host_path[0] != '/') return copy_cstr(out, n, host_path) ? 0 : -ENAMETOOLONG;
  std::string_view hp(host_path, (size_t)len);
  std::string_view root(h.root, h.root_len);
  if (!starts_with(hp, root) || (hp.size() > root.size() && hp[root.size()] != '/')) return -ENOENT;
  std::string_view rest = tail(hp, root.size());
  return copy_cstr(out, n, rest.empty() ? std::string_view("/") : rest) ? 0 : -ENAMETOOLONG;
}

long fs_statfs(Task&, Filesystem& fs, const char* path, struct statfs* out) {
  long fd = host_open(hostfs_of(fs), path, O_PATH, 0);
  if (fd < 0) return fd;
  long r = host::sys(SYS_fstatfs, fd, out);
  host::sys(SYS_close, fd);
  return r;
}

const FsOps kHostFsOps = {
    .name = "hostfs",
    .open = fs_open,
    .stat = fs_stat,
    .readlink = fs_readlink,
    .access = fs_access,
    .dir_path = fs_dir_path,
    .statfs = fs_statfs,
};

}  // namespace

long hostfs_create(Heap* heap, const char* host_root, bool readonly, Filesystem** out) {
  long fd = host::sys(SYS_open, host_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fd;
  HostFs* h = heap->make<HostFs>();
  Filesystem* fs = heap->make<Filesystem>();
  if (!h || !fs || !copy_cstr(h->root, sizeof h->root, host_root)) {
    heap->destroy_obj(h);
    heap->destroy_obj(fs);
    host::sys(SYS_close, fd);
    return -ENOMEM;
  }
  h->heap = heap;
  h->root_fd = (int)fd;
  h->root_len = strlen(h->root);
  while (h->root_len > 1 && h->root[h->root_len - 1] == '/') h->root[--h->root_len] = 0;
  h->root_is_slash = h->root_len == 1 && h->root[0] == '/';
  fs->ops = &kHostFsOps;
  fs->priv = h;
  fs->readonly = readonly;
  *out = fs;
  return 0;
}

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
