// libext2fs behind the foreign-code gate, the changes: file data, inode
// attributes, directory entries, allocation and release (see ext2_glue.h;
// the file name puts this object in the gate for the freestanding check).
#include <cstring>
#include <linux/errno.h>
#include <sys/stat.h>

#include "kernel/fs/ext4/gate_internal.h"

namespace flatux::ext2glue {

using namespace detail;

namespace {

// A libext2fs call that adds a name to a directory, retried once after
// growing the directory by a block when it is full (as fuse2fs does).
template <typename F>
errcode_t with_room(Volume* v, uint32_t dir, F&& add) {
  errcode_t e = add();
  if (e != EXT2_ET_DIR_NO_SPACE) return e;
  e = ext2fs_expand_dir(v->fs, dir);
  return e ? e : add();
}

// Finishes a node that libext2fs created (mkdir, symlink) with the
// caller's owner, mode bits and timestamps.
// A new directory's block written again: its checksum is seeded with the
// inode's generation, which finish_node set after ext2fs_mkdir wrote it.
// Iterating with DIRENT_CHANGED writes the block back, sealed anew.
int reseal_cb(ext2_ino_t, int, ext2_dir_entry*, int, int, char*, void*) { return DIRENT_CHANGED | DIRENT_ABORT; }

long reseal_new_dir(Volume* v, uint32_t ino) {
  ext2_filsys fs = v->fs;
  int saved = fs->flags;
  fs->flags |= EXT2_FLAG_IGNORE_CSUM_ERRORS;  // sealed with the old generation
  errcode_t e = ext2fs_dir_iterate2(fs, ino, 0, nullptr, reseal_cb, nullptr);
  fs->flags = saved;
  return e ? fail(v, e, "writing a new directory block", ino) : 0;
}

long finish_node(Volume* v, uint32_t dir, const char* name, const NewNode& n, bool set_mode, Attr* out) {
  ext2_ino_t ino = 0;
  errcode_t e = ext2fs_lookup(v->fs, dir, name, (int)strlen(name), nullptr, &ino);
  if (e) return fail(v, e, "looking up a new entry", dir);
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  if (set_mode) in.i_mode = (uint16_t)((in.i_mode & S_IFMT) | (n.mode & 07777));
  set_owner(&in, n.uid, n.gid);
  in.i_generation = v->next_generation++;
  set_times(v, &in, &n.now, &n.now, &n.now);
  if (FITS(v, in, i_crtime_extra)) encode_time(n.now, &in.i_crtime, &in.i_crtime_extra, true);
  if ((r = write_large(v, ino, &in)) < 0) return r;
  if (LINUX_S_ISDIR(in.i_mode) && (r = reseal_new_dir(v, ino)) < 0) return r;
  fill_attr(v, ino, in, out);
  return touch_dir(v, dir, n.now);
}

struct EntryEdit {
  const char* name;
  size_t len;
  uint32_t ino;
  int type;
  bool found;
};

int retarget_cb(ext2_ino_t, int, ext2_dir_entry* d, int, int, char*, void* priv) {
  EntryEdit* e = static_cast<EntryEdit*>(priv);
  if (d->inode == 0 || (size_t)ext2fs_dirent_name_len(d) != e->len || memcmp(d->name, e->name, e->len) != 0)
    return 0;
  d->inode = e->ino;
  ext2fs_dirent_set_file_type(d, e->type);
  e->found = true;
  return DIRENT_CHANGED | DIRENT_ABORT;
}

// libext2fs 1.46.6 to 1.47.3 refuse to free a run of blocks that ends on
// the filesystem's last block (an off-by-one in punch_extent_blocks, fixed
// upstream in 1.47.4): ext2fs_punch fails with "Illegal block number", and
// on a full filesystem some file always holds that block. So before a
// punch from logical block `first` to the end, the extent that maps the
// last block gives it up here when the punch would take it; the library
// then frees the rest. Block-mapped files never reach that check. On
// bigalloc the block is one of a cluster's and is left to the library.
errcode_t give_up_last_block(ext2_filsys fs, ext2_ino_t ino, ext2_inode* inode, blk64_t first) {
  const blk64_t last = ext2fs_blocks_count(fs->super) - 1;
  if (!(inode->i_flags & EXT4_EXTENTS_FL) || EXT2FS_CLUSTER_RATIO(fs) != 1 ||
      !ext2fs_test_block_bitmap2(fs->block_map, last))
    return 0;
  ext2_extent_handle_t h;
  errcode_t e = ext2fs_extent_open2(fs, ino, inode, &h);  // edits *inode in place
  if (e) return e;
  ext2fs_extent ex;
  for (e = ext2fs_extent_get(h, EXT2_EXTENT_ROOT, &ex); !e; e = ext2fs_extent_get(h, EXT2_EXTENT_NEXT, &ex)) {
    if (!(ex.e_flags & EXT2_EXTENT_FLAGS_LEAF) || ex.e_len == 0 || ex.e_pblk + ex.e_len - 1 != last) continue;
    if (ex.e_lblk + ex.e_len - 1 < first) break;  // the punch keeps it
    if (ex.e_len > 1) {
      ex.e_len--;
      e = ext2fs_extent_replace(h, 0, &ex);
    } else {
      e = ext2fs_extent_delete(h, 0);
    }
    if (!e) e = ext2fs_extent_fix_parents(h);
    if (e == EXT2_ET_NO_CURRENT_NODE) e = 0;  // the tree is empty now
    if (!e) {
      ext2fs_block_alloc_stats2(fs, last, -1);
      e = ext2fs_iblk_sub_blocks(fs, inode, 1);
    }
    break;
  }
  if (e == EXT2_ET_EXTENT_NO_NEXT) e = 0;
  ext2fs_extent_free(h);
  return e;
}

// ext2fs_file_set_size2 punches from the first block past the new size
// when the file shrinks by a block or more; the last block goes first.
long before_truncate(Volume* v, uint32_t ino, uint64_t size) {
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  ext2_inode* base = reinterpret_cast<ext2_inode*>(&in);
  uint64_t bs = v->fs->blocksize, first = (size + bs - 1) / bs, old_end = (EXT2_I_SIZE(base) + bs - 1) / bs;
  if (first >= old_end || !ext2fs_inode_has_valid_blocks2(v->fs, base)) return 0;
  errcode_t e = give_up_last_block(v->fs, ino, base, first);
  if (e) return fail(v, e, "freeing a file's blocks", ino);
  return write_large(v, ino, &in);
}

}  // namespace

// ---- writing

long write_data(Volume* v, uint32_t ino, const void* buf, size_t n, uint64_t off, Time now, Attr* after) {
  ext2_file_t f;
  errcode_t e = ext2fs_file_open2(v->fs, ino, nullptr, EXT2_FILE_WRITE, &f);
  if (e) return fail(v, e, "opening a file", ino);
  size_t done = 0;
  e = ext2fs_file_llseek(f, off, EXT2_SEEK_SET, nullptr);
  while (!e && done < n) {
    unsigned int chunk = n - done > (1u << 30) ? (1u << 30) : (unsigned)(n - done), w = 0;
    e = ext2fs_file_write(f, static_cast<const char*>(buf) + done, chunk, &w);
    done += w;
    if (w == 0 && !e) e = EXT2_ET_SHORT_WRITE;
  }
  errcode_t ce = ext2fs_file_close(f);
  if (!e) e = ce;
  // A short write that got somewhere reports what it wrote, as Linux does.
  if (e && done == 0) return fail(v, e, "writing a file", ino);
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  set_times(v, &in, nullptr, &now, &now);
  if ((r = write_large(v, ino, &in)) < 0) return r;
  fill_attr(v, ino, in, after);
  return (long)done;
}

long set_attr(Volume* v, uint32_t ino, const SetAttr& a, Attr* after) {
  if (a.mask & kSetSize) {
    long r = before_truncate(v, ino, a.size);
    if (r < 0) return r;
    ext2_file_t f;
    errcode_t e = ext2fs_file_open2(v->fs, ino, nullptr, EXT2_FILE_WRITE, &f);
    if (e) return fail(v, e, "opening a file", ino);
    e = ext2fs_file_set_size2(f, a.size);
    errcode_t ce = ext2fs_file_close(f);
    if (e || ce) return fail(v, e ? e : ce, "changing a file's size", ino);
  }
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  if (a.mask & kSetMode) in.i_mode = (uint16_t)((in.i_mode & S_IFMT) | (a.mode & 07777));
  if (a.mask & (kSetUid | kSetGid))
    set_owner(&in, (a.mask & kSetUid) ? a.uid : inode_uid(in), (a.mask & kSetGid) ? a.gid : inode_gid(in));
  set_times(v, &in, (a.mask & kSetAtime) ? &a.atime : nullptr, (a.mask & kSetMtime) ? &a.mtime : nullptr,
            (a.mask & kSetCtime) ? &a.ctime : nullptr);
  if ((r = write_large(v, ino, &in)) < 0) return r;
  fill_attr(v, ino, in, after);
  return 0;
}

long allocate(Volume* v, uint32_t ino, uint64_t off, uint64_t len, Time now, Attr* after) {
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  ext2_inode* base = reinterpret_cast<ext2_inode*>(&in);
  uint64_t bs = v->fs->blocksize, first = off / bs, last = (off + len - 1) / bs;
  errcode_t e = ext2fs_fallocate(v->fs, EXT2_FALLOCATE_INIT_BEYOND_EOF, ino, base, ~0ULL, first, last - first + 1);
  if (e) return fail(v, e, "allocating blocks", ino);
  if (off + len > EXT2_I_SIZE(base) && (e = ext2fs_inode_size_set(v->fs, base, off + len)))
    return fail(v, e, "growing a file", ino);
  set_times(v, &in, nullptr, &now, &now);
  if ((r = write_large(v, ino, &in)) < 0) return r;
  fill_attr(v, ino, in, after);
  return 0;
}

long create_node(Volume* v, uint32_t dir, const char* name, const NewNode& n, Attr* out) {
  ext2_filsys fs = v->fs;
  ext2_ino_t ino = 0;
  errcode_t e = ext2fs_new_inode(fs, dir, (int)n.mode, nullptr, &ino);
  if (e) return fail(v, e, "allocating an inode", dir);
  e = with_room(v, dir, [&] { return ext2fs_link(fs, dir, name, ino, file_type(n.mode)); });
  if (e) return fail(v, e, "adding a directory entry", dir);
  ext2fs_inode_alloc_stats2(fs, ino, +1, 0);

  ext2_inode_large in;
  memset(&in, 0, sizeof in);
  in.i_mode = (uint16_t)n.mode;
  in.i_links_count = 1;
  in.i_generation = v->next_generation++;
  set_owner(&in, n.uid, n.gid);
  ext2_inode* base = reinterpret_cast<ext2_inode*>(&in);
  if (S_ISCHR(n.mode) || S_ISBLK(n.mode)) {
    encode_rdev(&in, n.rdev);
  } else if (S_ISREG(n.mode) && ext2fs_has_feature_extents(fs->super)) {
    ext2_extent_handle_t h;  // writes an empty extent header into i_block
    if ((e = ext2fs_extent_open2(fs, ino, base, &h))) return fail(v, e, "starting an extent tree", ino);
    ext2fs_extent_free(h);
  }
  // write_new_inode clears the whole on-disk inode (a reused one may hold
  // old in-inode attributes); the second write adds the nanosecond fields.
  if ((e = ext2fs_write_new_inode(fs, ino, base))) return fail(v, e, "writing a new inode", ino);
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  set_times(v, &in, &n.now, &n.now, &n.now);
  if (FITS(v, in, i_crtime_extra)) encode_time(n.now, &in.i_crtime, &in.i_crtime_extra, true);
  if ((r = write_large(v, ino, &in)) < 0) return r;
  fill_attr(v, ino, in, out);
  return touch_dir(v, dir, n.now);
}

long make_dir(Volume* v, uint32_t dir, const char* name, const NewNode& n, Attr* out) {
  errcode_t e = with_room(v, dir, [&] { return ext2fs_mkdir(v->fs, dir, 0, name); });
  if (e) return fail(v, e, "making a directory", dir);
  return finish_node(v, dir, name, n, true, out);
}

long make_symlink(Volume* v, uint32_t dir, const char* name, const char* target, const NewNode& n, Attr* out) {
  errcode_t e = with_room(v, dir, [&] { return ext2fs_symlink(v->fs, dir, 0, name, target); });
  if (e) return fail(v, e, "making a symlink", dir);
  return finish_node(v, dir, name, n, false, out);
}

long add_entry(Volume* v, uint32_t dir, const char* name, uint32_t ino, uint32_t mode) {
  errcode_t e = with_room(v, dir, [&] { return ext2fs_link(v->fs, dir, name, ino, file_type(mode)); });
  return e ? fail(v, e, "adding a directory entry", dir) : 0;
}

long del_entry(Volume* v, uint32_t dir, const char* name) {
  errcode_t e = ext2fs_unlink(v->fs, dir, name, 0, 0);
  return e ? fail(v, e, "removing a directory entry", dir) : 0;
}

long retarget_entry(Volume* v, uint32_t dir, const char* name, uint32_t ino, uint32_t mode) {
  EntryEdit edit{name, strlen(name), ino, file_type(mode), false};
  errcode_t e = ext2fs_dir_iterate2(v->fs, dir, 0, nullptr, retarget_cb, &edit);
  if (e) return fail(v, e, "changing a directory entry", dir);
  return edit.found ? 0 : -ENOENT;
}

long set_dotdot(Volume* v, uint32_t dir, uint32_t parent) {
  return retarget_entry(v, dir, "..", parent, S_IFDIR);
}

long adjust_links(Volume* v, uint32_t ino, int delta, Time now, uint32_t* nlink_after) {
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  bool dir = LINUX_S_ISDIR(in.i_mode);
  int64_t n = (int64_t)in.i_links_count + delta;
  // dir_nlink: a directory past the limit counts 1 ("many") and stays so.
  if (dir && in.i_links_count == 1) n = 1;
  else if (dir && n >= EXT2_LINK_MAX && ext2fs_has_feature_dir_nlink(v->fs->super)) n = 1;
  if (n < 0) n = 0;
  if (n >= EXT2_LINK_MAX) return -EMLINK;
  in.i_links_count = (uint16_t)n;
  set_times(v, &in, nullptr, nullptr, &now);
  if ((r = write_large(v, ino, &in)) < 0) return r;
  if (nlink_after) *nlink_after = (uint32_t)n;
  return 0;
}

long clear_links(Volume* v, uint32_t ino, Time now) {
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  in.i_links_count = 0;
  set_times(v, &in, nullptr, nullptr, &now);
  return write_large(v, ino, &in);
}

long touch_dir(Volume* v, uint32_t dir, Time now) {
  ext2_inode_large in;
  long r = read_large(v, dir, &in);
  if (r < 0) return r;
  set_times(v, &in, nullptr, &now, &now);
  return write_large(v, dir, &in);
}

long release_inode(Volume* v, uint32_t ino) {
  ext2_filsys fs = v->fs;
  ext2_inode_large in;
  long r = read_large(v, ino, &in);
  if (r < 0) return r;
  ext2_inode* base = reinterpret_cast<ext2_inode*>(&in);
  errcode_t e = 0;
  if (ext2fs_inode_has_valid_blocks2(fs, base) &&
      ((e = give_up_last_block(fs, ino, base, 0)) || (e = ext2fs_punch(fs, ino, base, nullptr, 0, ~0ULL))))
    return fail(v, e, "freeing a file's blocks", ino);
  blk64_t ea = ext2fs_file_acl_block(fs, base);
  if (ea) {
    __u32 count = 0;
    e = ext2fs_adjust_ea_refcount3(fs, ea, nullptr, -1, &count, ino);
    if (e) return fail(v, e, "dropping an attribute block", ino);
    if (count == 0) ext2fs_block_alloc_stats2(fs, ea, -1);
    ext2fs_file_acl_block_set(fs, base, 0);
  }
  in.i_links_count = 0;
  in.i_dtime = (uint32_t)fs->now;
  if ((r = write_large(v, ino, &in)) < 0) return r;
  ext2fs_inode_alloc_stats2(fs, ino, -1, LINUX_S_ISDIR(in.i_mode));
  return 0;
}

}  // namespace flatux::ext2glue
