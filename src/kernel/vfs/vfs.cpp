#include "kernel/vfs/vfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>

#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"

namespace flatux {

long normalize_path(const char* in, char* out, size_t n) {
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
    if (cl == 2 && s[0] == '.' && s[1] == '.') {
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

long Vfs::mount(const char* guest_path, Filesystem* fs) {
  Guard g(lock_);
  if (nmounts_ == kMaxMounts) return -ENOMEM;
  Mount& m = mounts_[nmounts_];
  long len = normalize_path(guest_path, m.path, sizeof m.path);
  if (len < 0) return len;
  m.len = (size_t)len;
  m.fs = fs;
  nmounts_++;
  return 0;
}

long Vfs::resolve(Task& t, int dirfd, const char* path, ResolvedPath* out) {
  char full[kPathMax];
  size_t plen = strlen(path);
  if (path[0] == '/') {
    if (plen >= sizeof full) return -ENAMETOOLONG;
    memcpy(full, path, plen + 1);
  } else {
    char base[kPathMax];
    if (dirfd == AT_FDCWD) {
      if (!copy_cstr(base, sizeof base, t.proc->fs->cwd)) return -ENAMETOOLONG;
    } else {
      File* f = t.proc->files->get(dirfd);
      if (!f) return -EBADF;
      long r = file_guest_path(t, *f, base, sizeof base);
      f->put();
      if (r < 0) return r;
    }
    size_t blen = strlen(base);
    if (blen + 1 + plen + 1 > sizeof full) return -ENAMETOOLONG;
    memcpy(full, base, blen);
    full[blen] = '/';
    memcpy(full + blen + 1, path, plen + 1);
  }
  char norm[kPathMax];
  long nl = normalize_path(full, norm, sizeof norm);
  if (nl < 0) return nl;

  // Longest mount prefix of the normalised path wins.
  Mount* best = nullptr;
  {
    Guard g(lock_);
    for (int i = 0; i < nmounts_; i++) {
      Mount& m = mounts_[i];
      bool match = m.len == 1 || (strncmp(norm, m.path, m.len) == 0 &&
                                  (norm[m.len] == 0 || norm[m.len] == '/'));
      if (match && (!best || m.len > best->len)) best = &m;
    }
  }
  if (!best) return -ENOENT;
  out->fs = best->fs;
  out->mount = best;
  if (best->len == 1) {
    // The root filesystem walks the path itself, so ".." after a symlink
    // means what it means on Linux rather than what it means lexically.
    if (!copy_cstr(out->path, sizeof out->path, full)) return -ENAMETOOLONG;
  } else {
    const char* rest = norm + best->len;
    if (!copy_cstr(out->path, sizeof out->path, *rest ? rest : "/")) return -ENAMETOOLONG;
  }
  return 0;
}

long Vfs::resolve_user(Task& t, int dirfd, const void* guest_path, ResolvedPath* out,
                       bool allow_empty) {
  char path[kPathMax];
  long r = strncpy_from_user(path, static_cast<const char*>(guest_path), sizeof path);
  if (r < 0) return r;
  if (r == 0 && !allow_empty) return -ENOENT;
  return resolve(t, dirfd, path, out);
}

long Vfs::file_guest_path(Task& t, File& f, char* out, size_t n) {
  if (!f.fs && f.host_fd >= 0) {
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
  if (!f.fs || !f.fs->ops->dir_path) return -ENOTDIR;
  char inner[kPathMax];
  long r = f.fs->ops->dir_path(t, *f.fs, f, inner, sizeof inner);
  if (r < 0) return r;
  // Prefix the mount point of the filesystem.
  Guard g(lock_);
  for (int i = 0; i < nmounts_; i++) {
    Mount& m = mounts_[i];
    if (m.fs != f.fs) continue;
    if (m.len == 1) return copy_cstr(out, n, inner) ? 0 : -ENAMETOOLONG;
    size_t il = strcmp(inner, "/") == 0 ? 0 : strlen(inner);
    if (m.len + il + 1 > n) return -ENAMETOOLONG;
    memcpy(out, m.path, m.len);
    memcpy(out + m.len, inner, il);
    out[m.len + il] = 0;
    return 0;
  }
  return -ENOENT;
}

}  // namespace flatux
