// Host paths the launcher grants besides the root (an OCI bundle's bind
// mounts), mounted before the first guest instruction.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/namei.h"

namespace flatux {

long hostfs_mount_host_path(Kernel& k, const char* host_path, const char* guest_path, unsigned long flags) {
  struct stat st;
  if (long r = host::sys(SYS_stat, host_path, &st); r < 0) return r;
  // A file is the one file shown of a hostfs over its folder: the mount's
  // root is the file itself, as Linux's bind mount of a file.
  char dir[kPathMax];
  char fs_root[kPathMax] = "/";
  if (!copy_cstr(dir, sizeof dir, host_path)) return -ENAMETOOLONG;
  if (!S_ISDIR(st.st_mode)) {
    char* slash = strrchr(dir, '/');
    if (!slash || !slash[1]) return -EINVAL;
    if (!copy_cstr(fs_root + 1, sizeof fs_root - 1, slash + 1)) return -ENAMETOOLONG;
    if (slash == dir) slash[1] = 0;
    else *slash = 0;
  }
  Filesystem* fs = nullptr;
  if (long r = hostfs_create(k, dir, &fs); r < 0) return r;
  fs->readonly = flags & MS_RDONLY;
  long r = k.vfs->mount(guest_path, fs, &kHostFsType, flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC), host_path, fs_root);
  if (r < 0 && fs->mounts.load() == 0) {
    fs_drop_dentries(*fs);
    kHostFsType.unmount(*fs);
  }
  return r;
}

}  // namespace flatux
