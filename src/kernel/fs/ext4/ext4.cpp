#include "kernel/fs/ext4/ext4.h"
#include "kernel/fs/ext4/internal.h"

#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/foreign_gate.h"
#include "kernel/vfs/perm.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/printk.h"

namespace flatux::ext4 {

namespace {

constexpr uint32_t kRootIno = 2;
constexpr uint64_t kPage = PageCache::kPageSize;
constexpr uint64_t kReadAheadPages = 16;

uint64_t hash_name(uint32_t dir, const char* name, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull ^ dir;
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)name[i]) * 0x100000001b3ull;
  return h ^ (h >> 31);
}

}  // namespace

Volume::Volume(Kernel& k, BlockDevice& dev) : k_(k), dev_(&dev), data_(k.heap, 16384) {}  // 64 MiB

void Volume::log_failure(long err, const char* what) {
  const char* msg = vol_ ? ext2glue::last_error(vol_) : "";
  printkf(k_, [&](KFmt& f) {
    f.str("EXT4-fs error (device ").str(dev_->name).str("): ").str(what).str(msg).str(" (errno ").dec(-err).str(")\n");
  });
}

Time Volume::now() const {
  struct timespec ts;
  host::sys(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  return Time{ts.tv_sec, (uint32_t)ts.tv_nsec};
}

long Volume::mount(Kernel& k, BlockDevice& dev, bool readonly, Volume** out) {
  Volume* v = k.heap->make<Volume>(k, dev);
  if (!v) return -ENOMEM;
  struct Args {
    Kernel* k;
    BlockDevice* dev;
    bool rw;
    ext2glue::OpenResult res;
  } args{&k, &dev, !readonly, {}};
  long r = foreign_call(k, [](void* p) -> long {
    Args* a = static_cast<Args*>(p);
    return ext2glue::open_volume(*a->k, *a->dev, a->rw, &a->res);
  }, &args);
  v->vol_ = args.res.vol;
  if (r < 0) {
    if (v->vol_) {
      v->log_failure(r, "mount failed: ");
      foreign_call(k, [](void* p) -> long { return ext2glue::close_volume(static_cast<ext2glue::Volume*>(p)); },
                   v->vol_);
    }
    k.heap->destroy_obj(v);
    return r;
  }
  v->readonly_ = args.res.readonly;
  if (args.res.needed_recovery)
    printkf(k, [&](KFmt& f) {
      f.str("EXT4-fs (").str(dev.name).str("): the journal needs recovery, which flatux does not do; "
                                             "mounted read-only (run e2fsck on the image)\n");
    });
  *out = v;
  return 0;
}

long Volume::shutdown() {
  Guard g(lock_);
  if (!vol_) return 0;
  // Not through gate(): close_volume frees the message a failure would log.
  long r = foreign_call(k_, [](void* v) -> long { return ext2glue::close_volume(static_cast<ext2glue::Volume*>(v)); },
                        vol_);
  vol_ = nullptr;
  if (r == 0 && !readonly_) r = block_flush(*dev_);
  if (r < 0) printkf(k_, [&](KFmt& f) { f.str("EXT4-fs (").str(dev_->name).str("): writing back at unmount failed: ").dec(-r).str("\n"); });
  return r;
}

long Volume::unmount() {
  long r = shutdown();
  drop_every_snapshot();
  for (Inode*& head : inodes_)
    while (head) {
      Inode* n = head->next;
      k_.heap->free(head->link);
      k_.heap->free(head);
      head = n;
    }
  for (Dentry*& head : dentries_)
    while (head) {
      Dentry* n = head->next;
      k_.heap->free(head);
      head = n;
    }
  k_.heap->destroy_obj(this);
  return r;
}

// ---- the inode and dentry caches

Inode* Volume::inode(uint32_t ino, long* err) {
  Inode* in = inodes_[ino % kInodeBuckets];
  while (in && in->a.ino != ino) in = in->next;
  if (in && in->valid) {
    stats_.inode_hits++;
    return in;
  }
  Attr a;
  long r = gate([&] { return ext2glue::read_attr(vol_, ino, &a); });
  if (r < 0) {
    *err = r;
    return nullptr;
  }
  if (!(in = cache_inode(a))) *err = -ENOMEM;
  return in;
}

// The entry for a.ino, made or refreshed with these attributes.
Inode* Volume::cache_inode(const Attr& a) {
  Inode** head = &inodes_[a.ino % kInodeBuckets];
  Inode* in = *head;
  while (in && in->a.ino != a.ino) in = in->next;
  if (!in) {
    if (ninodes_ >= kMaxInodes) {  // make room: this bucket's unused entries go
      for (Inode** pp = head; *pp;) {
        Inode* e = *pp;
        if (e->opens) { pp = &e->next; continue; }
        *pp = e->next;
        drop_snapshot(e);
        k_.heap->free(e->link);
        k_.heap->free(e);
        ninodes_--;
      }
    }
    in = static_cast<Inode*>(k_.heap->alloc(sizeof(Inode)));
    if (!in) return nullptr;
    in->next = *head;
    *head = in;
    ninodes_++;
  }
  in->a = a;
  in->valid = true;
  return in;
}

void Volume::forget_inode(uint32_t ino) {
  for (Inode* in = inodes_[ino % kInodeBuckets]; in; in = in->next)
    if (in->a.ino == ino) {
      in->valid = false;
      k_.heap->free(in->link);
      in->link = nullptr;
    }
}

void Volume::update_inode(const Attr& a) {
  for (Inode* in = inodes_[a.ino % kInodeBuckets]; in; in = in->next)
    if (in->a.ino == a.ino) {
      in->a = a;
      in->valid = true;
      return;
    }
}

Dentry* Volume::cached_name(uint32_t dir, const char* name, size_t len) {
  for (Dentry* d = dentries_[hash_name(dir, name, len) % kDentryBuckets]; d; d = d->next)
    if (d->dir == dir && d->len == len && memcmp(d->name, name, len) == 0) return d;
  return nullptr;
}

long Volume::lookup_name(uint32_t dir, const char* name, size_t len, uint32_t* ino) {
  stats_.name_lookups++;
  Dentry* d = cached_name(dir, name, len);
  long err = 0;
  Inode* di = d ? nullptr : inode(dir, &err);
  // A directory read whole once answers every later miss in the kernel
  // (creating thousands of names in one directory asks only the cache).
  if (di && !di->complete && di->a.size <= kFillDirMax && ndentries_ + di->a.size / 8 < kMaxDentries &&
      fill_dir(dir) == 0) {
    d = cached_name(dir, name, len);
    di = inode(dir, &err);
  }
  if (d || (di && di->complete)) {
    stats_.dentry_hits++;
    *ino = d ? d->ino : 0;
    return *ino ? 0 : -ENOENT;
  }
  uint32_t found = 0;
  long r = gate([&] { return ext2glue::lookup(vol_, dir, name, len, &found); });
  if (r < 0 && r != -ENOENT) return r;
  remember_name(dir, name, len, r == 0 ? found : 0);
  *ino = found;
  return r;
}

void Volume::remember_name(uint32_t dir, const char* name, size_t len, uint32_t ino) {
  Dentry** head = &dentries_[hash_name(dir, name, len) % kDentryBuckets];
  for (Dentry* d = *head; d; d = d->next)
    if (d->dir == dir && d->len == len && memcmp(d->name, name, len) == 0) {
      d->ino = ino;
      return;
    }
  if (ndentries_ >= kMaxDentries) {  // make room: this bucket starts over
    while (*head) {
      Dentry* d = *head;
      *head = d->next;
      set_complete(d->dir, false);
      k_.heap->free(d);
      ndentries_--;
    }
  }
  Dentry* d = static_cast<Dentry*>(k_.heap->alloc(sizeof(Dentry)));
  if (!d) return;  // a cache: not remembering is fine
  d->dir = dir;
  d->ino = ino;
  d->len = (uint8_t)len;
  memcpy(d->name, name, len);
  d->next = *head;
  *head = d;
  ndentries_++;
}

struct FillCtx {
  Volume* v;
  uint32_t dir;
};

bool Volume::remember_entry(void* ctx, const ext2glue::DirEntry& e) {
  FillCtx* f = static_cast<FillCtx*>(ctx);
  f->v->remember_name(f->dir, e.name, e.name_len, e.ino);
  return true;
}

long Volume::fill_dir(uint32_t dir) {
  FillCtx ctx{this, dir};
  size_t before = ndentries_;
  long r = gate([&] { return ext2glue::read_dir(vol_, dir, 0, remember_entry, &ctx); });
  // Complete only if nothing was evicted meanwhile (eviction clears the flag
  // of the directories it touches, maybe this one).
  if (r == 0 && ndentries_ >= before) set_complete(dir, true);
  return r;
}

void Volume::set_complete(uint32_t dir, bool complete) {
  for (Inode* in = inodes_[dir % kInodeBuckets]; in; in = in->next)
    if (in->a.ino == dir) in->complete = complete;
}

void Volume::forget_name(uint32_t dir, const char* name, size_t len) {
  for (Dentry** pp = &dentries_[hash_name(dir, name, len) % kDentryBuckets]; *pp; pp = &(*pp)->next) {
    Dentry* d = *pp;
    if (d->dir == dir && d->len == len && memcmp(d->name, name, len) == 0) {
      *pp = d->next;
      k_.heap->free(d);
      ndentries_--;
      return;
    }
  }
}

// ---- the walk

// Whether directory `ino` is still the folder with that generation: one
// removed since the VFS's walk passed it (its number perhaps another
// file's by now) holds nothing.
long Volume::live_dir(uint32_t ino, uint32_t generation) {
  long err = 0;
  Inode* d = inode(ino, &err);
  if (!d) return err;
  if (d->a.nlink == 0 || d->a.generation != generation || !S_ISDIR(d->a.mode)) return -ENOENT;
  return 0;
}

long Volume::lookup(uint32_t dir, uint32_t generation, const char* name, size_t len, Attr* out) {
  Guard g(lock_);
  if (long r = live_dir(dir, generation)) return r;
  if (len > 255) return -ENAMETOOLONG;
  uint32_t child = 0;
  if (long r = lookup_name(dir, name, len, &child)) return r;
  long err = 0;
  Inode* in = inode(child, &err);
  if (!in) return err;
  *out = in->a;
  return 0;
}

long Volume::walk(Walk& w) {
  Guard g(lock_);
  uint32_t cur = w.start_ino ? w.start_ino : kRootIno;
  const char* p = w.start_ino ? w.start_at : w.path;
  w.ino = w.parent = 0;
  if (w.start_ino) {
    if (long r = live_dir(cur, w.start_generation)) return r;
  }
  w.name[0] = 0;
  while (*p == '/') p++;
  if (!*p) {
    w.ino = kRootIno;
    return 0;
  }
  while (*p) {
    const char* s = p;
    while (*p && *p != '/') p++;
    size_t len = (size_t)(p - s);
    const char* after = p;
    while (*after == '/') after++;
    bool last = *after == 0;
    long err = 0;
    Inode* dir = inode(cur, &err);
    if (!dir) return err;
    if (!S_ISDIR(dir->a.mode)) return -ENOTDIR;
    if (len > 255) return -ENAMETOOLONG;
    uint32_t child = 0;
    long r = lookup_name(cur, s, len, &child);
    if (last && w.want_parent) {
      w.parent = cur;
      memcpy(w.name, s, len);
      w.name[len] = 0;
      if (r == -ENOENT) return 0;
    }
    if (r < 0) return r;
    Inode* in = inode(child, &err);
    if (!in) return err;
    if (S_ISLNK(in->a.mode) && (!last || w.follow)) {
      size_t tl = 0;
      if ((r = link_target(child, w.target, kPathMax, &tl)) < 0) return r;
      w.link_len = (size_t)(s + len - w.path);
      w.rest = after;
      return kWalkRedirect;
    }
    cur = child;
    p = after;
  }
  w.ino = cur;
  return 0;
}

long Volume::getattr(uint32_t ino, Attr* out) {
  Guard g(lock_);
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  *out = in->a;
  return 0;
}

long Volume::readlink(uint32_t ino, char* buf, size_t cap, size_t* len) {
  Guard g(lock_);
  return link_target(ino, buf, cap, len);
}

long Volume::link_target(uint32_t ino, char* buf, size_t cap, size_t* len) {
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  if (!S_ISLNK(in->a.mode)) return -EINVAL;
  if (!in->link) {
    // The size is the image's word: a damaged inode can claim gigabytes.
    // No target is kPathMax bytes or longer, so no more is allocated;
    // read_link reports a longer one as damage.
    uint64_t cap = in->a.size < (uint64_t)kPathMax ? in->a.size + 1 : (uint64_t)kPathMax;
    char* t = static_cast<char*>(k_.heap->alloc(cap > 16 ? cap : 16));
    if (!t) return -ENOMEM;
    size_t n = 0;
    long r = gate([&] { return ext2glue::read_link(vol_, ino, t, cap, &n); });
    if (r < 0) {
      k_.heap->free(t);
      return r;
    }
    in->link = t;
    in->link_len = n;
  }
  if (in->link_len >= cap) return -ENAMETOOLONG;
  memcpy(buf, in->link, in->link_len);
  buf[in->link_len] = 0;
  *len = in->link_len;
  return 0;
}

// ---- file contents

long Volume::fill_pages(uint32_t ino, uint64_t first, uint64_t size) {
  uint64_t npages = (size + kPage - 1) / kPage;
  uint64_t count = npages - first < kReadAheadPages ? npages - first : kReadAheadPages;
  uint64_t bytes = count * kPage;
  uint8_t* buf = static_cast<uint8_t*>(k_.heap->alloc(bytes));
  if (!buf) return -ENOMEM;
  size_t got = 0;
  uint64_t want = size - first * kPage < bytes ? size - first * kPage : bytes;
  long r = gate([&] { return ext2glue::read_data(vol_, ino, buf, want, first * kPage, &got); });
  if (r == 0) {
    memset(buf + got, 0, bytes - got);
    for (uint64_t i = 0; i < count; i++) {
      if (data_.find(ino, first + i)) continue;
      PageCache::Page* p = data_.insert(ino, first + i);
      if (!p) break;
      memcpy(p->data, buf + i * kPage, kPage);
    }
  }
  k_.heap->free(buf);
  stats_.data_misses++;
  return r;
}

long Volume::read(uint32_t ino, void* buf, size_t n, uint64_t off, bool kernel_buf) {
  Guard g(lock_);
  return read_locked(ino, buf, n, off, kernel_buf);
}

long Volume::read_locked(uint32_t ino, void* buf, size_t n, uint64_t off, bool kernel_buf) {
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  if (S_ISDIR(in->a.mode)) return -EISDIR;
  uint64_t size = in->a.size;
  if (off >= size) return 0;
  if (n > size - off) n = size - off;
  size_t done = 0;
  while (done < n) {
    uint64_t pos = off + done, idx = pos / kPage, in_page = pos % kPage;
    PageCache::Page* p = data_.find(ino, idx);
    if (p) stats_.data_hits++;
    if (!p) {
      long r = fill_pages(ino, idx, size);
      if (r < 0) return done ? (long)done : r;
      p = data_.find(ino, idx);
      if (!p) return done ? (long)done : -ENOMEM;
    }
    size_t chunk = kPage - in_page < n - done ? kPage - in_page : n - done;
    char* dst = static_cast<char*>(buf) + done;
    if (kernel_buf) memcpy(dst, p->data + in_page, chunk);
    else if (copy_to_user(dst, p->data + in_page, chunk) < 0) return done ? (long)done : -EFAULT;
    done += chunk;
  }
  return (long)done;
}

void Volume::update_pages(uint32_t ino, const uint8_t* data, size_t n, uint64_t off) {
  for (size_t done = 0; done < n;) {
    uint64_t pos = off + done, in_page = pos % kPage;
    size_t chunk = kPage - in_page < n - done ? kPage - in_page : n - done;
    if (PageCache::Page* p = data_.find(ino, pos / kPage)) memcpy(p->data + in_page, data + done, chunk);
    done += chunk;
  }
}

long Volume::write(uint32_t ino, const void* buf, size_t n, uint64_t off, bool kernel_buf) {
  Guard g(lock_);
  if (readonly_) return -EROFS;
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  if (off == UINT64_MAX) off = in->a.size;  // O_APPEND: the end, under the lock
  drop_snapshot(in);
  constexpr size_t kChunk = 256 * 1024;
  size_t bounce_len = n < kChunk ? n : kChunk;
  uint8_t* bounce = kernel_buf ? nullptr : static_cast<uint8_t*>(k_.heap->alloc(bounce_len ? bounce_len : 1));
  if (!kernel_buf && !bounce) return -ENOMEM;
  size_t done = 0;
  long r = 0;
  while (done < n) {
    size_t chunk = n - done < kChunk ? n - done : kChunk;
    const uint8_t* src = static_cast<const uint8_t*>(buf) + done;
    if (!kernel_buf) {
      if (copy_from_user(bounce, src, chunk) < 0) {
        r = -EFAULT;
        break;
      }
      src = bounce;
    }
    Attr after;
    uint64_t at = off + done;
    r = gate([&] { return ext2glue::write_data(vol_, ino, src, chunk, at, now(), &after); });
    if (r < 0) break;
    update_inode(after);
    update_pages(ino, src, (size_t)r, at);
    done += (size_t)r;
    if ((size_t)r < chunk) break;
  }
  k_.heap->free(bounce);
  return done ? (long)done : r;
}

long Volume::setattr(uint32_t ino, const ext2glue::SetAttr& a, Attr* after) {
  Guard g(lock_);
  if (readonly_) return -EROFS;
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  if ((a.mask & ext2glue::kSetSize) && S_ISDIR(in->a.mode)) return -EISDIR;
  if ((a.mask & ext2glue::kSetSize) && !S_ISREG(in->a.mode)) return -EINVAL;
  uint64_t old_size = in->a.size;
  long r = gate([&] { return ext2glue::set_attr(vol_, ino, a, after); });
  if (r < 0) return r;
  update_inode(*after);
  if ((a.mask & ext2glue::kSetSize) && a.size != old_size) {
    drop_snapshot(ino);
    uint64_t first = a.size / kPage, end = (old_size + kPage - 1) / kPage;
    data_.drop_range(ino, first, end > first ? end : first + 1);
  }
  return 0;
}

long Volume::fallocate(uint32_t ino, uint64_t off, uint64_t len) {
  Guard g(lock_);
  if (readonly_) return -EROFS;
  long err = 0;
  Inode* in = inode(ino, &err);
  if (!in) return err;
  if (S_ISDIR(in->a.mode)) return -EISDIR;
  if (!S_ISREG(in->a.mode)) return -ENODEV;
  Attr after;
  drop_snapshot(in);  // a larger size
  long r = gate([&] { return ext2glue::allocate(vol_, ino, off, len, now(), &after); });
  if (r == 0) update_inode(after);
  return r;
}

long Volume::fsync(bool durable) {
  Guard g(lock_);
  if (readonly_) return 0;
  long r = gate([&] { return ext2glue::flush(vol_); });
  if (r == 0 && durable) r = block_flush(*dev_);
  return r;
}

long Volume::readdir(uint32_t dir, uint64_t pos, ext2glue::DirVisitor fn, void* ctx) {
  Guard g(lock_);
  return gate([&] { return ext2glue::read_dir(vol_, dir, pos, fn, ctx); });
}

long Volume::statfs(ext2glue::FsInfo* out) {
  Guard g(lock_);
  return gate([&] { return ext2glue::statfs(vol_, out); });
}

// ---- open files and unlinked inodes

void Volume::open_ref(uint32_t ino) {
  Guard g(lock_);
  long err = 0;
  if (Inode* in = inode(ino, &err)) in->opens++;
}

void Volume::close_ref(uint32_t ino) {
  Guard g(lock_);
  for (Inode* in = inodes_[ino % kInodeBuckets]; in; in = in->next) {
    if (in->a.ino != ino) continue;
    if (--in->opens == 0 && in->unlinked) {
      in->unlinked = false;
      release_if_unused(ino);
    }
    return;
  }
}

long Volume::release_if_unused(uint32_t ino) {
  for (Inode* in = inodes_[ino % kInodeBuckets]; in; in = in->next)
    if (in->a.ino == ino && in->opens > 0) {
      in->unlinked = true;  // the last close frees it
      return 0;
    }
  uint64_t end = UINT64_MAX;  // unknown size: every page is looked at
  for (Inode* in = inodes_[ino % kInodeBuckets]; in; in = in->next)
    if (in->a.ino == ino && in->valid) end = (in->a.size + kPage - 1) / kPage;
  long r = gate([&] { return ext2glue::release_inode(vol_, ino); });
  drop_snapshot(ino);
  forget_inode(ino);
  set_complete(ino, false);  // the number may come back as a new directory
  data_.drop_range(ino, 0, end);
  return r;
}

}  // namespace flatux::ext4
