// POSIX message queues: the queues, their open files and the mq_* calls
// (what and why: ipc/mqueue.h).
#include "kernel/ipc/mqueue.h"

#include <climits>
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/futex.h>
#include <linux/mqueue.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/mm/mm.h"
#include "kernel/mm/usercopy.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"
#include "kernel/task/isys.h"
#include "kernel/task/process.h"
#include "kernel/time.h"
#include "kernel/vfs/fdref.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/perm.h"
#include "kernel/vfs/synth.h"

namespace flatux {

struct MqMsg {
  MqMsg* next;
  unsigned prio;
  size_t len;
  char data[];
};

struct MQueue {
  char name[kMqNameMax + 1];
  uint32_t mode, uid, gid;
  uint64_t ino;
  timespec atime, mtime, ctime;
  long maxmsg, msgsize;
  long curmsgs = 0;
  uint64_t qsize = 0;          // bytes of the messages queued
  MqMsg* head = nullptr;       // highest priority first, oldest first within one
  bool named = true;           // in the table (not unlinked)
  int refs = 1;                // the table's while named, and each open file's (table lock)
  int receivers = 0;           // receivers asleep on it (no notification then)
  std::atomic<uint32_t> changed{0};
  // The one registration for a message arriving in the empty queue.
  int notify_pid = 0;          // 0: none
  int notify_kind = 0;         // SIGEV_NONE or SIGEV_SIGNAL
  int notify_signo = 0;
  sigval notify_value{};
  File* notify_file = nullptr;  // the file it was made through: its release ends it
};

namespace {

constexpr int kHardMsgMax = 65536;              // HARD_MSGMAX
constexpr long kHardMsgSizeMax = 16 * 1024 * 1024;  // HARD_MSGSIZEMAX
constexpr int kFilentSize = 80;                 // what stat says of a queue's size, as Linux's

MqTable& table_of(Task& t) { return mq_table(*t.kernel); }

void free_msg(Kernel& k, MqMsg* m) {
  mem_uncharge(k.mem, sizeof(MqMsg) + m->len);
  k.heap->free(m);
}

// Drops a reference (table lock held): the last frees the queue.
void put_locked(Kernel& k, MQueue* q) {
  if (--q->refs > 0) return;
  while (MqMsg* m = q->head) {
    q->head = m->next;
    free_msg(k, m);
  }
  k.heap->destroy_obj(q);
}

void wake(MQueue& q) {
  q.changed.fetch_add(1, std::memory_order_release);
  futex_wake(&q.changed, 0x7fffffff);
}

MQueue* find_locked(MqTable& tab, const char* name) {
  for (MQueue* q : tab.queues)
    if (q && strcmp(q->name, name) == 0) return q;
  return nullptr;
}

int count_locked(const MqTable& tab) {
  int n = 0;
  for (MQueue* q : tab.queues) n += q != nullptr;
  return n;
}

// A name as mq_open takes it once the C library has dropped the leading
// slash: one path component (Linux's lookup_one_len).
long check_name(const char* name) {
  size_t n = strlen(name);
  if (n == 0 || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return -EACCES;
  return n > kMqNameMax ? -ENAMETOOLONG : 0;
}

// --- the open file --------------------------------------------------------

MQueue& queue_of(File& f) { return *static_cast<MQueue*>(f.priv); }

// Reading a queue's file gives its state, as Linux's mqueue_read_file.
long mq_file_pread(Task& t, File& f, void* buf, size_t n, int64_t off) {
  MQueue& q = queue_of(f);
  SynthText text(t.kernel->heap);
  {
    Guard g(table_of(t).lock);
    // "QSIZE:%-10lu NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n"
    char line[96];
    KFmt o(line, sizeof line);
    auto left = [&](int64_t v, int width) {
      size_t at = o.size();
      o.dec(v);
      while (o.size() < at + (size_t)width) o.ch(' ');
    };
    o.str("QSIZE:");
    left((int64_t)q.qsize, 10);
    o.str(" NOTIFY:");
    left(q.notify_pid ? q.notify_kind : 0, 5);
    o.str(" SIGNO:");
    left(q.notify_pid && q.notify_kind == SIGEV_SIGNAL ? q.notify_signo : 0, 5);
    o.str(" NOTIFY_PID:");
    left(q.notify_pid, 6);
    o.ch('\n');
    text.str(o.view());
    q.atime = realtime_now();
  }
  return text.pread_to_user(buf, n, off);
}

MqNode node_of(const MQueue& q) { return MqNode{q.mode, q.uid, q.gid, q.ino, q.atime, q.mtime, q.ctime}; }

long mq_file_stat(Task& t, File& f, struct stat* st) {
  MqNode n;
  {
    Guard g(table_of(t).lock);
    n = node_of(queue_of(f));
  }
  mq_stat_of(n, st);
  return 0;
}

short mq_file_poll(Task& t, File& f, short events) {
  MQueue& q = queue_of(f);
  Guard g(table_of(t).lock);
  short r = 0;
  if (q.curmsgs) r |= POLLIN | POLLRDNORM;
  if (q.curmsgs < q.maxmsg) r |= POLLOUT | POLLWRNORM;
  return (short)(r & (events | POLLERR | POLLHUP));
}

void mq_file_release(File& f) {
  MQueue* q = static_cast<MQueue*>(f.priv);
  Kernel& k = *reinterpret_cast<Kernel*>(f.priv_word);
  MqTable& tab = mq_table(k);
  Guard g(tab.lock);
  if (q->notify_file == &f) q->notify_pid = 0, q->notify_file = nullptr;
  put_locked(k, q);
}

}  // namespace

const FileOps kMqFileOps = {
    .read = file_read_at_pos, .write = nullptr, .pread = mq_file_pread, .pwrite = nullptr,
    .lseek = nullptr, .stat = mq_file_stat, .getdents64 = nullptr, .ioctl = nullptr, .statfs = nullptr,
    .release = mq_file_release, .poll = mq_file_poll,
};

namespace {

MQueue* mq_of(File* f) { return f && f->ops == &kMqFileOps ? &queue_of(*f) : nullptr; }

// Linux's generic permission on the queue's mode for the open's access.
long may_open(Task& t, const MQueue& q, int flags) {
  int acc = flags & O_ACCMODE;
  int mask = (acc == O_RDONLY ? R_OK : acc == O_WRONLY ? W_OK : R_OK | W_OK);
  return permission(creds_of(t), FilePerms{S_IFREG | q.mode, q.uid, q.gid}, mask);
}

long open_file(Task& t, MQueue* q, int flags, File** out) {
  File* f = file_alloc(t.kernel->heap, &kMqFileOps, (uint32_t)flags & (O_ACCMODE | O_NONBLOCK), -1);
  if (!f) return -ENOMEM;
  q->refs++;
  f->priv = q;
  f->priv_word = (uint64_t)(uintptr_t)t.kernel;
  *out = f;
  return 0;
}

// A new queue (table lock held): the attributes checked as Linux's
// mq_attr_ok, the name's slot and its inode number.
long create_locked(Task& t, MqTable& tab, const char* name, uint32_t mode, const mq_attr* attr, MQueue** out) {
  const Creds& c = t.proc->creds;
  bool resource = capable(c, CAP_SYS_RESOURCE);
  long maxmsg = tab.msg_default.load(), msgsize = tab.msgsize_default.load();
  if (attr) {
    maxmsg = attr->mq_maxmsg;
    msgsize = attr->mq_msgsize;
    if (maxmsg <= 0 || msgsize <= 0) return -EINVAL;
    if (!resource && (maxmsg > tab.msg_max.load() || msgsize > tab.msgsize_max.load())) return -EINVAL;
    if (maxmsg > kHardMsgMax || msgsize > kHardMsgSizeMax) return -EINVAL;
  }
  if (count_locked(tab) >= tab.queues_max.load() && !resource) return -ENOSPC;
  int slot = 0;
  while (slot < kMqQueuesMaxLimit && tab.queues[slot]) slot++;
  if (slot == kMqQueuesMaxLimit) return -ENOSPC;
  MQueue* q = t.kernel->heap->make<MQueue>();
  if (!q) return -ENOMEM;
  copy_cstr(q->name, sizeof q->name, name);
  q->mode = mode & 0777 & ~t.proc->fs->umask;
  q->uid = c.fsuid;
  q->gid = c.fsgid;
  q->ino = tab.next_ino++;
  q->atime = q->mtime = q->ctime = realtime_now();
  q->maxmsg = maxmsg;
  q->msgsize = msgsize;
  tab.queues[slot] = q;
  *out = q;
  return 0;
}

void unlink_locked(Kernel& k, MqTable& tab, MQueue* q) {
  for (MQueue*& slot : tab.queues)
    if (slot == q) slot = nullptr;
  q->named = false;
  put_locked(k, q);
}

// --- sending and receiving ---------------------------------------------

// A CLOCK_REALTIME deadline from the guest (nullptr: none); EINVAL for a
// time that is no time.
long read_deadline(uint64_t guest, timespec* out, bool* has) {
  *has = guest != 0;
  if (!guest) return 0;
  if (copy_from_user(out, (const void*)guest, sizeof *out) < 0) return -EFAULT;
  return out->tv_sec < 0 || out->tv_nsec < 0 || out->tv_nsec >= 1000000000 ? -EINVAL : 0;
}

// Sleeps (table lock dropped) until the queue changes from `seen`: 0, or
// -ETIMEDOUT past the deadline, or -ERESTARTSYS for a signal.
long sleep_on(Task& t, MqTable& tab, MQueue& q, uint32_t seen, const timespec* deadline) {
  q.refs++;
  tab.lock.unlock();
  long r = isys(t, SYS_futex, &q.changed, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, seen, deadline, 0,
                FUTEX_BITSET_MATCH_ANY);
  tab.lock.lock();
  put_locked(*t.kernel, &q);
  if (r == -EINTR) return -ERESTARTSYS;
  return r == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

// The registration, if a message came to an empty queue with nobody
// asleep to take it: what to send, and the registration is gone.
struct Notice {
  int pid = 0, signo = 0;
  sigval value{};
};

Notice take_notice_locked(MQueue& q) {
  Notice n;
  if (!q.notify_pid || q.curmsgs != 1 || q.receivers) return n;
  if (q.notify_kind == SIGEV_SIGNAL) n = Notice{q.notify_pid, q.notify_signo, q.notify_value};
  q.notify_pid = 0;
  q.notify_file = nullptr;
  return n;
}

void send_notice(Task& t, const Notice& n) {
  if (!n.pid) return;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = n.signo;
  si.si_code = SI_MESGQ;
  si.si_value = n.value;
  si.si_pid = t.proc->pid;
  si.si_uid = t.proc->creds.uid;
  Guard g(t.kernel->tasks_lock);
  if (Process* p = find_process_locked(*t.kernel, n.pid)) send_signal(*p, nullptr, n.signo, si, sent_by(*t.proc));
}

void enqueue_locked(MQueue& q, MqMsg* m) {
  MqMsg** link = &q.head;
  while (*link && (*link)->prio >= m->prio) link = &(*link)->next;
  m->next = *link;
  *link = m;
  q.curmsgs++;
  q.qsize += m->len;
  q.mtime = q.ctime = realtime_now();
}

long do_send(Task& t, File& f, MQueue& q, uint64_t guest_msg, size_t len, unsigned prio, uint64_t guest_deadline) {
  Kernel& k = *t.kernel;
  MqTable& tab = table_of(t);
  if (prio >= MQ_PRIO_MAX) return -EINVAL;
  timespec deadline;
  bool timed;
  if (long r = read_deadline(guest_deadline, &deadline, &timed); r < 0) return r;
  if ((long)len > q.msgsize) return -EMSGSIZE;
  if (!mem_charge(k.mem, sizeof(MqMsg) + len)) return -ENOMEM;
  auto* m = static_cast<MqMsg*>(k.heap->alloc(sizeof(MqMsg) + len));
  if (!m) {
    mem_uncharge(k.mem, sizeof(MqMsg) + len);
    return -ENOMEM;
  }
  m->prio = prio;
  m->len = len;
  m->next = nullptr;
  if (len && copy_from_user(m->data, (const void*)guest_msg, len) < 0) {
    free_msg(k, m);
    return -EFAULT;
  }
  Notice notice;
  {
    Guard g(tab.lock);
    long r = 0;
    while (q.curmsgs >= q.maxmsg) {
      if (f.flags & O_NONBLOCK) r = -EAGAIN;
      else r = sleep_on(t, tab, q, q.changed.load(std::memory_order_acquire), timed ? &deadline : nullptr);
      if (r < 0) break;
    }
    if (r < 0) {
      free_msg(k, m);
      return r;
    }
    enqueue_locked(q, m);
    notice = take_notice_locked(q);
    wake(q);
  }
  send_notice(t, notice);
  return 0;
}

long do_receive(Task& t, File& f, MQueue& q, uint64_t guest_buf, size_t len, uint64_t guest_prio,
                uint64_t guest_deadline) {
  Kernel& k = *t.kernel;
  MqTable& tab = table_of(t);
  timespec deadline;
  bool timed;
  if (long r = read_deadline(guest_deadline, &deadline, &timed); r < 0) return r;
  if ((long)len < q.msgsize) return -EMSGSIZE;
  MqMsg* m = nullptr;
  {
    Guard g(tab.lock);
    long r = 0;
    while (!q.head) {
      if (f.flags & O_NONBLOCK) {
        r = -EAGAIN;
        break;
      }
      q.receivers++;
      r = sleep_on(t, tab, q, q.changed.load(std::memory_order_acquire), timed ? &deadline : nullptr);
      q.receivers--;
      if (r < 0) break;
    }
    if (r < 0) return r;
    m = q.head;
    q.head = m->next;
    q.curmsgs--;
    q.qsize -= m->len;
    q.atime = realtime_now();
    wake(q);
  }
  long r = m->len ? copy_to_user((void*)guest_buf, m->data, m->len) : 0;
  if (r == 0 && guest_prio && put_user((void*)guest_prio, m->prio) < 0) r = -EFAULT;
  long n = (long)m->len;
  free_msg(k, m);
  return r < 0 ? r : n;
}

}  // namespace

MqTable* mq_table_create(Heap* heap) { return heap->make<MqTable>(); }

MqTable& mq_table(Kernel& k) { return *k.ipc->mq; }
const char* mq_name_of(const MQueue& q) { return q.name; }
uint64_t mq_ino_of(const MQueue& q) { return q.ino; }

bool mq_node(Kernel& k, const char* name, MqNode* out) {
  MqTable& tab = mq_table(k);
  Guard g(tab.lock);
  MQueue* q = find_locked(tab, name);
  if (!q) return false;
  *out = node_of(*q);
  return true;
}

void mq_stat_of(const MqNode& n, struct stat* st) {
  synth_stat(st, S_IFREG | n.mode, n.ino, kFilentSize, kMqueueDev);
  st->st_uid = n.uid;
  st->st_gid = n.gid;
  st->st_atim = n.atime;
  st->st_mtim = n.mtime;
  st->st_ctim = n.ctime;
}

long mq_open_name(Task& t, const char* name, int flags, uint32_t mode, File** out) {
  return mq_open_attr(t, name, flags, mode, nullptr, out);
}

long mq_open_attr(Task& t, const char* name, int flags, uint32_t mode, const mq_attr* attr, File** out) {
  if (long r = check_name(name)) return r;
  MqTable& tab = table_of(t);
  Guard g(tab.lock);
  MQueue* q = find_locked(tab, name);
  if (q) {
    if ((flags & O_CREAT) && (flags & O_EXCL)) return -EEXIST;
    // (Linux asks this only of a queue that exists: a new one opens on a
    // descriptor that neither sends nor receives.)
    if ((flags & O_ACCMODE) == O_ACCMODE) return -EINVAL;
    if (long r = may_open(t, *q, flags)) return r;
  } else {
    if (!(flags & O_CREAT)) return -ENOENT;
    if (long r = create_locked(t, tab, name, mode, attr, &q)) return r;
  }
  return open_file(t, q, flags, out);
}

long mq_unlink_name(Task& t, const char* name) {
  if (long r = check_name(name)) return r;
  MqTable& tab = table_of(t);
  Guard g(tab.lock);
  MQueue* q = find_locked(tab, name);
  if (!q) return -ENOENT;
  // The folder is 01777 root's: the sticky rule decides.
  if (sticky_blocks(creds_of(t), FilePerms{S_IFDIR | 01777, 0, 0}, FilePerms{S_IFREG | q->mode, q->uid, q->gid}))
    return -EACCES;
  unlink_locked(*t.kernel, tab, q);
  return 0;
}

// --- the system calls -----------------------------------------------------

long sys_mq_open(Task& t, SyscallArgs a) {
  char name[kMqNameMax + 2];
  long r = strncpy_from_user(name, (const char*)a[0], sizeof name);
  if (r < 0) return r;
  if ((size_t)r >= sizeof name - 1) return -ENAMETOOLONG;
  int flags = (int)a[1];
  mq_attr attr;
  bool has_attr = (flags & O_CREAT) && a[3];
  if (has_attr && copy_from_user(&attr, (const void*)a[3], sizeof attr) < 0) return -EFAULT;
  File* f = nullptr;
  if ((r = mq_open_attr(t, name, flags, (uint32_t)a[2], has_attr ? &attr : nullptr, &f)) < 0) return r;
  int fd = t.proc->files->install(f, flags & O_CLOEXEC);
  f->put();
  return fd;
}

long sys_mq_unlink(Task& t, SyscallArgs a) {
  char name[kMqNameMax + 2];
  long r = strncpy_from_user(name, (const char*)a[0], sizeof name);
  if (r < 0) return r;
  if ((size_t)r >= sizeof name - 1) return -ENAMETOOLONG;
  return mq_unlink_name(t, name);
}

long sys_mq_timedsend(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  MQueue* q = mq_of(f.get());
  int acc = f ? (int)(f->flags & O_ACCMODE) : 0;
  if (!q || (acc != O_WRONLY && acc != O_RDWR)) return -EBADF;
  return do_send(t, *f, *q, a[1], (size_t)a[2], (unsigned)a[3], a[4]);
}

long sys_mq_timedreceive(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  MQueue* q = mq_of(f.get());
  int acc = f ? (int)(f->flags & O_ACCMODE) : 0;
  if (!q || (acc != O_RDONLY && acc != O_RDWR)) return -EBADF;
  return do_receive(t, *f, *q, a[1], (size_t)a[2], a[3], a[4]);
}

long sys_mq_notify(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  MQueue* q = mq_of(f.get());
  if (!q) return -EBADF;
  sigevent ev;
  if (a[1] && copy_from_user(&ev, (const void*)a[1], sizeof ev) < 0) return -EFAULT;
  if (a[1]) {
    if (ev.sigev_notify == SIGEV_THREAD) return -EINVAL;  // its netlink cookie is not served
    if (ev.sigev_notify != SIGEV_NONE && ev.sigev_notify != SIGEV_SIGNAL) return -EINVAL;
    if (ev.sigev_notify == SIGEV_SIGNAL && (ev.sigev_signo <= 0 || ev.sigev_signo > kNSig)) return -EINVAL;
  }
  MqTable& tab = table_of(t);
  Guard g(tab.lock);
  if (!a[1]) {
    if (q->notify_pid == t.proc->pid) q->notify_pid = 0, q->notify_file = nullptr;
    return 0;
  }
  if (q->notify_pid) return -EBUSY;
  q->notify_pid = t.proc->pid;
  q->notify_kind = ev.sigev_notify;
  q->notify_signo = ev.sigev_signo;
  q->notify_value = ev.sigev_value;
  q->notify_file = f.get();
  return 0;
}

long sys_mq_getsetattr(Task& t, SyscallArgs a) {
  FdRef f(t, a[0]);
  MQueue* q = mq_of(f.get());
  if (!q) return -EBADF;
  mq_attr in, old;
  if (a[1]) {
    if (copy_from_user(&in, (const void*)a[1], sizeof in) < 0) return -EFAULT;
    if (in.mq_flags & ~(long)O_NONBLOCK) return -EINVAL;
  }
  memset(&old, 0, sizeof old);
  {
    Guard g(table_of(t).lock);
    old.mq_flags = f->flags & O_NONBLOCK;
    old.mq_maxmsg = q->maxmsg;
    old.mq_msgsize = q->msgsize;
    old.mq_curmsgs = q->curmsgs;
  }
  if (a[1]) {
    uint32_t flags = f->flags;
    while (!__atomic_compare_exchange_n(&f->flags, &flags, (flags & ~(uint32_t)O_NONBLOCK) | (uint32_t)in.mq_flags,
                                        false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
  }
  if (a[2] && copy_to_user((void*)a[2], &old, sizeof old) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
