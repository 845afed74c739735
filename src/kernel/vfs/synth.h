// Files whose contents the kernel generates (procfs, devfs listings): the
// text is produced once at open, like Linux's seq_file snapshot, and read
// from kernel memory.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernel/lib/kfmt.h"
#include "kernel/vfs/file.h"

struct stat;
struct statfs;

namespace flatux {

class SynthText;
struct SynthData;
struct Task;
// Writes a watched text anew (SynthText::watch): ctx is what it needs to
// know which one.
using SynthRegen = long (*)(Task& t, uint64_t ctx, SynthText& out);

// A growable text buffer in the kernel heap.
class SynthText {
 public:
  explicit SynthText(Heap* h) : heap_(h) {}
  ~SynthText();
  SynthText& str(std::string_view s);
  SynthText& dec(int64_t v);
  SynthText& udec(uint64_t v);
  SynthText& hex(uint64_t v, int min_digits = 1);
  SynthText& oct(uint64_t v, int min_digits = 1);
  SynthText& ch(char c) { return str(std::string_view(&c, 1)); }
  bool ok() const { return !failed_; }
  // Hands the buffer to a new read-only file (the text is then empty).
  File* to_file(uint32_t open_flags, uint32_t mode, uint64_t ino, uint64_t dev);
  // Called before the text is made: it goes stale when `events` (the mount
  // table's change count) moves on, and the file's poll says POLLERR|
  // POLLPRI once for each change since, as Linux's mounts_poll. With
  // `regen`, a stale text is made anew when it is read from its start
  // again, as Linux's seq_file shows the table as it is at each pass
  // (systemd seeks back and re-reads mountinfo after each mount it makes).
  void watch(const std::atomic<uint64_t>& events, SynthRegen regen = nullptr, uint64_t ctx = 0) {
    events_ = &events;
    seen_ = events.load(std::memory_order_acquire);
    regen_ = regen;
    ctx_ = ctx;
  }
  std::string_view view() const { return {data_, len_}; }
  // The text with its header, as a file's data (nullptr: ENOMEM).
  SynthData* make_data(uint32_t mode, uint64_t ino, uint64_t dev) const;
  // Copies what lies at `off` to the guest (a pread of the text): bytes,
  // 0 past the end, -ENOMEM when making it failed, -EFAULT.
  long pread_to_user(void* guest_buf, size_t n, int64_t off) const;

 private:
  bool reserve(size_t more);
  Heap* heap_;
  char* data_ = nullptr;
  size_t len_ = 0, cap_ = 0;
  bool failed_ = false;
  const std::atomic<uint64_t>* events_ = nullptr;
  uint64_t seen_ = 0;
  SynthRegen regen_ = nullptr;
  uint64_t ctx_ = 0;
};

struct SynthDirent {
  char name[64];
  uint8_t type;  // DT_*
  uint64_t ino;
};

// A directory listing as a File (getdents64, fstat); entries are copied.
File* synth_dir_file(Heap* h, const SynthDirent* entries, int n, uint32_t mode, uint64_t ino,
                     uint64_t dev);

// A stat for generated nodes.
void synth_stat(struct stat* st, uint32_t mode, uint64_t ino, uint64_t size, uint64_t dev);
// A statfs of a filesystem of generated nodes: its magic, 4 KiB blocks,
// nothing used or free.
void synth_statfs(struct statfs* out, long magic);

}  // namespace flatux
