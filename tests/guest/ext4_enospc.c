// A full filesystem: argv[1] is the root of a small, nearly empty one (a
// fresh ext4 image of a few MiB; natively a loop mount of it, or a small
// tmpfs where loop devices are missing). A file is written until write()
// fails with ENOSPC; what was written reads back; on the full filesystem
// an empty file and a fast symlink can still be made (an inode, no block)
// while a directory or a long symlink cannot (each needs a block) on ext4;
// truncating the file frees blocks, unlinking it frees them all, and the
// space is usable again. Last, free space in hundreds of small gaps is
// filled by one file, which is then removed. Before all that, mappings
// of a file follow its writes (a private mapping made after a write shows
// it, also through the descriptor an earlier mapping used).
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "guest_check.h"

enum { kChunk = 64 * 1024 };

static char root[PATH_MAX - 64];
static int on_ext4;  // directories and slow symlinks need a data block

static const char* at(const char* name) {
  static char path[2][PATH_MAX];
  static int which;
  which ^= 1;
  snprintf(path[which], sizeof path[which], "%s/%s", root, name);
  return path[which];
}

// A pattern no two nearby blocks share, so misplaced blocks show.
static void pattern(unsigned char* buf, size_t n, unsigned long long off) {
  for (size_t i = 0; i < n; i++) {
    unsigned long long p = off + i;
    buf[i] = (unsigned char)(p * 7 + p / 1024 * 13 + 1);
  }
}

static unsigned long long free_blocks(void) {
  struct statvfs s;
  REQUIRE(statvfs(root, &s) == 0, "statvfs: %s", strerror(errno));
  return s.f_bfree;
}

// Writes the pattern at the end of fd, `chunk` bytes at a time, until
// write() fails or `limit` bytes are written; returns the bytes written,
// *err the failing errno.
static unsigned long long fill(int fd, unsigned long long limit, size_t chunk, int* err) {
  static unsigned char buf[kChunk];
  unsigned long long done = 0, start = (unsigned long long)lseek(fd, 0, SEEK_END);
  *err = 0;
  while (done < limit) {
    size_t n = limit - done < chunk ? (size_t)(limit - done) : chunk;
    pattern(buf, n, start + done);
    ssize_t r = write(fd, buf, n);
    if (r < 0) {
      *err = errno;
      break;
    }
    REQUIRE(r > 0, "write returned 0");
    done += (unsigned long long)r;  // a short write is allowed; the next one fails
  }
  return done;
}

static void check_contents(const char* path, unsigned long long size) {
  static unsigned char got[kChunk], want[kChunk];
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0, "%s: %s", path, strerror(errno));
  struct stat st;
  CHECK_OK(fstat(fd, &st));
  CHECK((unsigned long long)st.st_size == size, "%s: size %lld, wrote %llu", path, (long long)st.st_size, size);
  int bad = 0;
  for (unsigned long long off = 0; off < size && !bad; off += kChunk) {
    size_t n = size - off < kChunk ? (size_t)(size - off) : kChunk;
    ssize_t r = pread(fd, got, n, (off_t)off);
    pattern(want, n, off);
    if (r != (ssize_t)n || memcmp(got, want, n) != 0) {
      CHECK(0, "%s: bytes at %llu differ from what was written (read %zd)", path, off, r);
      bad = 1;
    }
  }
  close(fd);
}

// Appends to fd until the filesystem is full. Linux's ext4 reserves space
// for delayed allocation by estimate, and a page's worth at a time, so its
// first ENOSPC can be early: after an fsync settles the estimates, filling
// goes on until a round gets no byte in at all, first in big chunks, then
// a block at a time. Returns the bytes appended.
static unsigned long long fill_to_enospc(int fd, unsigned long long capacity, size_t block) {
  unsigned long long written = 0, got = 1;
  for (int round = 0; round < 16 && got; round++) {
    int err = 0;
    got = fill(fd, capacity * 2, round ? block : kChunk, &err);
    written += got;
    REQUIRE(err == ENOSPC, "filling stopped after %llu bytes with errno %d (%s), want ENOSPC", written, err,
            strerror(err));
    CHECK_OK(fsync(fd));
    if (round == 0) got = 1;  // the block-sized rounds still to come
  }
  CHECK(got == 0, "still not full after 16 rounds");
  CHECK_ERR(write(fd, "x", 1), ENOSPC);  // still full
  return written;
}

static unsigned long long fill_file(unsigned long long capacity, size_t block) {
  puts("fill: write until ENOSPC, then read it back");
  int fd = open(at("fill"), O_WRONLY | O_CREAT | O_EXCL, 0644);
  REQUIRE(fd >= 0, "create fill: %s", strerror(errno));
  unsigned long long written = fill_to_enospc(fd, capacity, block);
  printf("  wrote %llu bytes of %llu free before ENOSPC\n", written, capacity);
  CHECK(written >= capacity / 2, "only %llu of %llu free bytes written", written, capacity);
  CHECK_OK(close(fd));
  check_contents(at("fill"), written);
  return written;
}

// Truncating the file on the full filesystem frees its last blocks, and
// filling again takes them back.
static unsigned long long truncate_when_full(unsigned long long written, size_t block) {
  puts("truncate: shrinking the file on the full filesystem frees blocks");
  unsigned long long full = free_blocks(), cut = kChunk;
  int fd = open(at("fill"), O_WRONLY);
  REQUIRE(fd >= 0, "open fill: %s", strerror(errno));
  CHECK_OK(ftruncate(fd, (off_t)(written - cut)));
  unsigned long long freed = free_blocks() - full;
  CHECK(freed * block >= cut / 2, "%llu blocks freed by cutting %llu bytes", freed, cut);
  written = written - cut + fill_to_enospc(fd, cut, block);
  CHECK_OK(close(fd));
  check_contents(at("fill"), written);
  return written;
}

static void on_full_image(void) {
  puts("full: what needs a block fails, what needs only an inode works");
  int fd = open(at("empty"), O_WRONLY | O_CREAT | O_EXCL, 0644);
  CHECK(fd >= 0, "creat on a full filesystem: %s", strerror(errno));
  if (fd >= 0) {
    CHECK_ERR(write(fd, "x", 1), ENOSPC);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 0, "size after a failed write: %lld", (long long)st.st_size);
    close(fd);
    CHECK_OK(unlink(at("empty")));
  }
  CHECK_OK(symlink("short", at("fast-link")));  // kept in the inode
  CHECK_OK(unlink(at("fast-link")));
  char target[200];
  memset(target, 'y', sizeof target - 1);
  target[sizeof target - 1] = 0;
  if (on_ext4) {
    CHECK_ERR(mkdir(at("dir"), 0755), ENOSPC);
    CHECK_ERR(symlink(target, at("slow-link")), ENOSPC);
    CHECK_ERR(access(at("dir"), F_OK), ENOENT);  // nothing left behind
    CHECK_ERR(access(at("slow-link"), F_OK), ENOENT);
  }
}

static void after_unlink(unsigned long long start_free, unsigned long long written) {
  puts("unlink: the space is free again and usable");
  CHECK_OK(unlink(at("fill")));
  CHECK_ERR(access(at("fill"), F_OK), ENOENT);
  // A few blocks of slack: a filesystem may keep some metadata it grew.
  unsigned long long now = free_blocks(), slack = 8;
  printf("  free blocks: %llu at the start, %llu after unlink\n", start_free, now);
  CHECK(now + slack >= start_free, "free blocks %llu after unlink, %llu at the start", now, start_free);

  int fd = open(at("again"), O_WRONLY | O_CREAT | O_EXCL, 0644);
  REQUIRE(fd >= 0, "create again: %s", strerror(errno));
  int err = 0;
  unsigned long long half = written / 2, got = fill(fd, half, kChunk, &err);
  CHECK(got == half && err == 0, "writing again: %llu of %llu bytes, errno %d (%s)", got, half, err, strerror(err));
  CHECK_OK(fsync(fd));
  CHECK_OK(close(fd));
  check_contents(at("again"), got);
  CHECK_OK(mkdir(at("dir"), 0755));
  CHECK_OK(rmdir(at("dir")));
  CHECK_OK(unlink(at("again")));
  now = free_blocks();
  CHECK(now + slack >= start_free, "free blocks %llu at the end, %llu at the start", now, start_free);
}

// Two files written by turns, three blocks at a time, until the space
// runs out; then one goes and the other fills the gaps it leaves. On ext4
// that file ends up with hundreds of extents (an extent tree with blocks
// of its own, grown while the space runs out) and holds the last block.
static void fragmented(unsigned long long start_free, size_t block) {
  puts("fragmented: two files by turns, one removed, the other fills its gaps");
  int odd = open(at("odd"), O_WRONLY | O_CREAT | O_EXCL, 0644);
  int even = open(at("even"), O_WRONLY | O_CREAT | O_EXCL, 0644);
  REQUIRE(odd >= 0 && even >= 0, "create: %s", strerror(errno));
  unsigned long long in_odd = 0, in_even = 0;
  int err = 0;
  while (!err) {
    in_odd += fill(odd, 3 * block, 3 * block, &err);
    if (!err) in_even += fill(even, 3 * block, 3 * block, &err);
  }
  CHECK(err == ENOSPC, "writing by turns stopped with errno %d (%s)", err, strerror(err));
  CHECK_OK(close(odd));
  CHECK_OK(unlink(at("odd")));
  in_even += fill_to_enospc(even, in_odd, block);
  CHECK_OK(close(even));
  printf("  %llu bytes freed in gaps, the other file then held %llu\n", in_odd, in_even);
  CHECK(in_even >= in_odd, "only %llu bytes after %llu were freed", in_even, in_odd);
  check_contents(at("even"), in_even);
  CHECK_OK(unlink(at("even")));
  unsigned long long now = free_blocks(), slack = 8;
  CHECK(now + slack >= start_free, "free blocks %llu at the end, %llu at the start", now, start_free);
}

static void mappings_follow_writes(void) {
  int fd = open(at("mapped"), O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0, "open mapped: %s", strerror(errno));
  CHECK(pwrite(fd, "first", 5, 0) == 5);
  char* a = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  REQUIRE(a != MAP_FAILED, "mmap: %s", strerror(errno));
  CHECK(memcmp(a, "first", 5) == 0, "first mapping: %.5s", a);
  CHECK(pwrite(fd, "again", 5, 0) == 5);
  char* b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  REQUIRE(b != MAP_FAILED, "mmap: %s", strerror(errno));
  CHECK(memcmp(b, "again", 5) == 0, "a mapping after a write shows it: %.5s", b);
  b[0] = 'X';  // private: the file keeps its bytes
  char buf[5];
  CHECK(pread(fd, buf, 5, 0) == 5 && memcmp(buf, "again", 5) == 0, "file after a private store");
  int ro = open(at("mapped"), O_RDONLY);
  char* c = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro, 0);
  REQUIRE(c != MAP_FAILED, "mmap shared: %s", strerror(errno));
  CHECK(memcmp(c, "again", 5) == 0, "a shared read-only mapping: %.5s", c);
  munmap(a, 4096);
  munmap(b, 4096);
  munmap(c, 4096);
  close(ro);
  close(fd);
  CHECK(unlink(at("mapped")) == 0);
}

int main(int argc, char** argv) {
  guest_name = "ext4_enospc";
  REQUIRE(argc == 2, "usage: ext4_enospc DIR");
  snprintf(root, sizeof root, "%s", argv[1]);
  struct statfs fs;
  REQUIRE(statfs(root, &fs) == 0, "statfs %s: %s", root, strerror(errno));
  on_ext4 = fs.f_type == EXT4_SUPER_MAGIC;
  REQUIRE(on_ext4 || fs.f_type == TMPFS_MAGIC, "%s is neither ext4 nor tmpfs", root);
  REQUIRE(fs.f_blocks * fs.f_bsize <= 64ull << 20, "%s is too big for this test", root);
  printf("%s: %s, %llu blocks of %lu bytes\n", root, on_ext4 ? "ext4" : "tmpfs",
         (unsigned long long)fs.f_blocks, (unsigned long)fs.f_bsize);

  mappings_follow_writes();
  unsigned long long start_free = free_blocks();
  unsigned long long written = fill_file(start_free * fs.f_bsize, fs.f_bsize);
  on_full_image();
  written = truncate_when_full(written, fs.f_bsize);
  after_unlink(start_free, written);
  fragmented(start_free, fs.f_bsize);
  return guest_finish();
}
