// Open file descriptions and per-process descriptor tables.
#pragma once
#include <sys/uio.h>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernel/lib/error_or.h"
#include "kernel/lib/sync.h"

struct stat;
struct statfs;

namespace flatux {

// The kernel's O_LARGEFILE, which every open(2) of a 64-bit process gets
// (Linux's force_o_largefile) and F_GETFL shows; glibc's is 0 on x86_64.
constexpr uint32_t kOLargeFile = 0100000;

class Heap;
struct File;
struct Task;
struct FdShare;
struct Filesystem;
struct Dentry;
struct Mount;
struct Attr;
struct XattrOp;
class LockTable;
class LeaseTable;
struct HostCharge;

// Operations of one kind of open file. A null entry means the operation is
// not supported by that kind (the syscall layer turns it into the right errno).
struct FileOps {
  long (*read)(Task&, File&, void* guest_buf, size_t n);
  long (*write)(Task&, File&, const void* guest_buf, size_t n);
  long (*pread)(Task&, File&, void* guest_buf, size_t n, int64_t off);
  long (*pwrite)(Task&, File&, const void* guest_buf, size_t n, int64_t off);
  long (*lseek)(Task&, File&, int64_t off, int whence);
  long (*stat)(Task&, File&, struct stat* out);  // out is kernel memory
  long (*getdents64)(Task&, File&, void* guest_buf, size_t n);
  long (*ioctl)(Task&, File&, unsigned cmd, uint64_t arg);
  long (*statfs)(Task&, File&, struct statfs* out);
  void (*release)(File&);
  // Readiness (POLLIN...) of a file with no host descriptor, asked without
  // waiting; files with a host descriptor are polled by the host.
  short (*poll)(Task&, File&, short events) = nullptr;
  // fchmod/fchown/futimens/ftruncate (the VFS has checked the policy).
  long (*setattr)(Task&, File&, const Attr&) = nullptr;
  long (*fsync)(Task&, File&, bool datasync) = nullptr;
  long (*fallocate)(Task&, File&, int mode, int64_t off, int64_t len) = nullptr;
  // For a file with no host descriptor: one that holds its data, to map
  // MAP_SHARED (owned by the file; the caller must not close it).
  long (*shared_map_fd)(Task&, File&) = nullptr;
  // For a file with no host descriptor: one holding its contents as they
  // are now, which a MAP_PRIVATE mapping may start from, copy-on-write,
  // instead of a copy into anonymous memory made at every mmap. A new
  // descriptor each call: the caller closes it once mapped.
  long (*private_map_fd)(Task&, File&) = nullptr;
  // Vectored I/O as one host call (readv/writev; preadv/pwritev when
  // off >= 0), so that a datagram or a pipe write stays one unit. `iov` is
  // a checked kernel copy of the guest's array; `flags` are preadv2's
  // RWF_* (known ones only). Null: one call per buffer, RWF_HIPRI at most.
  long (*readv)(Task&, File&, const struct iovec* iov, int cnt, int64_t off, int flags) = nullptr;
  long (*writev)(Task&, File&, const struct iovec* iov, int cnt, int64_t off, int flags) = nullptr;
  // fgetxattr and kin (see FsOps::xattr); null: EOPNOTSUPP.
  long (*xattr)(Task&, File&, struct XattrOp&) = nullptr;
};

struct File {
  const FileOps* ops;
  Heap* heap;
  std::atomic<int> refs{1};
  uint32_t flags = 0;  // O_ACCMODE | O_APPEND | O_NONBLOCK | O_PATH ...
  int host_fd = -1;    // the host open file description backing it, if any
  // Whose share of the host descriptor table host_fd is charged to (the
  // table it was first installed in; kernel/sys/host_share.h).
  std::atomic<FdShare*> fd_share{nullptr};
  Filesystem* fs = nullptr;  // where it was opened (nullptr: no path, e.g. a stdio stream)
  Mount* mount = nullptr;    // the mount it was opened through (holds a reference)
  LockTable* locks = nullptr;  // set once it holds a flock or OFD lock
  LeaseTable* leases = nullptr;  // set once it has held a lease (vfs/lease.cpp)
  bool dnotify = false;        // a directory F_NOTIFY watches (vfs/dnotify.cpp)
  // A device opened through a node: fstat and fchown/fchmod/futimens act
  // on the node (its origin, mount and path), as Linux's file has the
  // node's inode; ttyname and getty compare the two.
  bool node_attrs = false;
  // fcntl F_SETOWN/F_SETOWN_EX/F_SETSIG (vfs/fown.cpp): who is signalled
  // about the file (a lease break) and with what.
  int owner_id = 0;          // a pid, tid or process group; 0: nobody
  uint8_t owner_type = 0;    // F_OWNER_TID, F_OWNER_PID or F_OWNER_PGRP
  int owner_sig = 0;         // 0: SIGIO
  int owner_set_by = 0;      // the pid of the process that named the owner: the signal's sender
  // Its path inside fs when opened: in short_path when it fits (most do;
  // an open then allocates nothing for it), else a kernel heap string.
  char* path = nullptr;
  char short_path[64];
  // A directory's dentry (with `mount`, a Path), which follows renames;
  // set where the filesystem's names change only through the VFS.
  Dentry* dentry = nullptr;
  void* priv = nullptr;
  uint64_t priv_word = 0;
  // The mem= charge of the host object behind host_fd (a pipe's buffer, a
  // memfd's pages; mm/host_charge.h), shared with the other files on it.
  HostCharge* charge = nullptr;
  int64_t pos = 0;     // file position for files without a host descriptor
  KMutex pos_lock;
  // Whether poll/select always find it readable and writable (Linux's
  // DEFAULT_POLLMASK: regular files, directories, /dev/null and kin), so
  // the kernel answers without asking the host. Unknown until the first
  // poll looks at the host descriptor (sys_poll.cpp), or set at open.
  enum class PollKind : uint8_t { kUnknown, kAsk, kAlwaysReady };
  std::atomic<PollKind> poll_kind{PollKind::kUnknown};

  void get() { refs.fetch_add(1, std::memory_order_relaxed); }
  void put();
  // Records where the file was opened (done by the VFS after a filesystem's open).
  void set_origin(Mount* m, const char* inner_path);
};

File* file_alloc(Heap* heap, const FileOps* ops, uint32_t flags, int host_fd);

// read and write for files whose position the kernel keeps (File::pos):
// the file's pread/pwrite at the position, under its lock.
long file_read_at_pos(Task& t, File& f, void* buf, size_t n);
long file_write_at_pos(Task& t, File& f, const void* buf, size_t n);
// lseek for such files: SEEK_SET and SEEK_CUR, and SEEK_END from `end`
// when the file has a size (end >= 0; otherwise EINVAL).
long file_seek_kept(File& f, int64_t off, int whence, int64_t end);
// The same with f.pos_lock held (for a file whose end is read under it).
long file_seek_kept_locked(File& f, int64_t off, int whence, int64_t end);

// For a host descriptor the kernel holds on a guest's behalf outside any
// descriptor table (a tmpfs file's memfd once it is shared-mapped, a System
// V segment's): charges it to the calling process's share and returns that
// share, for fd_share_uncharge when the descriptor is closed (nullptr: a
// caller without one), or -ENFILE (mmap's and shmget's errno for it).
ErrorOr<FdShare*> charge_host_fd_to(Task& t);

class FdTable {
 public:
  static constexpr int kMaxFds = 1024;

  explicit FdTable(Heap* h) : heap_(h) {}
  ~FdTable();

  std::atomic<int> refs{1};  // shared by CLONE_FILES

  // A copy sharing every open file description (fork/vfork without
  // CLONE_FILES, or unsharing before exec). nullptr when out of memory.
  FdTable* clone() const;
  // Closes every descriptor marked close-on-exec.
  void close_on_exec();

  // The share of the host descriptor table that files first installed
  // here are charged to (the table takes the reference). A clone gets a
  // share of its own from the same pool.
  void set_share(FdShare* s) { share_ = s; }
  FdShare* share() const { return share_; }
  // Takes a reference to f on success; returns the fd or -EMFILE, or, for
  // a file with a host descriptor not yet charged, -EMFILE past this
  // table's share of the host table and -ENFILE when that is full.
  int install(File* f, bool cloexec, int min_fd = 0);
  int install_at(int fd, File* f, bool cloexec);  // dup2 semantics
  File* get(int fd);                               // new reference or nullptr
  int lowest_free();                               // what install() would pick, or -EMFILE
  // Looks up n descriptors under one lock (poll/select sets): out[i] is
  // the file or nullptr. A run of equal files (a set of dups) takes one
  // reference, on its first entry; owned[i] says which entries hold one.
  void get_many(const int* fds, int n, File** out, bool* owned);
  int close(int fd);
  bool cloexec(int fd);
  int set_cloexec(int fd, bool on);
  void close_all();
  int limit() const { return limit_; }
  void set_limit(int n) { limit_ = n < kMaxFds ? n : kMaxFds; }

 private:
  long charge_locked(File* f);

  Heap* heap_;
  FdShare* share_ = nullptr;
  KMutex lock_;
  int limit_ = kMaxFds;
  File* files_[kMaxFds]{};
  uint64_t cloexec_[kMaxFds / 64]{};
};

}  // namespace flatux
