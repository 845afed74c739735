#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/inode.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"

namespace flatux {
namespace {

// Makes `dir` (an open directory) the cwd: the directory itself, which
// keeps being the cwd whatever it is renamed to.
// `own`: dir is the caller's O_PATH open, kept as the cwd's file.
// The Path of dir as a cwd: the root's own when dir is the file chroot
// opened (vfs_open hands it out for a removed root, whose old path no
// longer finds it).
ErrorOr<Path> cwd_path_of(Task& t, File& dir) {
  FsContext& fc = *t.proc->fs;
  {
    Guard g(fc.lock);
    if (&dir == fc.root_file && fc.root) return path_get(fc.root);
  }
  return path_of_file(t, dir);
}

long set_cwd_from(Task& t, File& dir, bool own) {
  struct stat st;
  if (!dir.ops->stat || dir.ops->stat(t, dir, &st) < 0) return -ENOTDIR;
  if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
  TRY(p, cwd_path_of(t, dir));
  if (own) dir.get();
  fs_set_cwd(t, p, own ? &dir : nullptr);
  return 0;
}

}  // namespace

long fs_chdir_path(Task& t, const char* path) {
  File* dir = nullptr;
  long r = vfs_open(t, AT_FDCWD, path, O_PATH | O_DIRECTORY, 0, &dir);
  if (r < 0) return r;
  r = set_cwd_from(t, *dir, true);
  dir->put();
  return r;
}

long sys_getdents64(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f || (f->flags & O_PATH)) return -EBADF;
  if (!f->ops->getdents64) return -ENOTDIR;
  // A removed folder lists nothing: ENOENT, as Linux's IS_DEADDIR.
  if (f->dentry && f->dentry->inode && f->dentry->inode->dead.load(std::memory_order_acquire)) return -ENOENT;
  return f->ops->getdents64(t, *f, (void*)a[1], a[2]);
}

long sys_getcwd(Task& t, SyscallArgs a) {
  TRY(p, fs_cwd(t));
  char path[kPathMax];
  bool deleted = false;
  long r = guest_path_of(p, path, sizeof path, &deleted);
  path_put(p);
  if (r < 0) return r;
  if (deleted) return -ENOENT;  // as Linux: the cwd was removed
  // Seen from inside the process's root (chroot); a cwd outside it is
  // "(unreachable)" followed by its path, as Linux shows it.
  char root[kPathMax];
  bool root_removed = false;  // a cwd outside it is still unreachable from it
  if ((r = fs_root_path(t, root, sizeof root, &root_removed)) < 0) return r;
  std::string_view cwd = strip_root(root, path);
  std::string_view prefix = strlen(root) > 1 && cwd.data() == path ? "(unreachable)" : "";
  size_t len = prefix.size() + cwd.size() + 1;
  if (a[1] < len) return -ERANGE;
  if (copy_to_user((void*)a[0], prefix.data(), prefix.size()) < 0 ||
      copy_to_user((char*)a[0] + prefix.size(), cwd.data(), cwd.size()) < 0 ||
      copy_to_user((char*)a[0] + prefix.size() + cwd.size(), "", 1) < 0)
    return -EFAULT;
  return (long)len;
}

long sys_chdir(Task& t, SyscallArgs a) {
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)a[0], sizeof path);
  if (r < 0) return r;
  if (r == 0) return -ENOENT;
  File* dir = nullptr;
  r = vfs_open(t, AT_FDCWD, path, O_PATH | O_DIRECTORY, 0, &dir);
  if (r < 0) return r;
  r = set_cwd_from(t, *dir, true);
  dir->put();
  return r;
}

long sys_fchdir(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  return set_cwd_from(t, *f, false);
}

}  // namespace flatux
