// The path walk: guest path -> (mount, path inside its filesystem), then
// the operation; a symlink the filesystem hands back as a redirect restarts
// the walk at its target, up to kMaxSymlinks times.
#pragma once
#include <linux/errno.h>

#include "kernel/kernel.h"
#include "kernel/vfs/perm.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

// The checks before a name is created at lk (names.cpp): EEXIST at a
// mount root, EROFS (or EEXIST) on a read-only mount, then the directory's
// write and search permission.
long vfs_may_create(Task& t, Lookup& lk);

// Where the walk goes on after lk's redirect: the guest path of the target.
long redirect_target(Task& t, const Mount& m, const Lookup& lk, char* out, size_t n);

// Resolves the first ".." in `cur` where its folder really is (after that
// folder's symlinks). 1 when cur changed, 0 when it holds no "..", or an
// error; symlinks followed count in *hops.
long step_dotdot(Task& t, char* cur, size_t n, int* hops);

// Runs op(Lookup&) on the filesystem holding (dirfd, path). `path` is a
// kernel string, non-empty.
template <typename Op>
long vfs_walk(Task& t, int dirfd, const char* path, bool follow, Op&& op) {
  Vfs& vfs = *t.kernel->vfs;
  char cur[kPathMax];
  long r = vfs.absolute(t, dirfd, path, cur, sizeof cur);
  if (r < 0) return r;
  for (int hops = 0;;) {
    r = step_dotdot(t, cur, sizeof cur, &hops);
    if (r < 0) return r;
    if (r > 0) continue;
    char inner[kPathMax];
    Mount* m = vfs.find(cur, inner, sizeof inner);
    if (!m) return -ENAMETOOLONG;
    Lookup lk(inner, follow, m);
    // Search permission on the way, where the filesystem leaves it to us.
    r = creds_of(t).fsuid != 0 && !m->fs->ops->walk_checks_search ? may_walk(t, lk) : 0;
    if (r == 0) r = op(lk);
    // A redirect not ours belongs to an enclosing walk (two-path calls).
    bool again = r == kRedirect && lk.redirected;
    if (again) r = ++hops > kMaxSymlinks ? -ELOOP : redirect_target(t, *m, lk, cur, sizeof cur);
    m->put();
    if (!again || r < 0) return r;
  }
}

}  // namespace flatux
