// Kernel messages: Linux's printk ring buffer. Every message is a record
// (level, facility, sequence number, timestamp, text); records below the
// console log level are also written to the console, Linux-style:
//   [    0.012345] text
// The buffer is read back through syslog(2) (printk_syslog.cpp) and
// /dev/kmsg (printk_kmsg.cpp).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernel/lib/kfmt.h"
#include "kernel/lib/sync.h"

namespace flatux {

struct Kernel;
class Heap;

// Linux's log levels (KERN_EMERG .. KERN_DEBUG).
enum LogLevel : int {
  kLogEmerg = 0, kLogAlert, kLogCrit, kLogErr, kLogWarning, kLogNotice, kLogInfo, kLogDebug,
};
constexpr int kDefaultMessageLoglevel = 4;  // a message without a level
constexpr int kMinimumConsoleLoglevel = 1;
constexpr int kDefaultConsoleLoglevel = 7;

struct LogRecord {
  uint64_t seq;
  uint64_t ts_ns;     // since boot
  uint8_t level, facility;
  uint16_t len;
  static constexpr size_t kTextMax = 240;  // longer messages are cut here
  char text[kTextMax];
};

struct LogBuffer {
  static constexpr int kRecords = 512;
  KMutex lock;
  LogRecord recs[kRecords];
  uint64_t first_seq = 0;   // oldest record still held
  uint64_t next_seq = 0;    // the next record's number
  uint64_t clear_seq = 0;   // SYSLOG_ACTION_CLEAR: READ_ALL starts here
  uint64_t syslog_seq = 0;  // SYSLOG_ACTION_READ's (destructive) position
  int console_loglevel = kDefaultConsoleLoglevel;
  int saved_console_loglevel = -1;  // while SYSLOG_ACTION_CONSOLE_OFF holds
  bool time = true;                 // printk.time: timestamps on the console
  std::atomic<uint32_t> wake{0};    // bumped per record: wakes readers

  const LogRecord& at(uint64_t seq) const { return recs[seq % kRecords]; }
  static size_t capacity() { return (size_t)kRecords * LogRecord::kTextMax; }
};

LogBuffer* log_buffer_create(Heap* heap);

// Logs one message. A leading "<N>" sets the level (default 4); a trailing
// newline is dropped. Written to the console when level < console_loglevel.
void printk(Kernel& k, std::string_view msg);
// Same, with the level and facility given (facility 0: kernel, 1: user).
void printk_record(Kernel& k, int level, int facility, std::string_view text);

// Strips a "<N>" prefix (N = facility * 8 + level), setting both.
std::string_view log_take_level(std::string_view msg, int* level, int* facility);

// Formats a record the way syslog(2) READ_ALL shows it:
// "<L>[    0.012345] text\n" (the timestamp only with printk.time).
void log_format_syslog(const LogBuffer& log, const LogRecord& r, KFmt& out);

// Convenience: build a message with KFmt and log it.
template <typename F>
void printkf(Kernel& k, F&& build) {
  char buf[1024];
  KFmt f(buf, sizeof buf);
  build(f);
  printk(k, f.view());
}

}  // namespace flatux
