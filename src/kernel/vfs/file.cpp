#include "kernel/vfs/file.h"

#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <linux/errno.h>
#include <sys/syscall.h>

#include "host/kstack.h"
#include "host/raw_syscall.h"
#include "kernel/heap.h"
#include "kernel/mm/host_charge.h"
#include "kernel/sys/host_share.h"
#include "kernel/task/task.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/dnotify.h"
#include "kernel/vfs/fsnotify.h"
#include "kernel/vfs/lease.h"
#include "kernel/vfs/locks.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

File* file_alloc(Heap* heap, const FileOps* ops, uint32_t flags, int host_fd) {
  File* f = heap->make<File>();
  if (!f) return nullptr;
  f->ops = ops;
  f->heap = heap;
  f->flags = flags;
  f->host_fd = host_fd;
  return f;
}

long file_read_at_pos(Task& t, File& f, void* buf, size_t n) {
  Guard g(f.pos_lock);
  long r = f.ops->pread(t, f, buf, n, f.pos);
  if (r > 0) f.pos += r;
  return r;
}

long file_write_at_pos(Task& t, File& f, const void* buf, size_t n) {
  Guard g(f.pos_lock);
  long r = f.ops->pwrite(t, f, buf, n, f.pos);
  if (r > 0) f.pos += r;
  return r;
}

long file_seek_kept(File& f, int64_t off, int whence, int64_t end) {
  Guard g(f.pos_lock);
  return file_seek_kept_locked(f, off, whence, end);
}

long file_seek_kept_locked(File& f, int64_t off, int whence, int64_t end) {
  int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f.pos : whence == SEEK_END ? end : -1;
  if (base < 0 || base + off < 0) return -EINVAL;
  f.pos = base + off;
  return f.pos;
}

namespace {

// The last close of a file opened by name: its watchers hear of it, from
// the task closing it (none: a kernel thread's release, told to nobody).
void notify_last_close(File& f) {
  KStackHeader* h = current_kstack_checked();
  if (h && h->task) notify_close(*h->task, f);
}

}  // namespace

void File::put() {
  if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (mount && !(flags & O_PATH)) notify_last_close(*this);
  if (locks) locks->on_release(*this);
  if (leases) leases->on_release(*this);
  if (dnotify) dnotify_forget(*this);
  if (ops && ops->release) ops->release(*this);
  if (host_fd >= 0) host::sys(SYS_close, host_fd);
  host_charge_put(charge);  // after the close: the host object is gone (unless mapped)
  fd_share_uncharge(heap, fd_share.load(std::memory_order_relaxed));
  if (path != short_path) heap->free(path);
  dput(dentry);
  if (mount) mount->put();
  heap->destroy_obj(this);
}

void File::set_origin(Mount* m, const char* inner_path) {
  if (mount || !m) return;  // a file that already knows its origin (a reopened link)
  size_t len = strlen(inner_path);
  char* copy = len < sizeof short_path ? short_path : static_cast<char*>(heap->alloc(len + 1));
  if (!copy) return;  // the path is only a convenience for *at calls
  memcpy(copy, inner_path, len + 1);
  m->get();
  mount = m;
  path = copy;
}

FdTable::~FdTable() {
  close_all();
  fd_share_put(heap_, share_);
}

long FdTable::charge_locked(File* f) {
  if (!share_ || f->host_fd < 0 || f->fd_share.load(std::memory_order_relaxed)) return 0;
  long r = fd_share_charge(*share_);
  if (r < 0) return r;
  FdShare* none = nullptr;
  // A file being installed in two tables at once is charged once.
  if (!f->fd_share.compare_exchange_strong(none, share_)) fd_share_uncharge(heap_, share_);
  return 0;
}

ErrorOr<FdShare*> charge_host_fd_to(Task& t) {
  FdShare* s = t.proc && t.proc->files ? t.proc->files->share() : nullptr;
  if (!s) return s;
  if (fd_share_charge(*s) < 0) return kerr(-ENFILE);
  return s;
}

int FdTable::lowest_free() {
  Guard g(lock_);
  for (int fd = 0; fd < limit_; fd++)
    if (!files_[fd]) return fd;
  return -EMFILE;
}

int FdTable::install(File* f, bool cloexec, int min_fd) {
  Guard g(lock_);
  for (int fd = min_fd < 0 ? 0 : min_fd; fd < limit_; fd++) {
    if (!files_[fd]) {
      if (long r = charge_locked(f); r < 0) return (int)r;
      f->get();
      files_[fd] = f;
      if (cloexec) cloexec_[fd / 64] |= 1ull << (fd % 64);
      else cloexec_[fd / 64] &= ~(1ull << (fd % 64));
      return fd;
    }
  }
  return -EMFILE;
}

int FdTable::install_at(int fd, File* f, bool cloexec) {
  if (fd < 0 || fd >= limit_) return -EBADF;
  File* old;
  {
    Guard g(lock_);
    if (long r = charge_locked(f); r < 0) return (int)r;
    f->get();
    old = files_[fd];
    files_[fd] = f;
    if (cloexec) cloexec_[fd / 64] |= 1ull << (fd % 64);
    else cloexec_[fd / 64] &= ~(1ull << (fd % 64));
  }
  if (old) old->put();
  return fd;
}

File* FdTable::get(int fd) {
  if (fd < 0 || fd >= kMaxFds) return nullptr;
  Guard g(lock_);
  File* f = files_[fd];
  if (f) f->get();
  return f;
}

void FdTable::get_many(const int* fds, int n, File** out, bool* owned) {
  Guard g(lock_);
  File* prev = nullptr;
  for (int i = 0; i < n; i++) {
    File* f = fds[i] >= 0 && fds[i] < kMaxFds ? files_[fds[i]] : nullptr;
    out[i] = f;
    owned[i] = f && f != prev;
    if (owned[i]) f->get();
    if (f) prev = f;
  }
}

int FdTable::close(int fd) {
  if (fd < 0 || fd >= kMaxFds) return -EBADF;
  File* f;
  {
    Guard g(lock_);
    f = files_[fd];
    files_[fd] = nullptr;
  }
  if (!f) return -EBADF;
  f->put();
  return 0;
}

bool FdTable::cloexec(int fd) {
  Guard g(lock_);
  return fd >= 0 && fd < kMaxFds && (cloexec_[fd / 64] >> (fd % 64)) & 1;
}

int FdTable::set_cloexec(int fd, bool on) {
  if (fd < 0 || fd >= kMaxFds) return -EBADF;
  Guard g(lock_);
  if (!files_[fd]) return -EBADF;
  if (on) cloexec_[fd / 64] |= 1ull << (fd % 64);
  else cloexec_[fd / 64] &= ~(1ull << (fd % 64));
  return 0;
}

FdTable* FdTable::clone() const {
  FdTable* n = heap_->make<FdTable>(heap_);
  if (!n) return nullptr;
  if (share_ && !(n->share_ = fd_share_make(heap_, share_->pool))) {
    heap_->destroy_obj(n);
    return nullptr;
  }
  Guard g(const_cast<KMutex&>(lock_));
  n->limit_ = limit_;
  for (int fd = 0; fd < kMaxFds; fd++) {
    if (File* f = files_[fd]) {
      f->get();
      n->files_[fd] = f;
    }
  }
  memcpy(n->cloexec_, cloexec_, sizeof cloexec_);
  return n;
}

void FdTable::close_on_exec() {
  for (int fd = 0; fd < kMaxFds; fd++)
    if (files_[fd] && cloexec(fd)) close(fd);
}

void FdTable::close_all() {
  for (int fd = 0; fd < kMaxFds; fd++)
    if (files_[fd]) close(fd);
}

}  // namespace flatux
