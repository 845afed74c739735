// The block device a mount source names (Linux's lookup_bdev): a path to
// a block device node, walked in the caller's namespace, whose number
// picks the device; before there is a caller with a namespace (boot), or
// for a /dev that lacks the node (the host's own /dev), the device's name.
#include <fcntl.h>
#include <sys/stat.h>

#include "host/kstack.h"
#include "kernel/vfs/new_fs.h"
#include "kernel/vfs/namei.h"

namespace flatux {

long lookup_bdev(Kernel& k, const char* source, BlockDevice** out) {
  if (!source || !*source) return -ENOENT;
  KStackHeader* h = current_kstack_checked();
  Task* t = h ? h->task : nullptr;
  long r = -ENOENT;
  if (t && t->proc && t->proc->fs && t->proc->files) {
    struct stat st;
    r = vfs_walk(*t, AT_FDCWD, source, true, [&](Lookup& lk) -> long {
      Filesystem& fs = *lk.mount->fs;
      return fs.ops->stat(*t, fs, lk, &st);
    });
    if (r == 0) {
      if (!S_ISBLK(st.st_mode)) return -ENOTBLK;
      BlockDevice* d = block_get(k, st.st_rdev);
      if (!d) return -ENXIO;
      *out = d;
      return 0;
    }
    if (r != -ENOENT) return r;
  }
  BlockDevice* d = block_get_named(k, source);
  if (!d) return r;
  *out = d;
  return 0;
}

}  // namespace flatux
