// Shared by the ext4 fuzzers (ext4_corrupt_walk, ext4_fuzz): a kernel made
// outside any guest (FS stays the host thread's own, which the foreign-code
// gate borrows), and a walk of a mounted volume through the kernel's ext4
// volume layer: every listing, attribute, link target and file, bounded so
// that loops in a damaged tree end; on read-write mounts, a few changes.
#pragma once
#include <asm/prctl.h>
#include <cstdint>
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "kernel/block/ubd.h"
#include "kernel/fs/ext4/ext4.h"
#include "kernel/kernel.h"
#include "kernel/printk.h"

namespace flatux::fuzz {

// What the process has touched of shared memory (the kernel heap is), in KiB.
inline uint64_t shared_memory_kb() {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  uint64_t kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "RssShmem: %lu kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb;
}

// A kernel for tests that call the volume layer directly. With `quiet`,
// the log stays in the ring buffer (damaged images log a line each).
inline Kernel* make_kernel(bool quiet) {
  KernelConfig cfg;
  uint64_t fs = 0;
  syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
  cfg.host_fs = fs;
  Kernel* k = Kernel::create(cfg);
  if (k && quiet && k->log) k->log->console_loglevel = 0;
  return k;
}

struct Ext4Walker {
  ext4::Volume* vol;
  ext4::Cred cred{0, 0};
  int budget = 2000;  // inodes visited per image

  void visit(uint32_t ino, int depth) {
    if (--budget < 0 || depth > 16) return;
    ext2glue::Attr a;
    if (vol->getattr(ino, &a) < 0) return;
    if (S_ISLNK(a.mode)) {
      char t[kPathMax];
      size_t n;
      vol->readlink(ino, t, sizeof t, &n);
    } else if (S_ISREG(a.mode)) {
      char buf[8192];
      for (uint64_t off = 0; off < a.size && off < (1 << 20); off += sizeof buf)
        if (vol->read(ino, buf, sizeof buf, off, true) <= 0) break;
    } else if (S_ISDIR(a.mode)) {
      visit_dir(ino, depth);
    }
  }

  struct Listing {
    std::vector<std::pair<uint32_t, std::string>> kids;
    uint64_t resume = 0;  // a position inside the listing, to list from again
  };

  void visit_dir(uint32_t ino, int depth) {
    Listing l;
    vol->readdir(ino, 0, [](void* ctx, const ext2glue::DirEntry& e) {
      auto* l = static_cast<Listing*>(ctx);
      if (l->kids.size() == 2) l->resume = e.next;
      if (l->kids.size() < 64) l->kids.emplace_back(e.ino, e.name);
      return true;
    }, &l);
    if (l.resume) vol->readdir(ino, l.resume, [](void*, const ext2glue::DirEntry&) { return true; }, nullptr);
    ext2glue::Attr dir;
    bool have_dir = vol->getattr(ino, &dir) == 0;
    for (auto& [kid, name] : l.kids) {
      if (name == "." || name == "..") continue;
      if (depth == 0) walk_name("/" + name);  // the name-based path as well
      ext2glue::Attr found;
      if (have_dir) vol->lookup(ino, dir.generation, name.data(), name.size(), &found);  // the dentry cache's way
      visit(kid, depth + 1);
    }
  }

  void walk_all() {
    ext2glue::FsInfo info;
    vol->statfs(&info);
    visit(2, 0);
  }

  // A few changes, for read-write mounts.
  void change() {
    ext2glue::Attr a, d;
    if (vol->create(cred, 2, "fuzz-new", S_IFREG | 0644, 0, &a) == 0) {
      vol->write(a.ino, "data", 4, 0, true);
      vol->write(a.ino, "more", 4, 70000, true);
      ext2glue::SetAttr s{};
      s.mask = ext2glue::kSetSize;
      s.size = 10;
      vol->setattr(a.ino, s, &a);
    }
    if (vol->mkdir(cred, 2, "fuzz-dir", 0755, &d) == 0) vol->rename(cred, 2, "fuzz-new", d.ino, "moved", 0);
    vol->unlink(cred, 2, "lost+found", true);
    vol->fsync(false);
  }

  void walk_name(const std::string& path) {
    ext4::Walk* w = new ext4::Walk{};  // big (a name buffer): not on the stack
    char target[kPathMax];
    w->path = path.c_str();
    w->follow = true;
    w->target = target;
    vol->walk(*w);
    delete w;
  }
};

}  // namespace flatux::fuzz
