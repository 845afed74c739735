// Open tmpfs files: regular files and directories read and written under
// the filesystem lock, with Linux's timestamp rules (relatime for reads).
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include "kernel/mm/usercopy.h"
#include "kernel/fs/tmpfs/tmpfs.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/task/task.h"
#include "kernel/vfs/vfs.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

TmpInode& inode_of(File& f) { return *static_cast<TmpInode*>(f.priv); }

bool time_le(const timespec& a, const timespec& b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

// relatime (the default): atime moves when it is not newer than mtime or
// ctime, or is a day old; strictatime: on every access.
void read_accessed(File& f, TmpInode& n) {
  if (f.flags & O_NOATIME) return;
  if (f.priv_word & kTmpFileNoAtime) return;
  timespec now = tmp_now();
  if ((f.priv_word & kTmpFileStrictAtime) || time_le(n.atime, n.mtime) || time_le(n.atime, n.ctime) ||
      now.tv_sec - n.atime.tv_sec >= 86400)
    n.atime = now;
}

// A write drops the file's capabilities, and, by someone without
// CAP_FSETID, setuid and setgid on a group executable, as Linux's
// file_remove_privs does.
void written(Task& t, TmpInode& n) {
  timespec now = tmp_now();
  n.mtime = n.ctime = now;
  tmp_kill_file_caps(*n.fs, n);
  if (!capable(t.proc->creds, CAP_FSETID)) {
    if (n.mode & S_ISUID) n.mode &= ~S_ISUID;
    if ((n.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) n.mode &= ~S_ISGID;
  }
}

long do_pread(File& f, void* buf, size_t len, int64_t off) {
  TmpInode& n = inode_of(f);
  if (S_ISDIR(n.mode)) return -EISDIR;
  if (!access_ok(buf, len)) return -EFAULT;
  Guard g(n.fs->lock);
  long r = tmp_read(n, buf, len, off);
  if (r >= 0) read_accessed(f, n);
  return r;
}

long do_pwrite(Task& t, File& f, const void* buf, size_t len, int64_t off, bool append, int64_t* end) {
  TmpInode& n = inode_of(f);
  if (!access_ok(buf, len)) return -EFAULT;
  Guard g(n.fs->lock);
  if (append) off = n.size;
  long r = tmp_write(*n.fs, n, buf, len, off);
  if (r > 0) written(t, n);
  if (r >= 0) *end = off + r;
  return r;
}

long file_read(Task&, File& f, void* buf, size_t len) {
  Guard g(f.pos_lock);
  long r = do_pread(f, buf, len, f.pos);
  if (r > 0) f.pos += r;
  return r;
}

long file_write(Task& t, File& f, const void* buf, size_t len) {
  Guard g(f.pos_lock);
  int64_t end = 0;
  long r = do_pwrite(t, f, buf, len, f.pos, f.flags & O_APPEND, &end);
  if (r >= 0) f.pos = end;
  return r;
}

long file_pread(Task&, File& f, void* buf, size_t len, int64_t off) { return do_pread(f, buf, len, off); }

// Linux appends even for pwrite on an O_APPEND file.
long file_pwrite(Task& t, File& f, const void* buf, size_t len, int64_t off) {
  int64_t end;
  return do_pwrite(t, f, buf, len, off, f.flags & O_APPEND, &end);
}

long file_lseek(Task&, File& f, int64_t off, int whence) {
  TmpInode& n = inode_of(f);
  Guard pg(f.pos_lock);
  int64_t base;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = f.pos; break;
    case SEEK_END:
      if (S_ISDIR(n.mode)) return -EINVAL;
      base = n.size;
      break;
    case SEEK_DATA:
    case SEEK_HOLE: {
      if (S_ISDIR(n.mode)) return -EINVAL;
      Guard g(n.fs->lock);
      long r = tmp_seek_data(n, off, whence == SEEK_DATA);
      if (r >= 0) f.pos = r;
      return r;
    }
    default: return -EINVAL;
  }
  if ((off > 0 && base > INT64_MAX - off) || base + off < 0) return -EINVAL;
  f.pos = base + off;
  return f.pos;
}

long file_stat(Task&, File& f, struct stat* out) {
  TmpInode& n = inode_of(f);
  Guard g(n.fs->lock);
  tmp_fill_stat(n, out);
  return 0;
}

// One linux_dirent64 into buf at *used; false when it does not fit.
bool put_dirent(char* buf, size_t cap, size_t* used, uint64_t ino, int64_t next, uint8_t type,
                const char* name, size_t len) {
  size_t reclen = (19 + len + 1 + 7) & ~(size_t)7;
  if (*used + reclen > cap) return false;
  char* d = buf + *used;
  memset(d, 0, reclen);
  memcpy(d, &ino, 8);
  memcpy(d + 8, &next, 8);
  uint16_t rl = (uint16_t)reclen;
  memcpy(d + 16, &rl, 2);
  d[18] = (char)type;
  memcpy(d + 19, name, len);
  *used += reclen;
  return true;
}

// The position is the next cookie to return: 0 ".", 1 "..", then entries
// whose cookie is at least it, so removals never make a reader skip.
long file_getdents64(Task&, File& f, void* guest_buf, size_t cap) {
  TmpInode& dir = inode_of(f);
  if (!S_ISDIR(dir.mode)) return -ENOTDIR;
  if (cap > 65536) cap = 65536;
  auto* buf = static_cast<char*>(f.heap->alloc(cap));
  if (!buf) return -ENOMEM;
  size_t used = 0;
  bool full = false;  // an entry did not fit
  {
    Guard pg(f.pos_lock);
    Guard g(dir.fs->lock);
    if (dir.nlink == 0) {
      f.heap->free(buf);
      return -ENOENT;  // removed, as Linux says for a dead directory
    }
    if (f.pos == 0) {
      if (put_dirent(buf, cap, &used, dir.ino, 1, DT_DIR, ".", 1)) f.pos = 1;
      else full = true;
    }
    if (f.pos == 1) {
      uint64_t up = dir.parent ? dir.parent->ino : dir.ino;
      if (put_dirent(buf, cap, &used, up, 2, DT_DIR, "..", 2)) f.pos = 2;
      else full = true;
    }
    if (f.pos >= 2) {
      TmpDirent* d = dir.first;
      while (d && d->cookie < (uint64_t)f.pos) d = d->next;
      for (; d; d = d->next) {
        if (!put_dirent(buf, cap, &used, d->inode->ino, (int64_t)d->cookie + 1,
                        (uint8_t)((d->inode->mode & S_IFMT) >> 12), d->name, d->len)) {
          full = true;
          break;
        }
        f.pos = (int64_t)d->cookie + 1;
      }
    }
    read_accessed(f, dir);
  }
  long r = used == 0 && full ? -EINVAL : (long)used;
  if (used && copy_to_user(guest_buf, buf, used) < 0) r = -EFAULT;
  f.heap->free(buf);
  return r;
}

long file_statfs(Task&, File& f, struct statfs* out) {
  tmpfs_fill_statfs(*inode_of(f).fs, f.mount, out);
  return 0;
}

void file_release(File& f) { tmpfs_release_inode(inode_of(f)); }

long file_setattr(Task&, File& f, const Attr& a) {
  TmpInode& n = inode_of(f);
  Guard g(n.fs->lock);
  return tmp_setattr(*n.fs, n, a);
}

long file_xattr(Task& t, File& f, XattrOp& op) {
  TmpInode& n = inode_of(f);
  Guard g(n.fs->lock);
  return tmp_xattr(t, *n.fs, n, op);
}

long file_fsync(Task&, File&, bool) { return 0; }  // memory is where the data lives

long file_fallocate(Task&, File& f, int mode, int64_t off, int64_t len) {
  TmpInode& n = inode_of(f);
  if (!S_ISREG(n.mode)) return S_ISDIR(n.mode) ? -EISDIR : -ENODEV;
  Guard g(n.fs->lock);
  long r = tmp_fallocate(*n.fs, n, mode, off, len);
  if (r == 0) n.ctime = n.mtime = tmp_now();
  return r;
}

long file_shared_map_fd(Task& t, File& f) {
  TmpInode& n = inode_of(f);
  if (!S_ISREG(n.mode)) return -ENODEV;
  Guard g(n.fs->lock);
  return shm_promote(t, *n.fs, n);
}

}  // namespace

const FileOps kTmpfsFileOps = {
    .read = file_read,
    .write = file_write,
    .pread = file_pread,
    .pwrite = file_pwrite,
    .lseek = file_lseek,
    .stat = file_stat,
    .getdents64 = file_getdents64,
    .ioctl = nullptr,
    .statfs = file_statfs,
    .release = file_release,
    .setattr = file_setattr,
    .fsync = file_fsync,
    .fallocate = file_fallocate,
    .shared_map_fd = file_shared_map_fd,
    .xattr = file_xattr,
};

void tmpfs_fill_statfs(Tmpfs& fs, const Mount* m, struct statfs* out) {
  Guard g(fs.lock);
  memset(out, 0, sizeof *out);
  out->f_type = TMPFS_MAGIC;
  out->f_bsize = kTmpPage;
  out->f_frsize = kTmpPage;
  out->f_blocks = fs.limits.max_pages;
  out->f_bfree = out->f_bavail = fs.limits.max_pages - fs.used_pages;
  out->f_files = fs.limits.max_inodes;
  out->f_ffree = fs.limits.max_inodes - fs.used_inodes;
  out->f_namelen = kTmpNameMax;
  out->f_fsid.__val[0] = (int)fs.dev;
  // The mount's flags, as Linux reports them.
  constexpr uint64_t kValid = 0x20;  // ST_VALID: f_flags is filled in
  uint64_t fl = kValid;
  if (m && m->readonly()) fl |= ST_RDONLY;
  if (m && (m->flags & MS_NOSUID)) fl |= ST_NOSUID;
  if (m && (m->flags & MS_NODEV)) fl |= ST_NODEV;
  if (m && (m->flags & MS_NOEXEC)) fl |= ST_NOEXEC;
  if (m && (m->flags & MS_NOATIME)) fl |= ST_NOATIME;
  else if (!m || !(m->flags & MS_STRICTATIME)) fl |= ST_RELATIME;
  out->f_flags = (long)fl;
}

void tmpfs_release_inode(TmpInode& n) {
  Tmpfs& fs = *n.fs;
  fs.lock.lock();
  tmp_put(&n);
  bool gone = fs.detached && fs.pins == 0;
  fs.lock.unlock();
  if (gone) tmpfs_free(fs);
}

}  // namespace flatux
