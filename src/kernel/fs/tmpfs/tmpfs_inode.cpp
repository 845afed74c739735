// tmpfs inodes and directory entries: allocation against nr_inodes, the
// (directory, name) hash, and entry lists that directory streams walk.
#include <cstring>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"

namespace flatux {
namespace {

size_t hash_name(const TmpInode* dir, const char* name, size_t len) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)dir;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
  return (size_t)(h ^ (h >> 29));
}

// Doubles the bucket array once entries outnumber buckets.
void grow_buckets(Tmpfs& fs) {
  if (fs.nentries < fs.nbuckets) return;
  size_t n = fs.nbuckets ? fs.nbuckets * 2 : 64;
  auto** b = static_cast<TmpDirent**>(fs.heap->alloc(n * sizeof(TmpDirent*)));
  if (!b) return;  // lookups stay correct, only slower
  for (size_t i = 0; i < fs.nbuckets; i++) {
    for (TmpDirent* d = fs.buckets[i]; d;) {
      TmpDirent* next = d->hash_next;
      size_t k = hash_name(d->dir, d->name, d->len) & (n - 1);
      d->hash_next = b[k];
      b[k] = d;
      d = next;
    }
  }
  fs.heap->free(fs.buckets);
  fs.buckets = b;
  fs.nbuckets = n;
}

void free_inode(TmpInode* n) {
  Tmpfs& fs = *n->fs;
  if (n->memfd >= 0) shm_release(fs, *n);
  if (S_ISREG(n->mode)) tmp_pages_drop(fs, *n, 0, UINT64_MAX);
  if (n->fifo_fd >= 0) host::sys(SYS_close, n->fifo_fd);
  fs.heap->free(n->target);
  tmp_xattrs_free(fs, *n);
  fs.used_inodes--;
  fs.heap->free(n);
}

}  // namespace

timespec tmp_now() {
  timespec ts;
  host::sys(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  return ts;
}

TmpInode* tmp_new_inode(Tmpfs& fs, uint32_t mode, uint32_t uid, uint32_t gid, long* err) {
  if (fs.used_inodes >= fs.limits.max_inodes) {
    *err = -ENOSPC;
    return nullptr;
  }
  auto* n = static_cast<TmpInode*>(fs.heap->alloc(sizeof(TmpInode)));
  if (!n) {
    *err = -ENOMEM;
    return nullptr;
  }
  new (n) TmpInode();
  n->fs = &fs;
  n->ino = fs.next_ino++;
  n->mode = mode;
  n->uid = uid;
  n->gid = gid;
  n->atime = n->mtime = n->ctime = n->btime = tmp_now();
  fs.used_inodes++;
  return n;
}

void tmp_get(TmpInode* n) {
  n->refs++;
  n->fs->pins++;
}

void tmp_put(TmpInode* n) {
  n->fs->pins--;
  if (--n->refs == 0 && n->nlink == 0) free_inode(n);
}

void tmp_touch(TmpInode* n, bool m, bool c) {
  timespec now = tmp_now();
  if (m) n->mtime = now;
  if (c) n->ctime = now;
}

TmpDirent* tmp_find(Tmpfs& fs, TmpInode* dir, const char* name, size_t len) {
  if (!fs.nbuckets) return nullptr;
  for (TmpDirent* d = fs.buckets[hash_name(dir, name, len) & (fs.nbuckets - 1)]; d; d = d->hash_next)
    if (d->dir == dir && d->len == len && memcmp(d->name, name, len) == 0) return d;
  return nullptr;
}

long tmp_add_entry(Tmpfs& fs, TmpInode* dir, const char* name, size_t len, TmpInode* n) {
  grow_buckets(fs);
  if (!fs.nbuckets) return -ENOMEM;
  auto* d = static_cast<TmpDirent*>(fs.heap->alloc(sizeof(TmpDirent) + len + 1));
  if (!d) return -ENOMEM;
  memcpy(d->name, name, len);
  d->name[len] = 0;
  d->len = (uint16_t)len;
  d->dir = dir;
  d->inode = n;
  d->cookie = dir->next_cookie++;
  d->prev = dir->last;
  d->next = nullptr;
  if (dir->last) dir->last->next = d;
  else dir->first = d;
  dir->last = d;
  size_t k = hash_name(dir, name, len) & (fs.nbuckets - 1);
  d->hash_next = fs.buckets[k];
  fs.buckets[k] = d;
  fs.nentries++;
  dir->entries++;
  n->nlink++;
  if (S_ISDIR(n->mode)) {
    n->nlink++;  // its own "."
    n->parent = dir;
    n->dentry = d;
    dir->nlink++;  // its ".."
  }
  fs.names_added.added(dir->ino);  // negative dentries of the name are stale now
  return 0;
}

void tmp_remove_entry(Tmpfs& fs, TmpDirent* d) {
  TmpInode* dir = d->dir;
  TmpInode* n = d->inode;
  TmpDirent** link = &fs.buckets[hash_name(dir, d->name, d->len) & (fs.nbuckets - 1)];
  while (*link != d) link = &(*link)->hash_next;
  *link = d->hash_next;
  if (d->prev) d->prev->next = d->next;
  else dir->first = d->next;
  if (d->next) d->next->prev = d->prev;
  else dir->last = d->prev;
  fs.nentries--;
  dir->entries--;
  fs.heap->free(d);
  if (S_ISDIR(n->mode)) {
    n->nlink = 0;  // "." and the name go together (rmdir of an empty dir)
    n->parent = nullptr;
    if (n->dentry == d) n->dentry = nullptr;
    dir->nlink--;
  } else {
    n->nlink--;
  }
  // Keep n alive across the check: tmp_put frees it if nothing else holds it.
  tmp_get(n);
  tmp_put(n);
}

void tmp_destroy_tree(Tmpfs& fs) {
  // Children before their directory, without recursion (trees can be deep):
  // descend to a directory with no subdirectory entries, empty it, go up.
  TmpInode* cur = fs.root;
  while (cur) {
    TmpDirent* d = cur->first;
    if (d && S_ISDIR(d->inode->mode) && d->inode->first) {
      cur = d->inode;
    } else if (d) {
      tmp_remove_entry(fs, d);
    } else {
      cur = cur == fs.root ? nullptr : cur->parent;
    }
  }
  if (fs.root) {
    fs.root->nlink = 0;
    tmp_get(fs.root);
    tmp_put(fs.root);
    fs.root = nullptr;
  }
  fs.heap->free(fs.buckets);
  fs.buckets = nullptr;
  fs.nbuckets = 0;
}

}  // namespace flatux
