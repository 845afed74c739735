// The ext4 filesystem's side of the foreign-code gate: the only kernel code
// that calls libext2fs. Every function here must run inside foreign_call()
// (FS on a host TLS block: libext2fs mallocs, and com_err keeps state), with
// the volume's lock held. They speak kernel types only, return 0 or -errno,
// and never let a libext2fs error code escape: codes that mean a damaged
// image become -EUCLEAN (-EBADMSG for a bad checksum), and the volume keeps
// the library's own message for the kernel log (Volume::last_error).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernel/block/cache.h"
#include "kernel/block/blockdev.h"

namespace flatux::ext2glue {

struct Volume;

struct Time {
  int64_t sec;
  uint32_t nsec;
};

// The inode fields the kernel caches (struct stat and the walk need these).
struct Attr {
  uint32_t ino;
  uint32_t mode, uid, gid, nlink;
  uint32_t flags, generation;
  uint64_t size, blocks512, rdev;
  Time atime, mtime, ctime, btime;
};

enum : unsigned {
  kSetMode = 1, kSetUid = 2, kSetGid = 4, kSetSize = 8,
  kSetAtime = 16, kSetMtime = 32, kSetCtime = 64,
};
struct SetAttr {
  unsigned mask;
  uint32_t mode, uid, gid;
  uint64_t size;
  Time atime, mtime, ctime;
};

struct NewNode {       // what create/mkdir/symlink/mknod make
  uint32_t mode, uid, gid;
  uint64_t rdev;       // chr/blk, Linux dev_t encoding
  Time now;
};

struct FsInfo {
  uint64_t block_size, blocks, free_blocks, avail_blocks, inodes, free_inodes;
  uint32_t uuid_words[4];
};

struct DirEntry {
  uint64_t pos;        // position of this entry
  uint64_t next;       // position just after it (the cursor to resume at)
  uint32_t ino;
  uint8_t type;        // DT_*
  uint8_t name_len;
  char name[256];
};
// Returns false to stop (the entry is not consumed).
using DirVisitor = bool (*)(void* ctx, const DirEntry& e);

struct OpenResult {
  Volume* vol;
  bool readonly;         // as mounted (a needs_recovery image comes back read-only)
  bool needed_recovery;  // the journal was not replayed: refused read-write
  uint64_t block_size;
  char label[17];
};

long open_volume(Kernel& k, BlockDevice& dev, bool want_rw, OpenResult* out);
// Writes everything back (unless the volume is read-only) and frees it.
long close_volume(Volume* v);
long flush(Volume* v);        // ext2fs_flush + the device cache
PageCache& device_cache(Volume* v);
const char* last_error(Volume* v);  // the library's message for the last failure
void set_now(Volume* v, Time now);  // the clock libext2fs stamps with

long read_attr(Volume* v, uint32_t ino, Attr* out);
long lookup(Volume* v, uint32_t dir, const char* name, size_t len, uint32_t* ino);
long read_link(Volume* v, uint32_t ino, char* buf, size_t cap, size_t* len);
long read_data(Volume* v, uint32_t ino, void* buf, size_t n, uint64_t off, size_t* got);
long write_data(Volume* v, uint32_t ino, const void* buf, size_t n, uint64_t off, Time now,
                Attr* after);
// fallocate mode 0: blocks for [off, off+len), the size grown to cover it.
long allocate(Volume* v, uint32_t ino, uint64_t off, uint64_t len, Time now, Attr* after);
long set_attr(Volume* v, uint32_t ino, const SetAttr& a, Attr* after);
long read_dir(Volume* v, uint32_t dir, uint64_t pos, DirVisitor fn, void* ctx);
long dir_is_empty(Volume* v, uint32_t dir);  // 1, 0 or -errno
long statfs(Volume* v, FsInfo* out);

// Namespace changes. `parent_after` (may be null) is the parent's new state.
long create_node(Volume* v, uint32_t dir, const char* name, const NewNode& n, Attr* out);
long make_dir(Volume* v, uint32_t dir, const char* name, const NewNode& n, Attr* out);
long make_symlink(Volume* v, uint32_t dir, const char* name, const char* target,
                  const NewNode& n, Attr* out);
// Directory entries alone (link counts are adjust_links's business, so a
// rename can be put together from these inside one gate call).
long add_entry(Volume* v, uint32_t dir, const char* name, uint32_t ino, uint32_t mode);
long del_entry(Volume* v, uint32_t dir, const char* name);
long retarget_entry(Volume* v, uint32_t dir, const char* name, uint32_t ino, uint32_t mode);
long set_dotdot(Volume* v, uint32_t dir, uint32_t parent);
// nlink += delta (a directory's parent on mkdir/rmdir/move), ctime = now.
long adjust_links(Volume* v, uint32_t ino, int delta, Time now, uint32_t* nlink_after);
// A removed directory has no links (Linux's clear_nlink), also while it is
// still open and not yet freed.
long clear_links(Volume* v, uint32_t ino, Time now);
long touch_dir(Volume* v, uint32_t dir, Time now);  // mtime and ctime
// Frees an inode with no links left (its blocks, then the inode).
long release_inode(Volume* v, uint32_t ino);

}  // namespace flatux::ext2glue
