// tmpfs instances: mount options, limits, and the life of the whole tree.
#include <cstring>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>

#include "host/raw_syscall.h"
#include "kernel/fs/tmpfs/tmpfs.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"

namespace flatux {
namespace {

// The guest's memory: mem= when given, else the host's RAM (Linux's
// defaults are half of it).
uint64_t memory_pages(const MemAccount* mem) {
  if (mem && mem->limit) return mem->limit / kTmpPage;
  struct sysinfo si;
  if (host::sys(SYS_sysinfo, &si) < 0) return 1u << 20;
  return (uint64_t)si.totalram * si.mem_unit / kTmpPage;
}

bool parse_number(std::string_view v, uint64_t* out, uint64_t memory, uint64_t* pages_out) {
  if (v.empty()) return false;
  uint64_t n = 0;
  size_t i = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; i++) {
    if (n > (UINT64_MAX - 9) / 10) return false;
    n = n * 10 + (uint64_t)(v[i] - '0');
  }
  if (i == 0) return false;
  std::string_view suffix = tail(v, i);
  int shift = 0;
  if (suffix == "k" || suffix == "K") shift = 10;
  else if (suffix == "m" || suffix == "M") shift = 20;
  else if (suffix == "g" || suffix == "G") shift = 30;
  else if (suffix == "t" || suffix == "T") shift = 40;
  else if (suffix == "%" && memory) {
    if (n > 100) return false;
    *pages_out = memory * n / 100;
    return true;
  } else if (!suffix.empty()) return false;
  if (shift && n > (UINT64_MAX >> shift)) return false;
  *out = n << shift;
  if (pages_out) *pages_out = (*out + kTmpPage - 1) / kTmpPage;
  return true;
}

bool parse_octal(std::string_view v, uint32_t* out) {
  if (v.empty()) return false;
  uint32_t m = 0;
  for (char c : v) {
    if (c < '0' || c > '7' || m > 07777) return false;
    m = m * 8 + (uint32_t)(c - '0');
  }
  if (m > 07777) return false;
  *out = m;
  return true;
}

// Options mount(8) turns into flags, but which may also reach us as text.
// A named constant table: GCC may place a braced list's backing array in
// writable .data (it did once vector stores were no longer allowed).
constexpr std::string_view kGenericOptions[] = {
    "rw",       "ro",         "defaults", "nosuid", "suid",        "nodev", "dev",
    "noexec",   "exec",       "relatime", "norelatime", "noatime", "atime", "strictatime",
    "sync",     "async",      "nodiratime", "diratime", "lazytime", "silent", "inode64"};

bool generic_option(std::string_view k) {
  for (std::string_view g : kGenericOptions)
    if (k == g) return true;
  return false;
}

long parse_options(const char* options, uint64_t memory, TmpLimits* l) {
  if (!options) return 0;
  std::string_view s(options);
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view opt = head(s, comma);
    s = comma == std::string_view::npos ? std::string_view() : tail(s, comma + 1);
    if (opt.empty()) continue;
    size_t eq = opt.find('=');
    std::string_view key = head(opt, eq);
    std::string_view val = eq == std::string_view::npos ? std::string_view() : tail(opt, eq + 1);
    uint64_t n = 0, pages = 0;
    if (key == "size") {
      if (!parse_number(val, &n, memory, &pages)) return -EINVAL;
      l->max_pages = pages;
      l->size_given = true;
    } else if (key == "nr_inodes") {
      if (!parse_number(val, &n, 0, nullptr)) return -EINVAL;
      l->max_inodes = n;
      l->inodes_given = true;
    } else if (key == "mode") {
      if (!parse_octal(val, &l->root_mode)) return -EINVAL;
    } else if (key == "uid" || key == "gid") {
      if (!parse_number(val, &n, 0, nullptr) || n > 0xfffffffeu) return -EINVAL;
      (key == "uid" ? l->root_uid : l->root_gid) = (uint32_t)n;
    } else if (!generic_option(key) || !val.empty()) {
      return -EINVAL;
    }
  }
  return 0;
}

}  // namespace

long tmpfs_new(Heap* heap, const char* options, uint32_t dev, MemAccount* mem, Tmpfs** out) {
  uint64_t memory = memory_pages(mem);
  TmpLimits l;
  l.max_pages = memory / 2;
  l.max_inodes = memory / 2;
  if (long r = parse_options(options, memory, &l)) return r;
  // size=0 and nr_inodes=0 mean "no limit" on Linux.
  if (l.size_given && l.max_pages == 0) l.max_pages = UINT64_MAX / 2;
  if (l.inodes_given && l.max_inodes == 0) l.max_inodes = UINT64_MAX / 2;
  Tmpfs* fs = heap->make<Tmpfs>();
  if (!fs) return -ENOMEM;
  fs->heap = heap;
  fs->mem = mem;
  fs->memory_pages = memory;
  fs->limits = l;
  fs->dev = dev;
  long err = 0;
  fs->root = tmp_new_inode(*fs, S_IFDIR | l.root_mode, l.root_uid, l.root_gid, &err);
  if (!fs->root) {
    heap->destroy_obj(fs);
    return err;
  }
  fs->root->nlink = 2;
  fs->root->size = 40;
  *out = fs;
  return 0;
}

long tmpfs_reconfigure(Tmpfs& fs, const char* options) {
  Guard g(fs.lock);
  TmpLimits l = fs.limits;
  if (long r = parse_options(options, fs.memory_pages, &l)) return r;
  if (l.size_given && l.max_pages == 0) l.max_pages = UINT64_MAX / 2;
  if (l.inodes_given && l.max_inodes == 0) l.max_inodes = UINT64_MAX / 2;
  if (l.max_pages < fs.used_pages || l.max_inodes < fs.used_inodes) return -EINVAL;
  fs.limits = l;
  return 0;
}

void tmpfs_unmount(Tmpfs& fs) {
  fs.lock.lock();
  tmp_destroy_tree(fs);
  fs.detached = true;
  bool gone = fs.pins == 0;
  fs.lock.unlock();
  if (gone) tmpfs_free(fs);
}

void tmpfs_free(Tmpfs& fs) { fs.heap->destroy_obj(&fs); }

void tmpfs_show_options(Tmpfs& fs, KFmt& out) {
  Guard g(fs.lock);
  const TmpLimits& l = fs.limits;
  if (l.max_pages != fs.memory_pages / 2) out.str(",size=").udec(l.max_pages * (kTmpPage / 1024)).ch('k');
  if (l.max_inodes != fs.memory_pages / 2) out.str(",nr_inodes=").udec(l.max_inodes);
  if (l.root_mode != 01777) {
    char oct[8];
    int n = 0;
    uint32_t m = l.root_mode;
    do { oct[n++] = (char)('0' + (m & 7)); m >>= 3; } while (m);
    while (n < 3) oct[n++] = '0';
    out.ch(',').str("mode=");
    while (n) out.ch(oct[--n]);
  }
  if (l.root_uid) out.str(",uid=").udec(l.root_uid);
  if (l.root_gid) out.str(",gid=").udec(l.root_gid);
}

uint64_t tmpfs_pages_used(Tmpfs& fs) {
  Guard g(fs.lock);
  return fs.used_pages;
}

}  // namespace flatux
