// The ext4 side of mkimage. libext2fs lays out the filesystem and keeps the
// allocation bitmaps, extent trees, directory blocks and checksums right;
// inodes are written here whole, so nothing depends on who runs the tool.
#include "tools/mkimage/ext4_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
extern "C" {  // com_err.h declares no C linkage of its own
#include <et/com_err.h>
}
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <ext2fs/ext3_extents.h>
#include <map>
#include <sys/random.h>
#include <unordered_map>
#include <vector>

namespace flatux::mkimage {
namespace {

constexpr unsigned kBlockSize = 4096;
constexpr unsigned kInodeSize = 256;

bool is_no_space(errcode_t r) {
  return r == EXT2_ET_BLOCK_ALLOC_FAIL || r == EXT2_ET_INODE_ALLOC_FAIL || r == EXT2_ET_DIR_NO_SPACE ||
         r == EXT2_ET_TOOSMALL || r == EXT2_ET_TOO_MANY_INODES || r == EXT2_ET_EA_NO_SPACE;
}

void check(errcode_t r, const std::string& what) {
  if (r) throw Error(what + ": " + error_message(r), is_no_space(r));
}

// ext4 keeps 32 seconds bits in the inode and two more (the epoch) with
// the nanoseconds, which carries dates from 1901 to 2446; beyond that the
// time is clamped, as Linux does.
void set_time(__u32& lo, __u32& extra, Time t) {
  constexpr int64_t kMin = INT32_MIN, kMax = (int64_t)INT32_MAX + (3LL << 32);
  if (t.sec < kMin) t = {kMin, 0};
  if (t.sec > kMax) t = {kMax, 999999999};
  lo = (uint32_t)t.sec;
  uint32_t epoch = (uint32_t)(((t.sec - (int64_t)(int32_t)(uint32_t)t.sec) >> 32) & 3);
  extra = (std::min<uint32_t>(t.nsec, 999999999) << 2) | epoch;
}

void set_owner(ext2_inode_large& in, uint32_t uid, uint32_t gid) {
  in.i_uid = (uint16_t)uid;
  ext2fs_set_i_uid_high(in, uid >> 16);
  in.i_gid = (uint16_t)gid;
  ext2fs_set_i_gid_high(in, gid >> 16);
}

void random_bytes(void* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom((char*)p + got, n - got, 0);
    if (r > 0) got += r;
    else if (errno != EINTR) throw Error(std::string("getrandom: ") + strerror(errno));
  }
}

void random_uuid(__u8* u) {
  random_bytes(u, 16);
  u[6] = (u[6] & 0x0f) | 0x40;  // version 4
  u[8] = (u[8] & 0x3f) | 0x80;  // RFC 4122 variant
}

uint16_t ifmt_of(Kind k) {
  switch (k) {
    case Kind::Dir: return LINUX_S_IFDIR;
    case Kind::Symlink: return LINUX_S_IFLNK;
    case Kind::CharDev: return LINUX_S_IFCHR;
    case Kind::BlockDev: return LINUX_S_IFBLK;
    case Kind::Fifo: return LINUX_S_IFIFO;
    case Kind::Socket: return LINUX_S_IFSOCK;
    default: return LINUX_S_IFREG;
  }
}

int dirent_type(uint16_t mode) {
  switch (mode & LINUX_S_IFMT) {
    case LINUX_S_IFDIR: return EXT2_FT_DIR;
    case LINUX_S_IFLNK: return EXT2_FT_SYMLINK;
    case LINUX_S_IFCHR: return EXT2_FT_CHRDEV;
    case LINUX_S_IFBLK: return EXT2_FT_BLKDEV;
    case LINUX_S_IFIFO: return EXT2_FT_FIFO;
    case LINUX_S_IFSOCK: return EXT2_FT_SOCK;
    default: return EXT2_FT_REG_FILE;
  }
}

bool all_zero(const char* p, size_t n) { return p[0] == 0 && memcmp(p, p + 1, n - 1) == 0; }

}  // namespace

struct Ext4Writer::Impl {
  ext2_filsys fs = nullptr;
  Time now;
  struct Node {
    ext2_ino_t ino;
    bool dir;
  };
  std::unordered_map<std::string, Node> nodes;
  // Folder contents are kept here and written once, at the end:
  // ext2fs_link scans the whole folder for room on every call, which is
  // quadratic in the folder's size.
  struct Dirent {
    std::string name;
    ext2_ino_t ino;
    int type;
  };
  std::map<ext2_ino_t, std::vector<Dirent>> contents;  // ordered: same input, same image
  std::unordered_map<ext2_ino_t, ext2_ino_t> parents;

  ~Impl() {
    if (fs) ext2fs_free(fs);  // not finished: leave the (doomed) image as it is
  }

  void format(const std::string& image, const Layout& l) {
    static bool tables = (initialize_ext2_error_table(), true);
    (void)tables;
    ext2_super_block param;
    memset(&param, 0, sizeof param);
    ext2fs_blocks_count_set(&param, l.bytes / kBlockSize);
    param.s_log_block_size = 2;  // 1024 << 2
    param.s_rev_level = EXT2_DYNAMIC_REV;
    param.s_inode_size = kInodeSize;
    param.s_inodes_count = (uint32_t)std::min<uint64_t>(l.inodes, UINT32_MAX);
    param.s_log_groups_per_flex = 4;
    param.s_desc_size = EXT2_MIN_DESC_SIZE_64BIT;
    ext2fs_set_feature_xattr(&param);
    ext2fs_set_feature_dir_index(&param);
    ext2fs_set_feature_filetype(&param);
    ext2fs_set_feature_extents(&param);
    ext2fs_set_feature_64bit(&param);
    ext2fs_set_feature_flex_bg(&param);
    ext2fs_set_feature_sparse_super(&param);
    ext2fs_set_feature_large_file(&param);
    ext2fs_set_feature_huge_file(&param);
    ext2fs_set_feature_dir_nlink(&param);
    ext2fs_set_feature_extra_isize(&param);
    ext2fs_set_feature_metadata_csum(&param);
    check(ext2fs_initialize(image.c_str(), EXT2_FLAG_64BITS, &param, unix_io_manager, &fs), "formatting " + image);

    ext2_super_block* sb = fs->super;
    now = {fs->now ? (int64_t)fs->now : (int64_t)time(nullptr), 0};
    random_uuid(sb->s_uuid);
    random_uuid((__u8*)sb->s_hash_seed);
    sb->s_def_hash_version = EXT2_HASH_HALF_MD4;
    sb->s_checksum_type = EXT2_CRC32C_CHKSUM;
    sb->s_max_mnt_count = -1;
    ext2fs_init_csum_seed(fs);
    if (l.label.size() > sizeof sb->s_volume_name) throw Error("--label: at most 16 bytes");
    memcpy(sb->s_volume_name, l.label.data(), l.label.size());

    check(ext2fs_allocate_tables(fs), image + ": allocating group tables");
    // The image file starts as zeros, so the inode tables need no clearing.
    for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
      ext2fs_bg_flags_set(fs, g, EXT2_BG_INODE_ZEROED);
      ext2fs_group_desc_csum_set(fs, g);
    }
    // Reserved inodes carry checksums too, or e2fsck rejects them.
    std::vector<char> zero(kInodeSize, 0);
    for (ext2_ino_t ino = 1; ino < EXT2_FIRST_INODE(sb); ino++)
      check(ext2fs_write_inode_full(fs, ino, (ext2_inode*)zero.data(), kInodeSize), image + ": reserved inodes");

    check(ext2fs_mkdir(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, nullptr), image + ": root folder");
    nodes[""] = {EXT2_ROOT_INO, true};
    parents[EXT2_ROOT_INO] = EXT2_ROOT_INO;
    contents[EXT2_ROOT_INO];
    fs->umask = 077;
    ext2_ino_t lpf = new_ino(EXT2_ROOT_INO, LINUX_S_IFDIR, "lost+found");
    check(ext2fs_mkdir(fs, EXT2_ROOT_INO, lpf, nullptr), image + ": lost+found");
    fs->umask = 022;
    link(EXT2_ROOT_INO, "lost+found", lpf, EXT2_FT_DIR, "lost+found");
    // e2fsck wants room there without allocating: 16 KiB, as mke2fs leaves.
    for (int i = 1; i < 4; i++) check(ext2fs_expand_dir(fs, lpf), image + ": lost+found");
    nodes["lost+found"] = {lpf, true};
    parents[lpf] = EXT2_ROOT_INO;

    for (ext2_ino_t ino = EXT2_ROOT_INO + 1; ino < EXT2_FIRST_INODE(sb); ino++)
      ext2fs_inode_alloc_stats2(fs, ino, +1, 0);
    ext2fs_mark_inode_bitmap2(fs->inode_map, EXT2_BAD_INO);
    ext2fs_inode_alloc_stats2(fs, EXT2_BAD_INO, +1, 0);
    check(ext2fs_update_bb_inode(fs, nullptr), image + ": bad blocks inode");
  }

  void read_inode(ext2_ino_t ino, ext2_inode_large& in, const std::string& path) {
    memset(&in, 0, sizeof in);
    check(ext2fs_read_inode_full(fs, ino, (ext2_inode*)&in, sizeof in), path);
  }
  void write_inode(ext2_ino_t ino, ext2_inode_large& in, const std::string& path) {
    check(ext2fs_write_inode_full(fs, ino, (ext2_inode*)&in, sizeof in), path);
  }

  void set_meta(ext2_inode_large& in, const Entry& e, uint16_t ifmt) {
    in.i_mode = ifmt | (e.perm & 07777);
    set_owner(in, e.uid, e.gid);
    set_time(in.i_atime, in.i_atime_extra, e.atime);
    set_time(in.i_mtime, in.i_mtime_extra, e.mtime);
    set_time(in.i_ctime, in.i_ctime_extra, e.ctime);
    if (in.i_extra_isize < sizeof(ext2_inode_large) - EXT2_GOOD_OLD_INODE_SIZE)
      in.i_extra_isize = sizeof(ext2_inode_large) - EXT2_GOOD_OLD_INODE_SIZE;
    if (!in.i_crtime) set_time(in.i_crtime, in.i_crtime_extra, now);
  }

  void apply_meta(ext2_ino_t ino, const Entry& e, uint16_t ifmt) {
    ext2_inode_large in;
    read_inode(ino, in, e.path);
    set_meta(in, e, ifmt);
    write_inode(ino, in, e.path);
  }

  // A fresh inode of one of the kinds libext2fs has no maker for: regular
  // files (an empty extent tree) and special files (no blocks at all).
  void write_new_inode(ext2_ino_t ino, const Entry& e, uint16_t ifmt) {
    std::vector<char> buf(EXT2_INODE_SIZE(fs->super), 0);  // clears any old in-inode xattrs
    ext2_inode_large& in = *(ext2_inode_large*)buf.data();
    set_meta(in, e, ifmt);
    in.i_links_count = 1;
    if (ifmt == LINUX_S_IFREG) {
      in.i_flags |= EXT4_EXTENTS_FL;
      auto* eh = (ext3_extent_header*)in.i_block;
      eh->eh_magic = ext2fs_cpu_to_le16(EXT3_EXT_MAGIC);
      eh->eh_max = ext2fs_cpu_to_le16((sizeof in.i_block - sizeof *eh) / sizeof(ext3_extent));
    } else if (ifmt == LINUX_S_IFCHR || ifmt == LINUX_S_IFBLK) {
      // Linux's two encodings: the old 8:8 one while it fits, else 12:20.
      if (e.major < 256 && e.minor < 256) in.i_block[0] = (e.major << 8) | e.minor;
      else in.i_block[1] = (e.minor & 0xff) | (e.major << 8) | ((e.minor & ~0xffu) << 12);
    }
    check(ext2fs_write_inode_full(fs, ino, (ext2_inode*)buf.data(), buf.size()), e.path);
    ext2fs_inode_alloc_stats2(fs, ino, +1, 0);
  }

  ext2_ino_t new_ino(ext2_ino_t parent, uint16_t ifmt, const std::string& path) {
    ext2_ino_t ino;
    check(ext2fs_new_inode(fs, parent, ifmt | 0644, nullptr, &ino), path);
    return ino;
  }

  void link(ext2_ino_t dir, const std::string& name, ext2_ino_t ino, int type, const std::string&) {
    contents[dir].push_back({name, ino, type});
  }

  // Lays out one folder's entries in blocks, each closed by the checksum
  // tail metadata_csum asks for, and writes them over the folder's blocks
  // (grown as needed; blocks left over are written empty).
  void write_dir(ext2_ino_t dir, const std::vector<Dirent>& ents) {
    const unsigned bs = fs->blocksize;
    const unsigned tail = ext2fs_has_feature_metadata_csum(fs->super) ? sizeof(ext2_dir_entry_tail) : 0;
    const unsigned room = bs - tail;
    std::vector<char> buf;
    unsigned used = room;  // forces a first block
    ext2_dir_entry* last = nullptr;
    auto close_block = [&] {  // the block's last entry spans its free space
      if (last) check(ext2fs_set_rec_len(fs, last->rec_len + (room - used), last), "folder");
      last = nullptr;
    };
    auto put = [&](const char* name, size_t len, ext2_ino_t ino, int type) {
      unsigned need = (8 + len + 3) & ~3u;
      if (used + need > room) {
        close_block();
        buf.resize(buf.size() + bs, 0);
        if (tail) ext2fs_initialize_dirent_tail(fs, (ext2_dir_entry_tail*)(buf.data() + buf.size() - tail));
        used = 0;
      }
      auto* de = (ext2_dir_entry*)(buf.data() + buf.size() - bs + used);
      de->inode = ino;
      de->rec_len = (uint16_t)need;
      ext2fs_dirent_set_name_len(de, (int)len);
      ext2fs_dirent_set_file_type(de, type);
      memcpy(de->name, name, len);
      used += need;
      last = de;
    };
    put(".", 1, dir, EXT2_FT_DIR);
    put("..", 2, parents.at(dir), EXT2_FT_DIR);
    for (const Dirent& e : ents) put(e.name.data(), e.name.size(), e.ino, e.type);
    close_block();
    size_t nblocks = buf.size() / bs;

    ext2_inode_large in;
    read_inode(dir, in, "folder");
    for (size_t have = EXT2_I_SIZE(&in) / bs; have < nblocks; have++) check(ext2fs_expand_dir(fs, dir), "folder");
    read_inode(dir, in, "folder");
    std::vector<char> empty(bs, 0);
    auto* de = (ext2_dir_entry*)empty.data();
    check(ext2fs_set_rec_len(fs, room, de), "folder");
    if (tail) ext2fs_initialize_dirent_tail(fs, (ext2_dir_entry_tail*)(empty.data() + room));
    for (blk64_t lblk = 0; lblk < EXT2_I_SIZE(&in) / bs; lblk++) {
      blk64_t pblk = 0;
      check(ext2fs_bmap2(fs, dir, (ext2_inode*)&in, nullptr, 0, lblk, nullptr, &pblk), "folder");
      const char* data = lblk < nblocks ? buf.data() + lblk * bs : empty.data();
      check(ext2fs_write_dir_block4(fs, pblk, (void*)data, 0, dir), "folder");
    }
  }

  void write_dirs() {
    for (const auto& [dir, ents] : contents) {
      try {
        write_dir(dir, ents);
      } catch (Error& e) {
        auto it = std::find_if(nodes.begin(), nodes.end(), [&](auto& n) { return n.second.ino == dir; });
        throw Error((it == nodes.end() || it->first.empty() ? "/" : it->first) + ": " + e.what(), e.no_space);
      }
    }
  }

  ext2_ino_t make_dir(ext2_ino_t parent, const std::string& name, const Entry& e) {
    ext2_ino_t ino = new_ino(parent, LINUX_S_IFDIR, e.path);
    ext2_inode_large p;
    read_inode(parent, p, e.path);
    check(ext2fs_mkdir(fs, parent, ino, nullptr), e.path);
    // dir_nlink: past the link limit a folder's count stays 1 ("many").
    if (p.i_links_count == 1 || p.i_links_count + 1 >= EXT2_LINK_MAX) {
      read_inode(parent, p, e.path);
      p.i_links_count = 1;
      write_inode(parent, p, e.path);
    }
    parents[ino] = parent;
    contents[ino];
    link(parent, name, ino, EXT2_FT_DIR, e.path);
    apply_meta(ino, e, LINUX_S_IFDIR);
    nodes[e.path] = {ino, true};
    return ino;
  }

  // The folder holding `path`, made (0755, root, now) where the source
  // never named it, as tar does for members listed without their parents.
  ext2_ino_t parent_of(const std::string& path, std::string& name) {
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
    name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name.size() > EXT2_NAME_LEN) throw Error(path + ": name longer than 255 bytes");
    auto it = nodes.find(dir);
    if (it != nodes.end()) {
      if (!it->second.dir) throw Error(path + ": " + dir + " is not a folder");
      return it->second.ino;
    }
    std::string dname;
    ext2_ino_t grand = parent_of(dir, dname);
    Entry d;
    d.path = dir;
    d.kind = Kind::Dir;
    d.perm = 0755;
    d.atime = d.mtime = d.ctime = now;
    return make_dir(grand, dname, d);
  }

  // Drops one name of a non-folder; the inode goes when its last name does.
  void remove(ext2_ino_t dir, const std::string& name, ext2_ino_t ino, const std::string& path) {
    auto& ents = contents[dir];
    auto gone = std::find_if(ents.begin(), ents.end(), [&](const Dirent& d) { return d.name == name; });
    if (gone != ents.end()) ents.erase(gone);
    ext2_inode_large in;
    read_inode(ino, in, path);
    if (in.i_links_count > 1) {
      in.i_links_count--;
      write_inode(ino, in, path);
      return;
    }
    if (ext2fs_inode_has_valid_blocks2(fs, (ext2_inode*)&in))
      check(ext2fs_punch(fs, ino, (ext2_inode*)&in, nullptr, 0, ~0ULL), path);
    if (ext2fs_file_acl_block(fs, (ext2_inode*)&in))
      check(ext2fs_free_ext_attr(fs, ino, &in), path);
    in.i_links_count = 0;
    in.i_dtime = (uint32_t)now.sec;
    write_inode(ino, in, path);
    ext2fs_inode_alloc_stats2(fs, ino, -1, 0);
  }

  void write_data(ext2_ino_t ino, const Entry& e, Data& data) {
    ext2_file_t f;
    check(ext2fs_file_open(fs, ino, EXT2_FILE_WRITE, &f), e.path);
    struct Closer {
      ext2_file_t f;
      ~Closer() {
        if (f) ext2fs_file_close(f);
      }
    } closer{f};
    auto put = [&](uint64_t at, const char* p, size_t n) {
      if (!n) return;
      check(ext2fs_file_llseek(f, at, EXT2_SEEK_SET, nullptr), e.path);
      while (n) {
        unsigned chunk = (unsigned)std::min<size_t>(n, 1u << 30), done = 0;
        check(ext2fs_file_write(f, p, chunk, &done), e.path);
        if (!done) throw Error(e.path + ": short write");
        p += done;
        n -= done;
      }
    };
    // Whole blocks of zeros become holes, like `cp --sparse=always`.
    data.read([&](uint64_t off, const char* p, size_t n) {
      uint64_t run_at = off;
      const char* run = p;
      size_t run_len = 0;
      while (n) {
        size_t chunk = std::min<size_t>(n, kBlockSize - off % kBlockSize);
        if (chunk == kBlockSize && all_zero(p, chunk)) {
          put(run_at, run, run_len);
          run_at = off + chunk;
          run = p + chunk;
          run_len = 0;
        } else {
          run_len += chunk;
        }
        off += chunk;
        p += chunk;
        n -= chunk;
      }
      put(run_at, run, run_len);
    });
    check(ext2fs_file_set_size2(f, e.size), e.path);
    closer.f = nullptr;
    check(ext2fs_file_close(f), e.path);
  }

  void set_xattrs(ext2_ino_t ino, const Entry& e) {
    if (e.xattrs.empty()) return;
    ext2_xattr_handle* h;
    check(ext2fs_xattrs_open(fs, ino, &h), e.path);
    errcode_t r = ext2fs_xattrs_read(h);
    for (size_t i = 0; !r && i < e.xattrs.size(); i++) {
      const auto& [key, value] = e.xattrs[i];
      r = ext2fs_xattr_set(h, key.c_str(), value.data(), value.size());
      if (r) {
        ext2fs_xattrs_close(&h);
        check(r, e.path + ": xattr " + key);
      }
    }
    ext2fs_xattrs_close(&h);
    check(r, e.path + ": xattrs");
  }

  void add(const Entry& e, Data* data) {
    if (e.path.empty()) {  // the root itself
      apply_meta(EXT2_ROOT_INO, e, LINUX_S_IFDIR);
      set_xattrs(EXT2_ROOT_INO, e);
      return;
    }
    std::string name;
    ext2_ino_t parent = parent_of(e.path, name);
    if (auto it = nodes.find(e.path); it != nodes.end()) {
      if (it->second.dir && e.kind == Kind::Dir) {
        apply_meta(it->second.ino, e, LINUX_S_IFDIR);
        set_xattrs(it->second.ino, e);
        return;
      }
      if (it->second.dir) throw Error(e.path + ": a folder here already, cannot replace it");
      if (e.kind == Kind::HardLink && e.target == e.path) return;
      remove(parent, name, it->second.ino, e.path);
      nodes.erase(it);
    }
    ext2_ino_t ino = 0;
    uint16_t ifmt = ifmt_of(e.kind);
    switch (e.kind) {
      case Kind::Dir:
        ino = make_dir(parent, name, e);
        break;
      case Kind::HardLink: {
        auto t = nodes.find(e.target);
        if (t == nodes.end()) throw Error(e.path + ": hard link to " + e.target + ", which is not there");
        if (t->second.dir) throw Error(e.path + ": hard link to the folder " + e.target);
        ino = t->second.ino;
        ext2_inode_large in;
        read_inode(ino, in, e.path);
        if (in.i_links_count >= EXT2_LINK_MAX) throw Error(e.path + ": too many links to " + e.target);
        link(parent, name, ino, dirent_type(in.i_mode), e.path);
        in.i_links_count++;
        write_inode(ino, in, e.path);
        nodes[e.path] = {ino, false};
        return;
      }
      case Kind::Symlink:
        if (e.target.empty()) throw Error(e.path + ": symbolic link with an empty target");
        if (e.target.size() >= kBlockSize) throw Error(e.path + ": symbolic link target longer than 4095 bytes");
        ino = new_ino(parent, ifmt, e.path);
        check(ext2fs_symlink(fs, parent, ino, nullptr, e.target.c_str()), e.path);
        apply_meta(ino, e, ifmt);
        link(parent, name, ino, EXT2_FT_SYMLINK, e.path);
        break;
      default:
        ino = new_ino(parent, ifmt, e.path);
        write_new_inode(ino, e, ifmt);
        link(parent, name, ino, dirent_type(ifmt), e.path);
        if (e.kind == Kind::File && data) write_data(ino, e, *data);
        else if (e.kind == Kind::File && e.size) throw Error(e.path + ": no data to write");
        break;
    }
    nodes[e.path] = {ino, e.kind == Kind::Dir};
    set_xattrs(ino, e);
  }
};

Ext4Writer::Ext4Writer(const std::string& image, const Layout& layout) : impl_(std::make_unique<Impl>()) {
  impl_->format(image, layout);
}

Ext4Writer::~Ext4Writer() = default;

void Ext4Writer::add(const Entry& e, Data* data) { impl_->add(e, data); }

void Ext4Writer::finish() {
  impl_->write_dirs();
  ext2_filsys fs = impl_->fs;
  impl_->fs = nullptr;
  check(ext2fs_close_free(&fs), "writing the image");
}

uint64_t Ext4Writer::total_bytes() const { return ext2fs_blocks_count(impl_->fs->super) * kBlockSize; }

uint64_t Ext4Writer::used_bytes() const {
  ext2_super_block* sb = impl_->fs->super;
  return (ext2fs_blocks_count(sb) - ext2fs_free_blocks_count(sb)) * kBlockSize;
}

}  // namespace flatux::mkimage
