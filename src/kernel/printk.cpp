#include "kernel/printk.h"

#include <cstring>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/time.h"
#include "kernel/tty/console.h"

namespace flatux {
namespace {

// "[    0.012345] ": seconds right-aligned in 5, microseconds in 6.
void format_time(KFmt& f, uint64_t ts_ns) {
  f.ch('[').udec_padded(ts_ns / 1000000000ull, 5).ch('.');
  f.udec_padded(ts_ns / 1000 % 1000000, 6, '0').str("] ");
}

}  // namespace

std::string_view log_take_level(std::string_view msg, int* level, int* facility) {
  if (msg.size() >= 3 && msg[0] == '<') {
    size_t i = 1;
    int v = 0;
    while (i < msg.size() && i < 5 && msg[i] >= '0' && msg[i] <= '9') v = v * 10 + (msg[i++] - '0');
    if (i > 1 && i < msg.size() && msg[i] == '>') {
      *level = v & 7;
      *facility = v >> 3;
      msg.remove_prefix(i + 1);  // (substr could throw: not in kernel code)
      return msg;
    }
  }
  return msg;
}

namespace {

void write_host_stderr(std::string_view s) {
  size_t off = 0;
  while (off < s.size()) {
    long r = host::sys(SYS_write, 2, s.data() + off, s.size() - off);
    if (r <= 0) break;
    off += r;
  }
}

}  // namespace

LogBuffer* log_buffer_create(Heap* heap) { return heap->make<LogBuffer>(); }

void log_format_syslog(const LogBuffer& log, const LogRecord& r, KFmt& out) {
  out.ch('<').udec((uint64_t)r.facility * 8 + r.level).ch('>');
  if (log.time) format_time(out, r.ts_ns);
  out.str(std::string_view(r.text, r.len)).ch('\n');
}

void printk_record(Kernel& k, int level, int facility, std::string_view text) {
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  LogBuffer* log = k.log;
  if (!log) {  // before the buffer exists: straight to the host's stderr
    write_host_stderr(text);
    write_host_stderr("\n");
    return;
  }
  uint64_t ts = monotonic_ns() - k.boot_ns;
  bool to_console;
  char line[LogRecord::kTextMax + 32];
  KFmt f(line, sizeof line);
  {
    Guard g(log->lock);
    LogRecord& r = log->recs[log->next_seq % LogBuffer::kRecords];
    r.seq = log->next_seq++;
    if (log->next_seq - log->first_seq > LogBuffer::kRecords) log->first_seq = log->next_seq - LogBuffer::kRecords;
    if (log->clear_seq < log->first_seq) log->clear_seq = log->first_seq;
    if (log->syslog_seq < log->first_seq) log->syslog_seq = log->first_seq;
    r.ts_ns = ts;
    r.level = (uint8_t)(level & 7);
    r.facility = (uint8_t)facility;
    r.len = (uint16_t)(text.size() < LogRecord::kTextMax ? text.size() : LogRecord::kTextMax);
    memcpy(r.text, text.data(), r.len);
    to_console = level < log->console_loglevel;
    if (to_console) {
      if (log->time) format_time(f, ts);
      f.str(std::string_view(r.text, r.len)).ch('\n');
    }
  }
  log->wake.fetch_add(1, std::memory_order_release);
  futex_wake(&log->wake, 1 << 30);
  if (!to_console) return;
  if (!console_write_kernel(k, f.view())) write_host_stderr(f.view());
}

void printk(Kernel& k, std::string_view msg) {
  int level = kDefaultMessageLoglevel, facility = 0;
  std::string_view text = log_take_level(msg, &level, &facility);
  printk_record(k, level, facility, text);
}

}  // namespace flatux
