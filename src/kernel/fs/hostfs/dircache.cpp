// hostfs's cache of folder descriptors: O_PATH descriptors of the folders
// lookups went through lately, so that a lookup is one host call (fstatat,
// openat2) on its parent's descriptor, not a walk from the root.
//
// Confinement: a descriptor is opened with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS) from its parent's cached descriptor (or the root),
// one name at a time, and is only ever used with a single name that is
// neither "." nor ".." and never followed as a symlink. What could lead
// out is the host moving a cached folder (or one of its ancestors) out of
// the root: a descriptor follows its folder. So every cached folder's
// ancestors are cached too, each watched by inotify (moved, removed, its
// attributes or link count changed), and any event empties the whole cache
// before the next lookup uses it. The cost is one non-blocking read of the
// inotify descriptor per lookup.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/openat2.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/lib/kstring.h"

namespace flatux {
namespace {

using Slot = DirCache::Slot;

constexpr uint32_t kWatch = IN_MOVE_SELF | IN_DELETE_SELF | IN_ATTRIB | IN_ONLYDIR;

std::string_view trim_slashes(std::string_view p) {
  while (!p.empty() && p.front() == '/') p = tail(p, 1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  return p;
}

// `inner` is `outer` or lies below it.
bool within(std::string_view outer, std::string_view inner) {
  return starts_with(inner, outer) && (inner.size() == outer.size() || inner[outer.size()] == '/');
}

void forget(DirCache& c, Slot& s) {
  bool shared = false;  // the same folder under two names (a bind mount) shares the watch
  for (Slot& o : c.slot)
    if (&o != &s && o.fd >= 0 && o.wd == s.wd) shared = true;
  if (!shared && c.notify_fd >= 0 && s.wd >= 0) host::sys(SYS_inotify_rm_watch, c.notify_fd, s.wd);
  host::sys(SYS_close, s.fd);
  s.fd = s.wd = -1;
  s.len = 0;
}

void flush_locked(DirCache& c) {
  for (Slot& s : c.slot) {
    if (s.fd >= 0) host::sys(SYS_close, s.fd);
    s.fd = s.wd = -1;
    s.len = 0;
  }
  if (c.notify_fd >= 0) host::sys(SYS_close, c.notify_fd);  // takes its watches along
  c.notify_fd = -1;
}

// Anything the watches saw empties the cache; IN_IGNORED alone is the echo
// of a watch this cache removed itself.
void check_notify(DirCache& c) {
  if (c.notify_fd < 0) return;
  bool changed = false;
  while (true) {
    alignas(inotify_event) char buf[512];
    long n = host::sys(SYS_read, c.notify_fd, buf, sizeof buf);
    if (n == -EAGAIN) break;
    if (n <= 0) {
      changed = true;
      break;
    }
    for (long at = 0; at + (long)sizeof(inotify_event) <= n;) {
      const inotify_event* e = reinterpret_cast<const inotify_event*>(buf + at);
      if (e->mask != IN_IGNORED) changed = true;
      at += (long)sizeof(inotify_event) + e->len;
    }
  }
  if (changed) flush_locked(c);
}

// A slot for `dir`: a free one, or the least recently used that is not one
// of dir's ancestors (which `dir`'s descriptor is opened from), emptied
// with every folder cached below it.
Slot* make_room(DirCache& c, std::string_view dir) {
  Slot* pick = nullptr;
  for (Slot& s : c.slot) {
    if (s.fd < 0) return &s;
    if (within(std::string_view(s.path, s.len), dir)) continue;
    if (!pick || s.used < pick->used) pick = &s;
  }
  if (!pick) return nullptr;
  std::string_view gone(pick->path, pick->len);
  for (Slot& s : c.slot)
    if (&s != pick && s.fd >= 0 && within(gone, std::string_view(s.path, s.len))) forget(c, s);
  forget(c, *pick);
  return pick;
}

// Opens folder `name` in `parent` (a cached descriptor) and watches it.
long open_watched(DirCache& c, long parent, const char* name, int* wd) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd = host::sys(SYS_openat2, parent, name, &how, sizeof how);
  if (fd < 0) return fd;
  long w = host::sys(SYS_inotify_add_watch, c.notify_fd, FdPath(fd).s, kWatch);
  // Still the folder at that name now that it is watched (a move between
  // the open and the watch would have gone unseen).
  struct stat opened, named;
  if (w < 0 || host::sys(SYS_fstat, fd, &opened) != 0 ||
      host::sys(SYS_newfstatat, parent, name, &named, AT_SYMLINK_NOFOLLOW) != 0 || opened.st_ino != named.st_ino ||
      opened.st_dev != named.st_dev) {
    host::sys(SYS_close, fd);
    return w < 0 ? w : -ESTALE;
  }
  *wd = (int)w;
  return fd;
}

long acquire_locked(HostFs& h, std::string_view dir) {
  DirCache& c = h.dirs;
  if (dir.empty()) return h.root_fd;
  for (Slot& s : c.slot)
    if (s.fd >= 0 && std::string_view(s.path, s.len) == dir) {
      s.used = ++c.clock;
      return s.fd;
    }
  if (dir.size() >= DirCache::kPath) return -1;
  size_t cut = dir.rfind('/');
  std::string_view parent = cut == std::string_view::npos ? std::string_view() : trim_slashes(head(dir, cut));
  std::string_view name = cut == std::string_view::npos ? dir : tail(dir, cut + 1);
  char leaf[256];  // NAME_MAX + 1
  if (name.empty() || name == "." || name == ".." || !copy_cstr(leaf, sizeof leaf, name)) return -1;
  long parent_fd = acquire_locked(h, parent);
  if (parent_fd < 0) return -1;
  if (c.notify_fd < 0) {
    long n = host::sys(SYS_inotify_init1, IN_NONBLOCK | IN_CLOEXEC);
    if (n < 0) return -1;
    c.notify_fd = (int)n;
  }
  Slot* s = make_room(c, dir);
  if (!s) return -1;
  int wd = -1;
  long fd = open_watched(c, parent_fd, leaf, &wd);
  if (fd < 0) return -1;
  s->fd = (int)fd;
  s->wd = wd;
  s->used = ++c.clock;
  s->len = dir.size();
  memcpy(s->path, dir.data(), dir.size());
  return fd;
}

}  // namespace

long dircache_acquire(HostFs& h, std::string_view dir) {
  h.dirs.lock.lock();
  check_notify(h.dirs);
  long fd = acquire_locked(h, trim_slashes(dir));
  if (fd < 0) h.dirs.lock.unlock();
  return fd;
}

void dircache_release(HostFs& h) { h.dirs.lock.unlock(); }

void dircache_flush(HostFs& h) {
  Guard<KMutex> g(h.dirs.lock);
  flush_locked(h.dirs);
}

}  // namespace flatux
