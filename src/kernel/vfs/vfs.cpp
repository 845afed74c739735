#include "kernel/vfs/vfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"

namespace flatux {

long normalize_path(const char* in, char* out, size_t n, bool resolve_dotdot) {
  if (in[0] != '/' || n < 2) return -ENOENT;
  size_t len = 0;
  out[len++] = '/';
  const char* p = in;
  while (*p) {
    while (*p == '/') p++;
    const char* s = p;
    while (*p && *p != '/') p++;
    size_t cl = p - s;
    if (cl == 0 || (cl == 1 && s[0] == '.')) continue;
    if (cl == 2 && s[0] == '.' && s[1] == '.' && resolve_dotdot) {
      while (len > 1 && out[len - 1] != '/') len--;  // drop the last component
      if (len > 1) len--;                             // and its separator
      continue;
    }
    if (len > 1) {
      if (len + 1 >= n) return -ENAMETOOLONG;
      out[len++] = '/';
    }
    if (len + cl >= n) return -ENAMETOOLONG;
    memcpy(out + len, s, cl);
    len += cl;
  }
  out[len] = 0;
  return (long)len;
}

void split_last(std::string_view p, std::string_view* parent, std::string_view* name) {
  size_t slash = p.rfind('/');
  if (slash == std::string_view::npos || p.size() <= 1) {
    *parent = "/";
    *name = std::string_view();
    return;
  }
  *parent = slash == 0 ? std::string_view("/") : head(p, slash);
  *name = tail(p, slash + 1);
}

long vfs_make_redirect(Lookup& lk, std::string_view link_path, std::string_view target,
                       std::string_view rest) {
  KFmt out(lk.redirect, sizeof lk.redirect);
  lk.redirect_absolute = !target.empty() && target[0] == '/';
  if (!lk.redirect_absolute) {
    std::string_view dir, name;
    split_last(link_path, &dir, &name);
    out.str(dir).str("/");
  }
  out.str(target);
  if (!rest.empty()) out.str("/").str(rest);
  if (out.truncated()) return -ENAMETOOLONG;
  out.c_str();
  lk.redirected = true;
  return kRedirect;
}

// --- filesystem types -------------------------------------------------------

long Vfs::register_type(const FsType* type) {
  Guard g(lock_);
  for (int i = 0; i < ntypes_; i++)
    if (types_[i] == type) return 0;
  if (ntypes_ == kMaxFsTypes) return -ENOMEM;
  types_[ntypes_++] = type;
  return 0;
}

const FsType* Vfs::find_type(std::string_view name) {
  Guard g(lock_);
  for (int i = 0; i < ntypes_; i++)
    if (name == types_[i]->name) return types_[i];
  return nullptr;
}

// --- mounts ----------------------------------------------------------------

bool Mount::readonly() const { return (flags & MS_RDONLY) || fs->readonly; }

void Mount::put() {
  if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // The last reference of a detached mount: nothing can reach it any more.
  // Its filesystem goes when no other mount shows it.
  if (fs->mounts.fetch_sub(1, std::memory_order_acq_rel) == 1 && type && type->unmount)
    type->unmount(*fs);
  heap->destroy_obj(this);
}

long Vfs::mount(const char* guest_path, Filesystem* fs, const FsType* type, unsigned long flags,
                const char* source, const char* fs_root, const char* options) {
  Mount* m = heap_->make<Mount>();
  if (!m) return -ENOMEM;
  long len = normalize_path(guest_path, m->path, sizeof m->path);
  long rlen = len < 0 ? len : normalize_path(fs_root, m->root, sizeof m->root);
  if (len < 0 || rlen < 0) {
    heap_->destroy_obj(m);
    return len < 0 ? len : rlen;
  }
  m->len = (size_t)len;
  m->root_len = (size_t)rlen;
  m->heap = heap_;
  m->fs = fs;
  fs->mounts.fetch_add(1, std::memory_order_relaxed);
  m->type = type;
  m->flags = flags;
  copy_cstr(m->source, sizeof m->source, source ? source : "none");
  copy_cstr(m->options, sizeof m->options, options ? options : "");
  Guard g(lock_);
  if (nmounts_ == kMaxMounts) {
    heap_->destroy_obj(m);
    return -ENOMEM;
  }
  // The parent is the mount that held the mount point until now.
  Mount* parent = nullptr;
  for (int i = 0; i < nmounts_; i++) {
    Mount* x = mounts_[i];
    bool covers = x->len == 1 || (strncmp(m->path, x->path, x->len) == 0 &&
                                  (m->path[x->len] == 0 || m->path[x->len] == '/'));
    if (covers && (!parent || x->len >= parent->len)) parent = x;
  }
  m->id = next_id_++;
  m->parent_id = parent ? parent->id : m->id;
  mounts_[nmounts_++] = m;
  return 0;
}

long Vfs::umount(Mount* m, bool lazy) {
  Guard g(lock_);
  int at = -1;
  for (int i = 0; i < nmounts_; i++) {
    if (mounts_[i] == m) at = i;
    else if (mounts_[i]->parent_id == m->id && mounts_[i]->attached) return -EBUSY;
  }
  if (at < 0) return -EINVAL;
  if (m->len == 1 && at == 0) return -EBUSY;  // the root stays
  // Ours (the caller's find) and the table's: anything else is a user.
  if (!lazy && m->refs.load() > 2) return -EBUSY;
  m->attached = false;
  for (int i = at; i + 1 < nmounts_; i++) mounts_[i] = mounts_[i + 1];
  nmounts_--;
  m->put();  // the table's reference
  return 0;
}

Mount* Vfs::find(const char* norm, char* inner, size_t n) {
  Mount* best = nullptr;
  {
    Guard g(lock_);
    // The latest mount wins among equals: a mount over a mount point hides it.
    for (int i = 0; i < nmounts_; i++) {
      Mount* m = mounts_[i];
      bool match = m->len == 1 || (strncmp(norm, m->path, m->len) == 0 &&
                                   (norm[m->len] == 0 || norm[m->len] == '/'));
      if (match && (!best || m->len >= best->len)) best = m;
    }
    if (!best) return nullptr;
    best->get();
  }
  const char* rest = best->len == 1 ? norm : norm + best->len;
  KFmt f(inner, n);
  if (best->root_len > 1) f.str(best->root);
  if (*rest) f.str(rest);
  else if (best->root_len <= 1) f.str("/");
  if (f.truncated()) {
    best->put();
    return nullptr;
  }
  f.c_str();
  return best;
}

Mount* Vfs::find_exact(const char* norm) {
  Guard g(lock_);
  Mount* found = nullptr;
  for (int i = 0; i < nmounts_; i++)
    if (strcmp(mounts_[i]->path, norm) == 0) found = mounts_[i];
  if (found) found->get();
  return found;
}

long rooted_path(const char* root, const char* path, char* out, size_t n) {
  char norm[kPathMax];
  long len = normalize_path(path, norm, sizeof norm, false);
  if (len < 0) return len;
  KFmt f(out, n);
  if (root[1] != 0) f.str(root);  // a chroot: the path lies under it
  if (root[1] == 0 || len > 1) f.str(norm);
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  return (long)f.size();
}

std::string_view strip_root(const char* root, std::string_view path) {
  std::string_view r(root);
  if (r.size() <= 1) return path;
  if (!starts_with(path, r) || (path.size() > r.size() && path[r.size()] != '/')) return path;
  return path.size() == r.size() ? std::string_view("/") : tail(path, r.size());
}

long Vfs::absolute(Task& t, int dirfd, const char* path, char* out, size_t n) {
  if (path[0] == '/') return rooted_path(t.proc->fs->root, path, out, n);
  char base[kPathMax];
  if (dirfd == AT_FDCWD) {
    if (!copy_cstr(base, sizeof base, t.proc->fs->cwd)) return -ENAMETOOLONG;
  } else {
    File* f = t.proc->files->get(dirfd);
    if (!f) return -EBADF;
    long r = file_guest_path(t, *f, base, sizeof base);
    f->put();
    if (r < 0) return r;
    if (base[0] != '/') return -ENOTDIR;  // a pipe or socket
  }
  // ".." stays in the path: the walk resolves it where the folder really is.
  char full[kPathMax];
  KFmt j(full, sizeof full);
  j.str(base).str("/").str(path);
  if (j.truncated()) return -ENAMETOOLONG;
  return normalize_path(j.c_str(), out, n, false);
}

long Vfs::file_guest_path(Task& t, File& f, char* out, size_t n) {
  if (!f.mount && f.host_fd >= 0) {
    // Not opened by path (stdio, pipes, sockets): what the host calls it,
    // e.g. "pipe:[1234]" or the terminal's name.
    char proc[48];
    KFmt p(proc, sizeof proc);
    p.str("/proc/self/fd/").dec(f.host_fd);
    long len = host::sys(SYS_readlinkat, AT_FDCWD, p.c_str(), out, n - 1);
    if (len < 0) return len;
    out[len] = 0;
    return 0;
  }
  if (!f.mount || !f.path) return -ENOTDIR;
  Mount& m = *f.mount;
  char inner[kPathMax];
  const char* ip = f.path;
  if (m.fs->ops->dir_path && m.fs->ops->dir_path(t, *m.fs, f, inner, sizeof inner) == 0) ip = inner;
  // Inner path -> guest path: drop the mount's root, prefix its mount point.
  std::string_view rel(ip);
  if (m.root_len > 1) {
    std::string_view root(m.root, m.root_len);
    if (!starts_with(rel, root) || (rel.size() > root.size() && rel[root.size()] != '/'))
      return -ENOENT;  // moved out of what the mount shows
    rel = tail(rel, root.size());
  }
  KFmt o(out, n);
  if (m.len > 1) o.str(std::string_view(m.path, m.len));
  if (rel.size() > 1 || m.len == 1) o.str(rel.empty() ? std::string_view("/") : rel);
  if (o.truncated()) return -ENAMETOOLONG;
  o.c_str();
  return 0;
}

}  // namespace flatux
