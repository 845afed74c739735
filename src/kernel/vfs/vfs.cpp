#include "kernel/vfs/vfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/namei.h"

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
  lk.redirect_rel = 0;
  if (!lk.redirect_absolute) {
    std::string_view dir, name;
    split_last(link_path, &dir, &name);
    out.str(dir).str("/");
    if (link_path == std::string_view(lk.path)) lk.redirect_rel = out.size();
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
  if (path[0] == '/') {
    char root[kPathMax];
    long r = fs_root(t, root, sizeof root);
    return r < 0 ? r : rooted_path(root, path, out, n);
  }
  char base[kPathMax];
  if (dirfd == AT_FDCWD) {
    auto cwd = fs_cwd(t);
    if (cwd.is_error()) return cwd.error();
    Path p = cwd.release_value();
    bool deleted = false;
    long r = guest_path_of(p, base, sizeof base, &deleted);
    path_put(p);
    if (r < 0) return r;
    if (deleted) return -ENOENT;  // nothing is found or made in a removed folder
  } else {
    File* f = t.proc->files->get(dirfd);
    if (!f) return -EBADF;
    bool deleted = false;
    long r = file_guest_path(t, *f, base, sizeof base, &deleted);
    f->put();
    if (r < 0) return r;
    if (deleted) return -ENOENT;
    if (base[0] != '/') return -ENOTDIR;  // a pipe or socket
  }
  // ".." stays in the path: the walk resolves it where the folder really is.
  char full[kPathMax];
  KFmt j(full, sizeof full);
  j.str(base).str("/").str(path);
  if (j.truncated()) return -ENAMETOOLONG;
  return normalize_path(j.c_str(), out, n, false);
}

namespace {

// A terminal the kernel opened itself, by no path (init's /dev/console,
// a console opened for a container's init): its /dev name, as Linux names
// it in /proc/PID/fd. False for anything else.
bool device_name(Task& t, File& f, char* out, size_t n) {
  struct stat st;
  if (!f.ops || !f.ops->stat || f.ops->stat(t, f, &st) != 0 || !S_ISCHR(st.st_mode)) return false;
  unsigned major = (unsigned)((st.st_rdev >> 8) & 0xfff), minor = (unsigned)((st.st_rdev & 0xff) | ((st.st_rdev >> 12) & 0xfff00));
  KFmt p(out, n);
  if (major == 5 && minor == 1) p.str("/dev/console");
  else if (major == 5 && minor == 0) p.str("/dev/tty");
  else if (major == 4 && minor < 64) p.str("/dev/tty").dec(minor);
  else if (major >= 136 && major <= 143) p.str("/dev/pts/").dec((major - 136) * 256 + minor);
  else return false;
  p.c_str();
  return true;
}

}  // namespace

long Vfs::file_guest_path(Task& t, File& f, char* out, size_t n, bool* deleted) {
  if (deleted) *deleted = false;
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
  if (!f.mount && device_name(t, f, out, n)) return 0;
  if (!f.mount || !f.path) return -ENOTDIR;
  if (f.dentry) return guest_path_of(Path{f.mount, f.dentry}, out, n, deleted);
  Mount& m = *f.mount;
  char inner[kPathMax];
  const char* ip = f.path;
  if (m.fs->ops->dir_path && m.fs->ops->dir_path(t, *m.fs, f, inner, sizeof inner) == 0) ip = inner;
  return inner_to_guest(m, ip, out, n);
}

}  // namespace flatux
