// dnotify, after Linux's fs/notify/dnotify: a watch is a (directory open
// file, descriptor, process, mask) set by F_NOTIFY. Changes the kernel
// itself makes are reported: names created, removed or renamed in the
// directory, attributes changed, data read or written through files opened
// in it. F_NOTIFY makes the caller the directory file's owner, and each
// event signals that owner as fcntl's file owners are (SIGIO, or the
// F_SETSIG signal with si_fd and POLL_MSG); a watch ends after one event
// unless DN_MULTISHOT was asked. Changes a host program makes to a hostfs
// folder behind flatux's back are not seen. The watch goes with the
// directory's open file.
#include "kernel/vfs/dnotify.h"

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/poll.h>
#include <sys/stat.h>

#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/task/process.h"
#include "kernel/vfs/fown.h"

namespace flatux {

struct DnotifyWatch {
  File* dir;           // no reference: the watch is dropped when it is released
  Filesystem* fs;
  char* path;          // the directory's inner path when the watch was set
  int fd;
  uint32_t mask;
  DnotifyWatch* next;
};

struct Dnotify {
  KMutex lock;
  DnotifyWatch* head = nullptr;
  std::atomic<int> count{0};
};

namespace {

constexpr uint32_t kEvents = DN_ACCESS | DN_MODIFY | DN_CREATE | DN_DELETE | DN_RENAME | DN_ATTRIB;

Dnotify& table_of(Kernel& k) { return *k.dnotify; }

void free_watch(Heap* h, DnotifyWatch* w) {
  h->free(w->path);
  h->destroy_obj(w);
}

std::string_view parent_of(std::string_view p) {
  size_t slash = p.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return p.substr(0, slash);
}

// A new reference to f, unless it is already on its way out.
bool try_get(File& f) {
  int r = f.refs.load();
  while (r > 0 && !f.refs.compare_exchange_weak(r, r + 1)) {}
  return r > 0;
}

// Tells the owners of the watches on (fs, dir) about `event`.
void notify(Task& t, Filesystem* fs, std::string_view dir, std::string_view self, uint32_t event) {
  struct Hit {
    File* f;
    int fd;
  } hits[32];
  int n = 0;
  Kernel& k = *t.kernel;
  Dnotify& d = table_of(k);
  {
    Guard g(d.lock);
    for (DnotifyWatch** link = &d.head; *link;) {
      DnotifyWatch* w = *link;
      std::string_view wp(w->path);
      if (w->fs != fs || !(w->mask & event) || (wp != dir && wp != self)) {
        link = &w->next;
        continue;
      }
      if (n < 32 && try_get(*w->dir)) hits[n++] = {w->dir, w->fd};
      if (w->mask & DN_MULTISHOT) {
        link = &w->next;
      } else {  // one event only
        *link = w->next;
        free_watch(k.heap, w);
        d.count.fetch_sub(1);
      }
    }
  }
  for (int i = 0; i < n; i++) {
    send_sigio(t, *hits[i].f, hits[i].fd, POLL_MSG, POLLIN | POLLRDNORM | POLLMSG);
    hits[i].f->put();
  }
}

}  // namespace

Dnotify* dnotify_create(Heap* heap) { return heap->make<Dnotify>(); }

long dnotify_fcntl(Task& t, int fd, File& dir, uint64_t arg) {
  Kernel& k = *t.kernel;
  Dnotify& d = table_of(k);
  uint32_t mask = (uint32_t)arg & (kEvents | DN_MULTISHOT);
  if (!(mask & kEvents)) {  // no event asked for: the watch goes
    Guard g(d.lock);
    for (DnotifyWatch** link = &d.head; *link;) {
      DnotifyWatch* w = *link;
      if (w->dir == &dir && w->fd == fd) {
        *link = w->next;
        free_watch(k.heap, w);
        d.count.fetch_sub(1);
      } else {
        link = &w->next;
      }
    }
    return 0;
  }
  struct stat st;
  if (!dir.ops->stat || dir.ops->stat(t, dir, &st) < 0 || !S_ISDIR(st.st_mode)) return -ENOTDIR;
  if (!dir.mount || !dir.path) return -EINVAL;  // no name to watch
  fown_set_caller(t, dir);
  Guard g(d.lock);
  for (DnotifyWatch* w = d.head; w; w = w->next)
    if (w->dir == &dir && w->fd == fd) {
      w->mask |= mask;
      return 0;
    }
  auto* w = k.heap->make<DnotifyWatch>();
  size_t len = strlen(dir.path);
  char* path = w ? static_cast<char*>(k.heap->alloc(len + 1)) : nullptr;
  if (!path) {
    if (w) k.heap->destroy_obj(w);
    return -ENOMEM;
  }
  memcpy(path, dir.path, len + 1);
  *w = {&dir, dir.mount->fs, path, fd, mask, d.head};
  d.head = w;
  d.count.fetch_add(1);
  dir.dnotify = true;
  return 0;
}

void dnotify_entry(Task& t, const Lookup& lk, uint32_t event) {
  Kernel& k = *t.kernel;
  if (table_of(k).count.load(std::memory_order_relaxed) == 0 || !lk.mount) return;
  std::string_view p(lk.path);
  notify(t, lk.mount->fs, parent_of(p), p, event);
}

void dnotify_file(Task& t, File& f, uint32_t event) {
  Kernel& k = *t.kernel;
  if (table_of(k).count.load(std::memory_order_relaxed) == 0 || !f.mount || !f.path) return;
  std::string_view p(f.path);
  notify(t, f.mount->fs, parent_of(p), std::string_view(), event);
}

bool dnotify_watching(Task& t) { return table_of(*t.kernel).count.load(std::memory_order_relaxed) != 0; }

void dnotify_forget(File& f) {
  auto* k = static_cast<Kernel*>(Heap::root_of_this_process());
  Dnotify& d = table_of(*k);
  Guard g(d.lock);
  for (DnotifyWatch** link = &d.head; *link;) {
    DnotifyWatch* w = *link;
    if (w->dir == &f) {
      *link = w->next;
      free_watch(k->heap, w);
      d.count.fetch_sub(1);
    } else {
      link = &w->next;
    }
  }
}

}  // namespace flatux
