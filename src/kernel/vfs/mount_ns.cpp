// Mount namespaces (mount_ns.h): the copy of a namespace's mounts, the
// teardown with its last process, and a process's membership.
#include "kernel/vfs/mount_ns.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/errno.h>

#include "kernel/kernel.h"
#include "kernel/task/caps.h"
#include "kernel/task/process.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"

namespace flatux {

MountNs* Vfs::copy_ns(MountNs& from, Mount** old_of, Mount** new_of, int* n, long* err) {
  MountNs* ns = heap_->make<MountNs>();
  if (!ns) {
    *err = -ENOMEM;
    return nullptr;
  }
  Guard g(lock_);
  if (nns_ == kMaxNamespaces) {
    heap_->destroy_obj(ns);
    *err = -ENOSPC;
    return nullptr;
  }
  ns->id = next_ns_id_++;
  nss_[nns_++] = ns;
  op_++;
  // Table order has parents first: each copy lands on its parent's copy.
  int k = 0, count = nmounts_;
  long e = 0;
  for (int i = 0; i < count && e == 0; i++) {
    Mount* x = mounts_[i];
    if (x->ns != &from) continue;
    Mount* parent = nullptr;
    for (int j = 0; j < k && x->parent && !parent; j++)
      if (old_of[j] == x->parent) parent = new_of[j];
    if (x->parent && !parent) continue;  // (never: its parent came first)
    Mount* c = clone_mount(*x, x->path, x->root, &e);
    if (!c) break;
    c->unbindable = x->unbindable;
    c->ns = ns;
    if ((e = attach_locked(c, parent)) < 0) {
      discard(c, e);
      break;
    }
    // The same mount point: the dentry its original stands on.
    if (Dentry* d = parent ? x->point.load(std::memory_order_relaxed) : nullptr) {
      c->pin_tried = true;
      to_pin_.fetch_sub(1, std::memory_order_relaxed);
      pin_locked(c, parent, c->place_seq.load(std::memory_order_relaxed), dget(d), x->stacked);
    }
    old_of[k] = x;
    new_of[k++] = c;
  }
  if (e < 0) {
    rollback_locked();
    nns_--;  // it was the last one added, and nothing used it
    update_walk_hints_locked();
    heap_->destroy_obj(ns);
    *err = e;
    return nullptr;
  }
  *n = k;
  return ns;
}

void Vfs::put_ns(MountNs* ns) {
  if (ns->refs.fetch_sub(1, std::memory_order_acq_rel) != 1 || ns == &init_ns_) return;
  Mount* victims[kMaxMounts];
  int n = 0;
  {
    Guard g(lock_);
    // Children before their parents; nothing propagates (Linux's
    // umount_tree of a dying namespace).
    for (int i = nmounts_ - 1; i >= 0; i--)
      if (mounts_[i]->ns == ns) victims[n++] = mounts_[i];
    for (int i = 0; i < n; i++) remove_locked(victims[i]);
    for (int i = 0; i < nns_; i++)
      if (nss_[i] == ns) {
        nss_[i] = nss_[--nns_];
        break;
      }
    update_walk_hints_locked();
  }
  for (int i = 0; i < n; i++) dput(victims[i]->point.exchange(nullptr));
  for (int i = 0; i < n; i++) victims[i]->put();
  heap_->destroy_obj(ns);
}

MountNs& mnt_ns_of(const Process& p) { return p.mnt_ns ? *p.mnt_ns : p.kernel->vfs->init_ns(); }

MountNs& mnt_ns_of(Task& t) { return t.proc ? mnt_ns_of(*t.proc) : t.kernel->vfs->init_ns(); }

void mnt_ns_inherit(Process& child, const Process& parent) {
  if ((child.mnt_ns = parent.mnt_ns)) child.mnt_ns->refs.fetch_add(1, std::memory_order_relaxed);
}

void mnt_ns_leave(Process& p) {
  MountNs* ns = p.mnt_ns;
  p.mnt_ns = nullptr;
  if (ns) p.kernel->vfs->put_ns(ns);
}

namespace {

// p's mount, or its copy in the new namespace (the reference moves).
void follow_copy(Path& p, Mount* const* old_of, Mount* const* new_of, int n) {
  for (int i = 0; i < n && p.mnt; i++) {
    if (p.mnt != old_of[i]) continue;
    new_of[i]->get();
    p.mnt->put();
    p.mnt = new_of[i];
    return;
  }
}

}  // namespace

namespace {

long unshare_into(Process& p, FsContext& fs, bool tasks_lock_held) {
  if (!capable(p.creds, CAP_SYS_ADMIN)) return -EPERM;
  Vfs& vfs = *p.kernel->vfs;
  Heap* heap = p.kernel->heap;
  // Off the kernel stack: two pointers per mount.
  auto** old_of = static_cast<Mount**>(heap->alloc(2 * Vfs::kMaxMounts * sizeof(Mount*)));
  if (!old_of) return -ENOMEM;
  Mount** new_of = old_of + Vfs::kMaxMounts;
  int n = 0;
  long err = 0;
  MountNs* ns = vfs.copy_ns(mnt_ns_of(p), old_of, new_of, &n, &err);
  File* files[2] = {};
  if (ns) {
    Guard g(fs.lock);
    follow_copy(fs.cwd, old_of, new_of, n);
    follow_copy(fs.root, old_of, new_of, n);
    // The descriptions chdir and chroot opened (for a folder removed
    // later) hold the old namespace's mounts, and may be shared with
    // another FsContext: let them go; the paths above still name both.
    files[0] = fs.cwd_file;
    files[1] = fs.root_file;
    fs.cwd_file = fs.root_file = nullptr;
  }
  for (File* f : files)
    if (f) f->put();
  heap->free(old_of);
  if (!ns) return err;
  // /proc/PID/ns/mnt takes its reference under tasks_lock.
  if (!tasks_lock_held) p.kernel->tasks_lock.lock();
  MountNs* old_ns = p.mnt_ns;
  p.mnt_ns = ns;
  if (!tasks_lock_held) p.kernel->tasks_lock.unlock();
  if (old_ns) vfs.put_ns(old_ns);  // not its last reference, under tasks_lock
  return 0;
}

}  // namespace

long mnt_ns_unshare(Process& p, FsContext& fs) { return unshare_into(p, fs, false); }
long mnt_ns_unshare_locked(Process& p, FsContext& fs) { return unshare_into(p, fs, true); }

long mnt_ns_enter(Task& t, MountNs* ns) {
  Process& p = *t.proc;
  Kernel& k = *p.kernel;
  if (!capable(p.creds, CAP_SYS_ADMIN)) return -EPERM;
  if (p.fs->refs.load() > 1 || p.nthreads > 1) return -EINVAL;
  ns->refs.fetch_add(1, std::memory_order_relaxed);
  MountNs* old_ns;
  {
    Guard g(k.tasks_lock);
    old_ns = p.mnt_ns;
    p.mnt_ns = ns;
  }
  if (old_ns) k.vfs->put_ns(old_ns);
  // Its root is the namespace's; its working folder that root, found anew
  // (the old ones are the old namespace's mounts). fs_set_cwd lets the old
  // working folder go.
  FsContext& fc = *p.fs;
  Path old_root;
  File* old_root_file;
  {
    Guard g(fc.lock);
    old_root = fc.root;
    old_root_file = fc.root_file;
    fc.root = {};
    fc.has_root.store(false);
    fc.root_file = nullptr;
  }
  path_put(old_root);
  if (old_root_file) old_root_file->put();
  File* dir = nullptr;
  // No "/" to stand on cannot happen while the namespace has its root; the
  // old folder is kept then rather than none.
  if (vfs_open(t, AT_FDCWD, "/", O_PATH | O_DIRECTORY, 0, &dir) < 0) return 0;
  auto root = path_of_file(t, *dir);
  if (root.is_error()) {
    dir->put();
    return 0;
  }
  fs_set_cwd(t, root.release_value(), dir);
  return 0;
}

}  // namespace flatux
