// hostfs: a host folder as a guest filesystem, confined to that folder.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

// mount(2) type "hostfs": the data string names the host folder.
extern const FsType kHostFsType;

// Opens `host_root` (a canonical host path the launcher gave) and returns a
// filesystem for it.
long hostfs_create(Kernel& k, const char* host_root, Filesystem** out);

// Mounts host_path (canonical; a folder or a file the launcher granted) at
// guest_path, with the per-mount flags among `flags` (MS_RDONLY makes the
// filesystem read-only too).
long hostfs_mount_host_path(Kernel& k, const char* host_path, const char* guest_path, unsigned long flags);

// fgetxattr and kin on an open hostfs file (the user.* namespace; xattr.cpp).
long hostfs_file_xattr(Task& t, File& f, XattrOp& op);

// The object at lk (its last component followed as lk says) as a host
// O_PATH descriptor, which the caller closes: what a host inotify watch is
// put on. -EXDEV when fs is no hostfs; kRedirect for a symlink on the way.
long hostfs_open_object(Filesystem& fs, Lookup& lk);

// A File over a duplicate of an existing host descriptor (stdin/out/err).
File* hostfs_wrap_host_fd(Heap* heap, int host_fd, uint32_t flags);
// A File that takes ownership of `host_fd` (closed with the File).
File* hostfs_adopt_host_fd(Heap* heap, int host_fd, uint32_t flags);

}  // namespace flatux
