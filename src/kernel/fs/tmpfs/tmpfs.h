// tmpfs: a filesystem in kernel memory (inodes, names and data all in the
// kernel heap), limited by size= and nr_inodes=.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernel/vfs/file.h"

struct statfs;

namespace flatux {

class Heap;
class KFmt;
struct Tmpfs;
struct TmpInode;
struct MemAccount;
struct Task;
struct Mount;
struct Kernel;
struct Filesystem;

// File::priv_word bits: the mount says noatime, or strictatime.
constexpr uint64_t kTmpFileNoAtime = 1, kTmpFileStrictAtime = 2;

extern const FileOps kTmpfsFileOps;
struct FsType;
extern const FsType kTmpFsType;

// Parses mount options ("size=64m,nr_inodes=1k,mode=1777,uid=0,gid=0";
// size also takes a % of memory) and makes an empty instance. Data pages
// are charged to `mem` (the kernel's mem= account; may be null), whose
// limit, when set, is the memory the defaults are half of.
long tmpfs_new(Heap* heap, const char* options, uint32_t dev, MemAccount* mem, Tmpfs** out);
// Applies new size=/nr_inodes=/mode= (remount); EINVAL below what is in use.
long tmpfs_reconfigure(Tmpfs& fs, const char* options);
// Frees everything, or marks it to be freed when the last open file goes.
void tmpfs_unmount(Tmpfs& fs);
void tmpfs_free(Tmpfs& fs);
// The options /proc/mounts shows (",size=1024k,mode=755"), Linux's style:
// only what differs from the defaults.
void tmpfs_show_options(Tmpfs& fs, KFmt& out);
// statfs of the instance, with the flags of the mount it was reached by.
void tmpfs_fill_statfs(Tmpfs& fs, const Mount* m, struct statfs* out);
// Data pages in use (also charged to mem=).
uint64_t tmpfs_pages_used(Tmpfs& fs);
void tmpfs_release_inode(TmpInode& n);
// A new instance with `options`, as mount(2) makes one (the devtmpfs is one).
long tmpfs_new_fs(Kernel& k, const char* options, Filesystem** out);
// mount(2)'s remount and the options /proc/mounts shows, of an instance.
long tmpfs_remount(Filesystem& fsys, unsigned long flags, const char* data);
void tmpfs_options(Filesystem& fsys, char* out, size_t n);
// A node the kernel itself makes in the instance's root folder (root's,
// mode as given): a device (rdev), a folder, or a symlink to `target`.
// EEXIST when the name is taken.
long tmpfs_kernel_node(Filesystem& fsys, const char* name, uint32_t mode, uint64_t rdev, const char* target);

// Opens a FIFO (as a named pipe) or a character device node; the caller
// holds a reference on n.
long tmpfs_open_special(Task& t, TmpInode& n, int flags, File** out);

}  // namespace flatux
