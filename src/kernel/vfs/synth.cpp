#include "kernel/vfs/synth.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/mm/usercopy.h"
#include "kernel/heap.h"

namespace flatux {

// Generated text: priv = the bytes (kernel heap), priv_word = length, the
// stat's mode and inode ride in a small header kept with them.
struct SynthData {
  uint32_t mode;
  uint64_t ino;
  uint64_t dev;  // the device of the filesystem the node belongs to
  size_t len;
  int ndirents;
  const std::atomic<uint64_t>* events;  // a watched text's change count, else null
  uint64_t seen;                        // its value as last reported
  uint64_t made;                        // its value when the text was made
  SynthRegen regen;                     // makes a watched text anew (or null)
  uint64_t ctx;
  char bytes[];  // text, or SynthDirent[ndirents]
};

namespace {

SynthData* data_of(File& f) { return static_cast<SynthData*>(f.priv); }

long synth_pread(Task&, File& f, void* buf, size_t n, int64_t off) {
  SynthData* d = data_of(f);
  if (off < 0) return -EINVAL;
  if ((uint64_t)off >= d->len) return 0;
  size_t take = d->len - (size_t)off < n ? d->len - (size_t)off : n;
  if (copy_to_user(buf, d->bytes + off, take) < 0) return -EFAULT;
  return (long)take;
}

long synth_lseek(Task&, File& f, int64_t off, int whence) {
  return file_seek_kept(f, off, whence, (int64_t)data_of(f)->len);
}

long synth_stat_op(Task&, File& f, struct stat* st) {
  SynthData* d = data_of(f);
  synth_stat(st, d->mode, d->ino, S_ISDIR(d->mode) ? 0 : d->len, d->dev);
  return 0;
}

void synth_release(File& f) { f.heap->free(f.priv); }

// Directory stream: pos counts entries ("." and ".." first).
long synth_getdents64(Task&, File& f, void* buf, size_t n) {
  SynthData* d = data_of(f);
  auto* ents = reinterpret_cast<const SynthDirent*>(d->bytes);
  Guard g(f.pos_lock);
  size_t used = 0;
  char rec[sizeof(uint64_t) * 2 + 4 + 64 + 8];
  while (f.pos < d->ndirents + 2) {
    const char* name;
    uint64_t ino;
    uint8_t type = DT_DIR;
    if (f.pos == 0) { name = "."; ino = d->ino; }
    else if (f.pos == 1) { name = ".."; ino = 1; }
    else {
      const SynthDirent& e = ents[f.pos - 2];
      name = e.name;
      ino = e.ino;
      type = e.type;
    }
    size_t nl = strlen(name);
    size_t reclen = (19 + nl + 1 + 7) & ~(size_t)7;
    if (used + reclen > n) break;
    memset(rec, 0, sizeof rec);
    memcpy(rec, &ino, 8);
    int64_t next = f.pos + 1;
    memcpy(rec + 8, &next, 8);
    uint16_t rl = (uint16_t)reclen;
    memcpy(rec + 16, &rl, 2);
    rec[18] = (char)type;
    memcpy(rec + 19, name, nl);
    if (copy_to_user((char*)buf + used, rec, reclen) < 0) return -EFAULT;
    used += reclen;
    f.pos++;
  }
  if (!used && f.pos < d->ndirents + 2) return -EINVAL;  // buffer too small
  return (long)used;
}

short synth_watched_poll(Task&, File& f, short events) {
  SynthData* d = data_of(f);
  short r = POLLIN | POLLRDNORM;
  uint64_t now = d->events->load(std::memory_order_acquire);
  // Reported once per change: the first poll to see it takes it.
  uint64_t seen = __atomic_load_n(&d->seen, __ATOMIC_RELAXED);
  if (seen != now && __atomic_compare_exchange_n(&d->seen, &seen, now, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    r |= POLLERR | POLLPRI;
  return (short)(r & (events | POLLERR | POLLHUP));
}

// A watched text's bytes are replaced when stale and read from the start
// (as Linux's seq_read starts a new pass at offset 0): every access holds
// the position lock, which file_read_at_pos takes too.
void refresh_locked(Task& t, File& f) {
  SynthData* d = data_of(f);
  if (!d->regen || d->events->load(std::memory_order_acquire) == d->made) return;
  SynthText text(f.heap);
  text.watch(*d->events, d->regen, d->ctx);
  SynthData* nd = d->regen(t, d->ctx, text) == 0 ? text.make_data(d->mode, d->ino, d->dev) : nullptr;
  if (!nd) return;  // the old text stays: better stale than gone
  nd->seen = d->seen;
  f.priv = nd;
  f.heap->free(d);
}

long synth_watched_pread(Task& t, File& f, void* buf, size_t n, int64_t off) {
  Guard g(f.pos_lock);
  if (off == 0) refresh_locked(t, f);
  return synth_pread(t, f, buf, n, off);
}

long synth_watched_read(Task& t, File& f, void* buf, size_t n) {
  Guard g(f.pos_lock);
  if (f.pos == 0) refresh_locked(t, f);
  long r = synth_pread(t, f, buf, n, f.pos);
  if (r > 0) f.pos += r;
  return r;
}

long synth_watched_stat(Task& t, File& f, struct stat* st) {
  Guard g(f.pos_lock);
  return synth_stat_op(t, f, st);
}

long synth_watched_lseek(Task&, File& f, int64_t off, int whence) {
  Guard g(f.pos_lock);
  return file_seek_kept_locked(f, off, whence, (int64_t)data_of(f)->len);
}

// A generated text's operations; a watched one also polls.
constexpr FileOps text_ops() {
  FileOps o{};
  o.read = file_read_at_pos;
  o.pread = synth_pread;
  o.lseek = synth_lseek;
  o.stat = synth_stat_op;
  o.release = synth_release;
  return o;
}

constexpr FileOps watched_ops() {
  FileOps o = text_ops();
  o.read = synth_watched_read;
  o.pread = synth_watched_pread;
  o.lseek = synth_watched_lseek;
  o.stat = synth_watched_stat;
  o.poll = synth_watched_poll;
  return o;
}

const FileOps kSynthTextOps = text_ops();
const FileOps kSynthWatchedOps = watched_ops();

const FileOps kSynthDirOps = {
    .read = nullptr,
    .write = nullptr,
    .pread = nullptr,
    .pwrite = nullptr,
    .lseek = synth_lseek,
    .stat = synth_stat_op,
    .getdents64 = synth_getdents64,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = synth_release,
};

File* make_file(Heap* h, const FileOps* ops, SynthData* d, uint32_t flags) {
  File* f = file_alloc(h, ops, flags, -1);
  if (!f) {
    h->free(d);
    return nullptr;
  }
  f->priv = d;
  return f;
}

}  // namespace

void synth_stat(struct stat* st, uint32_t mode, uint64_t ino, uint64_t size, uint64_t dev) {
  memset(st, 0, sizeof *st);
  st->st_mode = mode;
  st->st_nlink = S_ISDIR(mode) ? 2 : 1;
  st->st_ino = ino;
  st->st_dev = dev;
  st->st_size = (off_t)size;
  st->st_blksize = 1024;
}

void synth_statfs(struct statfs* out, long magic) {
  memset(out, 0, sizeof *out);
  out->f_type = magic;
  out->f_bsize = 4096;
  out->f_namelen = 255;
  out->f_frsize = 4096;
}

SynthText::~SynthText() { heap_->free(data_); }

long SynthText::pread_to_user(void* guest_buf, size_t n, int64_t off) const {
  if (off < 0) return -EINVAL;
  if (failed_) return -ENOMEM;
  if ((uint64_t)off >= len_) return 0;
  size_t take = len_ - (size_t)off < n ? len_ - (size_t)off : n;
  return copy_to_user(guest_buf, data_ + off, take) < 0 ? -EFAULT : (long)take;
}

bool SynthText::reserve(size_t more) {
  if (failed_) return false;
  if (len_ + more <= cap_) return true;
  size_t ncap = cap_ ? cap_ * 2 : 4096;
  while (ncap < len_ + more) ncap *= 2;
  char* n = static_cast<char*>(heap_->alloc(ncap));
  if (!n) {
    failed_ = true;
    return false;
  }
  if (data_) memcpy(n, data_, len_);
  heap_->free(data_);
  data_ = n;
  cap_ = ncap;
  return true;
}

SynthText& SynthText::str(std::string_view s) {
  if (reserve(s.size())) {
    memcpy(data_ + len_, s.data(), s.size());
    len_ += s.size();
  }
  return *this;
}

SynthText& SynthText::dec(int64_t v) {
  char b[24];
  KFmt f(b, sizeof b);
  f.dec(v);
  return str(f.view());
}

SynthText& SynthText::udec(uint64_t v) {
  char b[24];
  KFmt f(b, sizeof b);
  f.udec(v);
  return str(f.view());
}

SynthText& SynthText::hex(uint64_t v, int min_digits) {
  char b[24];
  KFmt f(b, sizeof b);
  f.hexraw(v, min_digits);
  return str(f.view());
}

SynthText& SynthText::oct(uint64_t v, int min_digits) {
  char b[24];
  int n = 0;
  do {
    b[n++] = char('0' + (v & 7));
    v >>= 3;
  } while (v);
  while (n < min_digits && n < 22) b[n++] = '0';
  while (n) ch(b[--n]);
  return *this;
}

SynthData* SynthText::make_data(uint32_t mode, uint64_t ino, uint64_t dev) const {
  if (failed_) return nullptr;
  auto* d = static_cast<SynthData*>(heap_->alloc(sizeof(SynthData) + len_ + 1));
  if (!d) return nullptr;
  d->mode = mode;
  d->ino = ino;
  d->dev = dev;
  d->len = len_;
  d->ndirents = 0;
  d->events = events_;
  d->seen = d->made = seen_;
  d->regen = regen_;
  d->ctx = ctx_;
  if (len_) memcpy(d->bytes, data_, len_);
  return d;
}

File* SynthText::to_file(uint32_t open_flags, uint32_t mode, uint64_t ino, uint64_t dev) {
  SynthData* d = make_data(mode, ino, dev);
  if (!d) return nullptr;
  return make_file(heap_, events_ ? &kSynthWatchedOps : &kSynthTextOps, d, open_flags);
}

File* synth_dir_file(Heap* h, const SynthDirent* entries, int n, uint32_t mode, uint64_t ino, uint64_t dev) {
  auto* d = static_cast<SynthData*>(h->alloc(sizeof(SynthData) + sizeof(SynthDirent) * (n ? n : 1)));
  if (!d) return nullptr;
  d->mode = mode;
  d->ino = ino;
  d->dev = dev;
  d->len = 0;
  d->ndirents = n;
  d->events = nullptr;
  if (n) memcpy(d->bytes, entries, sizeof(SynthDirent) * n);
  return make_file(h, &kSynthDirOps, d, O_RDONLY | O_DIRECTORY);
}

}  // namespace flatux
