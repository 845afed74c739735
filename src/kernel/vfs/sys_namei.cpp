// mkdir, mknod, unlink, rmdir, symlink, link, rename and their *at forms.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>

#include "kernel/mm/usercopy.h"
#include "kernel/syscalls.h"
#include "kernel/task/task.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/patharg.h"

namespace flatux {
namespace {

long do_mkdir(Task& t, int dirfd, uint64_t path, uint64_t mode) {
  PathArg p(path);
  if (!p.ok()) return p.err;
  return vfs_mkdir(t, dirfd, p.buf, (int)(mode & ~(uint64_t)t.proc->fs->umask & 07777));
}

long do_mknod(Task& t, int dirfd, uint64_t path, uint64_t mode, uint64_t dev) {
  PathArg p(path);
  if (!p.ok()) return p.err;
  uint32_t m = (uint32_t)mode;
  m = (m & S_IFMT) | (m & ~t.proc->fs->umask & 07777);
  return vfs_mknod(t, dirfd, p.buf, (int)m, dev);
}

long do_symlink(Task& t, uint64_t target, int dirfd, uint64_t path) {
  PathArg tg(target), p(path);
  if (!tg.ok()) return tg.err;
  if (!p.ok()) return p.err;
  return vfs_symlink(t, tg.buf, dirfd, p.buf);
}

long do_link(Task& t, int olddirfd, uint64_t oldpath, int newdirfd, uint64_t newpath, uint64_t flags) {
  if (flags & ~(uint64_t)(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return -EINVAL;
  PathArg o(oldpath), n(newpath);
  if (!o.ok() && !(o.err == -ENOENT && (flags & AT_EMPTY_PATH))) return o.err;
  if (!n.ok()) return n.err;
  if (!o.ok()) {
    // linkat(fd, "", ...): link the open file itself (O_TMPFILE's way in).
    if (olddirfd == AT_FDCWD) return vfs_link(t, AT_FDCWD, ".", newdirfd, n.buf, false);
    File* f = t.proc->files->get(olddirfd);
    if (!f) return -EBADF;
    long r = vfs_link_file(t, *f, newdirfd, n.buf);
    f->put();
    return r;
  }
  return vfs_link(t, olddirfd, o.buf, newdirfd, n.buf, flags & AT_SYMLINK_FOLLOW);
}

long do_rename(Task& t, int olddirfd, uint64_t oldpath, int newdirfd, uint64_t newpath, uint64_t flags) {
  PathArg o(oldpath), n(newpath);
  if (!o.ok()) return o.err;
  if (!n.ok()) return n.err;
  return vfs_rename(t, olddirfd, o.buf, newdirfd, n.buf, (unsigned)flags);
}

long do_unlinkat(Task& t, int dirfd, uint64_t path, uint64_t flags) {
  if (flags & ~(uint64_t)AT_REMOVEDIR) return -EINVAL;
  PathArg p(path);
  if (!p.ok()) return p.err;
  return (flags & AT_REMOVEDIR) ? vfs_rmdir(t, dirfd, p.buf) : vfs_unlink(t, dirfd, p.buf);
}

}  // namespace

long sys_mkdir(Task& t, SyscallArgs a) { return do_mkdir(t, AT_FDCWD, a[0], a[1]); }
long sys_mkdirat(Task& t, SyscallArgs a) { return do_mkdir(t, (int)a[0], a[1], a[2]); }
long sys_mknod(Task& t, SyscallArgs a) { return do_mknod(t, AT_FDCWD, a[0], a[1], a[2]); }
long sys_mknodat(Task& t, SyscallArgs a) { return do_mknod(t, (int)a[0], a[1], a[2], a[3]); }
long sys_unlink(Task& t, SyscallArgs a) { return do_unlinkat(t, AT_FDCWD, a[0], 0); }
long sys_unlinkat(Task& t, SyscallArgs a) { return do_unlinkat(t, (int)a[0], a[1], a[2]); }
long sys_rmdir(Task& t, SyscallArgs a) { return do_unlinkat(t, AT_FDCWD, a[0], AT_REMOVEDIR); }
long sys_symlink(Task& t, SyscallArgs a) { return do_symlink(t, a[0], AT_FDCWD, a[1]); }
long sys_symlinkat(Task& t, SyscallArgs a) { return do_symlink(t, a[0], (int)a[1], a[2]); }
long sys_link(Task& t, SyscallArgs a) { return do_link(t, AT_FDCWD, a[0], AT_FDCWD, a[1], 0); }
long sys_linkat(Task& t, SyscallArgs a) { return do_link(t, (int)a[0], a[1], (int)a[2], a[3], a[4]); }
long sys_rename(Task& t, SyscallArgs a) { return do_rename(t, AT_FDCWD, a[0], AT_FDCWD, a[1], 0); }
long sys_renameat(Task& t, SyscallArgs a) { return do_rename(t, (int)a[0], a[1], (int)a[2], a[3], 0); }
long sys_renameat2(Task& t, SyscallArgs a) { return do_rename(t, (int)a[0], a[1], (int)a[2], a[3], a[4]); }

}  // namespace flatux
