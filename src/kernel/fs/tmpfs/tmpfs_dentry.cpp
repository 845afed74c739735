// tmpfs inodes in the kernel's dentry cache: a dentry of tmpfs holds its
// TmpInode (with a reference, which pins the filesystem as an open file
// does), so an operation whose walk ends in a cached folder starts at that
// folder's inode instead of walking the inner path again, and the walk's
// search check reads the folder's bits from it.
#include <linux/errno.h>
#include <sys/stat.h>

#include "kernel/fs/tmpfs/tmpfs.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/task/task.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

struct TmpDentryInode : Inode {
  TmpInode* node = nullptr;
};

void release_dentry_inode(Inode* n) {
  auto* d = static_cast<TmpDentryInode*>(n);
  Heap* heap = d->node->fs->heap;
  tmpfs_release_inode(*d->node);  // may free the filesystem (unmounted, last pin)
  heap->destroy_obj(d);
}

}  // namespace

TmpInode* tmp_dentry_node(Tmpfs& fs, const Dentry& d) {
  if (d.flags & Dentry::kRoot) return fs.root;
  if (d.inode && d.inode->release == release_dentry_inode) return static_cast<TmpDentryInode*>(d.inode)->node;
  return nullptr;
}

FilePerms tmp_dir_perms(Tmpfs& fs, const Dentry& d) {
  // chmod and chown write these under fs.lock; a walk reads them without
  // it (a check racing a change sees the old bits or the new).
  if (TmpInode* n = tmp_dentry_node(fs, d))
    return {__atomic_load_n(&n->mode, __ATOMIC_RELAXED), __atomic_load_n(&n->uid, __ATOMIC_RELAXED),
            __atomic_load_n(&n->gid, __ATOMIC_RELAXED)};
  return perms_of(*d.inode);
}

long tmp_lookup(Task&, Tmpfs& fs, Filesystem& owner, Dentry& dir, std::string_view name, Inode** out) {
  Guard g(fs.lock);
  TmpInode* d = tmp_dentry_node(fs, dir);
  if (!d || (!d->dentry && d != fs.root)) return -ENOENT;  // not ours, or removed
  if (!S_ISDIR(d->mode)) return -ENOTDIR;
  if (name.size() > (size_t)kTmpNameMax) return -ENAMETOOLONG;
  TmpDirent* e = tmp_find(fs, d, name.data(), name.size());
  if (!e) return -ENOENT;
  auto* n = fs.heap->make<TmpDentryInode>();
  if (!n) return -ENOMEM;
  n->fs = &owner;
  n->release = release_dentry_inode;
  n->ino = e->inode->ino;
  n->mode = e->inode->mode;
  n->uid = e->inode->uid;
  n->gid = e->inode->gid;
  n->node = e->inode;
  tmp_get(e->inode);
  *out = n;
  return 0;
}

}  // namespace flatux
