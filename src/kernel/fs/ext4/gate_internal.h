// Shared by the two halves of the ext4 gate code (foreign_gate.ext2fs.cpp:
// mounting, errors, reading; foreign_gate.ext2write.cpp: changes). Like
// them, everything here runs inside foreign_call() only.
#pragma once
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>

#include "kernel/fs/ext4/ext2_glue.h"

namespace flatux::ext2glue {

struct Volume {
  Kernel* k;
  BlockDevice* dev;
  ext2_filsys fs = nullptr;
  PageCache* cache = nullptr;   // the device's pages, written back on flush
  bool rw = false;
  bool was_valid = true;        // the image was clean when mounted
  io_manager manager = nullptr; // kUbdIoManager, for the channel it opens
  uint8_t* block_buf = nullptr; // one filesystem block, for directory reads
  char err[200] = "";
  // i_generation of the next inode made (seeded at random when opened), so
  // a reused inode number is told apart from its previous file.
  uint32_t next_generation = 0;
};

namespace detail {

// The errno for a libext2fs error code; fail() also records the library's
// message (with `what` and the inode) for the kernel log.
long to_errno(errcode_t e);
long fail(Volume* v, errcode_t e, const char* what, uint32_t ino = 0);

// Inodes with their extra fields (nanoseconds, creation time).
bool extra_fits(const Volume* v, const ext2_inode_large& in, size_t field_end);
#define FITS(v, in, f) extra_fits(v, in, offsetof(ext2_inode_large, f) + sizeof(in.f))
void encode_time(Time t, uint32_t* base, uint32_t* extra, bool has_extra);
void encode_rdev(ext2_inode_large* in, uint64_t dev);
long read_large(Volume* v, uint32_t ino, ext2_inode_large* in);
long write_large(Volume* v, uint32_t ino, ext2_inode_large* in);
void fill_attr(Volume* v, uint32_t ino, ext2_inode_large& in, Attr* a);
void set_times(Volume* v, ext2_inode_large* in, const Time* atime, const Time* mtime, const Time* ctime);
void set_owner(ext2_inode_large* in, uint32_t uid, uint32_t gid);
int file_type(uint32_t mode);

}  // namespace detail
}  // namespace flatux::ext2glue
