// chmod, chown, utimens and truncate: Linux's policy on who may change
// what (setattr_prepare), then the filesystem applies the change.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/vfs/fsnotify.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/lease.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

// `by_fd`: a truncate through a descriptor opened for writing needs no
// write permission (the open was the check).
long check_setattr(Task& t, const struct stat& st, Attr& a, bool by_fd) {
  const Creds& c = t.proc->creds;
  if (a.mask & kAttrSize) {
    if (S_ISDIR(st.st_mode)) return -EISDIR;
    if (!S_ISREG(st.st_mode)) return -EINVAL;
  }
  if (a.mask & (kAttrUid | kAttrGid)) {
    bool uid_change = (a.mask & kAttrUid) && a.uid != st.st_uid;
    bool gid_change = (a.mask & kAttrGid) && a.gid != st.st_gid;
    if (!capable(c, CAP_CHOWN) && (uid_change || (gid_change && (c.fsuid != st.st_uid || !in_group(t, a.gid)))))
      return -EPERM;
    // A new owner must not inherit the old one's set-id rights.
    if (!S_ISDIR(st.st_mode) && !(a.mask & kAttrMode)) {
      uint32_t mode = st.st_mode & 07777;
      uint32_t cleared = mode & ~(uint32_t)S_ISUID;
      if (mode & S_IXGRP) cleared &= ~(uint32_t)S_ISGID;
      if (cleared != mode) {
        a.mask |= kAttrMode;
        a.mode = cleared;
      }
    }
  }
  if (a.mask & kAttrMode) {
    if (!owner_or_root(t, st.st_uid)) return -EPERM;
    uint32_t gid = (a.mask & kAttrGid) ? a.gid : st.st_gid;
    if (!capable(c, CAP_FSETID) && !in_group(t, gid)) a.mode &= ~(uint32_t)S_ISGID;
    a.mode &= 07777;
  }
  if (a.mask & (kAttrAtime | kAttrMtime)) {
    if (a.mask & kAttrTimesNow) {
      if (!owner_or_root(t, st.st_uid) && may_access(t, st, W_OK) < 0) return -EACCES;
    } else if (!owner_or_root(t, st.st_uid)) {
      return -EPERM;
    }
  }
  if ((a.mask & kAttrSize) && !by_fd && may_access(t, st, W_OK) < 0) return -EACCES;
  a.mask &= ~(unsigned)kAttrTimesNow;
  return 0;
}

}  // namespace

long vfs_setattr(Task& t, int dirfd, const char* path, bool follow, Attr& a) {
  return vfs_walk(t, dirfd, path, follow, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    struct stat st;
    long r = fs.ops->stat(t, fs, lk, &st);
    if (r < 0) return r;
    if (lk.mount->readonly()) return -EROFS;
    Attr mine = a;  // a redirect must start again from the caller's request
    r = check_setattr(t, st, mine, false);
    if (r < 0) return r;
    if (!mine.mask) return 0;
    // truncate(2) breaks leases, as a write open would.
    if ((mine.mask & kAttrSize) && (r = t.kernel->leases->break_for(t, st.st_dev, st.st_ino, O_WRONLY)) < 0)
      return r;
    r = fs.ops->setattr ? fs.ops->setattr(t, fs, lk, mine) : -EPERM;
    return notify_attr(t, lk, r, mine.mask & kAttrSize);
  });
}

bool device_node_path(Task& t, File& f, char* out) {
  bool deleted = false;
  return f.node_attrs && f.mount && f.path && vfs_of(t).file_guest_path(t, f, out, kPathMax, &deleted) >= 0 &&
         !deleted;
}

long vfs_fsetattr(Task& t, File& f, Attr& a) {
  char node[kPathMax];
  if (device_node_path(t, f, node)) return vfs_setattr(t, AT_FDCWD, node, false, a);
  struct stat st;
  if (!f.ops->stat || f.ops->stat(t, f, &st) < 0) return -EBADF;
  if (f.mount && f.mount->readonly() && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) return -EROFS;
  long r = check_setattr(t, st, a, true);
  if (r < 0) return r;
  if (!a.mask) return 0;
  r = f.ops->setattr ? f.ops->setattr(t, f, a) : -EPERM;
  if (r == 0) notify_file_attr(t, f, a.mask & kAttrSize);
  return r;
}

}  // namespace flatux
