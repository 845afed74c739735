// Mounts ext4 images with bytes flipped in them and walks them whole:
// every listing, attribute, link and file, then a few changes on read-write
// mounts. A damaged image must give errors, never a crash or a hang; the
// run is deterministic (fixed seed) and bounded in time. With --replay it
// mounts and walks the images given instead (the fuzzers' regressions).
//
//   ext4_corrupt_walk WORKDIR SECONDS [SEED]
//   ext4_corrupt_walk WORKDIR --replay IMAGE...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "ext4_walk.h"

using namespace flatux;

namespace {

// Mounts the image at `path` (read-only, or read-write and changed after
// the walk); false if it would not mount.
bool mount_and_walk(Kernel* k, const std::string& path, bool rw) {
  bool mounted = false;
  if (ubd_attach(*k, 0, path.c_str(), !rw) == 0) {
    fuzz::Ext4Walker w;
    if (ext4::Volume::mount(*k, *ubd_by_index(*k, 0), !rw, &w.vol) == 0) {
      mounted = true;
      w.walk_all();
      if (rw) w.change();
      w.vol->unmount();
    }
    ubd_detach_all(*k);
  }
  return mounted;
}

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


void write_file(const std::string& path, const std::vector<uint8_t>& data) {
  FILE* f = fopen(path.c_str(), "wb");
  if (!f || fwrite(data.data(), 1, data.size(), f) != data.size() || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path.c_str());
    exit(2);
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::vector<uint8_t> data;
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) {
    fprintf(stderr, "cannot read %s\n", path.c_str());
    exit(2);
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
  fclose(f);
  return data;
}

// Every image given, read-only and then read-write (on a copy): inputs
// the fuzzers once failed on. Besides not crashing, a walk must not make
// the kernel heap grow by hundreds of MiB (its caches stay far below).
int replay(Kernel* k, const std::string& work, int n, char** files) {
  constexpr uint64_t kMaxGrowthKb = 256 * 1024;
  std::string img = work + "/replay.img";
  int failed = 0;
  for (int i = 0; i < n; i++) {
    std::vector<uint8_t> data = read_file(files[i]);
    for (bool rw : {false, true}) {
      write_file(img, data);
      uint64_t before = fuzz::shared_memory_kb();
      bool mounted = mount_and_walk(k, img, rw);
      uint64_t grown = fuzz::shared_memory_kb() - before;
      printf("%s (%s): %s, kernel heap +%lu KiB\n", files[i], rw ? "read-write" : "read-only",
             mounted ? "walked" : "refused", grown);
      if (grown > kMaxGrowthKb) {
        printf("FAIL: more than %lu KiB for one image\n", kMaxGrowthKb);
        failed++;
      }
    }
  }
  return failed ? 1 : 0;
}

// Damaged copies of the base images, for `seconds`.
int flip_bytes(Kernel* k, const std::string& work, double seconds, unsigned seed) {
  auto bases = base_images(work);
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
    write_file(img, data);
    mounted += mount_and_walk(k, img, runs % 2);
    runs++;
  }
  printf("ext4_corrupt_walk: %d damaged images, %d mounted and walked, no crash (seed %u)\n", runs, mounted,
         seed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ext4_corrupt_walk WORKDIR SECONDS [SEED]\n"
                    "       ext4_corrupt_walk WORKDIR --replay IMAGE...\n");
    return 2;
  }
  std::string work = argv[1];
  mkdir(work.c_str(), 0755);
  Kernel* k = fuzz::make_kernel(true);  // damaged images log a line each
  if (!k) return 2;
  int rc = strcmp(argv[2], "--replay") == 0
               ? replay(k, work, argc - 3, argv + 3)
               : flip_bytes(k, work, atof(argv[2]), argc > 3 ? (unsigned)atoi(argv[3]) : 1);
  k->destroy();
  return rc;
}
