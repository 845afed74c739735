// tmpfs internals: inodes, directory entries and page trees, all in the
// kernel heap. One mutex per filesystem instance guards everything in it
// (names, attributes and data); user copies happen under it, which is safe
// because a faulting copy returns -EFAULT instead of sleeping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <sys/types.h>

#include "kernel/heap.h"
#include "kernel/lib/sync.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

struct Task;
struct Tmpfs;
struct TmpInode;
struct Dentry;
struct Inode;

constexpr size_t kTmpPage = 4096;
constexpr int kTmpNameMax = 255;
constexpr int64_t kTmpMaxFileSize = INT64_MAX;

// A sparse file's pages: a radix tree of 512-way nodes whose height grows
// with the highest page index stored. Absent pages read as zeroes.
struct TmpPages {
  void* root = nullptr;
  int height = 0;  // 0: empty; h: indices below 512^h are reachable
};

struct TmpDirent;
struct TmpXattr;

struct TmpInode {
  Tmpfs* fs;
  uint64_t ino;
  uint32_t mode, uid, gid;
  uint32_t nlink = 0;
  uint64_t rdev = 0;
  int64_t size = 0;
  timespec atime{}, mtime{}, ctime{}, btime{};
  // Open files and in-flight operations holding the inode; it is freed
  // once both this and nlink are zero.
  int refs = 0;
  bool linkable = true;  // false for O_TMPFILE|O_EXCL files
  TmpXattr* xattrs = nullptr;  // extended attributes (tmpfs_xattr.cpp)

  // S_IFREG
  TmpPages pages;
  uint64_t blocks = 0;  // pages allocated
  int memfd = -1;       // the data, once shared-mapped (tmpfs_shared.cpp)
  FdShare* memfd_share = nullptr;  // whose share of the host table holds it
  // S_IFDIR: entries in creation order; a cookie (the file position of a
  // directory stream) only grows, so a reader's place survives removals.
  TmpDirent* first = nullptr;
  TmpDirent* last = nullptr;
  uint64_t next_cookie = 3;  // 1 and 2 are "." and ".."
  uint64_t entries = 0;
  TmpInode* parent = nullptr;
  TmpDirent* dentry = nullptr;  // a directory's one name (for its path)
  // S_IFLNK
  char* target = nullptr;
  // S_IFIFO: a host pipe held by an O_PATH descriptor, reopened through
  // /proc/self/fd for each open so the host applies FIFO open semantics.
  int fifo_fd = -1;
};

struct TmpDirent {
  TmpDirent* next;
  TmpDirent* prev;
  TmpDirent* hash_next;  // chain in Tmpfs::buckets
  TmpInode* dir;
  TmpInode* inode;
  uint64_t cookie;
  uint16_t len;
  char name[];  // NUL-terminated
};

struct TmpLimits {
  uint64_t max_pages;   // size= in pages
  uint64_t max_inodes;  // nr_inodes=
  uint32_t root_mode = 01777;
  uint32_t root_uid = 0, root_gid = 0;
  bool size_given = false, inodes_given = false;
};

struct MemAccount;

struct Tmpfs {
  Heap* heap;
  MemAccount* mem = nullptr;  // the kernel's mem= account, charged for data pages
  uint64_t memory_pages = 0;  // the memory size= and nr_inodes= defaults are half of
  KMutex lock;
  TmpLimits limits;
  uint64_t used_pages = 0;
  uint64_t used_inodes = 0;
  uint64_t next_ino = 2;
  uint32_t dev = 0;
  TmpInode* root = nullptr;
  // Name lookup: (directory, name) -> entry.
  TmpDirent** buckets = nullptr;
  size_t nbuckets = 0;
  size_t nentries = 0;
  // Counted by tmp_add_entry, the one place a name enters a directory.
  NameSeqs names_added;
  // Inode references held by open files; an unmounted (detached) tmpfs
  // lives on until the last one is dropped.
  uint64_t pins = 0;
  bool detached = false;
};

// Data pages in use change by `pages`: the size= count and mem= follow.
void tmp_charge(Tmpfs& fs, int64_t pages);
// Whether one more page fits mem= (ENOMEM otherwise, as Linux's shmem says).
bool tmp_mem_allows(const Tmpfs& fs, uint64_t pages);

// Inodes and entries (tmpfs_inode.cpp). Callers hold fs.lock.
timespec tmp_now();
TmpInode* tmp_new_inode(Tmpfs& fs, uint32_t mode, uint32_t uid, uint32_t gid, long* err);
void tmp_get(TmpInode* n);
void tmp_put(TmpInode* n);  // frees the inode when unreferenced and unlinked
TmpDirent* tmp_find(Tmpfs& fs, TmpInode* dir, const char* name, size_t len);
long tmp_add_entry(Tmpfs& fs, TmpInode* dir, const char* name, size_t len, TmpInode* n);
void tmp_remove_entry(Tmpfs& fs, TmpDirent* d);  // drops the entry's link count
void tmp_touch(TmpInode* n, bool m, bool c);
void tmp_destroy_tree(Tmpfs& fs);

// Page trees (tmpfs_data.cpp). Callers hold fs.lock.
void* tmp_page_find(const TmpPages& p, uint64_t idx);
void* tmp_page_get(Tmpfs& fs, TmpInode& n, uint64_t idx, long* err);  // allocates, ENOSPC
// Frees pages with first <= index <= last.
void tmp_pages_drop(Tmpfs& fs, TmpInode& n, uint64_t first, uint64_t last);
// First index >= idx that is present (want_data) or absent; UINT64_MAX if none.
uint64_t tmp_pages_next(const TmpPages& p, uint64_t idx, bool want_data);
long tmp_truncate(Tmpfs& fs, TmpInode& n, int64_t size);
// Copies between the file and a guest buffer; returns bytes or -errno.
long tmp_read(TmpInode& n, void* guest_buf, size_t len, int64_t off);
long tmp_write(Tmpfs& fs, TmpInode& n, const void* guest_buf, size_t len, int64_t off);
// The same from/to kernel memory (mmap's copy-in, unit tests).
long tmp_read_kernel(TmpInode& n, void* buf, size_t len, int64_t off);
long tmp_write_kernel(Tmpfs& fs, TmpInode& n, const void* buf, size_t len, int64_t off);
long tmp_seek_data(TmpInode& n, int64_t off, bool data);
long tmp_fallocate(Tmpfs& fs, TmpInode& n, int mode, int64_t off, int64_t len);

// Files whose data lives in a host memfd (tmpfs_shared.cpp). Callers hold
// fs.lock; the tmp_* data calls above route to these once n.memfd >= 0.
// Returns the memfd, made for (and charged to) the caller when new.
long shm_promote(Task& t, Tmpfs& fs, TmpInode& n);
long shm_read(TmpInode& n, void* buf, size_t len, int64_t off);
long shm_write(Tmpfs& fs, TmpInode& n, const void* buf, size_t len, int64_t off);
long shm_truncate(Tmpfs& fs, TmpInode& n, int64_t size);
long shm_seek(TmpInode& n, int64_t off, bool data);
long shm_fallocate(Tmpfs& fs, TmpInode& n, int mode, int64_t off, int64_t len);
void shm_release(Tmpfs& fs, TmpInode& n);


// tmpfs inodes in the dentry cache (tmpfs_dentry.cpp): FsOps::lookup,
// and the TmpInode a dentry of fs holds (nullptr: not one of fs's).
long tmp_lookup(Task& t, Tmpfs& fs, Filesystem& owner, Dentry& dir, std::string_view name, Inode** out);
TmpInode* tmp_dentry_node(Tmpfs& fs, const Dentry& d);
// FsOps::dir_perms: the mode and owner of d's TmpInode as they are now.
FilePerms tmp_dir_perms(Tmpfs& fs, const Dentry& d);
// Namespace operations (tmpfs_namei.cpp). Each takes fs.lock itself.
long tmp_stat_path(Task& t, Tmpfs& fs, Lookup& p, struct stat* out);
long tmp_readlink(Task& t, Tmpfs& fs, Lookup& p, char* buf, size_t n);
long tmp_access(Task& t, Tmpfs& fs, Lookup& p, int mode);
long tmp_mknod(Task& t, Tmpfs& fs, Lookup& p, uint32_t mode, uint64_t dev);
long tmp_symlink(Task& t, Tmpfs& fs, Lookup& p, const char* target);
long tmp_unlink(Task& t, Tmpfs& fs, Lookup& p, bool dir);
long tmp_link(Task& t, Tmpfs& fs, Lookup& old_p, Lookup& new_p);
long tmp_rename(Task& t, Tmpfs& fs, Lookup& old_p, Lookup& new_p, unsigned flags);
long tmp_setattr_path(Task& t, Tmpfs& fs, Lookup& p, const Attr& a);
// Opens (and with O_CREAT/O_TMPFILE creates); *out holds a reference.
long tmp_open_inode(Task& t, Tmpfs& fs, Lookup& p, int flags, uint32_t mode, TmpInode** out);
// The inode the dentry d holds, checked for a read-only open by `flags`,
// with a reference (FsOps::open_dentry: a removed folder has no path).
long tmp_open_dentry_inode(Task& t, Tmpfs& fs, const Dentry& d, int flags, TmpInode** out);
// Callers hold fs.lock for these.
long tmp_link_inode(Task& t, Tmpfs& fs, TmpInode* n, Lookup& new_p);
long tmp_setattr(Tmpfs& fs, TmpInode& n, const Attr& a);

// Extended attributes (tmpfs_xattr.cpp). Callers hold fs.lock, except
// for tmp_xattr_path, which takes it.
long tmp_xattr(Task& t, Tmpfs& fs, TmpInode& n, XattrOp& op);
long tmp_xattr_path(Task& t, Tmpfs& fs, Lookup& p, XattrOp& op);
// A write or a change of owner drops the file's capabilities.
void tmp_kill_file_caps(Tmpfs& fs, TmpInode& n);
void tmp_xattrs_free(Tmpfs& fs, TmpInode& n);
void tmp_fill_stat(const TmpInode& n, struct stat* out);

}  // namespace flatux
