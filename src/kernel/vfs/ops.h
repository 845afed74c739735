// Path-based operations on kernel strings, shared by the syscalls, the
// loader and filesystems that refer to other paths (procfs's exe link).
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

Vfs& vfs_of(Task& t);
long vfs_open(Task& t, int dirfd, const char* path, int flags, int mode, File** out);
long vfs_stat(Task& t, int dirfd, const char* path, bool follow, struct stat* out);
long vfs_readlink(Task& t, int dirfd, const char* path, char* buf, size_t n);
long vfs_statfs(Task& t, int dirfd, const char* path, struct statfs* out);
long vfs_access(Task& t, int dirfd, const char* path, int mode, bool follow);

}  // namespace flatux
