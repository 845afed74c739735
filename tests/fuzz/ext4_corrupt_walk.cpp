// Mounts ext4 images with bytes flipped in them and walks them whole:
// every listing, attribute, link and file, then a few changes on read-write
// mounts. A damaged image must give errors, never a crash or a hang; the
// run is deterministic (fixed seed) and bounded in time.
//
//   ext4_corrupt_walk WORKDIR SECONDS [SEED]
#include <asm/prctl.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "kernel/block/ubd.h"
#include "kernel/fs/ext4/ext4.h"
#include "kernel/kernel.h"

using namespace flatux;

namespace {

struct Walker {
  ext4::Volume* vol;
  ext4::Cred cred{0, 0};
  int budget = 2000;  // inodes visited per image, so loops in a damaged tree end

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
      std::vector<std::pair<uint32_t, std::string>> kids;
      vol->readdir(ino, 0, [](void* ctx, const ext2glue::DirEntry& e) {
        auto* k = static_cast<std::vector<std::pair<uint32_t, std::string>>*>(ctx);
        if (k->size() < 64) k->emplace_back(e.ino, e.name);
        return true;
      }, &kids);
      for (auto& [kid, name] : kids) {
        if (name == "." || name == "..") continue;
        ext4::Walk* w = new ext4::Walk{};
        char target[kPathMax];
        std::string path = "/" + name;
        w->path = path.c_str();
        w->target = target;
        if (depth == 0) vol->walk(cred, *w);  // the name-based path as well
        delete w;
        visit(kid, depth + 1);
      }
    }
  }

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
};

std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p && pclose(p) != 0) {
    fprintf(stderr, "failed: %s\n%s", cmd.c_str(), out.c_str());
    exit(2);
  }
  return out;
}

// A small tree with every kind of node, as ext4 with and without checksums
// (without them, damage reaches the parsers instead of the checksum checks)
// and as ext2.
std::vector<std::vector<uint8_t>> base_images(const std::string& work) {
  std::string tree = work + "/tree";
  sh("rm -rf " + tree + " && mkdir -p " + tree + "/d/e && cd " + tree +
     " && echo hello > f && head -c 70000 /dev/zero | tr '\\0' x > big && ln -s f fast && "
     "ln -s " + std::string(120, 'y') + " slow && ln f d/hard && mkfifo d/p && "
     "for i in $(seq 1 150); do echo $i > d/e/file$i; done");
  std::vector<std::vector<uint8_t>> images;
  for (const char* opts : {"-t ext4 -O metadata_csum", "-t ext4 -O ^metadata_csum", "-t ext2"}) {
    std::string img = work + "/base.img";
    sh("rm -f " + img + " && mke2fs -q -F -b 1024 -N 256 " + std::string(opts) + " -d " + tree + " " + img +
       " 2M 2>&1");
    FILE* f = fopen(img.c_str(), "rb");
    std::vector<uint8_t> data(2 << 20);
    if (!f || fread(data.data(), 1, data.size(), f) != data.size()) exit(2);
    fclose(f);
    images.push_back(std::move(data));
  }
  return images;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ext4_corrupt_walk WORKDIR SECONDS [SEED]\n");
    return 2;
  }
  std::string work = argv[1];
  double seconds = atof(argv[2]);
  unsigned seed = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
  mkdir(work.c_str(), 0755);
  auto bases = base_images(work);

  KernelConfig cfg;
  uint64_t fs = 0;
  syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
  cfg.host_fs = fs;
  Kernel* k = Kernel::create(cfg);
  if (!k) return 2;
  // The kernel log goes to stderr: silence it but for the summary.
  int saved = dup(2);
  int devnull = open("/dev/null", O_WRONLY);

  std::mt19937 rng(seed);
  std::string img = work + "/fuzz.img";
  auto start = std::chrono::steady_clock::now();
  int runs = 0, mounted = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    std::vector<uint8_t> data = bases[runs % bases.size()];
    // Metadata sits in the first ~64 KiB of these images; most flips go there.
    int flips = 1 + (int)(rng() % 8);
    for (int i = 0; i < flips; i++) {
      size_t off = rng() % 4 ? rng() % 65536 : rng() % data.size();
      data[off] ^= (uint8_t)(1 + rng() % 255);
    }
    FILE* f = fopen(img.c_str(), "wb");
    fwrite(data.data(), 1, data.size(), f);
    fclose(f);
    dup2(devnull, 2);
    bool rw = runs % 2;
    if (ubd_attach(*k, 0, img.c_str(), !rw) == 0) {
      Walker w;
      if (ext4::Volume::mount(*k, *ubd_by_index(*k, 0), !rw, &w.vol) == 0) {
        mounted++;
        w.visit(2, 0);
        if (rw) w.change();
        w.vol->unmount();
      }
      ubd_detach_all(*k);
    }
    dup2(saved, 2);
    runs++;
  }
  printf("ext4_corrupt_walk: %d damaged images, %d mounted and walked, no crash (seed %u)\n", runs, mounted,
         seed);
  k->destroy();
  return 0;
}
