#include "kernel/vfs/locks.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "kernel/heap.h"
#include "kernel/signal/signal.h"
#include "kernel/vfs/file.h"

namespace flatux {

constexpr int64_t kToEof = INT64_MAX;

struct LockTable::Lock {
  uint64_t dev = 0, ino = 0;
  int64_t start = 0, end = kToEof;  // inclusive
  short type = F_RDLCK;             // F_RDLCK or F_WRLCK
  Kind kind = kPosix;
  const void* owner = nullptr;      // Process* (POSIX) or File* (OFD, flock)
  int pid = 0;
  Lock* next = nullptr;

  bool same_file(const Lock& o) const { return dev == o.dev && ino == o.ino; }
  bool overlaps(const Lock& o) const { return start <= o.end && o.start <= end; }
  // flock locks and record locks never meet; POSIX and OFD locks do.
  bool same_family(const Lock& o) const { return (kind == kFlock) == (o.kind == kFlock); }
};

namespace {

bool identify(Task& t, File& f, uint64_t* dev, uint64_t* ino) {
  struct stat st;
  if (!f.ops->stat || f.ops->stat(t, f, &st) < 0) return false;
  *dev = st.st_dev;
  *ino = st.st_ino;
  return true;
}

}  // namespace

const LockTable::Lock* LockTable::conflict(const Lock& want) const {
  for (const Lock* l = head_; l; l = l->next) {
    if (!l->same_file(want) || !l->same_family(want) || l->owner == want.owner) continue;
    if (!l->overlaps(want)) continue;
    if (l->type == F_WRLCK || want.type == F_WRLCK) return l;
  }
  return nullptr;
}

// Removes `range` from its owner's locks on that file, splitting a lock
// that sticks out on both sides.
long LockTable::unlock_range(const Lock& range) {
  for (Lock** pp = &head_; *pp;) {
    Lock* l = *pp;
    if (l->owner != range.owner || !l->same_file(range) || !l->same_family(range) ||
        !l->overlaps(range)) {
      pp = &l->next;
      continue;
    }
    if (l->start < range.start && l->end > range.end) {  // split in two
      Lock* right = heap_->make<Lock>(*l);
      if (!right) return -ENOLCK;
      right->start = range.end + 1;
      l->end = range.start - 1;
      right->next = l->next;
      l->next = right;
      count_.fetch_add(1);
      return 0;
    }
    if (l->start < range.start) {
      l->end = range.start - 1;
    } else if (l->end > range.end) {
      l->start = range.end + 1;
    } else {
      *pp = l->next;
      heap_->destroy_obj(l);
      count_.fetch_sub(1);
      continue;
    }
    pp = &l->next;
  }
  return 0;
}

void LockTable::wake() {
  changed_.fetch_add(1, std::memory_order_release);
  futex_wake(&changed_, 1 << 30);
}

// One attempt, table locked: 0, -EAGAIN on a conflict, or -ENOLCK.
long LockTable::try_set(const Lock& want) {
  Guard g(lock_);
  if (want.type == F_UNLCK) return unlock_range(want);
  if (conflict(want)) return -EAGAIN;
  Lock* l = heap_->make<Lock>(want);
  if (!l) return -ENOLCK;
  long r = unlock_range(want);  // replaces whatever the owner held there
  if (r < 0) {
    heap_->destroy_obj(l);
    return r;
  }
  l->next = head_;
  head_ = l;
  count_.fetch_add(1);
  return 0;
}

long LockTable::set(Task& t, const Lock& want, bool wait) {
  while (true) {
    uint32_t seen = changed_.load(std::memory_order_acquire);
    long r = try_set(want);
    if (r != -EAGAIN) {
      if (r == 0) wake();  // an unlock or a downgrade may let others in
      return r;
    }
    if (!wait) return want.kind == kFlock ? -EWOULDBLOCK : -EAGAIN;
    r = isys(t, SYS_futex, &changed_, FUTEX_WAIT, seen, 0);
    if (r == -EINTR && t.notify.load()) return -ERESTARTSYS;
  }
}

long LockTable::flock(Task& t, File& f, int op) {
  Lock want;
  if (!identify(t, f, &want.dev, &want.ino)) return -EBADF;
  want.kind = kFlock;
  want.owner = &f;
  f.locks = this;
  want.pid = t.proc->pid;
  switch (op & ~LOCK_NB) {
    case LOCK_SH: want.type = F_RDLCK; break;
    case LOCK_EX: want.type = F_WRLCK; break;
    case LOCK_UN: want.type = F_UNLCK; break;
    default: return -EINVAL;
  }
  if (want.type != F_UNLCK) {
    // Converting a lock is not atomic on Linux either: the old one goes first.
    Lock old = want;
    old.type = F_UNLCK;
    set(t, old, false);
  }
  return set(t, want, !(op & LOCK_NB));
}

long LockTable::fcntl_lock(Task& t, File& f, int cmd, struct flock* fl) {
  bool ofd = cmd == F_OFD_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
  bool get = cmd == F_GETLK || cmd == F_OFD_GETLK;
  bool wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
  if (ofd && fl->l_pid != 0) return -EINVAL;
  if (fl->l_type != F_RDLCK && fl->l_type != F_WRLCK && fl->l_type != F_UNLCK) return -EINVAL;
  Lock want;
  if (!identify(t, f, &want.dev, &want.ino)) return -EBADF;
  int64_t base;
  switch (fl->l_whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: {
      base = f.ops->lseek ? f.ops->lseek(t, f, 0, SEEK_CUR) : f.pos;
      if (base < 0) return base;
      break;
    }
    case SEEK_END: {
      struct stat st;
      if (f.ops->stat(t, f, &st) < 0) return -EBADF;
      base = st.st_size;
      break;
    }
    default: return -EINVAL;
  }
  int64_t start = base + fl->l_start;
  int64_t end;
  if (fl->l_len > 0) {
    end = start + fl->l_len - 1;
  } else if (fl->l_len < 0) {  // the bytes before start
    end = start - 1;
    start += fl->l_len;
  } else {
    end = kToEof;
  }
  if (start < 0) return -EINVAL;
  if (!get && fl->l_type == F_RDLCK && (f.flags & O_ACCMODE) == O_WRONLY) return -EBADF;
  if (!get && fl->l_type == F_WRLCK && (f.flags & O_ACCMODE) == O_RDONLY) return -EBADF;
  want.start = start;
  want.end = end;
  want.type = fl->l_type;
  want.kind = ofd ? kOfd : kPosix;
  want.owner = ofd ? (const void*)&f : (const void*)t.proc;
  want.pid = t.proc->pid;
  if (get) {
    if (fl->l_type == F_UNLCK) return -EINVAL;
    Guard g(lock_);
    const Lock* c = conflict(want);
    if (!c) {
      fl->l_type = F_UNLCK;
      return 0;
    }
    fl->l_type = c->type;
    fl->l_whence = SEEK_SET;
    fl->l_start = c->start;
    fl->l_len = c->end == kToEof ? 0 : c->end - c->start + 1;
    fl->l_pid = c->kind == kOfd ? -1 : c->pid;
    return 0;
  }
  if (want.kind == kPosix && want.type != F_UNLCK) t.proc->has_posix_locks = true;
  if (want.kind == kOfd) f.locks = this;
  return set(t, want, wait);
}

void LockTable::remove_if(bool (*match)(const Lock&, const void*), const void* arg) {
  if (count_.load(std::memory_order_acquire) == 0) return;
  bool removed = false;
  {
    Guard g(lock_);
    for (Lock** pp = &head_; *pp;) {
      Lock* l = *pp;
      if (match(*l, arg)) {
        *pp = l->next;
        heap_->destroy_obj(l);
        count_.fetch_sub(1);
        removed = true;
      } else {
        pp = &l->next;
      }
    }
  }
  if (removed) wake();
}

void LockTable::on_close(Task& t, File& f) {
  if (!t.proc->has_posix_locks || count_.load(std::memory_order_acquire) == 0) return;
  struct Key {
    const void* owner;
    uint64_t dev, ino;
  } key{t.proc, 0, 0};
  if (!identify(t, f, &key.dev, &key.ino)) return;
  remove_if([](const Lock& l, const void* a) {
    const Key& k = *static_cast<const Key*>(a);
    return l.kind == kPosix && l.owner == k.owner && l.dev == k.dev && l.ino == k.ino;
  }, &key);
}

void LockTable::on_exit(const Process& p) {
  if (!p.has_posix_locks) return;
  remove_if([](const Lock& l, const void* a) { return l.kind == kPosix && l.owner == a; }, &p);
}

void LockTable::on_release(const File& f) {
  remove_if([](const Lock& l, const void* a) { return l.kind != kPosix && l.owner == a; }, &f);
}

}  // namespace flatux
