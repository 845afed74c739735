// libext2fs behind the foreign-code gate (see ext2_glue.h). The file name
// puts this object in the gate for the freestanding check: it alone may
// reference libext2fs's symbols, and everything in it runs with host TLS.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/ext4/gate_internal.h"
#include "kernel/heap.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/printk.h"

extern "C" char const* error_message(long);

namespace flatux::ext2glue {

using namespace detail;


namespace {

constexpr int kMaxDirHoles = 64;

// ---- the io_manager: libext2fs's block I/O, served from the device cache

struct Channel {
  struct_io_channel ch;
  Volume* vol;
};

Volume* vol_of(io_channel ch) { return reinterpret_cast<Channel*>(ch)->vol; }

long write_back(void* ctx, const PageCache::Page& p) {
  BlockDevice* d = static_cast<BlockDevice*>(ctx);
  uint64_t off = p.index * PageCache::kPageSize;
  if (off >= d->size) return 0;
  uint64_t n = d->size - off < PageCache::kPageSize ? d->size - off : PageCache::kPageSize;
  return block_write(*d, p.data, n, off);
}

// The cached page at byte offset `off` of the device, read in on a miss.
PageCache::Page* device_page(Volume* v, uint64_t index) {
  PageCache::Page* p = v->cache->find(0, index);
  if (p) return p;
  uint64_t off = index * PageCache::kPageSize;
  if (off >= v->dev->size) return nullptr;
  p = v->cache->insert(0, index);
  if (!p) return nullptr;
  if (block_read(*v->dev, p->data, PageCache::kPageSize, off) < 0) {
    v->cache->drop(p);
    return nullptr;
  }
  return p;
}

errcode_t transfer(io_channel ch, uint64_t off, size_t n, void* buf, bool write) {
  Volume* v = vol_of(ch);
  if (off + n < off || off + n > v->dev->size) return EXT2_ET_SHORT_READ;
  if (write && !v->rw) return EXT2_ET_RO_FILSYS;
  uint8_t* b = static_cast<uint8_t*>(buf);
  while (n) {
    uint64_t idx = off / PageCache::kPageSize, in = off % PageCache::kPageSize;
    size_t chunk = PageCache::kPageSize - in < n ? PageCache::kPageSize - in : n;
    PageCache::Page* p = device_page(v, idx);
    if (!p) return EIO;
    if (write) {
      memcpy(p->data + in, b, chunk);
      p->dirty = true;
    } else {
      memcpy(b, p->data + in, chunk);
    }
    off += chunk;
    b += chunk;
    n -= chunk;
  }
  return 0;
}

size_t byte_count(io_channel ch, int count) {
  return count < 0 ? (size_t)-(int64_t)count : (size_t)count * (size_t)ch->block_size;
}

errcode_t io_open(const char* name, int flags, io_channel* out) {
  // The name is "flatux:<address of the Volume>", as mount_volume builds it.
  uint64_t addr = 0;
  if (strncmp(name, "flatux:", 7) != 0) return EXT2_ET_BAD_DEVICE_NAME;
  for (const char* p = name + 7; *p; p++) {
    int d = *p >= 'a' ? *p - 'a' + 10 : *p - '0';
    addr = addr * 16 + (uint64_t)d;
  }
  Volume* v = reinterpret_cast<Volume*>(addr);
  Channel* c = v->k->heap->make<Channel>();
  if (!c) return EXT2_ET_NO_MEMORY;
  c->vol = v;
  c->ch.magic = EXT2_ET_MAGIC_IO_CHANNEL;
  c->ch.manager = v->manager;
  c->ch.name = const_cast<char*>("flatux-block");
  c->ch.block_size = 1024;
  c->ch.refcount = 1;
  c->ch.flags = flags;
  *out = &c->ch;
  return 0;
}

errcode_t io_close(io_channel ch) {
  if (--ch->refcount > 0) return 0;
  Volume* v = vol_of(ch);
  v->k->heap->destroy_obj(reinterpret_cast<Channel*>(ch));
  return 0;
}

errcode_t io_set_blksize(io_channel ch, int blksize) {
  if (blksize <= 0) return EXT2_ET_INVALID_ARGUMENT;
  ch->block_size = blksize;
  return 0;
}

errcode_t io_read64(io_channel ch, unsigned long long block, int count, void* data) {
  return transfer(ch, block * (uint64_t)ch->block_size, byte_count(ch, count), data, false);
}
errcode_t io_write64(io_channel ch, unsigned long long block, int count, const void* data) {
  return transfer(ch, block * (uint64_t)ch->block_size, byte_count(ch, count),
                  const_cast<void*>(data), true);
}
errcode_t io_read(io_channel ch, unsigned long block, int count, void* data) {
  return io_read64(ch, block, count, data);
}
errcode_t io_write(io_channel ch, unsigned long block, int count, const void* data) {
  return io_write64(ch, block, count, data);
}
errcode_t io_write_byte(io_channel ch, unsigned long offset, int count, const void* data) {
  return count < 0 ? EXT2_ET_INVALID_ARGUMENT
                   : transfer(ch, offset, (size_t)count, const_cast<void*>(data), true);
}
errcode_t io_flush(io_channel ch) {
  long r = vol_of(ch)->cache->flush();
  return r < 0 ? (errcode_t)-r : 0;
}
errcode_t io_set_option(io_channel, const char*, const char*) { return EXT2_ET_INVALID_ARGUMENT; }

const struct_io_manager kUbdIoManager = {
    .magic = EXT2_ET_MAGIC_IO_MANAGER,
    .name = "flatux block device",
    .open = io_open,
    .close = io_close,
    .set_blksize = io_set_blksize,
    .read_blk = io_read,
    .write_blk = io_write,
    .flush = io_flush,
    .write_byte = io_write_byte,
    .set_option = io_set_option,
    .get_stats = nullptr,
    .read_blk64 = io_read64,
    .write_blk64 = io_write64,
    .discard = nullptr,
    .cache_readahead = nullptr,
    .zeroout = nullptr,
    .reserved = {},
};

}  // namespace

// ---- errors (shared with foreign_gate.ext2write.cpp through gate_internal.h)

namespace detail {

long to_errno(errcode_t e) {
  if (e == 0) return 0;
  if (e > 0 && e < 4096) return -(long)e;  // a host errno passed through
  switch (e) {
    case EXT2_ET_NO_MEMORY: return -ENOMEM;
    case EXT2_ET_FILE_NOT_FOUND: return -ENOENT;
    case EXT2_ET_DIR_EXISTS: return -EEXIST;
    case EXT2_ET_NO_DIRECTORY: return -ENOTDIR;
    case EXT2_ET_RO_FILSYS: return -EROFS;
    case EXT2_ET_FILE_TOO_BIG: return -EFBIG;
    case EXT2_ET_SHORT_READ: case EXT2_ET_SHORT_WRITE: return -EIO;
    case EXT2_ET_BLOCK_ALLOC_FAIL: case EXT2_ET_INODE_ALLOC_FAIL: case EXT2_ET_DIR_NO_SPACE:
    case EXT2_ET_EXTENT_NO_SPACE: case EXT2_ET_EA_NO_SPACE: case EXT2_ET_INLINE_DATA_NO_SPACE:
    case EXT2_ET_DIR_NO_SPACE_FOR_CSUM: case EXT2_ET_TOOSMALL:
      return -ENOSPC;
    case EXT2_ET_UNSUPP_FEATURE: case EXT2_ET_RO_UNSUPP_FEATURE: case EXT2_ET_UNIMPLEMENTED:
      return -EOPNOTSUPP;
    case EXT2_ET_INODE_CSUM_INVALID: case EXT2_ET_INODE_BITMAP_CSUM_INVALID:
    case EXT2_ET_EXTENT_CSUM_INVALID: case EXT2_ET_DIR_CSUM_INVALID:
    case EXT2_ET_EXT_ATTR_CSUM_INVALID: case EXT2_ET_SB_CSUM_INVALID:
    case EXT2_ET_BLOCK_BITMAP_CSUM_INVALID: case EXT2_ET_MMP_CSUM_INVALID:
      return -EBADMSG;  // Linux's EFSBADCRC
    default:
      return -EUCLEAN;  // EFSCORRUPTED: the image's structures do not add up
  }
}

// Records what failed for the kernel log and returns the errno.
long fail(Volume* v, errcode_t e, const char* what, uint32_t ino) {
  KFmt f(v->err, sizeof v->err);
  f.str(what);
  if (ino) f.str(" (inode ").udec(ino).str(")");
  f.str(": ");
  const char* msg = e > 0 && e < 4096 ? "host I/O error" : error_message(e);
  f.str(msg ? msg : "unknown error");
  (void)f.c_str();
  return to_errno(e);
}

// ---- inodes

bool extra_fits(const Volume* v, const ext2_inode_large& in, size_t field_end) {
  return EXT2_INODE_SIZE(v->fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
         EXT2_GOOD_OLD_INODE_SIZE + in.i_extra_isize >= field_end;
}

Time decode_time(uint32_t base, uint32_t extra, bool has_extra) {
  Time t{(int32_t)base, 0};
  if (has_extra) {
    t.sec += (int64_t)(extra & EXT4_EPOCH_MASK) << 32;
    t.nsec = extra >> EXT4_EPOCH_BITS;
  }
  return t;
}

void encode_time(Time t, uint32_t* base, uint32_t* extra, bool has_extra) {
  *base = (uint32_t)t.sec;
  if (has_extra) *extra = (uint32_t)(((t.sec - (int32_t)t.sec) >> 32) & EXT4_EPOCH_MASK) | (t.nsec << EXT4_EPOCH_BITS);
}

uint64_t decode_rdev(const ext2_inode_large& in) {
  uint32_t major, minor;
  if (in.i_block[0]) {
    major = (in.i_block[0] >> 8) & 0xff;
    minor = in.i_block[0] & 0xff;
  } else {
    uint32_t d = in.i_block[1];
    major = (d & 0xfff00) >> 8;
    minor = (d & 0xff) | ((d >> 12) & 0xfff00);
  }
  return ((uint64_t)(major & 0xfffff000) << 32) | ((major & 0xfff) << 8) |
         ((uint64_t)(minor & 0xffffff00) << 12) | (minor & 0xff);
}

void encode_rdev(ext2_inode_large* in, uint64_t dev) {
  uint32_t major = (uint32_t)(((dev >> 32) & 0xfffff000) | ((dev >> 8) & 0xfff));
  uint32_t minor = (uint32_t)(((dev >> 12) & 0xffffff00) | (dev & 0xff));
  if (major < 256 && minor < 256) {
    in->i_block[0] = (major << 8) | minor;
    in->i_block[1] = 0;
  } else {
    in->i_block[0] = 0;
    in->i_block[1] = (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
  }
}

long read_large(Volume* v, uint32_t ino, ext2_inode_large* in) {
  memset(in, 0, sizeof *in);
  if (ino == 0 || ino > v->fs->super->s_inodes_count) {
    KFmt(v->err, sizeof v->err).str("inode number ").udec(ino).str(" out of range").c_str();
    return -EUCLEAN;
  }
  errcode_t e = ext2fs_read_inode_full(v->fs, ino, reinterpret_cast<ext2_inode*>(in), sizeof *in);
  return e ? fail(v, e, "reading inode", ino) : 0;
}

long write_large(Volume* v, uint32_t ino, ext2_inode_large* in) {
  errcode_t e = ext2fs_write_inode_full(v->fs, ino, reinterpret_cast<ext2_inode*>(in), sizeof *in);
  return e ? fail(v, e, "writing inode", ino) : 0;
}

void fill_attr(Volume* v, uint32_t ino, ext2_inode_large& in, Attr* a) {
  ext2_inode* base = reinterpret_cast<ext2_inode*>(&in);
  a->ino = ino;
  a->mode = in.i_mode;
  a->uid = inode_uid(in);
  a->gid = inode_gid(in);
  a->nlink = in.i_links_count;
  a->flags = in.i_flags;
  a->generation = in.i_generation;
  a->size = EXT2_I_SIZE(base);
  a->blocks512 = ext2fs_get_stat_i_blocks(v->fs, base);
  a->rdev = (S_ISCHR(in.i_mode) || S_ISBLK(in.i_mode)) ? decode_rdev(in) : 0;
  a->atime = decode_time(in.i_atime, in.i_atime_extra, FITS(v, in, i_atime_extra));
  a->mtime = decode_time(in.i_mtime, in.i_mtime_extra, FITS(v, in, i_mtime_extra));
  a->ctime = decode_time(in.i_ctime, in.i_ctime_extra, FITS(v, in, i_ctime_extra));
  a->btime = FITS(v, in, i_crtime_extra) ? decode_time(in.i_crtime, in.i_crtime_extra, true) : Time{0, 0};
}

void set_times(Volume* v, ext2_inode_large* in, const Time* atime, const Time* mtime, const Time* ctime) {
  ext2_inode_large& i = *in;
  if (atime) encode_time(*atime, &i.i_atime, &i.i_atime_extra, FITS(v, i, i_atime_extra));
  if (mtime) encode_time(*mtime, &i.i_mtime, &i.i_mtime_extra, FITS(v, i, i_mtime_extra));
  if (ctime) encode_time(*ctime, &i.i_ctime, &i.i_ctime_extra, FITS(v, i, i_ctime_extra));
}

void set_owner(ext2_inode_large* in, uint32_t uid, uint32_t gid) {
  in->i_uid = (uint16_t)uid;
  in->osd2.linux2.l_i_uid_high = (uint16_t)(uid >> 16);
  in->i_gid = (uint16_t)gid;
  in->osd2.linux2.l_i_gid_high = (uint16_t)(gid >> 16);
}

int file_type(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return EXT2_FT_REG_FILE;
    case S_IFDIR: return EXT2_FT_DIR;
    case S_IFCHR: return EXT2_FT_CHRDEV;
    case S_IFBLK: return EXT2_FT_BLKDEV;
    case S_IFIFO: return EXT2_FT_FIFO;
    case S_IFSOCK: return EXT2_FT_SOCK;
    case S_IFLNK: return EXT2_FT_SYMLINK;
    default: return EXT2_FT_UNKNOWN;
  }
}

}  // namespace detail

namespace {

uint8_t dirent_type(int ft) {
  constexpr uint8_t kTypes[] = {DT_UNKNOWN, DT_REG, DT_DIR, DT_CHR, DT_BLK, DT_FIFO, DT_SOCK, DT_LNK};
  return ft >= 0 && ft < 8 ? kTypes[ft] : (uint8_t)DT_UNKNOWN;
}

}  // namespace

// ---- mounting

namespace {

// libext2fs reports some damage it meets on its own (an illegal block
// number while freeing, say) through com_err, which would print on the
// host's stderr, in the middle of a guest's console. They go to the kernel
// log instead. This runs inside the gate, on the host's TLS, so libc may
// format the message. The hook gets no context: the kernel is found
// through the kernel heap's fixed address (one kernel per process).
void com_err_to_log(const char* whoami, long code, const char* fmt, va_list ap) {
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt ? fmt : "", ap);
  // The hook stays installed after a kernel is gone (tests make several):
  // then the heap is unmapped, and msync says so.
  if (host::sys(SYS_msync, kHeapBase, 4096, MS_ASYNC) != 0) return;
  if (auto* k = static_cast<Kernel*>(Heap::root_of_this_process()))
    printkf(*k, [&](KFmt& f) {
      f.str("<3>EXT4-fs error: ").str(whoami ? whoami : "libext2fs").str(": ");
      if (code) f.str(error_message(code)).ch(' ');
      f.str(msg).ch('\n');
    });
}

}  // namespace

long open_volume(Kernel& k, BlockDevice& dev, bool want_rw, OpenResult* out) {
  *out = {};
  initialize_ext2_error_table();  // com_err's messages for the kernel log (once)
  set_com_err_hook(com_err_to_log);
  Volume* v = k.heap->make<Volume>();
  if (!v) return -ENOMEM;
  v->k = &k;
  v->dev = &dev;
  host::sys(SYS_getrandom, (long)&v->next_generation, sizeof v->next_generation, 0);
  v->cache = k.heap->make<PageCache>(k.heap, 8192, write_back, &dev);  // 32 MiB
  if (!v->cache) {
    k.heap->destroy_obj(v);
    return -ENOMEM;
  }
  char name[40];
  KFmt(name, sizeof name).str("flatux:").hexraw((uint64_t)v).c_str();
  v->manager = const_cast<io_manager>(&kUbdIoManager);
  bool rw = want_rw && !dev.readonly;
  errcode_t e = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    v->rw = rw;
    int flags = EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | (rw ? EXT2_FLAG_RW : 0);
    e = ext2fs_open2(name, nullptr, flags, 0, 0, v->manager, &v->fs);
    if (e) break;
    if (rw && ext2fs_has_feature_journal_needs_recovery(v->fs->super)) {
      // No journal replay here: writing around an unreplayed journal would
      // corrupt the filesystem, so the image is mounted read-only.
      ext2fs_free(v->fs);
      v->fs = nullptr;
      out->needed_recovery = true;
      rw = false;
      continue;
    }
    break;
  }
  long r = 0;
  if (e) r = fail(v, e, "opening the filesystem");
  else if (ext2fs_has_feature_journal_dev(v->fs->super)) r = fail(v, EXT2_ET_UNSUPP_FEATURE, "external journal device");
  else if ((e = ext2fs_check_desc(v->fs))) r = fail(v, e, "checking group descriptors");
  else if ((e = ext2fs_read_bitmaps(v->fs))) r = fail(v, e, "reading allocation bitmaps");
  if (r == 0) v->block_buf = static_cast<uint8_t*>(k.heap->alloc(v->fs->blocksize));
  if (r == 0 && !v->block_buf) r = -ENOMEM;
  if (r == 0 && v->rw) {
    // Marked not-clean while mounted, as Linux does; close_volume restores it.
    ext2_super_block* sb = v->fs->super;
    v->was_valid = sb->s_state & EXT2_VALID_FS;
    sb->s_state &= (uint16_t)~EXT2_VALID_FS;
    sb->s_mnt_count++;
    sb->s_mtime = (uint32_t)v->fs->now;
    ext2fs_mark_super_dirty(v->fs);
    if ((e = ext2fs_flush(v->fs))) r = fail(v, e, "writing the superblock");
  }
  if (r < 0) {
    // The volume stays for its message: the caller logs it, then closes.
    out->vol = v;
    if (v->fs) ext2fs_free(v->fs);
    v->fs = nullptr;
    return r;
  }
  out->vol = v;
  out->readonly = !v->rw;
  out->block_size = v->fs->blocksize;
  memcpy(out->label, v->fs->super->s_volume_name, 16);
  out->label[16] = 0;
  return 0;
}

long close_volume(Volume* v) {
  long r = 0;
  if (v->fs) {
    if (v->rw) {
      if (v->was_valid) v->fs->super->s_state |= EXT2_VALID_FS;
      ext2fs_mark_super_dirty(v->fs);
    }
    errcode_t e = v->rw ? ext2fs_close2(v->fs, 0) : 0;
    if (e) {
      r = fail(v, e, "writing the filesystem back");
      ext2fs_free(v->fs);
    } else if (!v->rw) {
      ext2fs_free(v->fs);
    }
    v->fs = nullptr;
  }
  if (v->rw && r == 0) r = v->cache->flush();
  Heap* h = v->k->heap;
  h->destroy_obj(v->cache);
  h->free(v->block_buf);
  h->destroy_obj(v);
  return r;
}

long flush(Volume* v) {
  if (!v->rw) return 0;
  errcode_t e = ext2fs_flush(v->fs);  // also flushes the channel, our cache
  return e ? fail(v, e, "writing the filesystem back") : 0;
}

PageCache& device_cache(Volume* v) { return *v->cache; }
const char* last_error(Volume* v) { return v->err; }
void set_now(Volume* v, Time now) {
  if (v->fs) v->fs->now = (time_t)now.sec;
}

// ---- reading

long read_attr(Volume* v, uint32_t ino, Attr* out) {
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  if (in.i_links_count == 0 && in.i_mode == 0) {
    KFmt(v->err, sizeof v->err).str("inode ").udec(ino).str(" is referenced but free").c_str();
    return -EUCLEAN;
  }
  fill_attr(v, ino, in, out);
  return 0;
}

long lookup(Volume* v, uint32_t dir, const char* name, size_t len, uint32_t* ino) {
  ext2_ino_t found = 0;
  errcode_t e = ext2fs_lookup(v->fs, dir, name, (int)len, nullptr, &found);
  if (e == EXT2_ET_FILE_NOT_FOUND) return -ENOENT;
  if (e) return fail(v, e, "looking up a name", dir);
  *ino = found;
  return 0;
}

long read_link(Volume* v, uint32_t ino, char* buf, size_t cap, size_t* len) {
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  ext2_inode* base = reinterpret_cast<ext2_inode*>(&in);
  uint64_t size = EXT2_I_SIZE(base);
  if (!S_ISLNK(in.i_mode) || size == 0 || size >= v->fs->blocksize || size >= cap) {
    KFmt(v->err, sizeof v->err).str("symlink inode ").udec(ino).str(" has a bad size").c_str();
    return -EUCLEAN;
  }
  if (ext2fs_is_fast_symlink(base)) {
    memcpy(buf, in.i_block, size);
  } else if (in.i_flags & EXT4_INLINE_DATA_FL) {
    size_t got = cap;
    errcode_t e = ext2fs_inline_data_get(v->fs, ino, base, buf, &got);
    if (e) return fail(v, e, "reading a symlink", ino);
  } else {
    size_t got = 0;
    if ((r = read_data(v, ino, buf, size, 0, &got)) < 0) return r;
    if (got != size) return fail(v, EXT2_ET_SHORT_READ, "reading a symlink", ino);
  }
  buf[size] = 0;
  *len = size;
  return 0;
}

long read_data(Volume* v, uint32_t ino, void* buf, size_t n, uint64_t off, size_t* got) {
  ext2_file_t f;
  errcode_t e = ext2fs_file_open2(v->fs, ino, nullptr, 0, &f);
  if (e) return fail(v, e, "opening a file", ino);
  *got = 0;
  e = ext2fs_file_llseek(f, off, EXT2_SEEK_SET, nullptr);
  while (!e && *got < n) {
    unsigned int chunk = n - *got > (1u << 30) ? (1u << 30) : (unsigned)(n - *got), r = 0;
    e = ext2fs_file_read(f, static_cast<char*>(buf) + *got, chunk, &r);
    *got += r;
    if (r == 0) break;
  }
  errcode_t ce = ext2fs_file_close(f);
  if (!e) e = ce;
  return e ? fail(v, e, "reading a file", ino) : 0;
}

long read_dir(Volume* v, uint32_t dir, uint64_t pos, DirVisitor fn, void* ctx) {
  ext2_inode_large in;
  long r = read_large(v, dir, &in);
  if (r < 0) return r;
  if (!LINUX_S_ISDIR(in.i_mode)) return -ENOTDIR;
  if (in.i_flags & EXT4_INLINE_DATA_FL) return fail(v, EXT2_ET_UNIMPLEMENTED, "inline-data directory", dir);
  const uint64_t bs = v->fs->blocksize;
  const uint64_t size = EXT2_I_SIZE(reinterpret_cast<ext2_inode*>(&in));
  // Without largedir a directory stays under 2 GiB; a bigger size is damage
  // (and walking it block by block would take forever).
  if (size >= (1ull << 31) && !ext2fs_has_feature_largedir(v->fs->super)) {
    KFmt(v->err, sizeof v->err).str("directory inode ").udec(dir).str(" has an impossible size").c_str();
    return -EUCLEAN;
  }
  const uint64_t nblocks = (size + bs - 1) / bs;
  bool typed = ext2fs_has_feature_filetype(v->fs->super);
  DirEntry ent;
  int holes = 0;
  for (uint64_t lblk = pos / bs; lblk < nblocks; lblk++) {
    blk64_t pblk = 0;
    errcode_t e = ext2fs_bmap2(v->fs, dir, reinterpret_cast<ext2_inode*>(&in), nullptr, 0, lblk, nullptr, &pblk);
    if (e) return fail(v, e, "mapping a directory block", dir);
    if (pblk == 0) {  // a hole: Linux skips one; a long run of them is damage
      if (++holes > kMaxDirHoles) {
        KFmt(v->err, sizeof v->err).str("directory inode ").udec(dir).str(" is mostly holes").c_str();
        return -EUCLEAN;
      }
      continue;
    }
    holes = 0;
    if ((e = ext2fs_read_dir_block4(v->fs, pblk, v->block_buf, 0, dir))) return fail(v, e, "reading a directory block", dir);
    // Entries never move when others are removed (a removed entry is merged
    // into the one before it), so a position stays meaningful: scan from the
    // start of its block and resume at the first entry at or after it.
    for (uint64_t off = 0; off < bs;) {
      ext2_dir_entry* d = reinterpret_cast<ext2_dir_entry*>(v->block_buf + off);
      unsigned int rec = 0;
      if (off + 8 > bs || ext2fs_get_rec_len(v->fs, d, &rec) || rec < 8 || rec % 4 || off + rec > bs ||
          (uint64_t)ext2fs_dirent_name_len(d) + 8 > rec || d->inode > v->fs->super->s_inodes_count) {
        KFmt(v->err, sizeof v->err).str("directory inode ").udec(dir).str(" block ").udec(lblk)
            .str(": bad entry at offset ").udec(off).c_str();
        return -EUCLEAN;
      }
      uint64_t here = lblk * bs + off;
      if (d->inode && here >= pos) {
        ent.pos = here;
        ent.next = here + rec;
        ent.ino = d->inode;
        ent.type = typed ? dirent_type(ext2fs_dirent_file_type(d)) : (uint8_t)DT_UNKNOWN;
        ent.name_len = (uint8_t)ext2fs_dirent_name_len(d);
        memcpy(ent.name, d->name, ent.name_len);
        ent.name[ent.name_len] = 0;
        if (!fn(ctx, ent)) return 0;
      }
      off += rec;
    }
  }
  return 0;
}

namespace {
bool note_nonempty(void* ctx, const DirEntry& e) {
  bool dots = (e.name_len == 1 && e.name[0] == '.') || (e.name_len == 2 && e.name[0] == '.' && e.name[1] == '.');
  if (dots) return true;
  *static_cast<bool*>(ctx) = true;
  return false;
}
}  // namespace

long dir_is_empty(Volume* v, uint32_t dir) {
  bool nonempty = false;
  long r = read_dir(v, dir, 0, note_nonempty, &nonempty);
  return r < 0 ? r : (nonempty ? 0 : 1);
}

long statfs(Volume* v, FsInfo* out) {
  ext2_super_block* sb = v->fs->super;
  out->block_size = v->fs->blocksize;
  out->blocks = ext2fs_blocks_count(sb) - sb->s_first_data_block;
  out->free_blocks = ext2fs_free_blocks_count(sb);
  uint64_t reserved = ext2fs_r_blocks_count(sb);
  out->avail_blocks = out->free_blocks > reserved ? out->free_blocks - reserved : 0;
  out->inodes = sb->s_inodes_count;
  out->free_inodes = sb->s_free_inodes_count;
  memcpy(out->uuid_words, sb->s_uuid, sizeof out->uuid_words);
  return 0;
}

}  // namespace flatux::ext2glue
