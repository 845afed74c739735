// A tar archive as the image's content, read with libarchive.
// Owners, device numbers and modes come from the headers, so an archive
// made elsewhere (docker export) is reproduced without privileges.
#include <archive.h>
#include <archive_entry.h>
#include <cstdio>

#include "tools/mkimage/source.h"

namespace flatux::mkimage {
namespace {

// Leading "/" and "./" go, as tar does on extraction; an entry that climbs
// out with ".." is refused rather than written somewhere surprising.
bool normalize(const char* raw, std::string& out) {
  out.clear();
  std::string part;
  for (const char* p = raw;; p++) {
    if (*p == '/' || *p == 0) {
      if (part == "..") return false;
      if (!part.empty() && part != ".") {
        if (!out.empty()) out += '/';
        out += part;
      }
      part.clear();
      if (*p == 0) return true;
    } else {
      part += *p;
    }
  }
}

Time time_or(bool set, time_t sec, long nsec, Time fallback) {
  return set ? Time{(int64_t)sec, (uint32_t)nsec} : fallback;
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), a_(archive_read_new()) {
    if (!a_) throw Error(path + ": out of memory");
    // Linked in statically: only the formats and filters named here exist.
    archive_read_support_format_tar(a_);
    archive_read_support_format_empty(a_);  // a 0-byte file: an empty image
    archive_read_support_filter_gzip(a_);
    archive_read_support_filter_xz(a_);
    archive_read_support_filter_lzma(a_);
    archive_read_support_filter_bzip2(a_);
    int r = path == "-" ? archive_read_open_fd(a_, 0, 1 << 16)
                        : archive_read_open_filename(a_, path.c_str(), 1 << 16);
    if (r != ARCHIVE_OK) fail();
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader() { archive_read_free(a_); }

  archive* get() { return a_; }
  [[noreturn]] void fail() {
    const char* why = archive_error_string(a_);
    throw Error(name() + ": " + (why ? why : "unreadable archive"));
  }
  std::string name() const { return path_ == "-" ? "stdin" : path_; }

 private:
  std::string path_;
  archive* a_;
};

class ArchiveData : public Data {
 public:
  ArchiveData(Reader& r, const std::string& entry) : r_(r), entry_(entry) {}
  void read(const DataSink& sink) override {
    for (;;) {
      const void* buf;
      size_t len;
      la_int64_t off;
      int rc = archive_read_data_block(r_.get(), &buf, &len, &off);
      if (rc == ARCHIVE_EOF) return;
      if (rc < ARCHIVE_WARN) {
        const char* why = archive_error_string(r_.get());
        throw Error(r_.name() + ": " + entry_ + ": " + (why ? why : "unreadable data"));
      }
      if (len) sink((uint64_t)off, (const char*)buf, len);
    }
  }

 private:
  Reader& r_;
  const std::string& entry_;
};

class ArchiveSource : public Source {
 public:
  explicit ArchiveSource(std::string path) : path_(std::move(path)) {}
  bool rewindable() const override { return path_ != "-"; }

  void walk(Visitor& v, bool light) override {
    Reader r(path_);
    archive_entry* ae;
    for (;;) {
      int rc = archive_read_next_header(r.get(), &ae);
      if (rc == ARCHIVE_EOF) break;
      if (rc < ARCHIVE_WARN) r.fail();
      const char* raw = archive_entry_pathname(ae);
      if (!raw) raw = archive_entry_pathname_utf8(ae);
      if (!raw) throw Error(r.name() + ": an entry without a usable name");
      if (rc == ARCHIVE_WARN && !light) {
        const char* why = archive_error_string(r.get());
        fprintf(stderr, "flatux mkimage: warning: %s: %s\n", raw, why ? why : "?");
      }
      Entry e;
      if (!normalize(raw, e.path)) {
        if (!light) fprintf(stderr, "flatux mkimage: warning: %s: skipped, it climbs out with '..'\n", raw);
        continue;
      }
      fill(e, ae);
      if (const char* hl = archive_entry_hardlink(ae)) {
        e.kind = Kind::HardLink;
        if (!normalize(hl, e.target) || e.target.empty())
          throw Error(r.name() + ": " + raw + ": bad hard link target " + hl);
        e.xattrs.clear();
      }
      if (e.path.empty() && e.kind != Kind::Dir) continue;  // "." that is not a folder
      if (e.kind == Kind::File && !light) {
        ArchiveData data(r, e.path);
        v.entry(e, &data);
      } else {
        v.entry(e, nullptr);
      }
    }
  }

 private:
  static void fill(Entry& e, archive_entry* ae) {
    switch (archive_entry_filetype(ae)) {
      case AE_IFDIR: e.kind = Kind::Dir; break;
      case AE_IFLNK: e.kind = Kind::Symlink; break;
      case AE_IFCHR: e.kind = Kind::CharDev; break;
      case AE_IFBLK: e.kind = Kind::BlockDev; break;
      case AE_IFIFO: e.kind = Kind::Fifo; break;
      case AE_IFSOCK: e.kind = Kind::Socket; break;
      default: e.kind = Kind::File; break;
    }
    e.perm = archive_entry_perm(ae) & 07777;
    e.uid = (uint32_t)archive_entry_uid(ae);
    e.gid = (uint32_t)archive_entry_gid(ae);
    e.mtime = {(int64_t)archive_entry_mtime(ae), (uint32_t)archive_entry_mtime_nsec(ae)};
    // Plain ustar keeps only mtime; the other two follow it, as on extraction.
    e.atime = time_or(archive_entry_atime_is_set(ae), archive_entry_atime(ae), archive_entry_atime_nsec(ae), e.mtime);
    e.ctime = time_or(archive_entry_ctime_is_set(ae), archive_entry_ctime(ae), archive_entry_ctime_nsec(ae), e.mtime);
    if (e.kind == Kind::File && archive_entry_size_is_set(ae)) e.size = (uint64_t)archive_entry_size(ae);
    if (e.kind == Kind::Symlink) {
      const char* t = archive_entry_symlink(ae);
      if (!t) t = archive_entry_symlink_utf8(ae);
      e.target = t ? t : "";
      e.size = e.target.size();
    }
    if (e.kind == Kind::CharDev || e.kind == Kind::BlockDev) {
      e.major = archive_entry_rdevmajor(ae);
      e.minor = archive_entry_rdevminor(ae);
    }
    archive_entry_xattr_reset(ae);
    const char* name;
    const void* value;
    size_t len;
    while (archive_entry_xattr_next(ae, &name, &value, &len) == ARCHIVE_OK)
      e.xattrs.emplace_back(name, std::string((const char*)value, len));
  }

  std::string path_;
};

}  // namespace

std::unique_ptr<Source> open_archive(const std::string& path) { return std::make_unique<ArchiveSource>(path); }

}  // namespace flatux::mkimage
