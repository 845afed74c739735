// ext4 as the VFS sees it: FsOps over inner paths, FileOps over inode
// numbers, and the "ext4", "ext3" and "ext2" filesystem types (one driver:
// libext2fs reads all three).
#include "kernel/fs/ext4/ext4_vfs.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/falloc.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "kernel/mm/usercopy.h"
#include "kernel/fs/ext4/ext4.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/printk.h"
#include "kernel/vfs/dcache.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/new_fs.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

using ext4::Volume;
using ext4::Walk;

constexpr unsigned long kExt4Magic = 0xEF53;
constexpr unsigned long kStValid = 0x20;  // statfs f_flags: the flags are meaningful

Volume& vol_of(Filesystem& fs) { return *static_cast<Volume*>(fs.priv); }
Volume& vol_of(File& f) { return vol_of(*f.fs); }
uint32_t ino_of(File& f) { return (uint32_t)f.priv_word; }

void to_stat(const ext2glue::Attr& a, const Volume& v, struct stat* st) {
  memset(st, 0, sizeof *st);
  st->st_dev = v.dev_number();
  st->st_ino = a.ino;
  st->st_mode = a.mode;
  st->st_nlink = a.nlink;
  st->st_uid = a.uid;
  st->st_gid = a.gid;
  st->st_rdev = a.rdev;
  st->st_size = (off_t)a.size;
  st->st_blksize = 4096;
  st->st_blocks = (blkcnt_t)a.blocks512;
  st->st_atim = {a.atime.sec, a.atime.nsec};
  st->st_mtim = {a.mtime.sec, a.mtime.nsec};
  st->st_ctim = {a.ctime.sec, a.ctime.nsec};
}

ext4::Cred cred_of(Task& t) { return ext4::Cred(creds_of(t)); }

// Walks lk (to its last component's directory with `parent`); a symlink
// on the way becomes the VFS's redirect.
long walk(Filesystem& fs, Lookup& lk, bool parent, Walk& w) {
  char target[kPathMax];
  w.path = lk.path;
  if (lk.dir && !lk.name.empty() && lk.dir->fs == &fs && lk.dir->inode) {
    // The VFS's walk ended in this folder (a dentry's inode number is the
    // volume's), checking search permission on every folder up to it:
    // the operation starts there.
    w.start_ino = (uint32_t)lk.dir->inode->ino;
    w.start_generation = lk.dir->inode->generation;
    w.start_at = lk.path + strlen(lk.path) - lk.name.size();
  }
  w.follow = lk.follow;
  w.want_parent = parent;
  w.target = target;
  long r = vol_of(fs).walk(w);
  if (r == ext4::kWalkRedirect)
    return vfs_make_redirect(lk, std::string_view(w.path, w.link_len), target, w.rest);
  return r;
}

#define WALK(fs, lk, parent, w) \
  Walk w{};                        \
  if (long r_ = walk(fs, lk, parent, w)) return r_

// ---- open files

long file_read_at(Task&, File& f, void* buf, size_t n, int64_t off) {
  if (off < 0) return -EINVAL;
  return vol_of(f).read(ino_of(f), buf, n, (uint64_t)off, false);
}

long file_write_at(Task&, File& f, const void* buf, size_t n, int64_t off) {
  if (off < 0) return -EINVAL;
  return vol_of(f).write(ino_of(f), buf, n, (f.flags & O_APPEND) ? UINT64_MAX : (uint64_t)off, false);
}

long file_write(Task& t, File& f, const void* buf, size_t n) {
  Guard g(f.pos_lock);
  long r = file_write_at(t, f, buf, n, f.pos);
  if (r > 0) {
    ext2glue::Attr a;
    if ((f.flags & O_APPEND) && vol_of(f).getattr(ino_of(f), &a) == 0) f.pos = (int64_t)a.size;
    else f.pos += r;
  }
  return r;
}

long file_lseek(Task&, File& f, int64_t off, int whence) {
  Guard g(f.pos_lock);
  ext2glue::Attr a;
  long r = vol_of(f).getattr(ino_of(f), &a);
  if (r < 0) return r;
  int64_t size = (int64_t)a.size, base;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = f.pos; break;
    case SEEK_END: base = size; break;
    case SEEK_DATA:  // no hole map: the whole file counts as data
      if (off < 0 || off >= size) return -ENXIO;
      return f.pos = off;
    case SEEK_HOLE:
      if (off < 0 || off >= size) return -ENXIO;
      return f.pos = size;
    default: return -EINVAL;
  }
  if (S_ISDIR(a.mode) && whence != SEEK_SET) return -EINVAL;  // positions are cookies
  int64_t n = base + off;
  if ((off > 0 && n < base) || n < 0) return -EINVAL;
  return f.pos = n;
}

long file_stat(Task&, File& f, struct stat* out) {
  ext2glue::Attr a;
  long r = vol_of(f).getattr(ino_of(f), &a);
  if (r == 0) to_stat(a, vol_of(f), out);
  return r;
}

// getdents64 into a kernel buffer (the listing runs inside the gate, where
// guest memory must not be touched), then one copy to the guest.
struct DirFill {
  char* buf;
  size_t cap, used;
  uint64_t next;
};

bool fill_dirent(void* ctx, const ext2glue::DirEntry& e) {
  DirFill* d = static_cast<DirFill*>(ctx);
  size_t reclen = (19 + e.name_len + 1 + 7) & ~(size_t)7;
  if (d->used + reclen > d->cap) return false;
  char* rec = d->buf + d->used;
  memset(rec, 0, reclen);
  uint64_t ino = e.ino, off = e.next;
  memcpy(rec, &ino, 8);
  memcpy(rec + 8, &off, 8);
  uint16_t rl = (uint16_t)reclen;
  memcpy(rec + 16, &rl, 2);
  rec[18] = (char)e.type;
  memcpy(rec + 19, e.name, e.name_len);
  d->used += reclen;
  d->next = e.next;
  return true;
}

long file_getdents64(Task& t, File& f, void* buf, size_t n) {
  Guard g(f.pos_lock);
  size_t cap = n < 65536 ? n : 65536;
  DirFill d{static_cast<char*>(t.kernel->heap->alloc(cap ? cap : 1)), cap, 0, (uint64_t)f.pos};
  if (!d.buf) return -ENOMEM;
  long r = vol_of(f).readdir(ino_of(f), (uint64_t)f.pos, fill_dirent, &d);
  if (r == 0 && d.used == 0 && d.next == (uint64_t)f.pos) {
    // Nothing fitted: EINVAL if an entry is left, 0 at the end.
    DirFill probe{nullptr, 0, 0, (uint64_t)f.pos};
    bool more = false;
    vol_of(f).readdir(ino_of(f), (uint64_t)f.pos, [](void* c, const ext2glue::DirEntry&) {
      *static_cast<bool*>(c) = true;
      return false;
    }, &more);
    (void)probe;
    if (more) r = -EINVAL;
  }
  if (r == 0 && d.used && copy_to_user(buf, d.buf, d.used) < 0) r = -EFAULT;
  if (r == 0) {
    f.pos = (int64_t)d.next;
    r = (long)d.used;
  }
  t.kernel->heap->free(d.buf);
  return r;
}

long fill_statfs(Volume& v, bool readonly, struct statfs* out) {
  ext2glue::FsInfo i;
  long r = v.statfs(&i);
  if (r < 0) return r;
  memset(out, 0, sizeof *out);
  out->f_type = kExt4Magic;
  out->f_bsize = (long)i.block_size;
  out->f_frsize = (long)i.block_size;
  out->f_blocks = i.blocks;
  out->f_bfree = i.free_blocks;
  out->f_bavail = i.avail_blocks;
  out->f_files = i.inodes;
  out->f_ffree = i.free_inodes;
  out->f_namelen = 255;
  uint32_t fsid[2] = {i.uuid_words[0] ^ i.uuid_words[2], i.uuid_words[1] ^ i.uuid_words[3]};
  memcpy(&out->f_fsid, fsid, sizeof fsid);
  out->f_flags = kStValid | (readonly || v.readonly() ? ST_RDONLY : 0);
  return 0;
}

long file_statfs(Task&, File& f, struct statfs* out) {
  return fill_statfs(vol_of(f), f.mount && f.mount->readonly(), out);
}

// The host copy made for exec and read-only shared mappings, if any.
int snapshot_fd(const File& f) { return (int)reinterpret_cast<intptr_t>(f.priv) - 1; }

void file_release(File& f) {
  if (snapshot_fd(f) >= 0) host::sys(SYS_close, snapshot_fd(f));
  vol_of(f).close_ref(ino_of(f));
}

// execve and mappings need a host descriptor: a copy of the file's contents
// (the volume's snapshot, shared while the file is unchanged). A private
// mapping gets the contents as they are at its mmap. Exec and shared
// mappings use one copy per open file, taken at its first use: later writes
// do not show in it, which is why a writable descriptor cannot map the file
// shared (ENODEV).
long file_private_map_fd(Task&, File& f) { return vol_of(f).snapshot_fd(ino_of(f)); }

long file_shared_map_fd(Task&, File& f) {
  if ((f.flags & O_ACCMODE) != O_RDONLY) return -ENODEV;
  if (snapshot_fd(f) >= 0) return snapshot_fd(f);
  long fd = vol_of(f).snapshot_fd(ino_of(f));
  if (fd < 0) return fd;
  void* expected = nullptr;
  if (!__atomic_compare_exchange_n(&f.priv, &expected, reinterpret_cast<void*>(fd + 1), false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    host::sys(SYS_close, fd);
    return snapshot_fd(f);  // another thread made it first
  }
  return fd;
}

short file_poll(Task&, File&, short events) { return events & (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM); }

ext2glue::SetAttr to_setattr(const Attr& a) {
  ext2glue::SetAttr s{};
  s.mask = ext2glue::kSetCtime;  // any change is a change of the inode
  if (a.mask & kAttrMode) { s.mask |= ext2glue::kSetMode; s.mode = a.mode; }
  if (a.mask & kAttrUid) { s.mask |= ext2glue::kSetUid; s.uid = a.uid; }
  if (a.mask & kAttrGid) { s.mask |= ext2glue::kSetGid; s.gid = a.gid; }
  if (a.mask & kAttrSize) { s.mask |= ext2glue::kSetSize | ext2glue::kSetMtime; s.size = (uint64_t)a.size; }
  if (a.mask & kAttrAtime) { s.mask |= ext2glue::kSetAtime; s.atime = {a.atime.tv_sec, (uint32_t)a.atime.tv_nsec}; }
  if (a.mask & kAttrMtime) { s.mask |= ext2glue::kSetMtime; s.mtime = {a.mtime.tv_sec, (uint32_t)a.mtime.tv_nsec}; }
  struct timespec now;
  host::sys(SYS_clock_gettime, CLOCK_REALTIME, &now);
  s.ctime = {now.tv_sec, (uint32_t)now.tv_nsec};
  if ((a.mask & kAttrSize) && !(a.mask & kAttrMtime)) s.mtime = s.ctime;
  return s;
}

long apply_setattr(Volume& v, uint32_t ino, const Attr& a) {
  ext2glue::Attr cur, after;
  long r = v.getattr(ino, &cur);
  if (r < 0) return r;
  if ((a.mask & kAttrMode) && S_ISLNK(cur.mode)) return -EOPNOTSUPP;
  return v.setattr(ino, to_setattr(a), &after);
}

long file_setattr(Task&, File& f, const Attr& a) { return apply_setattr(vol_of(f), ino_of(f), a); }

long file_fsync(Task&, File& f, bool) { return vol_of(f).fsync(true); }

long file_fallocate(Task&, File& f, int mode, int64_t off, int64_t len) {
  if (mode != 0) return -EOPNOTSUPP;
  if (off < 0 || len <= 0) return -EINVAL;
  if ((f.flags & O_ACCMODE) == O_RDONLY) return -EBADF;
  return vol_of(f).fallocate(ino_of(f), (uint64_t)off, (uint64_t)len);
}

const FileOps kExt4FileOps = {
    .read = file_read_at_pos,
    .write = file_write,
    .pread = file_read_at,
    .pwrite = file_write_at,
    .lseek = file_lseek,
    .stat = file_stat,
    .getdents64 = file_getdents64,
    .ioctl = nullptr,
    .statfs = file_statfs,
    .release = file_release,
    .poll = file_poll,
    .setattr = file_setattr,
    .fsync = file_fsync,
    .fallocate = file_fallocate,
    .shared_map_fd = file_shared_map_fd,
    .private_map_fd = file_private_map_fd,
};

// ---- paths

// The open file of inode `ino` (`created` by this open: no access check).
long open_ino(Task& t, Filesystem& fs, uint32_t ino, bool created, int flags, File** out) {
  Volume& v = vol_of(fs);
  ext2glue::Attr a;
  long r = v.getattr(ino, &a);
  if (r < 0) return r;
  int acc = flags & O_ACCMODE;
  if (S_ISLNK(a.mode) && !(flags & O_PATH)) return -ELOOP;  // O_NOFOLLOW met a link
  if ((flags & O_DIRECTORY) && !S_ISDIR(a.mode)) return -ENOTDIR;
  if (!(flags & O_PATH)) {
    if (!created && (r = may_open(creds_of(t), perms_of(a), flags)) < 0) return r;
    if (S_ISCHR(a.mode) || S_ISBLK(a.mode) || S_ISFIFO(a.mode) || S_ISSOCK(a.mode)) return -ENXIO;
    if ((flags & O_TRUNC) && acc != O_RDONLY && S_ISREG(a.mode) && a.size) {
      Attr trunc;
      trunc.mask = kAttrSize;
      if ((r = apply_setattr(v, ino, trunc)) < 0) return r;
    }
  }
  File* f = file_alloc(t.kernel->heap, &kExt4FileOps, (uint32_t)flags & ~(O_CLOEXEC | O_CREAT | O_EXCL | O_TRUNC), -1);
  if (!f) return -ENOMEM;
  f->fs = &fs;
  f->priv_word = ino;
  // A regular file or a directory: always ready.
  f->poll_kind = (flags & O_PATH) ? File::PollKind::kAsk : File::PollKind::kAlwaysReady;
  v.open_ref(ino);
  *out = f;
  return 0;
}

long fs_open(Task& t, Filesystem& fs, Lookup& lk, int flags, int mode, File** out) {
  if ((flags & __O_TMPFILE) == __O_TMPFILE) return -EOPNOTSUPP;
  Volume& v = vol_of(fs);
  bool create = flags & O_CREAT;
  if (create && (flags & O_EXCL)) lk.follow = false;  // O_EXCL never follows a last symlink: EEXIST
  WALK(fs, lk, create, w);
  bool created = false;
  if (create) {
    if (w.parent == 0) {  // the root itself
      if (flags & O_EXCL) return -EEXIST;
    } else if (w.ino == 0) {
      ext2glue::Attr a;
      long r = v.create(cred_of(t), w.parent, w.name, S_IFREG | (mode & 07777), 0, &a);
      if (r < 0) return r;
      w.ino = a.ino;
      created = true;
    } else if (flags & O_EXCL) {
      return -EEXIST;
    }
  }
  return open_ino(t, fs, w.ino, created, flags, out);
}

long fs_open_dentry(Task& t, Filesystem& fs, Mount&, Dentry& d, int flags, File** out) {
  if (!d.inode) return -ENOENT;
  // Still the inode the dentry named, not a later file given its number.
  ext2glue::Attr a;
  uint32_t ino = (uint32_t)d.inode->ino;
  if (vol_of(fs).getattr(ino, &a) < 0 || (d.inode->generation && a.generation != d.inode->generation))
    return -ENOENT;
  return open_ino(t, fs, ino, false, flags, out);
}

long fs_stat(Task& t, Filesystem& fs, Lookup& lk, struct stat* out) {
  WALK(fs, lk, false, w);
  ext2glue::Attr a;
  long r = vol_of(fs).getattr(w.ino, &a);
  if (r == 0) to_stat(a, vol_of(fs), out);
  return r;
}

long fs_readlink(Task& t, Filesystem& fs, Lookup& lk, char* buf, size_t n) {
  WALK(fs, lk, false, w);
  char target[kPathMax];
  size_t len = 0;
  long r = vol_of(fs).readlink(w.ino, target, sizeof target, &len);
  if (r < 0) return r;
  if (len > n) len = n;
  memcpy(buf, target, len);
  return (long)len;
}

long fs_access(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  WALK(fs, lk, false, w);
  ext2glue::Attr a;
  long r = vol_of(fs).getattr(w.ino, &a);
  if (r < 0 || mode == F_OK) return r;
  if ((mode & W_OK) && (lk.mount->readonly() || vol_of(fs).readonly()) &&
      (S_ISREG(a.mode) || S_ISDIR(a.mode) || S_ISLNK(a.mode)))
    return -EROFS;
  return permission(creds_of(t), perms_of(a), mode);
}

long fs_statfs(Task& t, Filesystem& fs, Lookup& lk, struct statfs* out) {
  WALK(fs, lk, false, w);
  return fill_statfs(vol_of(fs), lk.mount->readonly(), out);
}

long fs_mkdir(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  WALK(fs, lk, true, w);
  if (w.parent == 0 || w.ino) return -EEXIST;
  ext2glue::Attr a;
  return vol_of(fs).mkdir(cred_of(t), w.parent, w.name, (uint32_t)mode, &a);
}

long fs_mknod(Task& t, Filesystem& fs, Lookup& lk, int mode, uint64_t dev) {
  WALK(fs, lk, true, w);
  if (w.parent == 0 || w.ino) return -EEXIST;
  ext2glue::Attr a;
  return vol_of(fs).create(cred_of(t), w.parent, w.name, (uint32_t)mode, dev, &a);
}

long fs_remove(Task& t, Filesystem& fs, Lookup& lk, bool dir) {
  WALK(fs, lk, true, w);
  if (w.parent == 0) return -EBUSY;
  if (w.ino == 0) return -ENOENT;
  return vol_of(fs).unlink(cred_of(t), w.parent, w.name, dir);
}
long fs_unlink(Task& t, Filesystem& fs, Lookup& lk) { return fs_remove(t, fs, lk, false); }
long fs_rmdir(Task& t, Filesystem& fs, Lookup& lk) { return fs_remove(t, fs, lk, true); }

long fs_symlink(Task& t, Filesystem& fs, Lookup& lk, const char* target) {
  WALK(fs, lk, true, w);
  if (w.parent == 0 || w.ino) return -EEXIST;
  ext2glue::Attr a;
  return vol_of(fs).symlink(cred_of(t), w.parent, w.name, target, &a);
}

long fs_link(Task& t, Filesystem& fs, Lookup& a, Lookup& b) {
  WALK(fs, a, false, wa);
  Walk wb{};
  if (long r = walk(fs, b, true, wb)) return r;
  if (wb.parent == 0 || wb.ino) return -EEXIST;
  return vol_of(fs).link(cred_of(t), wa.ino, wb.parent, wb.name);
}

// linkat(fd, "", AT_EMPTY_PATH): a new name for an open file.
long fs_link_file(Task& t, Filesystem& fs, File& f, Lookup& b) {
  WALK(fs, b, true, wb);
  if (wb.parent == 0 || wb.ino) return -EEXIST;
  return vol_of(fs).link(cred_of(t), ino_of(f), wb.parent, wb.name);
}

long fs_rename(Task& t, Filesystem& fs, Lookup& a, Lookup& b, unsigned flags) {
  WALK(fs, a, true, wa);
  Walk wb{};
  if (long r = walk(fs, b, true, wb)) return r;
  if (wa.parent == 0 || wb.parent == 0) return -EBUSY;
  if (wa.ino == 0) return -ENOENT;
  return vol_of(fs).rename(cred_of(t), wa.parent, wa.name, wb.parent, wb.name, flags);
}

long fs_setattr(Task& t, Filesystem& fs, Lookup& lk, const Attr& a) {
  WALK(fs, lk, false, w);
  return apply_setattr(vol_of(fs), w.ino, a);
}

void fs_sync(Filesystem& fs) { vol_of(fs).fsync(true); }

uint32_t fs_inode_generation(Filesystem& fs, uint64_t ino) {
  ext2glue::Attr a;
  return vol_of(fs).getattr((uint32_t)ino, &a) == 0 ? a.generation : 0;
}

// `name` in the folder of dentry `dir`: one lookup in that directory (a
// dentry's inode number and generation are the volume's), none in the
// folders above it.
long fs_lookup(Task& t, Filesystem& fs, Mount&, Dentry& dir, std::string_view name, Inode** out) {
  if (!dir.inode) return -ENOENT;
  ext2glue::Attr a;
  long r = vol_of(fs).lookup((uint32_t)dir.inode->ino, dir.inode->generation, name.data(), name.size(), &a);
  if (r < 0) return r;
  auto n = plain_inode(t, fs, a.ino, perms_of(a), a.generation);
  if (n.is_error()) return n.error();
  *out = n.value();
  return 0;
}

// The folder's bits and owner from the volume's inode cache (a dentry's
// inode number is the volume's; its Inode fields are as at lookup).
FilePerms fs_dir_perms(Task&, Filesystem& fs, Mount&, Dentry& d) {
  ext2glue::Attr a;
  if (vol_of(fs).getattr((uint32_t)d.inode->ino, &a) == 0) return perms_of(a);
  return perms_of(*d.inode);
}

const FsOps kExt4FsOps = {
    .name = "ext4",
    .open = fs_open,
    .stat = fs_stat,
    .readlink = fs_readlink,
    .access = fs_access,
    .statfs = fs_statfs,
    .mkdir = fs_mkdir,
    .mknod = fs_mknod,
    .unlink = fs_unlink,
    .rmdir = fs_rmdir,
    .symlink = fs_symlink,
    .link = fs_link,
    .rename = fs_rename,
    .setattr = fs_setattr,
    .link_file = fs_link_file,
    .dir_path = nullptr,
    .sync = fs_sync,
    .lookup = fs_lookup,
    .open_dentry = fs_open_dentry,
    .dir_perms = fs_dir_perms,
    .dcache_trusted = true,
    .inode_generation = fs_inode_generation,
    .open_checks_access = true,
};

// ---- mounting

long ext4_mount(Kernel& k, const char* source, unsigned long flags, const char*, Filesystem** out) {
  if (!source || !*source) return -EINVAL;
  BlockDevice* dev = nullptr;
  long r = lookup_bdev(k, source, &dev);
  if (r < 0) return r;
  int expected = 0;
  if (dev->readonly && !(flags & MS_RDONLY)) r = -EACCES;  // Linux: a read-only device
  else if (!dev->users.compare_exchange_strong(expected, 1)) r = -EBUSY;
  if (r < 0) {
    block_put(*dev);
    return r;
  }
  Filesystem* fs = k.heap->make<Filesystem>();
  Volume* v = nullptr;
  r = fs ? Volume::mount(k, *dev, flags & MS_RDONLY, &v) : -ENOMEM;
  if (r < 0) {
    k.heap->destroy_obj(fs);
    dev->users.store(0);
    block_put(*dev);
    return r;
  }
  fs->ops = &kExt4FsOps;
  fs->priv = v;
  fs->names_added = &v->names_added();
  fs->dev = v->dev_number();
  fs->readonly = v->readonly();  // also when the volume refused writes (journal to recover)
  *out = fs;
  return 0;
}

// The mount's hold on the device goes last: a loop device with
// LO_FLAGS_AUTOCLEAR lets go of its file then.
void ext4_unmount(Filesystem& fs) {
  Volume& v = vol_of(fs);
  Kernel& k = v.kernel();
  BlockDevice& dev = v.device();
  long r = v.unmount();
  if (r < 0)
    printkf(k, [&](KFmt& f) { f.str("EXT4-fs (").str(dev.name).str("): unmount: error ").dec(-r).str("\n"); });
  dev.users.store(0);
  k.heap->destroy_obj(&fs);
  block_put(dev);
}

}  // namespace

const FsType kExt4Type = {.name = "ext4", .mount = ext4_mount, .unmount = ext4_unmount, .needs_device = true};
const FsType kExt3Type = {.name = "ext3", .mount = ext4_mount, .unmount = ext4_unmount, .needs_device = true};
const FsType kExt2Type = {.name = "ext2", .mount = ext4_mount, .unmount = ext4_unmount, .needs_device = true};

long ext4_register(Kernel& k) {
  for (const FsType* t : {&kExt4Type, &kExt3Type, &kExt2Type})
    if (long r = k.vfs->register_type(t); r < 0) return r;
  return 0;
}

long ext4_mount_device(Kernel& k, const char* device, const char* guest_path, unsigned long flags) {
  // A read-only device (ubdNr=) mounts read-only, as mount(8) falls back.
  if (BlockDevice* d = block_get_named(k, device)) {
    if (d->readonly) flags |= MS_RDONLY;
    block_put(*d);
  }
  Filesystem* fs = nullptr;
  long r = ext4_mount(k, device, flags, nullptr, &fs);
  if (r < 0) return r;
  char source[32];
  KFmt(source, sizeof source).str("/dev/").str(vol_of(*fs).device().name).c_str();
  r = k.vfs->mount(guest_path, fs, &kExt4Type, flags, source);
  if (r < 0) ext4_unmount(*fs);
  return r;
}

void ext4_poweroff(Kernel& k) {
  k.vfs->for_each_mount_newest_first([](const Mount& m) {
    if (m.fs->ops == &kExt4FsOps) vol_of(*m.fs).shutdown();
  });
}

}  // namespace flatux
