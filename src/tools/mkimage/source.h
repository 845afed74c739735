// The model shared by the image's inputs (a folder, a tar archive) and its
// output (the ext4 writer): one Entry per name, visited parents first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flatux::mkimage {

// Every failure is reported as one line and a non-zero exit; `no_space`
// marks the ones a larger --size would fix.
struct Error : std::runtime_error {
  bool no_space = false;
  explicit Error(const std::string& what, bool full = false)
      : std::runtime_error(what), no_space(full) {}
};

enum class Kind { File, Dir, Symlink, HardLink, CharDev, BlockDev, Fifo, Socket };

struct Time {
  int64_t sec = 0;
  uint32_t nsec = 0;
};

struct Entry {
  std::string path;  // relative to the image's root, no "." or ".."; "" is the root
  Kind kind = Kind::File;
  uint32_t perm = 0;  // 07777: permission, setuid, setgid, sticky
  uint32_t uid = 0, gid = 0;
  Time atime, mtime, ctime;
  uint64_t size = 0;  // regular files: the logical size, holes included
  uint32_t major = 0, minor = 0;
  std::string target;  // a symlink's target, or the path a hard link names
  std::vector<std::pair<std::string, std::string>> xattrs;
};

// A regular file's bytes, pushed in increasing offset order; what is never
// pushed reads back as zeros (a hole).
using DataSink = std::function<void(uint64_t offset, const char* data, size_t len)>;
struct Data {
  virtual ~Data() = default;
  virtual void read(const DataSink& sink) = 0;
};

struct Visitor {
  virtual ~Visitor() = default;
  // `data` is set for regular files only, and only on a full walk.
  virtual void entry(const Entry& e, Data* data) = 0;
};

class Source {
 public:
  virtual ~Source() = default;
  // Whether walk() may run more than once (stdin can be read only once).
  virtual bool rewindable() const { return true; }
  // A light walk only sizes the content: no file data is read.
  virtual void walk(Visitor& v, bool light) = 0;
};

// SRC is a folder, "-" (an archive on stdin) or an archive file.
// `skip_dev`/`skip_ino` name a file to leave out (the image being written).
std::unique_ptr<Source> open_folder(const std::string& path, uint64_t skip_dev, uint64_t skip_ino);
std::unique_ptr<Source> open_archive(const std::string& path);

}  // namespace flatux::mkimage
