// The first VFS: a small mount table over whole-path filesystems. A path is
// mapped to the mount with the longest matching prefix and handed to that
// filesystem as an absolute path inside it; the filesystem walks it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernel/task/task.h"
#include "kernel/vfs/file.h"

struct stat;
struct statfs;

namespace flatux {

struct Filesystem;

struct FsOps {
  const char* name;
  long (*open)(Task&, Filesystem&, const char* path, int flags, int mode, File** out);
  long (*stat)(Task&, Filesystem&, const char* path, bool follow, struct stat* out);
  long (*readlink)(Task&, Filesystem&, const char* path, char* buf, size_t n);
  long (*access)(Task&, Filesystem&, const char* path, int mode, bool follow);
  // The canonical path (inside this filesystem) of an open directory.
  long (*dir_path)(Task&, Filesystem&, File& dir, char* out, size_t n);
  long (*statfs)(Task&, Filesystem&, const char* path, struct statfs* out);
};

struct Filesystem {
  const FsOps* ops;
  void* priv;
  bool readonly;
};

struct Mount {
  char path[256];  // guest path of the mount point, "/" for the root
  size_t len;
  Filesystem* fs;
};

struct ResolvedPath {
  Filesystem* fs;
  Mount* mount;
  char path[kPathMax];  // absolute path inside fs
};

class Vfs {
 public:
  static constexpr int kMaxMounts = 16;

  explicit Vfs(Heap* h) : heap_(h) {}
  long mount(const char* guest_path, Filesystem* fs);

  // Turns (dirfd, path) into a filesystem and a path inside it.
  long resolve(Task& t, int dirfd, const char* path, ResolvedPath* out);

  // Reads a guest path argument and resolves it (EFAULT, ENOENT for "",
  // ENAMETOOLONG handled here).
  long resolve_user(Task& t, int dirfd, const void* guest_path, ResolvedPath* out,
                    bool allow_empty = false);

  // Guest path of an open file that is a directory (for *at and fchdir).
  long file_guest_path(Task& t, File& f, char* out, size_t n);

  Heap* heap() const { return heap_; }

  // Calls fn(const Mount&) for each mount, in mount order (lock held).
  template <typename F>
  void for_each_mount(F&& fn) {
    Guard g(lock_);
    for (int i = 0; i < nmounts_; i++) fn(mounts_[i]);
  }

 private:
  Heap* heap_;
  KMutex lock_;
  Mount mounts_[kMaxMounts]{};
  int nmounts_ = 0;
};

// Lexical normalisation: collapses "//", "." and ".." (never above "/").
// `in` must be absolute. Returns the length, or -ENAMETOOLONG.
long normalize_path(const char* in, char* out, size_t n);


}  // namespace flatux
