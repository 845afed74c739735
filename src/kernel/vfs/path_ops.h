// Path-based operations on kernel strings, shared by the syscalls, the
// loader and filesystems that refer to other paths (procfs's exe link).
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

Vfs& vfs_of(Task& t);
struct WalkScope;
// With a scope: openat2's RESOLVE_* limits on the walk (namei.h).
long vfs_open(Task& t, int dirfd, const char* path, int flags, int mode, File** out,
              const WalkScope* scope = nullptr);
// Where a walk ended: the mount it reached the node through, and whether the
// node is that mount's root (statx's STATX_MNT_ID and STATX_ATTR_MOUNT_ROOT).
struct MountSpot {
  int mnt_id = 0;
  bool root = false;
};
// Opens the file `f` is open on anew, through the mount and path it was
// opened by (/proc/PID/fd/N opened: a new open file description with the
// new flags, checked as an open of that path).
long vfs_reopen(Task& t, File& f, int flags, File** out);
long vfs_stat(Task& t, int dirfd, const char* path, bool follow, struct stat* out,
              MountSpot* spot = nullptr);
long vfs_readlink(Task& t, int dirfd, const char* path, char* buf, size_t n);
// readlinkat(fd, ""): the symlink f was opened as (O_PATH | O_NOFOLLOW);
// -ENOENT when f is no symlink.
long vfs_readlink_file(Task& t, File& f, char* buf, size_t n);
long vfs_statfs(Task& t, int dirfd, const char* path, struct statfs* out);
long vfs_access(Task& t, int dirfd, const char* path, int mode, bool follow);
// Sets statfs's f_flags from the mount's flags (ST_RDONLY, ST_NOSUID...).
void statfs_mount_flags(const Mount& m, struct statfs* out);

// Creating, removing and renaming names (vfs/names.cpp).
long vfs_mkdir(Task& t, int dirfd, const char* path, int mode);
long vfs_mknod(Task& t, int dirfd, const char* path, int mode, uint64_t dev);
long vfs_unlink(Task& t, int dirfd, const char* path);
long vfs_rmdir(Task& t, int dirfd, const char* path);
long vfs_symlink(Task& t, const char* target, int dirfd, const char* path);
long vfs_link(Task& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath, bool follow);
long vfs_link_file(Task& t, File& f, int newdirfd, const char* newpath);
long vfs_rename(Task& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
                unsigned flags);

// Attribute changes with Linux's policy (who may chmod/chown/utime/truncate),
// on a path or an open file (vfs/attr.cpp).
long vfs_setattr(Task& t, int dirfd, const char* path, bool follow, Attr& a);
long vfs_fsetattr(Task& t, File& f, Attr& a);
// The guest path of the node a device file was opened through
// (File::node_attrs), into out (kPathMax); false when it has none or the
// node is gone.
bool device_node_path(Task& t, File& f, char* out);

}  // namespace flatux
