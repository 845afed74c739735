// tmpfs file data: pages from the kernel heap in a radix tree, allocated on
// first write (holes stay unallocated and read as zeroes), counted against
// the filesystem's size= limit.
#include <cstring>
#include <linux/errno.h>
#include <linux/falloc.h>

#include "kernel/mm/usercopy.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/kernel.h"

namespace flatux {
namespace {

constexpr int kFanBits = 9;
constexpr uint64_t kFan = 1u << kFanBits;
constexpr int kMaxHeight = 6;  // 2^54 pages: beyond any 63-bit offset

using Node = void*[kFan];

// Indices below 512^h; h = kMaxHeight covers them all.
uint64_t span(int h) { return h >= kMaxHeight ? UINT64_MAX : (1ull << (kFanBits * h)) - 1; }
unsigned slot(uint64_t idx, int level) { return (unsigned)(idx >> (kFanBits * (level - 1))) & (kFan - 1); }

// Frees the pages in [first, last] under `node` (at `level`, covering
// indices from `base`); frees the node itself when it ends up empty.
// Returns true when the node was freed.
bool drop(Tmpfs& fs, TmpInode& n, void*& node, int level, uint64_t base, uint64_t first, uint64_t last) {
  if (!node) return true;
  if (level == 0) {
    fs.heap->free(node);
    node = nullptr;
    tmp_charge(fs, -1);
    n.blocks--;
    return true;
  }
  Node& kids = *static_cast<Node*>(node);
  uint64_t step = 1ull << (kFanBits * (level - 1));
  bool empty = true;
  for (uint64_t i = 0; i < kFan; i++) {
    uint64_t lo = base + i * step, hi = lo + step - 1;
    if (kids[i] && hi >= first && lo <= last) drop(fs, n, kids[i], level - 1, lo, first, last);
    if (kids[i]) empty = false;
    if (hi == UINT64_MAX) break;
  }
  if (!empty) return false;
  fs.heap->free(node);
  node = nullptr;
  return true;
}

uint64_t next_in(void* node, int level, uint64_t base, uint64_t idx, bool want_data) {
  if (!node) return want_data ? UINT64_MAX : (idx > base ? idx : base);
  if (level == 0) return want_data ? base : UINT64_MAX;
  uint64_t step = 1ull << (kFanBits * (level - 1));
  Node& kids = *static_cast<Node*>(node);
  for (uint64_t i = idx > base ? (idx - base) / step : 0; i < kFan; i++) {
    uint64_t lo = base + i * step;
    uint64_t r = next_in(kids[i], level - 1, lo, idx > lo ? idx : lo, want_data);
    if (r != UINT64_MAX) return r;
  }
  return UINT64_MAX;
}

// Copies between file pages and a buffer; `to_file` picks the direction.
// `user` says whether buf is guest memory.
template <bool kToFile>
long copy_pages(Tmpfs* fs, TmpInode& n, char* buf, size_t len, int64_t off, bool user) {
  size_t done = 0;
  while (done < len) {
    uint64_t pos = (uint64_t)off + done;
    uint64_t idx = pos / kTmpPage;
    size_t in = pos % kTmpPage, chunk = kTmpPage - in;
    if (chunk > len - done) chunk = len - done;
    long r = 0;
    if (kToFile) {
      long err = 0;
      char* page = static_cast<char*>(tmp_page_get(*fs, n, idx, &err));
      if (!page) return done ? (long)done : err;
      if (user) r = copy_from_user(page + in, buf + done, chunk);
      else memcpy(page + in, buf + done, chunk);
    } else {
      auto* page = static_cast<const char*>(tmp_page_find(n.pages, idx));
      if (user) r = page ? copy_to_user(buf + done, page + in, chunk) : clear_user(buf + done, chunk);
      else if (page) memcpy(buf + done, page + in, chunk);
      else memset(buf + done, 0, chunk);
    }
    if (r < 0) return done ? (long)done : -EFAULT;
    done += chunk;
  }
  return (long)done;
}

long do_read(TmpInode& n, void* buf, size_t len, int64_t off, bool user) {
  if (n.memfd >= 0) return shm_read(n, buf, len, off);
  if (off >= n.size) return 0;
  if ((uint64_t)len > (uint64_t)(n.size - off)) len = (size_t)(n.size - off);
  return copy_pages<false>(nullptr, n, static_cast<char*>(buf), len, off, user);
}

long do_write(Tmpfs& fs, TmpInode& n, const void* buf, size_t len, int64_t off, bool user) {
  if (off < 0) return -EINVAL;
  if (len == 0) return 0;
  if ((uint64_t)off >= (uint64_t)kTmpMaxFileSize) return -EFBIG;
  if (len > (uint64_t)(kTmpMaxFileSize - off)) len = (size_t)(kTmpMaxFileSize - off);
  if (n.memfd >= 0) return shm_write(fs, n, buf, len, off);
  long r = copy_pages<true>(&fs, n, const_cast<char*>(static_cast<const char*>(buf)), len, off, user);
  if (r > 0 && off + r > n.size) n.size = off + r;
  return r;
}

}  // namespace

void tmp_charge(Tmpfs& fs, int64_t pages) {
  fs.used_pages += (uint64_t)pages;
  if (fs.mem) fs.mem->used.fetch_add((uint64_t)(pages * (int64_t)kTmpPage), std::memory_order_relaxed);
}

bool tmp_mem_allows(const Tmpfs& fs, uint64_t pages) {
  if (!fs.mem || !fs.mem->limit) return true;
  return fs.mem->used.load(std::memory_order_relaxed) + pages * kTmpPage <= fs.mem->limit;
}

void* tmp_page_find(const TmpPages& p, uint64_t idx) {
  if (!p.root || idx > span(p.height)) return nullptr;
  void* node = p.root;
  for (int level = p.height; level > 0 && node; level--) node = (*static_cast<Node*>(node))[slot(idx, level)];
  return node;
}

void* tmp_page_get(Tmpfs& fs, TmpInode& n, uint64_t idx, long* err) {
  if (void* page = tmp_page_find(n.pages, idx)) return page;
  if (fs.used_pages >= fs.limits.max_pages || !tmp_mem_allows(fs, 1)) {
    *err = fs.used_pages >= fs.limits.max_pages ? -ENOSPC : -ENOMEM;
    return nullptr;
  }
  *err = -ENOMEM;
  TmpPages& p = n.pages;
  while (p.height == 0 || idx > span(p.height)) {
    // A taller tree: the old root becomes the first child of a new one.
    auto* top = static_cast<Node*>(fs.heap->alloc(sizeof(Node)));
    if (!top) return nullptr;
    (*top)[0] = p.root;
    p.root = top;
    p.height++;
  }
  void** slotp = &p.root;  // a node at `level` until the loop ends
  for (int level = p.height; level > 0; level--) {
    slotp = &(*static_cast<Node*>(*slotp))[slot(idx, level)];
    if (level > 1 && !*slotp && !(*slotp = fs.heap->alloc(sizeof(Node)))) return nullptr;
  }
  if (!(*slotp = fs.heap->alloc(kTmpPage))) return nullptr;
  tmp_charge(fs, 1);
  n.blocks++;
  return *slotp;
}

void tmp_pages_drop(Tmpfs& fs, TmpInode& n, uint64_t first, uint64_t last) {
  TmpPages& p = n.pages;
  if (!p.root || first > span(p.height)) return;
  if (drop(fs, n, p.root, p.height, 0, first, last)) p.height = 0;
}

uint64_t tmp_pages_next(const TmpPages& p, uint64_t idx, bool want_data) {
  if (!p.root || idx > span(p.height)) return want_data ? UINT64_MAX : idx;
  uint64_t r = next_in(p.root, p.height, 0, idx, want_data);
  return (r == UINT64_MAX && !want_data) ? span(p.height) + 1 : r;  // a full tree ends in a hole
}

long tmp_truncate(Tmpfs& fs, TmpInode& n, int64_t size) {
  if (size < 0) return -EINVAL;
  if (n.memfd >= 0) return shm_truncate(fs, n, size);
  if (size < n.size) {
    uint64_t keep = (uint64_t)size / kTmpPage;  // the page holding the new end
    if (size % kTmpPage) {
      if (char* page = static_cast<char*>(tmp_page_find(n.pages, keep)))
        memset(page + size % kTmpPage, 0, kTmpPage - size % kTmpPage);
      keep++;
    }
    tmp_pages_drop(fs, n, keep, UINT64_MAX);
  }
  n.size = size;
  return 0;
}

long tmp_read(TmpInode& n, void* buf, size_t len, int64_t off) { return do_read(n, buf, len, off, true); }
long tmp_read_kernel(TmpInode& n, void* buf, size_t len, int64_t off) {
  return do_read(n, buf, len, off, false);
}
long tmp_write(Tmpfs& fs, TmpInode& n, const void* buf, size_t len, int64_t off) {
  return do_write(fs, n, buf, len, off, true);
}
long tmp_write_kernel(Tmpfs& fs, TmpInode& n, const void* buf, size_t len, int64_t off) {
  return do_write(fs, n, buf, len, off, false);
}

long tmp_seek_data(TmpInode& n, int64_t off, bool data) {
  if (n.memfd >= 0) return shm_seek(n, off, data);
  if (off < 0 || off >= n.size) return -ENXIO;
  uint64_t idx = tmp_pages_next(n.pages, (uint64_t)off / kTmpPage, data);
  if (idx == UINT64_MAX) return data ? -ENXIO : n.size;  // the end is a hole
  int64_t pos = (int64_t)(idx * kTmpPage);
  if (pos < off) pos = off;  // inside the page `off` is in
  if (pos >= n.size) return data ? -ENXIO : n.size;
  return pos;
}

long tmp_fallocate(Tmpfs& fs, TmpInode& n, int mode, int64_t off, int64_t len) {
  if (off < 0 || len <= 0) return -EINVAL;
  if (off > kTmpMaxFileSize - len) return -EFBIG;
  int64_t end = off + len;
  if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE)) return -EOPNOTSUPP;
  if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE)) return -EOPNOTSUPP;
  if (n.memfd >= 0) return shm_fallocate(fs, n, mode, off, len);
  if (mode & FALLOC_FL_PUNCH_HOLE) {
    if (off >= n.size) return 0;
    if (end > n.size) end = n.size;
    // Whole pages go; the partial ones at either end are zeroed.
    uint64_t first = ((uint64_t)off + kTmpPage - 1) / kTmpPage, stop = (uint64_t)end / kTmpPage;
    for (int64_t pos = off; pos < end;) {
      uint64_t idx = (uint64_t)pos / kTmpPage;
      int64_t page_end = (int64_t)((idx + 1) * kTmpPage);
      int64_t e = page_end < end ? page_end : end;
      if (idx < first || idx >= stop)
        if (char* page = static_cast<char*>(tmp_page_find(n.pages, idx)))
          memset(page + pos % kTmpPage, 0, (size_t)(e - pos));
      pos = e;
    }
    if (stop > first) tmp_pages_drop(fs, n, first, stop - 1);
    return 0;
  }
  // The pages missing in the range: counted by the ones it has, so that an
  // absurd length is refused without a walk over its holes.
  uint64_t first = (uint64_t)off / kTmpPage, last = (uint64_t)(end - 1) / kTmpPage;
  uint64_t free_pages = fs.limits.max_pages - fs.used_pages;
  if (last - first + 1 > n.blocks + free_pages) return -ENOSPC;  // all or nothing
  uint64_t have = 0;
  for (uint64_t idx = tmp_pages_next(n.pages, first, true); idx <= last; idx = tmp_pages_next(n.pages, idx + 1, true))
    have++;
  uint64_t want = last - first + 1 - have;
  if (want > free_pages) return -ENOSPC;
  if (!tmp_mem_allows(fs, want)) return -ENOMEM;
  for (uint64_t idx = (uint64_t)off / kTmpPage; idx <= (uint64_t)(end - 1) / kTmpPage; idx++) {
    long err = 0;
    if (!tmp_page_get(fs, n, idx, &err)) return err;
  }
  if (!(mode & FALLOC_FL_KEEP_SIZE) && end > n.size) n.size = end;
  return 0;
}

}  // namespace flatux
