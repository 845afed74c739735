#include "kernel/vfs/perm.h"

#include <cstring>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/errno.h>
#include <unistd.h>

#include "kernel/lib/kstring.h"
#include "kernel/task/task.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

bool in_group(const Creds& c, uint32_t gid) {
  if (c.fsgid == gid) return true;
  for (int i = 0; i < c.ngroups; i++)
    if (c.groups[i] == gid) return true;
  return false;
}

bool owner_or_root(const Creds& c, uint32_t uid) { return c.fsuid == uid || capable(c, CAP_FOWNER); }

long permission(const Creds& c, FilePerms f, int mask) {
  mask &= R_OK | W_OK | X_OK;
  unsigned bits;
  if (c.fsuid == f.uid) bits = (f.mode >> 6) & 7;
  else if (in_group(c, f.gid)) bits = (f.mode >> 3) & 7;
  else bits = f.mode & 7;
  if (!((unsigned)mask & ~bits)) return 0;
  // The capabilities that override the bits: reading a file and reading
  // or searching a directory (CAP_DAC_READ_SEARCH); anything on a
  // directory, and on a file all but executing one nobody may execute
  // (CAP_DAC_OVERRIDE).
  if (S_ISDIR(f.mode)) {
    if (!(mask & W_OK) && capable(c, CAP_DAC_READ_SEARCH)) return 0;
    return capable(c, CAP_DAC_OVERRIDE) ? 0 : -EACCES;
  }
  if (mask == R_OK && capable(c, CAP_DAC_READ_SEARCH)) return 0;
  if ((!(mask & X_OK) || (f.mode & 0111)) && capable(c, CAP_DAC_OVERRIDE)) return 0;
  return -EACCES;
}

long may_lookup(const Creds& c, FilePerms dir) { return permission(c, dir, X_OK); }

long may_create(const Creds& c, FilePerms dir) { return permission(c, dir, W_OK | X_OK); }

bool sticky_blocks(const Creds& c, FilePerms dir, FilePerms victim) {
  return (dir.mode & S_ISVTX) && c.fsuid != victim.uid && c.fsuid != dir.uid && !capable(c, CAP_FOWNER);
}

long may_delete(const Creds& c, FilePerms dir, FilePerms victim) {
  if (long r = permission(c, dir, W_OK | X_OK)) return r;
  return sticky_blocks(c, dir, victim) ? -EPERM : 0;
}

long may_rename(const Creds& c, FilePerms old_dir, FilePerms source, FilePerms new_dir, const FilePerms* target,
                bool same_dir, unsigned flags) {
  if (long r = may_delete(c, old_dir, source)) return r;
  if (long r = target ? may_delete(c, new_dir, *target) : may_create(c, new_dir)) return r;
  if (same_dir) return 0;
  if (S_ISDIR(source.mode))
    if (long r = permission(c, source, W_OK)) return r;
  if ((flags & RENAME_EXCHANGE) && target && S_ISDIR(target->mode)) return permission(c, *target, W_OK);
  return 0;
}

long may_open(const Creds& c, FilePerms f, int flags) {
  if (flags & O_PATH) return 0;
  int acc = flags & O_ACCMODE;
  int mask = acc == O_RDONLY ? R_OK : acc == O_WRONLY ? W_OK : R_OK | W_OK;
  if (flags & O_TRUNC) mask |= W_OK;
  if (S_ISDIR(f.mode) && ((mask & W_OK) || (flags & O_CREAT))) return -EISDIR;
  if (long r = permission(c, f, mask)) return r;
  if ((flags & O_NOATIME) && !owner_or_root(c, f.uid)) return -EPERM;
  return 0;
}

long may_link(const Creds& c, FilePerms f) {
  if (owner_or_root(c, f.uid)) return 0;
  bool setgid_exec = (f.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP);
  if (!S_ISREG(f.mode) || (f.mode & S_ISUID) || setgid_exec || permission(c, f, R_OK | W_OK)) return -EPERM;
  return 0;
}

FilePerms init_owner(const Creds& c, FilePerms dir, uint32_t mode) {
  FilePerms n{mode, c.fsuid, c.fsgid};
  if (dir.mode & S_ISGID) {
    n.gid = dir.gid;
    if (S_ISDIR(mode)) n.mode |= S_ISGID;
    else if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && !capable(c, CAP_FSETID) && !in_group(c, dir.gid))
      n.mode &= ~S_ISGID;
  }
  return n;
}

void claim_new_node(Task& t, Lookup& lk, File* f, const struct stat& st, bool lk_is_parent) {
  const Creds& c = creds_of(t);
  if (st.st_uid == c.fsuid && st.st_gid == c.fsgid) return;
  Filesystem& fs = *lk.mount->fs;
  // The group: a set-group-ID directory's, else the caller's fsgid.
  uint32_t gid = c.fsgid;
  std::string_view parent(lk.path), name;
  if (!lk_is_parent) split_last(lk.path, &parent, &name);
  char dir[kPathMax];
  if (copy_cstr(dir, sizeof dir, parent)) {
    Lookup plk(dir, true, lk.mount);
    struct stat ds;
    if (fs.ops->stat(t, fs, plk, &ds) == 0) gid = init_owner(c, perms_of(ds), st.st_mode).gid;
  }
  if (st.st_uid == c.fsuid && st.st_gid == gid) return;
  Lookup own(lk.path, false, lk.mount);
  auto set = [&](const Attr& a) -> long {
    if (f && f->ops->setattr) return f->ops->setattr(t, *f, a);
    return fs.ops->setattr ? fs.ops->setattr(t, fs, own, a) : -EPERM;
  };
  Attr a;
  a.mask = kAttrUid | kAttrGid;
  a.uid = c.fsuid;
  a.gid = gid;
  if (set(a) < 0) return;  // the host refused: its owner stays
  // A change of owner clears set-user-ID and set-group-ID bits the caller
  // asked for: they go back.
  if (!S_ISLNK(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID))) {
    Attr m;
    m.mask = kAttrMode;
    m.mode = st.st_mode & 07777;
    set(m);
  }
}

}  // namespace flatux
