#include "kernel/vfs/lease.h"

#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <linux/errno.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/time.h"
#include "kernel/vfs/fown.h"
#include "kernel/vfs/perm.h"

namespace flatux {

struct LeaseTable::Lease {
  uint64_t dev, ino;
  File* file;          // the open file description holding it (not a reference)
  int fd;              // the descriptor F_SETLEASE named (si_fd of the break signal)
  long type;           // F_RDLCK or F_WRLCK
  long breaking_to;    // -1, or F_UNLCK / F_RDLCK while a break is pending
  uint64_t deadline;   // CLOCK_MONOTONIC ns when a pending break is forced
  Lease* next;
};

namespace {

bool identify(Task& t, File& f, uint64_t* dev, uint64_t* ino, struct stat* st) {
  if (!f.ops->stat || f.ops->stat(t, f, st) < 0) return false;
  *dev = st->st_dev;
  *ino = st->st_ino;
  return true;
}

// Opens of the file (dev, ino) other than through `self`, across every
// process's descriptors: read-only ones and ones that may write.
void count_opens(Task& t, File& self, uint64_t dev, uint64_t ino, int* readers, int* writers) {
  Kernel& k = *t.kernel;
  *readers = *writers = 0;
  FdTable* seen[64];
  int nseen = 0;
  Guard g(k.tasks_lock);
  for (Task* x : k.live_tasks()) {
    FdTable* table = x ? x->proc->files : nullptr;
    if (!table) continue;
    bool dup = false;
    for (int i = 0; i < nseen && !dup; i++) dup = seen[i] == table;
    if (dup) continue;
    if (nseen < 64) seen[nseen++] = table;
    File* counted[64];
    int ncounted = 0;
    for (int fd = 0; fd < table->limit(); fd++) {
      File* f = table->get(fd);
      if (!f) continue;
      bool again = f == &self;
      for (int i = 0; i < ncounted && !again; i++) again = counted[i] == f;
      struct stat st;
      uint64_t d, n;
      if (!again && f->fs == self.fs && !(f->flags & O_PATH) && identify(t, *f, &d, &n, &st) && d == dev &&
          n == ino) {
        if (ncounted < 64) counted[ncounted++] = f;
        ((f->flags & O_ACCMODE) == O_RDONLY ? *readers : *writers) += 1;
      }
      f->put();
    }
  }
}

}  // namespace

LeaseTable::Lease* LeaseTable::find_locked(const File& f) {
  for (Lease* l = head_; l; l = l->next)
    if (l->file == &f) return l;
  return nullptr;
}

// Leases whose pending break ran out of time: a broken write lease that was
// to become a read lease becomes one, the rest go.
void LeaseTable::expire_locked(uint64_t now) {
  for (Lease* l = head_; l;) {
    Lease* next = l->next;
    if (l->breaking_to >= 0 && now >= l->deadline) {
      if (l->breaking_to == F_RDLCK) {
        l->type = F_RDLCK;
        l->breaking_to = -1;
        wake();
      } else {
        remove_locked(l);
      }
    }
    l = next;
  }
}

void LeaseTable::remove_locked(Lease* l) {
  for (Lease** link = &head_; *link; link = &(*link)->next)
    if (*link == l) {
      *link = l->next;
      break;
    }
  heap_->free(l);
  count_.fetch_sub(1, std::memory_order_release);
  wake();
}

void LeaseTable::wake() {
  changed_.fetch_add(1, std::memory_order_release);
  futex_wake(&changed_, 0x7fffffff);
}

long LeaseTable::set(Task& t, File& f, int fd, long type) {
  if (type != F_RDLCK && type != F_WRLCK && type != F_UNLCK) return -EINVAL;
  struct stat st;
  uint64_t dev, ino;
  if (!identify(t, f, &dev, &ino, &st)) return -EINVAL;
  // Linux's vfs_setlease: the file's owner (or CAP_LEASE), a regular file.
  if (!owner_or_root(t, st.st_uid)) return -EACCES;
  if (!S_ISREG(st.st_mode)) return -EINVAL;
  if (type == F_UNLCK) {
    Guard g(lock_);
    Lease* l = find_locked(f);
    if (!l) return -EAGAIN;
    remove_locked(l);
    return 0;
  }
  int readers, writers;
  count_opens(t, f, dev, ino, &readers, &writers);
  bool self_writes = (f.flags & O_ACCMODE) != O_RDONLY;
  if (type == F_RDLCK && (writers || self_writes)) return -EAGAIN;
  if (type == F_WRLCK && (writers || readers)) return -EAGAIN;
  Guard g(lock_);
  expire_locked(monotonic_ns());
  Lease* mine = nullptr;
  for (Lease* l = head_; l; l = l->next) {
    if (l->dev != dev || l->ino != ino) continue;
    if (l->file == &f) {
      mine = l;
      continue;
    }
    // No exclusive lease beside another, no new lease while one is being
    // broken for a writer.
    if (type == F_WRLCK || l->breaking_to == F_UNLCK) return -EAGAIN;
  }
  if (!mine) {
    mine = static_cast<Lease*>(heap_->alloc(sizeof(Lease)));
    if (!mine) return -ENOMEM;
    *mine = Lease{dev, ino, &f, fd, type, -1, 0, head_};
    head_ = mine;
    count_.fetch_add(1, std::memory_order_release);
    f.leases = this;
  }
  mine->type = type;
  mine->fd = fd;
  // A downgrade answers a break to a read lease; a break to none stays.
  if (mine->breaking_to == F_RDLCK) mine->breaking_to = -1;
  wake();
  fown_set_caller(t, f);
  return 0;
}

long LeaseTable::get(Task&, File& f) {
  Guard g(lock_);
  expire_locked(monotonic_ns());
  Lease* l = find_locked(f);
  if (!l) return F_UNLCK;
  return l->breaking_to >= 0 ? l->breaking_to : l->type;
}

bool LeaseTable::conflicts_locked(uint64_t dev, uint64_t ino, bool write) const {
  for (Lease* l = head_; l; l = l->next)
    if (l->dev == dev && l->ino == ino && (write || l->type == F_WRLCK)) return true;
  return false;
}

long LeaseTable::break_for_open(Task& t, File& f, int flags) {
  if (!any() || (flags & O_PATH)) return 0;
  struct stat st;
  uint64_t dev, ino;
  if (!identify(t, f, &dev, &ino, &st) || !S_ISREG(st.st_mode)) return 0;
  return break_for(t, dev, ino, flags);
}

long LeaseTable::break_for(Task& t, uint64_t dev, uint64_t ino, int flags) {
  if (!any()) return 0;
  bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
  int secs = t.kernel->sysctl.lease_break_time.load();
  for (;;) {
    uint32_t seen = changed_.load(std::memory_order_acquire);
    uint64_t deadline = 0;
    {
      Guard g(lock_);
      uint64_t now = monotonic_ns();
      expire_locked(now);
      if (!conflicts_locked(dev, ino, write)) return 0;
      // Start the break of each conflicting lease not yet being broken
      // this way, and signal its holder.
      for (Lease* l = head_; l; l = l->next) {
        if (l->dev != dev || l->ino != ino) continue;
        long to = write ? F_UNLCK : F_RDLCK;
        if (!write && l->type != F_WRLCK) continue;
        if (l->breaking_to == F_UNLCK || l->breaking_to == to) continue;
        l->breaking_to = to;
        l->deadline = now + (secs > 0 ? (uint64_t)secs * 1000000000ull : 1);
        send_sigio(t, *l->file, l->fd, POLL_MSG, POLLIN | POLLRDNORM | POLLMSG);
      }
      if (flags & O_NONBLOCK) return -EWOULDBLOCK;
      for (Lease* l = head_; l; l = l->next)
        if (l->dev == dev && l->ino == ino && l->breaking_to >= 0 && (!deadline || l->deadline < deadline))
          deadline = l->deadline;
    }
    timespec ts{(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
    long r = isys(t, SYS_futex, &changed_, FUTEX_WAIT_BITSET, seen, &ts, 0, FUTEX_BITSET_MATCH_ANY);
    if (r == -EINTR) return -ERESTARTSYS;
  }
}

void LeaseTable::on_release(File& f) {
  Guard g(lock_);
  if (Lease* l = find_locked(f)) remove_locked(l);
}

}  // namespace flatux
