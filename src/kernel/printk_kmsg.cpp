#include "kernel/printk_kmsg.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <linux/poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "kernel/task/isys.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/printk.h"
#include "kernel/signal/signal.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

// A reader's position is the sequence number of its next record (File::pos).
LogBuffer& log_of(Task& t) { return *t.kernel->log; }

long kmsg_read(Task& t, File& f, void* buf, size_t n) {
  LogBuffer& log = log_of(t);
  char line[LogRecord::kTextMax + 64];
  for (;;) {
    uint32_t seq = log.wake.load(std::memory_order_acquire);
    KFmt out(line, sizeof line);
    {
      Guard p(f.pos_lock);
      Guard g(log.lock);
      if ((uint64_t)f.pos < log.first_seq) {
        f.pos = (int64_t)log.first_seq;  // overwritten: say so once, then go on
        return -EPIPE;
      }
      if ((uint64_t)f.pos < log.next_seq) {
        const LogRecord& r = log.at((uint64_t)f.pos);
        out.udec((uint64_t)r.facility * 8 + r.level).ch(',').udec(r.seq).ch(',');
        out.udec(r.ts_ns / 1000).str(",-;").str(std::string_view(r.text, r.len)).ch('\n');
        if (out.size() > n) return -EINVAL;
        f.pos++;
      }
    }
    if (out.size()) return copy_to_user(buf, line, out.size()) < 0 ? -EFAULT : (long)out.size();
    if (f.flags & O_NONBLOCK) return -EAGAIN;
    if (isys(t, SYS_futex, &log.wake, FUTEX_WAIT, seq, 0, 0, 0) == -EINTR) return -ERESTARTSYS;
  }
}

// One write is one record (what does not fit is cut), with an optional
// "<N>" prefix for its level and facility.
void kmsg_record(Task& t, std::string_view msg) {
  int level = kDefaultMessageLoglevel, facility = 0;
  msg = log_take_level(msg, &level, &facility);
  if (facility == 0) facility = 1;  // the kernel facility is not for userspace
  printk_record(*t.kernel, level, facility, msg);
}

constexpr size_t kKmsgWriteMax = LogRecord::kTextMax + 16;

long kmsg_write(Task& t, File&, const void* buf, size_t n) {
  char text[kKmsgWriteMax];
  size_t take = n < sizeof text ? n : sizeof text;
  if (copy_from_user(text, buf, take) < 0) return -EFAULT;
  kmsg_record(t, std::string_view(text, take));
  return (long)n;
}

// writev is one record too, as Linux's devkmsg_write_iter: systemd and
// syslog write the prefix, the identifier and the text as separate pieces.
long kmsg_writev(Task& t, File&, const iovec* iov, int cnt, int64_t, int flags) {
  if (flags) return -EOPNOTSUPP;
  char text[kKmsgWriteMax];
  size_t take = 0, total = 0;
  for (int i = 0; i < cnt; i++) {
    size_t n = iov[i].iov_len;
    size_t room = sizeof text - take, part = n < room ? n : room;
    if (part && copy_from_user(text + take, iov[i].iov_base, part) < 0) return -EFAULT;
    take += part;
    total += n;
  }
  kmsg_record(t, std::string_view(text, take));
  return (long)total;
}

long kmsg_lseek(Task& t, File& f, int64_t off, int whence) {
  if (off) return -ESPIPE;
  LogBuffer& log = log_of(t);
  Guard p(f.pos_lock);
  Guard g(log.lock);
  switch (whence) {
    case SEEK_SET: f.pos = (int64_t)log.first_seq; return 0;
    case SEEK_END: f.pos = (int64_t)log.next_seq; return 0;
    case SEEK_DATA: f.pos = (int64_t)log.clear_seq; return 0;
    default: return -EINVAL;
  }
}

short kmsg_poll(Task& t, File& f, short events) {
  LogBuffer& log = log_of(t);
  Guard g(log.lock);
  short r = POLLOUT | POLLWRNORM;
  if ((uint64_t)f.pos < log.next_seq) r |= POLLIN | POLLRDNORM;
  if ((uint64_t)f.pos < log.first_seq) r |= POLLERR | POLLPRI;
  return (short)(r & (events | POLLERR | POLLHUP));
}

long kmsg_stat(Task&, File&, struct stat* st) {
  synth_stat(st, S_IFCHR | 0644, 5, 0, 6);
  st->st_rdev = (1 << 8) | 11;  // makedev(1, 11)
  return 0;
}

const FileOps kKmsgOps = {
    .read = kmsg_read, .write = kmsg_write, .pread = nullptr, .pwrite = nullptr, .lseek = kmsg_lseek,
    .stat = kmsg_stat, .getdents64 = nullptr, .ioctl = nullptr, .statfs = nullptr, .release = nullptr,
    .poll = kmsg_poll, .writev = kmsg_writev,
};

}  // namespace

long kmsg_open(Task& t, int flags, File** out) {
  LogBuffer* log = t.kernel->log;
  if (!log) return -ENXIO;
  File* f = file_alloc(t.kernel->heap, &kKmsgOps, (uint32_t)flags & (O_ACCMODE | O_NONBLOCK), -1);
  if (!f) return -ENOMEM;
  Guard g(log->lock);
  f->pos = (int64_t)log->first_seq;  // a new reader starts at the oldest record
  *out = f;
  return 0;
}

}  // namespace flatux
