// devpts: /dev/pts, the slave side of every pseudo-terminal (pts/N while
// its master is open) and pts/ptmx, which makes new ones (kernel/tty/pty.h).
// Every mount shows the kernel's one set of ptys.
#pragma once
#include "kernel/vfs/vfs.h"

namespace flatux {

extern const FsType kDevPtsType;  // mount(2) type "devpts"

long devpts_create(Heap* heap, Filesystem** out);

}  // namespace flatux
