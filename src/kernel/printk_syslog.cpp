// syslog(2) (klogctl): reading and clearing the printk buffer, and the
// console log level.
#include <linux/errno.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/printk.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"

namespace flatux {
namespace {

enum SyslogAction {
  kClose = 0, kOpen, kRead, kReadAll, kReadClear, kClear, kConsoleOff, kConsoleOn,
  kConsoleLevel, kSizeUnread, kSizeBuffer,
};

size_t formatted_len(const LogBuffer& log, const LogRecord& r) {
  char line[LogRecord::kTextMax + 48];
  KFmt f(line, sizeof line);
  log_format_syslog(log, r, f);
  return f.size();
}

// READ_ALL: the newest records that fit in `len`, oldest first, from
// clear_seq on; non-destructive.
long read_all(Task& t, LogBuffer& log, char* buf, size_t len, bool clear) {
  Guard g(log.lock);
  uint64_t from = log.clear_seq, total = 0;
  for (uint64_t s = log.next_seq; s > log.clear_seq; s--) {
    size_t n = formatted_len(log, log.at(s - 1));
    if (total + n > len) break;
    total += n;
    from = s - 1;
  }
  size_t off = 0;
  for (uint64_t s = from; s < log.next_seq; s++) {
    char line[LogRecord::kTextMax + 48];
    KFmt f(line, sizeof line);
    log_format_syslog(log, log.at(s), f);
    if (off + f.size() > len) break;
    if (copy_to_user(buf + off, line, f.size()) < 0) return -EFAULT;
    off += f.size();
  }
  if (clear) log.clear_seq = log.next_seq;
  return (long)off;
}

// READ: waits for unread records and consumes as many whole ones as fit.
long read_destructive(Task& t, LogBuffer& log, char* buf, size_t len) {
  if (!len) return 0;
  for (;;) {
    uint32_t seq = log.wake.load(std::memory_order_acquire);
    {
      Guard g(log.lock);
      if (log.syslog_seq < log.next_seq) {
        size_t off = 0;
        while (log.syslog_seq < log.next_seq) {
          char line[LogRecord::kTextMax + 48];
          KFmt f(line, sizeof line);
          log_format_syslog(log, log.at(log.syslog_seq), f);
          size_t take = f.size() < len - off ? f.size() : len - off;
          if (!take) break;
          if (copy_to_user(buf + off, line, take) < 0) return off ? (long)off : -EFAULT;
          off += take;
          log.syslog_seq++;
        }
        return (long)off;
      }
    }
    if (isys(t, SYS_futex, &log.wake, FUTEX_WAIT, seq, 0, 0, 0) == -EINTR) return -ERESTARTSYS;
  }
}

}  // namespace

long sys_syslog(Task& t, SyscallArgs a) {
  int type = (int)a[0];
  char* buf = (char*)a[1];
  int len = (int)a[2];
  LogBuffer& log = *t.kernel->log;
  switch (type) {
    case kClose: case kOpen:
      return 0;
    case kRead: case kReadAll: case kReadClear:
      if (!buf || len < 0) return -EINVAL;
      if (!len) return 0;
      if (!access_ok(buf, (size_t)len)) return -EFAULT;
      return type == kRead ? read_destructive(t, log, buf, (size_t)len)
                           : read_all(t, log, buf, (size_t)len, type == kReadClear);
    case kClear: {
      Guard g(log.lock);
      log.clear_seq = log.next_seq;
      return 0;
    }
    case kConsoleOff: {
      Guard g(log.lock);
      if (log.saved_console_loglevel < 0) log.saved_console_loglevel = log.console_loglevel;
      log.console_loglevel = kMinimumConsoleLoglevel;
      return 0;
    }
    case kConsoleOn: {
      Guard g(log.lock);
      if (log.saved_console_loglevel >= 0) {
        log.console_loglevel = log.saved_console_loglevel;
        log.saved_console_loglevel = -1;
      }
      return 0;
    }
    case kConsoleLevel: {
      if (len < 1 || len > 8) return -EINVAL;
      Guard g(log.lock);
      log.console_loglevel = len < kMinimumConsoleLoglevel ? kMinimumConsoleLoglevel : len;
      log.saved_console_loglevel = -1;  // an explicit level ends CONSOLE_OFF
      return 0;
    }
    case kSizeUnread: {
      Guard g(log.lock);
      size_t n = 0;
      for (uint64_t s = log.syslog_seq; s < log.next_seq; s++) n += formatted_len(log, log.at(s));
      return (long)n;
    }
    case kSizeBuffer:
      return (long)LogBuffer::capacity();
    default:
      return -EINVAL;
  }
}

}  // namespace flatux
