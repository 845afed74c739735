// `flatux mkimage`: sizes the content, formats the image and copies every
// entry in, with a one-line progress report when stderr is a terminal.
#include "tools/mkimage/mkimage.h"

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/mkimage/ext4_writer.h"
#include "tools/mkimage/source.h"

namespace flatux::mkimage {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBlock = 4096;

uint64_t blocks_of(uint64_t bytes) { return (bytes + kBlock - 1) / kBlock; }
double mib(uint64_t b) { return (double)b / kMiB; }

struct Usage {
  uint64_t entries = 0, dirs = 0, blocks = 0, bytes = 0;
};

// What the content needs, counted generously: a block per folder, a block
// per slow symlink, one for xattrs that overflow the inode, one extent
// block per 128 MiB of file.
struct Counter : Visitor {
  Usage u;
  void entry(const Entry& e, Data*) override {
    u.entries++;
    if (e.kind == Kind::Dir) u.dirs++, u.blocks++;
    if (e.kind == Kind::File) {
      u.blocks += blocks_of(e.size) + e.size / (128 * kMiB);
      u.bytes += e.size;
    }
    if (e.kind == Kind::Symlink && e.size >= 60) u.blocks++;
    size_t xattr_bytes = 0;
    for (const auto& [k, v] : e.xattrs) xattr_bytes += k.size() + v.size() + 20;
    if (xattr_bytes > 80) u.blocks += blocks_of(xattr_bytes);
  }
};

class Progress {
 public:
  Progress() : on_(isatty(2)) {}
  void reading(const std::string& src) {
    if (!on_) return;
    fprintf(stderr, "\r\033[Kflatux mkimage: reading %s", src.c_str());
    shown_ = true;
  }
  void start(const Usage& total, bool known) {
    total_ = total;
    known_ = known;
  }
  void add_entry() {
    entries_++;
    tick();
  }
  void add_bytes(uint64_t n) {
    bytes_ += n;
    tick();
  }
  void clear() {
    if (on_ && shown_) fputs("\r\033[K", stderr);
    shown_ = false;
  }

 private:
  void tick() {
    if (!on_) return;
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (ms - last_ms_ < 100) return;
    last_ms_ = ms;
    shown_ = true;
    if (known_)
      fprintf(stderr, "\r\033[Kflatux mkimage: %llu/%llu entries, %.1f/%.1f MiB", (unsigned long long)entries_,
              (unsigned long long)total_.entries, mib(bytes_), mib(total_.bytes));
    else
      fprintf(stderr, "\r\033[Kflatux mkimage: %llu entries, %.1f MiB", (unsigned long long)entries_, mib(bytes_));
  }

  Usage total_;
  bool known_ = false, on_, shown_ = false;
  uint64_t entries_ = 0, bytes_ = 0, last_ms_ = 0;
};

struct CountedData : Data {
  Data& inner;
  Progress& progress;
  CountedData(Data& d, Progress& p) : inner(d), progress(p) {}
  void read(const DataSink& sink) override {
    inner.read([&](uint64_t off, const char* p, size_t n) {
      sink(off, p, n);
      progress.add_bytes(n);
    });
  }
};

struct Copier : Visitor {
  Ext4Writer& w;
  Progress& progress;
  Copier(Ext4Writer& writer, Progress& p) : w(writer), progress(p) {}
  void entry(const Entry& e, Data* data) override {
    if (data) {
      CountedData counted(*data, progress);
      w.add(e, &counted);
    } else {
      w.add(e, nullptr);
    }
    progress.add_entry();
  }
};

// 1.5 times the content plus 16 MiB of room, at least 32 MiB; inodes for
// every entry with a quarter to spare, never fewer than mke2fs would give.
struct Sizing : Layout {
  uint64_t min_inodes = 0;
};

Sizing default_layout(const Usage& u) {
  Sizing l;
  uint64_t inodes = u.entries + 16;
  inodes += inodes / 4 + 64;
  uint64_t dirent_blocks = blocks_of(u.entries * 32);
  uint64_t content = (u.blocks + dirent_blocks + 4) * kBlock + inodes * 256;
  uint64_t bytes = content + content / 2 + 16 * kMiB;
  bytes = (bytes + kMiB - 1) / kMiB * kMiB;
  l.bytes = std::max<uint64_t>(bytes, 32 * kMiB);
  l.min_inodes = inodes;
  l.inodes = std::max<uint64_t>(inodes, l.bytes / 16384);
  return l;
}

std::string size_text(uint64_t b) {
  const char* units = "KMGT";
  int u = -1;
  while (u < 3 && b % 1024 == 0 && b >= 1024) b /= 1024, u++;
  return std::to_string(b) + (u >= 0 ? std::string(1, units[u]) : "");
}

}  // namespace

bool parse_size(const std::string& s, uint64_t& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end;
  unsigned long long n = strtoull(s.c_str(), &end, 10);
  if (errno) return false;
  std::string suffix = end;
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return false;
    }
    std::string rest = suffix.substr(1);
    if (!rest.empty() && rest != "B" && rest != "iB") return false;
  }
  if (shift && n > (~0ULL >> shift)) return false;
  out = n << shift;
  return true;
}

int run(const Options& o) {
  // Archive names are UTF-8 (pax) or raw bytes; a UTF-8 locale passes both
  // through unchanged instead of failing to convert.
  setlocale(LC_CTYPE, "C.UTF-8");
  uint64_t wanted = 0;
  if (!o.size.empty() && (!parse_size(o.size, wanted) || wanted == 0)) {
    fprintf(stderr, "flatux mkimage: --size %s: expected a size such as 512M or 2G\n", o.size.c_str());
    return 1;
  }
  if (o.label.size() > 16) {
    fprintf(stderr, "flatux mkimage: --label %s: at most 16 bytes\n", o.label.c_str());
    return 1;
  }

  struct stat src_st {};
  bool folder = false;
  if (o.src != "-") {
    if (stat(o.src.c_str(), &src_st) != 0) {
      fprintf(stderr, "flatux mkimage: %s: %s\n", o.src.c_str(), strerror(errno));
      return 1;
    }
    folder = S_ISDIR(src_st.st_mode);
  }
  struct stat out_st {};
  if (stat(o.output.c_str(), &out_st) == 0) {
    if (!S_ISREG(out_st.st_mode)) {
      fprintf(stderr, "flatux mkimage: %s: exists and is not a regular file\n", o.output.c_str());
      return 1;
    }
    if (o.src != "-" && out_st.st_dev == src_st.st_dev && out_st.st_ino == src_st.st_ino) {
      fprintf(stderr, "flatux mkimage: %s: is the source itself\n", o.output.c_str());
      return 1;
    }
  }
  int fd = open(o.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0 || fstat(fd, &out_st) != 0) {
    fprintf(stderr, "flatux mkimage: %s: %s\n", o.output.c_str(), strerror(errno));
    if (fd >= 0) close(fd);
    return 1;
  }

  Progress progress;
  try {
    std::unique_ptr<Source> src =
        folder ? open_folder(o.src, out_st.st_dev, out_st.st_ino) : open_archive(o.src);
    Counter count;
    bool measured = src->rewindable();
    if (measured) {
      progress.reading(o.src);
      src->walk(count, true);
    } else if (!wanted) {
      throw Error("an archive on stdin can be read only once: give --size");
    }
    Sizing need = default_layout(count.u);
    Layout layout;
    layout.label = o.label;
    layout.bytes = wanted ? wanted / kBlock * kBlock : need.bytes;
    layout.inodes = measured ? std::max(need.min_inodes, layout.bytes / 16384) : 0;
    if (ftruncate(fd, (off_t)layout.bytes) != 0) throw Error(o.output + ": " + strerror(errno));
    close(fd);
    fd = -1;

    progress.start(count.u, measured);
    try {
      Ext4Writer w(o.output, layout);
      Copier copier(w, progress);
      src->walk(copier, false);
      uint64_t used = w.used_bytes(), total = w.total_bytes();
      w.finish();
      progress.clear();
      if (isatty(2))
        fprintf(stderr, "flatux mkimage: %s: %.1f MiB of %.1f MiB used\n", o.output.c_str(), mib(used), mib(total));
      return 0;
    } catch (Error& e) {
      if (!e.no_space) throw;
      std::string msg = o.output + ": the image is full (" + e.what() + "); --size " + size_text(layout.bytes) +
                        " is too small";
      if (measured) msg += " (without --size it would be " + size_text(need.bytes) + ")";
      throw Error(msg, true);
    }
  } catch (const Error& e) {
    progress.clear();
    fprintf(stderr, "flatux mkimage: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    progress.clear();
    fprintf(stderr, "flatux mkimage: out of memory\n");
  } catch (const std::exception& e) {
    progress.clear();
    fprintf(stderr, "flatux mkimage: internal error: %s\n", e.what());
  }
  if (fd >= 0) close(fd);
  unlink(o.output.c_str());
  return 1;
}

}  // namespace flatux::mkimage
