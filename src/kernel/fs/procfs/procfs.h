// procfs, first cut: /proc/self and /proc/PID/exe, the links programs use
// to find themselves. The rest of /proc is ENOENT until procfs grows.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kProcFsType;  // mount(2) type "proc"

long procfs_create(Heap* heap, Filesystem** out);

// The pid of a /proc/PID directory opened as `f`, or 0 for any other file
// (pidfd_send_signal accepts such a directory as a pidfd).
int procfs_dir_pid(const File& f);

}  // namespace flatux
