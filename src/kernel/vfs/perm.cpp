#include "kernel/vfs/perm.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <unistd.h>

#include "kernel/lib/kstring.h"
#include "kernel/task/task.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

bool in_group(Task& t, uint32_t gid) {
  const Creds& c = creds_of(t);
  if (c.fsgid == gid) return true;
  for (int i = 0; i < c.ngroups; i++)
    if (c.groups[i] == gid) return true;
  return false;
}

bool owner_or_root(Task& t, uint32_t uid) {
  const Creds& c = creds_of(t);
  return c.fsuid == 0 || c.fsuid == uid;
}

long may_access(Task& t, const struct stat& st, int mask) {
  const Creds& c = creds_of(t);
  mask &= R_OK | W_OK | X_OK;
  if (c.fsuid == 0) {
    // Root reads and writes anything, and executes what anyone may
    // execute; directories are always searchable.
    if (!(mask & X_OK) || S_ISDIR(st.st_mode) || (st.st_mode & 0111)) return 0;
    return -EACCES;
  }
  unsigned bits;
  if (c.fsuid == st.st_uid) bits = (st.st_mode >> 6) & 7;
  else if (in_group(t, st.st_gid)) bits = (st.st_mode >> 3) & 7;
  else bits = st.st_mode & 7;
  return ((unsigned)mask & ~bits) ? -EACCES : 0;
}

long may_open(Task& t, const struct stat& st, int flags) {
  if (flags & O_PATH) return 0;
  int acc = flags & O_ACCMODE;
  int mask = acc == O_RDONLY ? R_OK : acc == O_WRONLY ? W_OK : R_OK | W_OK;
  if (flags & O_TRUNC) mask |= W_OK;
  if (long r = may_access(t, st, mask)) return r;
  if ((flags & O_NOATIME) && !owner_or_root(t, st.st_uid)) return -EPERM;
  return 0;
}

long may_walk(Task& t, Lookup& lk) {
  if (creds_of(t).fsuid == 0) return 0;
  Filesystem& fs = *lk.mount->fs;
  std::string_view path(lk.path);
  // Every '/' that has a component after it ends a directory to search.
  for (size_t slash = path.find('/'); slash != std::string_view::npos && slash + 1 < path.size();
       slash = path.find('/', slash + 1)) {
    char dir[kPathMax];
    if (!copy_cstr(dir, sizeof dir, slash == 0 ? std::string_view("/") : head(path, slash))) return 0;
    Lookup plk(dir, true, lk.mount);
    struct stat st;
    if (fs.ops->stat(t, fs, plk, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    if (may_access(t, st, X_OK) < 0) return -EACCES;
  }
  return 0;
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
    if (fs.ops->stat(t, fs, plk, &ds) == 0 && (ds.st_mode & S_ISGID)) gid = ds.st_gid;
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
