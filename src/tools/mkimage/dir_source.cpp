// A host folder as the image's content: everything is read through
// descriptors relative to the folder, so nothing above it is followed.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tools/mkimage/source.h"

namespace flatux::mkimage {
namespace {

std::string sys_error(const std::string& what) { return what + ": " + strerror(errno); }

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Reading a tree for an image should not disturb its access times: the
// light walk would otherwise change the folders' atime before the full walk
// records them. O_NOATIME needs ownership (or CAP_FOWNER); others read plainly.
int open_quiet(int dirfd, const char* name, int flags) {
  int fd = openat(dirfd, name, flags | O_NOATIME | O_CLOEXEC);
  if (fd < 0 && errno == EPERM) fd = openat(dirfd, name, flags | O_CLOEXEC);
  return fd;
}

Time time_of(const timespec& ts) { return {ts.tv_sec, (uint32_t)ts.tv_nsec}; }

Entry entry_of(const struct stat& st) {
  Entry e;
  e.perm = st.st_mode & 07777;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.atime = time_of(st.st_atim);
  e.mtime = time_of(st.st_mtim);
  e.ctime = time_of(st.st_ctim);
  switch (st.st_mode & S_IFMT) {
    case S_IFDIR: e.kind = Kind::Dir; break;
    case S_IFLNK: e.kind = Kind::Symlink; break;
    case S_IFCHR: e.kind = Kind::CharDev; break;
    case S_IFBLK: e.kind = Kind::BlockDev; break;
    case S_IFIFO: e.kind = Kind::Fifo; break;
    case S_IFSOCK: e.kind = Kind::Socket; break;
    default: e.kind = Kind::File; break;
  }
  if (e.kind == Kind::File || e.kind == Kind::Symlink) e.size = st.st_size;
  if (e.kind == Kind::CharDev || e.kind == Kind::BlockDev) {
    e.major = major(st.st_rdev);
    e.minor = minor(st.st_rdev);
  }
  return e;
}

// Extended attributes the caller may read; the rest (trusted.* for a
// non-root caller, filesystems without xattrs) are left behind quietly.
void read_xattrs(const std::string& host, Entry& e) {
  ssize_t n = llistxattr(host.c_str(), nullptr, 0);
  if (n <= 0) return;
  std::string names(n, '\0');
  n = llistxattr(host.c_str(), names.data(), names.size());
  if (n <= 0) return;
  names.resize(n);
  for (size_t p = 0; p < names.size();) {
    std::string name = names.c_str() + p;
    p += name.size() + 1;
    ssize_t len = lgetxattr(host.c_str(), name.c_str(), nullptr, 0);
    if (len < 0) continue;
    std::string value(len, '\0');
    len = lgetxattr(host.c_str(), name.c_str(), value.data(), value.size());
    if (len < 0) continue;
    value.resize(len);
    e.xattrs.emplace_back(std::move(name), std::move(value));
  }
}

class FileData : public Data {
 public:
  FileData(int dirfd, const char* name, std::string shown, uint64_t size, std::vector<char>& buf)
      : dirfd_(dirfd), name_(name), shown_(std::move(shown)), size_(size), buf_(buf) {}

  void read(const DataSink& sink) override {
    Fd f(open_quiet(dirfd_, name_, O_RDONLY | O_NOFOLLOW | O_NOCTTY));
    if (f.fd < 0) throw Error(sys_error(shown_));
    uint64_t off = 0;
    while (off < size_) {
      // Holes stay holes: only the extents the host reports as data are read.
      off_t data = lseek(f.fd, off, SEEK_DATA);
      if (data < 0 && errno == ENXIO) return;
      if (data < 0) data = off;  // no SEEK_DATA here: read everything
      off_t hole = lseek(f.fd, data, SEEK_HOLE);
      uint64_t end = hole < 0 ? size_ : std::min<uint64_t>(hole, size_);
      for (uint64_t p = data; p < end;) {
        ssize_t n = pread(f.fd, buf_.data(), std::min<uint64_t>(buf_.size(), end - p), p);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(sys_error(shown_));
        if (n == 0) return;  // shrank while we read; the rest reads as zeros
        sink(p, buf_.data(), n);
        p += n;
      }
      off = std::max<uint64_t>(end, data + 1);
    }
  }

 private:
  int dirfd_;
  const char* name_;
  std::string shown_;
  uint64_t size_;
  std::vector<char>& buf_;
};

class FolderSource : public Source {
 public:
  FolderSource(std::string root, uint64_t skip_dev, uint64_t skip_ino)
      : root_(std::move(root)), skip_dev_(skip_dev), skip_ino_(skip_ino) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  void walk(Visitor& v, bool light) override {
    light_ = light;
    links_.clear();
    if (buf_.empty() && !light) buf_.resize(1 << 20);
    Fd root(open_quiet(AT_FDCWD, root_.c_str(), O_RDONLY | O_DIRECTORY));
    if (root.fd < 0) throw Error(sys_error(root_));
    struct stat st;
    if (fstat(root.fd, &st) != 0) throw Error(sys_error(root_));
    Entry e = entry_of(st);
    read_xattrs(root_, e);
    v.entry(e, nullptr);
    walk_dir(v, root.fd, "");
  }

 private:
  std::string shown(const std::string& rel) const { return root_ + "/" + rel; }

  void walk_dir(Visitor& v, int dirfd, const std::string& rel) {
    std::vector<std::string> names;
    {
      int copy = dup(dirfd);
      DIR* d = copy < 0 ? nullptr : fdopendir(copy);
      if (!d) {
        if (copy >= 0) close(copy);
        throw Error(sys_error(rel.empty() ? root_ : shown(rel)));
      }
      errno = 0;
      while (dirent* de = readdir(d)) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) names.emplace_back(de->d_name);
        errno = 0;
      }
      int err = errno;
      closedir(d);
      if (err) {
        errno = err;
        throw Error(sys_error(rel.empty() ? root_ : shown(rel)));
      }
    }
    // Sorted, so two runs over the same folder give the same image layout.
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      std::string path = rel.empty() ? name : rel + "/" + name;
      struct stat st;
      if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw Error(sys_error(shown(path)));
      if ((uint64_t)st.st_dev == skip_dev_ && (uint64_t)st.st_ino == skip_ino_) continue;
      Entry e = entry_of(st);
      e.path = path;
      read_xattrs(shown(path), e);
      if (e.kind == Kind::Symlink && !light_) {
        std::string target(st.st_size + 1, '\0');
        ssize_t n = readlinkat(dirfd, name.c_str(), target.data(), target.size());
        if (n < 0) throw Error(sys_error(shown(path)));
        target.resize(n);
        e.target = std::move(target);
        e.size = e.target.size();
      }
      if (e.kind != Kind::Dir && st.st_nlink > 1) {
        auto [it, fresh] = links_.try_emplace({(uint64_t)st.st_dev, (uint64_t)st.st_ino}, path);
        if (!fresh) {
          e.kind = Kind::HardLink;
          e.target = it->second;
          e.xattrs.clear();
        }
      }
      if (e.kind == Kind::File) {
        FileData data(dirfd, name.c_str(), shown(path), e.size, buf_);
        v.entry(e, light_ ? nullptr : &data);
      } else {
        v.entry(e, nullptr);
      }
      if (e.kind == Kind::Dir) {
        Fd sub(open_quiet(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
        if (sub.fd < 0) throw Error(sys_error(shown(path)));
        walk_dir(v, sub.fd, path);
      }
    }
  }

  std::string root_;
  uint64_t skip_dev_, skip_ino_;
  bool light_ = false;
  std::vector<char> buf_;
  std::map<std::pair<uint64_t, uint64_t>, std::string> links_;
};

}  // namespace

std::unique_ptr<Source> open_folder(const std::string& path, uint64_t skip_dev, uint64_t skip_ino) {
  return std::make_unique<FolderSource>(path, skip_dev, skip_ino);
}

}  // namespace flatux::mkimage
