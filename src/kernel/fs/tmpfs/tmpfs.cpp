// tmpfs as a VFS filesystem type: the FsOps over the name operations, the
// per-file operations the VFS added (setattr, fsync, fallocate, shared
// mappings), and mount/remount/unmount.
#include "kernel/fs/tmpfs/tmpfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/new_fs.h"
#include "kernel/vfs/perm.h"

namespace flatux {
namespace {

Tmpfs& tmpfs_of(Filesystem& fs) { return *static_cast<Tmpfs*>(fs.priv); }
TmpInode& inode_of(File& f) { return *static_cast<TmpInode*>(f.priv); }

// The open file of n (whose reference moves in), opened through `m`.
long open_node(Task& t, Filesystem& fsys, const Mount* m, TmpInode* n, int flags, File** out) {
  Tmpfs& fs = tmpfs_of(fsys);
  bool special = S_ISFIFO(n->mode) || S_ISCHR(n->mode) || S_ISBLK(n->mode) || S_ISSOCK(n->mode);
  if (special && !(flags & O_PATH)) {
    bool device = S_ISCHR(n->mode) || S_ISBLK(n->mode);
    long r = (device && m && (m->flags & MS_NODEV)) ? -EACCES : tmpfs_open_special(t, *n, flags, out);
    tmpfs_release_inode(*n);
    return r;
  }
  uint32_t keep = (uint32_t)flags & ~(uint32_t)(O_CLOEXEC | O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY);
  File* f = file_alloc(fs.heap, &kTmpfsFileOps, keep, -1);
  if (!f) {
    tmpfs_release_inode(*n);
    return -ENOMEM;
  }
  f->fs = &fsys;
  f->priv = n;
  // A regular file or a directory: always ready.
  f->poll_kind = (flags & O_PATH) ? File::PollKind::kAsk : File::PollKind::kAlwaysReady;
  if (m && (m->flags & MS_NOATIME)) f->priv_word |= kTmpFileNoAtime;
  if (m && (m->flags & MS_STRICTATIME)) f->priv_word |= kTmpFileStrictAtime;
  *out = f;
  return 0;
}

long fs_open(Task& t, Filesystem& fsys, Lookup& lk, int flags, int mode, File** out) {
  TmpInode* n = nullptr;
  long r = tmp_open_inode(t, tmpfs_of(fsys), lk, flags, (uint32_t)mode, &n);
  return r < 0 ? r : open_node(t, fsys, lk.mount, n, flags, out);
}

long fs_open_dentry(Task& t, Filesystem& fsys, Mount& m, Dentry& d, int flags, File** out) {
  TmpInode* n = nullptr;
  long r = tmp_open_dentry_inode(t, tmpfs_of(fsys), d, flags, &n);
  return r < 0 ? r : open_node(t, fsys, &m, n, flags, out);
}

long fs_lookup(Task& t, Filesystem& fs, Mount&, Dentry& dir, std::string_view name, Inode** out) {
  return tmp_lookup(t, tmpfs_of(fs), fs, dir, name, out);
}
FilePerms fs_dir_perms(Task&, Filesystem& fs, Mount&, Dentry& d) { return tmp_dir_perms(tmpfs_of(fs), d); }
long fs_stat(Task& t, Filesystem& fs, Lookup& lk, struct stat* out) { return tmp_stat_path(t, tmpfs_of(fs), lk, out); }
long fs_readlink(Task& t, Filesystem& fs, Lookup& lk, char* buf, size_t n) {
  return tmp_readlink(t, tmpfs_of(fs), lk, buf, n);
}
long fs_access(Task& t, Filesystem& fs, Lookup& lk, int mode) { return tmp_access(t, tmpfs_of(fs), lk, mode); }

long fs_statfs(Task& t, Filesystem& fsys, Lookup& lk, struct statfs* out) {
  struct stat st;
  long r = tmp_stat_path(t, tmpfs_of(fsys), lk, &st);  // the path must exist
  if (r < 0) return r;
  tmpfs_fill_statfs(tmpfs_of(fsys), lk.mount, out);
  return 0;
}

long fs_mkdir(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  return tmp_mknod(t, tmpfs_of(fs), lk, S_IFDIR | ((uint32_t)mode & 07777), 0);
}
long fs_mknod(Task& t, Filesystem& fs, Lookup& lk, int mode, uint64_t dev) {
  return tmp_mknod(t, tmpfs_of(fs), lk, (uint32_t)mode, dev);
}
long fs_unlink(Task& t, Filesystem& fs, Lookup& lk) { return tmp_unlink(t, tmpfs_of(fs), lk, false); }
long fs_rmdir(Task& t, Filesystem& fs, Lookup& lk) { return tmp_unlink(t, tmpfs_of(fs), lk, true); }
long fs_symlink(Task& t, Filesystem& fs, Lookup& lk, const char* target) {
  return tmp_symlink(t, tmpfs_of(fs), lk, target);
}
long fs_link(Task& t, Filesystem& fs, Lookup& a, Lookup& b) { return tmp_link(t, tmpfs_of(fs), a, b); }
long fs_rename(Task& t, Filesystem& fs, Lookup& a, Lookup& b, unsigned flags) {
  return tmp_rename(t, tmpfs_of(fs), a, b, flags);
}
long fs_setattr(Task& t, Filesystem& fs, Lookup& lk, const Attr& a) {
  return tmp_setattr_path(t, tmpfs_of(fs), lk, a);
}

long fs_xattr(Task& t, Filesystem& fs, Lookup& lk, XattrOp& op) { return tmp_xattr_path(t, tmpfs_of(fs), lk, op); }

long fs_link_file(Task& t, Filesystem& fsys, File& f, Lookup& lk) {
  if (f.ops != &kTmpfsFileOps) return -ENOENT;  // a FIFO or device: no inode of ours at hand
  Tmpfs& fs = tmpfs_of(fsys);
  Guard g(fs.lock);
  return tmp_link_inode(t, fs, &inode_of(f), lk);
}

// The current path of an open directory, so *at calls follow a rename.
long fs_dir_path(Task&, Filesystem& fsys, File& f, char* out, size_t cap) {
  if (f.ops != &kTmpfsFileOps) return -ENOTDIR;
  Tmpfs& fs = tmpfs_of(fsys);
  Guard g(fs.lock);
  TmpInode* n = &inode_of(f);
  if (!S_ISDIR(n->mode)) return -ENOTDIR;
  // Names from the directory up to the root, written right to left.
  size_t at = cap - 1;
  out[at] = 0;
  for (; n != fs.root; n = n->parent) {
    if (!n->dentry || !n->parent) return -ENOENT;  // removed
    size_t len = n->dentry->len;
    if (at < len + 1) return -ENAMETOOLONG;
    at -= len;
    memcpy(out + at, n->dentry->name, len);
    out[--at] = '/';
  }
  if (at == cap - 1) out[--at] = '/';
  memmove(out, out + at, cap - at);
  return 0;
}

const FsOps kTmpFsOps = {
    .name = "tmpfs",
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
    .dir_path = fs_dir_path,
    .xattr = fs_xattr,
    .lookup = fs_lookup,
    .open_dentry = fs_open_dentry,
    .dir_perms = fs_dir_perms,
    .dcache_trusted = true,
    .open_checks_access = true,
};

long tmpfs_mount(Kernel& k, const char*, unsigned long, const char* data, Filesystem** out) {
  Filesystem* fsys = k.heap->make<Filesystem>();
  if (!fsys) return -ENOMEM;
  fsys->ops = &kTmpFsOps;
  fsys->dev = mount_anon_dev(k);
  Tmpfs* fs = nullptr;
  long r = tmpfs_new(k.heap, data, (uint32_t)fsys->dev, &k.mem, &fs);
  if (r < 0) {
    k.heap->destroy_obj(fsys);
    return r;
  }
  fsys->priv = fs;
  fsys->names_added = &fs->names_added;
  *out = fsys;
  return 0;
}

void tmpfs_type_unmount(Filesystem& fsys) {
  Heap* heap = tmpfs_of(fsys).heap;
  tmpfs_unmount(tmpfs_of(fsys));
  heap->destroy_obj(&fsys);
}

}  // namespace

long tmpfs_remount(Filesystem& fsys, unsigned long, const char* data) {
  return tmpfs_reconfigure(tmpfs_of(fsys), data);
}

void tmpfs_options(Filesystem& fsys, char* out, size_t n) {
  char buf[256];
  KFmt f(buf, sizeof buf);
  tmpfs_show_options(tmpfs_of(fsys), f);
  copy_cstr(out, n, f.size() ? tail(f.view(), 1) : std::string_view());  // without the leading ','
}

long tmpfs_new_fs(Kernel& k, const char* options, Filesystem** out) {
  return tmpfs_mount(k, nullptr, 0, options, out);
}

long tmpfs_kernel_node(Filesystem& fsys, const char* name, uint32_t mode, uint64_t rdev, const char* target) {
  Tmpfs& fs = tmpfs_of(fsys);
  size_t len = strlen(name);
  if (len == 0 || len > kTmpNameMax) return -EINVAL;
  Guard g(fs.lock);
  if (tmp_find(fs, fs.root, name, len)) return -EEXIST;
  long err = 0;
  TmpInode* n = tmp_new_inode(fs, mode, 0, 0, &err);
  if (!n) return err;
  if (S_ISCHR(mode) || S_ISBLK(mode)) n->rdev = rdev;
  if (S_ISDIR(mode)) n->size = 40;
  if (S_ISLNK(mode)) {
    size_t tl = strlen(target);
    if (!(n->target = static_cast<char*>(fs.heap->alloc(tl + 1)))) err = -ENOMEM;
    else memcpy(n->target, target, tl + 1);
    n->size = (int64_t)tl;
  }
  if (err == 0) err = tmp_add_entry(fs, fs.root, name, len, n);
  if (err < 0) {
    tmp_get(n);
    tmp_put(n);  // frees it, with its target
    return err;
  }
  fs.root->size += 20;
  fs.root->mtime = fs.root->ctime = n->ctime;
  return 0;
}

const FsType kTmpFsType = {
    .name = "tmpfs",
    .mount = tmpfs_mount,
    .unmount = tmpfs_type_unmount,
    .remount = tmpfs_remount,
    .show_options = tmpfs_options,
};

}  // namespace flatux
