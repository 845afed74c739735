// inotify, after Linux's fs/notify/inotify. An instance is a file with a
// queue of events. A watch names an object by the (device, inode number)
// stat shows the guest, so it follows the object through renames and
// hears of it by any of its names, as a watch on an inode does.
//
// A watch on a hostfs object is a host inotify watch as well (one host
// instance per guest instance, made at its first such watch): its events
// are the host's, so changes host programs make are seen too, and the
// VFS's own reports skip it. Host events are taken into the queue when the
// guest reads (or asks FIONREAD).
//
// Readiness: the file's host descriptor is a host epoll set holding an
// eventfd, which holds 1 while the queue has events, and the host inotify
// instance; poll, select and epoll ask the host as for any other file. A
// host event the guest's watch does not want can make it ready for a read
// that then finds nothing (EAGAIN), which epoll users expect anyway.
//
// Limits are Linux's defaults (fs.inotify.*): 128 instances per user,
// 16384 queued events per instance (then one IN_Q_OVERFLOW), and a watch
// count per user.
#include "kernel/vfs/inotify.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/mm/usercopy.h"
#include "kernel/syscalls.h"
#include "kernel/task/isys.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/namei.h"

namespace flatux {

struct InotifyInstance;

struct InotifyWatch {
  InotifyInstance* inst;
  int wd;
  uint32_t mask;  // the events asked for, and IN_ONESHOT
  uint64_t dev, ino;
  int host_wd;  // the host watch behind it, or -1 (the VFS reports its events)
  InotifyWatch* next;  // Inotify::watches
};

struct InotifyEvent {
  InotifyEvent* next;
  int wd;
  uint32_t mask, cookie;
  uint32_t len;  // the name with its NUL padding (a multiple of 16), or 0
  char name[1];
};

struct InotifyInstance {
  KMutex lock;  // the queue
  InotifyEvent* head = nullptr;
  InotifyEvent* tail = nullptr;
  uint32_t queued = 0;
  uint64_t bytes = 0;
  int wake_fd = -1;   // eventfd: 1 while the queue has events
  int host_in = -1;   // host inotify instance, once a hostfs object is watched
  int ready_fd = -1;  // the file's host descriptor: epoll over the two
  KMutex pump_lock;   // one reader of host_in at a time, so events keep their order
  uint32_t uid = 0;
  int next_wd = 1;                   // (Inotify::lock)
  InotifyInstance* next = nullptr;   // Inotify::instances (Inotify::lock)
};

struct Inotify {
  KMutex lock;  // watches and instances; taken before an instance's lock
  InotifyWatch* watches = nullptr;
  InotifyInstance* instances = nullptr;
  std::atomic<int> count{0};  // watches
  std::atomic<uint32_t> cookie{0};
};

namespace {

constexpr uint32_t kMaxQueued = 16384, kMaxInstancesPerUser = 128, kMaxWatchesPerUser = 65536;
constexpr size_t kHeader = sizeof(inotify_event);
// Linux's ALL_INOTIFY_BITS: what inotify_add_watch takes (IN_ISDIR and
// the bits it reports itself included, as Linux accepts them).
constexpr uint32_t kValidAdd = IN_ALL_EVENTS | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED | IN_ONLYDIR |
                               IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_ADD | IN_MASK_CREATE | IN_ISDIR | IN_ONESHOT;

Inotify& table_of(Kernel& k) { return *k.inotify; }

extern const FileOps kInotifyOps;

InotifyInstance& instance_of(File& f) { return *static_cast<InotifyInstance*>(f.priv); }

// (Views made by hand: substr may throw, which kernel code must not.)
std::string_view parent_of(std::string_view p) {
  size_t slash = p.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string_view(p.data(), slash);
}

std::string_view last_of(std::string_view p) {
  size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : std::string_view(p.data() + slash + 1, p.size() - slash - 1);
}

void set_ready(InotifyInstance& in, bool ready) {
  uint64_t v = 1;
  if (ready) host::sys(SYS_write, in.wake_fd, &v, sizeof v);
  else host::sys(SYS_read, in.wake_fd, &v, sizeof v);
}

// Queues one event (in.lock held). An event the same as the last one
// still waiting is merged into it, and past the limit the queue ends with
// one IN_Q_OVERFLOW, as Linux does.
void enqueue_locked(Heap* heap, InotifyInstance& in, int wd, uint32_t mask, uint32_t cookie,
                    std::string_view name) {
  InotifyEvent* last = in.tail;
  if (last && last->wd == wd && last->mask == mask && last->cookie == cookie &&
      strnlen(last->name, last->len) == name.size() && memcmp(last->name, name.data(), name.size()) == 0)
    return;
  if (last && last->mask == IN_Q_OVERFLOW) return;
  bool overflow = in.queued + 1 >= kMaxQueued;
  if (overflow) {
    wd = -1;
    mask = IN_Q_OVERFLOW;
    cookie = 0;
    name = {};
  }
  uint32_t len = name.empty() ? 0 : (uint32_t)((name.size() + 1 + kHeader - 1) / kHeader * kHeader);
  auto* e = static_cast<InotifyEvent*>(heap->alloc(sizeof(InotifyEvent) + len));
  if (!e) return;
  e->next = nullptr;
  e->wd = wd;
  e->mask = mask;
  e->cookie = cookie;
  e->len = len;
  memset(e->name, 0, len + 1);
  memcpy(e->name, name.data(), name.size());
  bool was_empty = !in.head;
  if (in.tail) in.tail->next = e;
  else in.head = e;
  in.tail = e;
  in.queued++;
  in.bytes += kHeader + len;
  if (was_empty) set_ready(in, true);
}

// Unlinks w from the table and queues its IN_IGNORED (d.lock held).
void drop_watch_locked(Kernel& k, InotifyWatch** link) {
  InotifyWatch* w = *link;
  *link = w->next;
  {
    Guard g(w->inst->lock);
    enqueue_locked(k.heap, *w->inst, w->wd, IN_IGNORED, 0, {});
  }
  table_of(k).count.fetch_sub(1, std::memory_order_relaxed);
  k.heap->destroy_obj(w);
}

// Tells the watches on (dev, ino) of `mask`; with `ends`, the watches go
// afterwards (the object is gone).
void deliver(Kernel& k, uint64_t dev, uint64_t ino, uint32_t mask, uint32_t cookie, std::string_view name,
             bool ends = false) {
  Inotify& d = table_of(k);
  Guard g(d.lock);
  for (InotifyWatch** link = &d.watches; *link;) {
    InotifyWatch* w = *link;
    if (w->dev != dev || w->ino != ino || w->host_wd >= 0) {
      link = &w->next;
      continue;
    }
    bool wanted = w->mask & mask & IN_ALL_EVENTS;
    if (wanted) {
      Guard q(w->inst->lock);
      enqueue_locked(k.heap, *w->inst, w->wd, (mask & (IN_ALL_EVENTS | IN_ISDIR)) & (w->mask | IN_ISDIR), cookie, name);
    }
    if (ends || (wanted && (w->mask & IN_ONESHOT))) drop_watch_locked(k, link);
    else link = &w->next;
  }
}

bool stat_inner(Task& t, Mount* m, const char* path, struct stat* st) {
  Lookup lk(path, false, m);
  Filesystem& fs = *m->fs;
  return fs.ops->stat(t, fs, lk, st) == 0;
}

// Tells the folder holding `path` (inside m) of `mask` on the name.
void tell_folder(Task& t, Mount* m, std::string_view path, uint32_t mask, uint32_t cookie) {
  if (path.size() <= 1 || path.size() >= kPathMax) return;  // a mount's root: no folder here
  char parent[kPathMax];
  std::string_view p = parent_of(path);
  memcpy(parent, p.data(), p.size());
  parent[p.size()] = 0;
  struct stat st;
  if (stat_inner(t, m, parent, &st)) deliver(*t.kernel, st.st_dev, st.st_ino, mask, cookie, last_of(path));
}

void free_events_locked(Heap* heap, InotifyInstance& in) {
  while (InotifyEvent* e = in.head) {
    in.head = e->next;
    heap->free(e);
  }
  in.tail = nullptr;
  in.queued = 0;
  in.bytes = 0;
}

// Takes the host's events for in's hostfs watches into its queue.
void pump_host_events(Kernel& k, InotifyInstance& in) {
  if (in.host_in < 0) return;
  Guard p(in.pump_lock);
  alignas(inotify_event) char buf[4096];
  Inotify& d = table_of(k);
  for (;;) {
    long n = host::sys(SYS_read, in.host_in, buf, sizeof buf);
    if (n <= 0) return;
    Guard g(d.lock);
    for (long off = 0; off + (long)kHeader <= n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
      off += (long)(kHeader + e->len);
      std::string_view name(e->name, e->len ? strnlen(e->name, e->len) : 0);
      if (e->mask & IN_Q_OVERFLOW) {
        Guard q(in.lock);
        enqueue_locked(k.heap, in, -1, IN_Q_OVERFLOW, 0, {});
        continue;
      }
      InotifyWatch** link = &d.watches;
      while (*link && !((*link)->inst == &in && (*link)->host_wd == e->wd)) link = &(*link)->next;
      InotifyWatch* w = *link;
      if (!w) continue;  // a watch the guest already removed
      if (e->mask & IN_IGNORED) {  // the host's watch ended (its object is gone)
        drop_watch_locked(k, link);
        continue;
      }
      if (!(e->mask & w->mask & IN_ALL_EVENTS) && !(e->mask & IN_UNMOUNT)) continue;
      {
        Guard q(in.lock);
        enqueue_locked(k.heap, in, w->wd, e->mask & (w->mask | IN_ISDIR | IN_UNMOUNT), e->cookie, name);
      }
      if (w->mask & IN_ONESHOT) drop_watch_locked(k, link);
    }
  }
}

// The host inotify instance behind in's hostfs watches (d.lock held).
int host_instance_locked(InotifyInstance& in) {
  if (in.host_in >= 0) return in.host_in;
  long fd = host::sys(SYS_inotify_init1, IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return -1;
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (host::sys(SYS_epoll_ctl, in.ready_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
    host::sys(SYS_close, fd);
    return -1;
  }
  in.host_in = (int)fd;
  return in.host_in;
}

// A host watch on the object `obj` (an O_PATH descriptor) for w, or -1
// (then the VFS reports w's events). (d.lock held)
int host_watch_locked(InotifyInstance& in, int obj, uint32_t mask) {
  if (obj < 0) return -1;
  int hin = host_instance_locked(in);
  if (hin < 0) return -1;
  char path[32];
  KFmt f(path, sizeof path);
  f.str("/proc/self/fd/").dec(obj);
  long wd = host::sys(SYS_inotify_add_watch, hin, f.c_str(), mask & (IN_ALL_EVENTS | IN_ONESHOT | IN_EXCL_UNLINK));
  return wd < 0 ? -1 : (int)wd;
}

// --- the instance file ---------------------------------------------------

long in_read(Task& t, File& f, void* buf, size_t n) {
  InotifyInstance& in = instance_of(f);
  Heap* heap = t.kernel->heap;
  for (;;) {
    pump_host_events(*t.kernel, in);
    {
      Guard g(in.lock);
      if (in.head) {
        if (n < kHeader + in.head->len) return -EINVAL;
        size_t done = 0;
        while (InotifyEvent* e = in.head) {
          size_t size = kHeader + e->len;
          if (done + size > n) break;
          inotify_event h{e->wd, e->mask, e->cookie, e->len};
          char* to = static_cast<char*>(buf) + done;
          if (copy_to_user(to, &h, kHeader) < 0 || (e->len && copy_to_user(to + kHeader, e->name, e->len) < 0))
            return done ? (long)done : -EFAULT;
          in.head = e->next;
          if (!in.head) in.tail = nullptr;
          in.queued--;
          in.bytes -= size;
          heap->free(e);
          done += size;
        }
        if (!in.head) set_ready(in, false);
        return (long)done;
      }
    }
    if (f.flags & O_NONBLOCK) return -EAGAIN;
    pollfd p{in.ready_fd, POLLIN, 0};
    long r = isys(t, SYS_ppoll, &p, 1, nullptr, nullptr, 8);
    if (r < 0) return restartable(r);
  }
}

long in_ioctl(Task& t, File& f, unsigned cmd, uint64_t arg) {
  if (cmd != FIONREAD) return -ENOTTY;
  InotifyInstance& in = instance_of(f);
  pump_host_events(*t.kernel, in);
  int bytes;
  {
    Guard g(in.lock);
    bytes = (int)in.bytes;
  }
  return copy_to_user((void*)arg, &bytes, sizeof bytes) < 0 ? -EFAULT : 0;
}

long in_stat(Task&, File&, struct stat* out) {
  memset(out, 0, sizeof *out);
  out->st_mode = 0600;  // an anonymous inode, as Linux shows it
  out->st_nlink = 1;
  out->st_blksize = 4096;
  return 0;
}

void in_release(File& f) {
  auto* k = static_cast<Kernel*>(Heap::root_of_this_process());
  Inotify& d = table_of(*k);
  InotifyInstance* in = &instance_of(f);
  {
    Guard g(d.lock);
    for (InotifyWatch** link = &d.watches; *link;) {
      InotifyWatch* w = *link;
      if (w->inst != in) {
        link = &w->next;
        continue;
      }
      *link = w->next;
      d.count.fetch_sub(1, std::memory_order_relaxed);
      k->heap->destroy_obj(w);
    }
    for (InotifyInstance** link = &d.instances; *link; link = &(*link)->next)
      if (*link == in) {
        *link = in->next;
        break;
      }
  }
  {
    Guard g(in->lock);
    free_events_locked(k->heap, *in);
  }
  host::sys(SYS_close, in->wake_fd);
  if (in->host_in >= 0) host::sys(SYS_close, in->host_in);
  k->heap->destroy_obj(in);  // ready_fd is the file's host descriptor, closed with it
}

const FileOps kInotifyOps = {
    .read = in_read,
    .write = nullptr,
    .pread = nullptr,
    .pwrite = nullptr,
    .lseek = nullptr,
    .stat = in_stat,
    .getdents64 = nullptr,
    .ioctl = in_ioctl,
    .statfs = nullptr,
    .release = in_release,
};

long do_init(Task& t, uint64_t flags) {
  if (flags & ~(uint64_t)(IN_CLOEXEC | IN_NONBLOCK)) return -EINVAL;
  Kernel& k = *t.kernel;
  Inotify& d = table_of(k);
  uint32_t uid = t.proc->creds.uid;
  auto* in = k.heap->make<InotifyInstance>();
  if (!in) return -ENOMEM;
  in->uid = uid;
  {
    Guard g(d.lock);
    uint32_t mine = 0;
    for (InotifyInstance* i = d.instances; i; i = i->next) mine += i->uid == uid;
    if (mine >= kMaxInstancesPerUser) {
      k.heap->destroy_obj(in);
      return -EMFILE;
    }
    in->next = d.instances;
    d.instances = in;
  }
  long efd = host::sys(SYS_eventfd2, 0, EFD_NONBLOCK | EFD_CLOEXEC);
  long ready = efd >= 0 ? host::sys(SYS_epoll_create1, EPOLL_CLOEXEC) : efd;
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (ready >= 0 && host::sys(SYS_epoll_ctl, ready, EPOLL_CTL_ADD, efd, &ev) < 0) {
    host::sys(SYS_close, ready);
    ready = -ENOMEM;
  }
  File* f = ready >= 0 ? file_alloc(k.heap, &kInotifyOps, O_RDONLY | ((flags & IN_NONBLOCK) ? O_NONBLOCK : 0), (int)ready)
                       : nullptr;
  if (!f) {
    if (efd >= 0) host::sys(SYS_close, efd);
    if (ready >= 0) host::sys(SYS_close, ready);
    Guard g(d.lock);
    for (InotifyInstance** link = &d.instances; *link; link = &(*link)->next)
      if (*link == in) {
        *link = in->next;
        break;
      }
    k.heap->destroy_obj(in);
    return ready < 0 ? ready : -ENOMEM;
  }
  in->wake_fd = (int)efd;
  in->ready_fd = (int)ready;
  f->priv = in;
  int fd = t.proc->files->install(f, flags & IN_CLOEXEC);
  f->put();
  return fd;
}

// The object at `path` for a new watch: its identity, after the caller's
// right to read it is checked, and on hostfs a host O_PATH descriptor of
// it in *host_obj (else -1; the caller closes it). A symlink watched
// itself stays the VFS's to report.
long watch_target(Task& t, const char* path, bool follow, struct stat* st, long* host_obj) {
  *host_obj = -1;
  return vfs_walk(t, AT_FDCWD, path, follow, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    long r = fs.ops->stat(t, fs, lk, st);
    if (r == 0 && fs.ops->access) r = fs.ops->access(t, fs, lk, R_OK);
    if (r == 0 && !S_ISLNK(st->st_mode)) {
      if (*host_obj >= 0) host::sys(SYS_close, *host_obj);  // a redirect walks again
      *host_obj = hostfs_open_object(fs, lk);
    }
    return r;
  });
}

// A new watch of `in` on the object st describes, or a new mask for the
// one it has there; its wd.
long add_watch(Kernel& k, InotifyInstance& in, uint32_t mask, const struct stat& st, long host_obj) {
  Inotify& d = table_of(k);
  uint32_t keep = mask & (IN_ALL_EVENTS | IN_ONESHOT | IN_EXCL_UNLINK);
  Guard g(d.lock);
  uint32_t mine = 0;
  for (InotifyWatch* w = d.watches; w; w = w->next) {
    if (w->inst == &in && w->dev == st.st_dev && w->ino == st.st_ino) {
      if (mask & IN_MASK_CREATE) return -EEXIST;
      w->mask = (mask & IN_MASK_ADD) ? w->mask | keep : keep;
      if (w->host_wd >= 0) host_watch_locked(in, (int)host_obj, w->mask);  // the same host wd, its new mask
      return w->wd;
    }
    mine += w->inst->uid == in.uid;
  }
  if (mine >= kMaxWatchesPerUser) return -ENOSPC;
  auto* w = k.heap->make<InotifyWatch>();
  if (!w) return -ENOMEM;
  *w = {&in, in.next_wd++, keep, st.st_dev, st.st_ino, host_watch_locked(in, (int)host_obj, keep), d.watches};
  d.watches = w;
  d.count.fetch_add(1, std::memory_order_relaxed);
  return w->wd;
}

}  // namespace

Inotify* inotify_create(Heap* heap) { return heap->make<Inotify>(); }

bool inotify_watching(Task& t) { return table_of(*t.kernel).count.load(std::memory_order_relaxed) != 0; }

uint32_t inotify_cookie(Task& t) { return table_of(*t.kernel).cookie.fetch_add(1) + 1; }

NotifyObject inotify_object(Task& t, const Lookup& lk) {
  NotifyObject o;
  if (!lk.mount || !lk.path) return o;
  struct stat st;
  if (!stat_inner(t, lk.mount, lk.path, &st)) return o;
  o.dev = st.st_dev;
  o.ino = st.st_ino;
  o.nlink = st.st_nlink;
  o.dir = S_ISDIR(st.st_mode);
  o.known = true;
  return o;
}

void inotify_name_event(Task& t, const Lookup& lk, uint32_t mask, uint32_t cookie, const NotifyObject& obj,
                        uint32_t self_mask) {
  if (!lk.mount || !lk.path) return;
  uint32_t isdir = obj.known && obj.dir ? IN_ISDIR : 0;
  if (mask) tell_folder(t, lk.mount, lk.path, mask | isdir, cookie);
  if (self_mask && obj.known) deliver(*t.kernel, obj.dev, obj.ino, self_mask | isdir, 0, {});
}

void inotify_unlinked(Task& t, const NotifyObject& obj) {
  if (!obj.known) return;
  if (!obj.dir && obj.nlink > 1) {
    deliver(*t.kernel, obj.dev, obj.ino, IN_ATTRIB, 0, {});
    return;
  }
  if (!obj.dir) deliver(*t.kernel, obj.dev, obj.ino, IN_ATTRIB, 0, {});  // its link count, first
  deliver(*t.kernel, obj.dev, obj.ino, IN_DELETE_SELF, 0, {}, true);
}

void inotify_file_event(Task& t, File& f, uint32_t mask) {
  if ((f.flags & O_PATH) || !f.ops->stat) return;
  struct stat st;
  if (f.ops->stat(t, f, &st) < 0) return;
  uint32_t isdir = S_ISDIR(st.st_mode) ? IN_ISDIR : 0;
  if (f.mount && f.path) tell_folder(t, f.mount, f.path, mask | isdir, 0);
  deliver(*t.kernel, st.st_dev, st.st_ino, mask | isdir, 0, {});
}

long sys_inotify_init(Task& t, SyscallArgs) { return do_init(t, 0); }
long sys_inotify_init1(Task& t, SyscallArgs a) { return do_init(t, a[0]); }

long sys_inotify_add_watch(Task& t, SyscallArgs a) {
  uint32_t mask = (uint32_t)a[2];
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (f->ops != &kInotifyOps) return -EINVAL;
  if (!mask || (mask & ~kValidAdd)) return -EINVAL;
  if ((mask & IN_MASK_ADD) && (mask & IN_MASK_CREATE)) return -EINVAL;
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)a[1], sizeof path);
  if (r < 0) return r;
  if (r == 0) return -ENOENT;
  struct stat st;
  long host_obj;
  r = watch_target(t, path, !(mask & IN_DONT_FOLLOW), &st, &host_obj);
  if (r == 0 && (mask & IN_ONLYDIR) && !S_ISDIR(st.st_mode)) r = -ENOTDIR;
  if (r == 0) r = add_watch(*t.kernel, instance_of(*f), mask, st, host_obj);
  if (host_obj >= 0) host::sys(SYS_close, host_obj);
  return r;
}

long sys_inotify_rm_watch(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  if (!f) return -EBADF;
  if (f->ops != &kInotifyOps) return -EINVAL;
  Kernel& k = *t.kernel;
  Inotify& d = table_of(k);
  InotifyInstance& in = instance_of(*f);
  Guard g(d.lock);
  for (InotifyWatch** link = &d.watches; *link; link = &(*link)->next)
    if ((*link)->inst == &in && (*link)->wd == (int)a[1]) {
      // The host's IN_IGNORED for its watch then finds no watch, and goes.
      if ((*link)->host_wd >= 0) host::sys(SYS_inotify_rm_watch, in.host_in, (*link)->host_wd);
      drop_watch_locked(k, link);
      return 0;
    }
  return -EINVAL;
}

}  // namespace flatux
