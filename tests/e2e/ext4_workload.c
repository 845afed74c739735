// The ext4 round trip's guest side: `write DIR` changes a tree made by
// `flatux mkimage` from fixtures/ext4-tree (see ext4_roundtrip.py) and checks
// each step; `verify DIR` checks the final state, e.g. after a remount.
// Runs natively on a copy of the tree first, which proves the checks right.
#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "guest_check.h"

#define NFILES 10000
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2

static char dir[256];

static const char* at(const char* rel) {
  static char buf[4][512];
  static int i;
  char* b = buf[i++ % 4];
  snprintf(b, 512, "%s/%s", dir, rel);
  return b;
}

static void put(const char* rel, const char* data, int flags) {
  int fd = open(at(rel), O_WRONLY | O_CREAT | flags, 0644);
  REQUIRE(fd >= 0, "open %s: %s", rel, strerror(errno));
  size_t n = strlen(data);
  REQUIRE(write(fd, data, n) == (ssize_t)n, "write %s: %s", rel, strerror(errno));
  close(fd);
}

static void expect_file(const char* rel, const char* want, size_t len) {
  char buf[8192];
  int fd = open(at(rel), O_RDONLY);
  if (fd < 0) {
    CHECK(0, "open %s: %s", rel, strerror(errno));
    return;
  }
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  CHECK(n == (ssize_t)len && memcmp(buf, want, len) == 0, "%s: got %zd bytes", rel, n);
}

static void expect_link(const char* rel, const char* want) {
  char buf[512];
  ssize_t n = readlink(at(rel), buf, sizeof buf);
  CHECK(n == (ssize_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0, "readlink %s", rel);
}

static int count_entries(const char* rel) {
  DIR* d = opendir(at(rel));
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static char slow_target[200];
static char zeros[4000];

static void do_write(void) {
  // Create, append.
  put("new.txt", "one\n", O_TRUNC);
  put("new.txt", "two\n", O_APPEND);
  expect_file("new.txt", "one\ntwo\n", 8);
  // Rename, and renameat2's two flags.
  REQUIRE(rename(at("a.txt"), at("renamed.txt")) == 0, "%s", strerror(errno));
  CHECK_ERR(syscall(SYS_renameat2, AT_FDCWD, at("renamed.txt"), AT_FDCWD, at("new.txt"), RENAME_NOREPLACE),
            EEXIST);
  put("left", "L", O_TRUNC);
  put("right", "R", O_TRUNC);
  CHECK(syscall(SYS_renameat2, AT_FDCWD, at("left"), AT_FDCWD, at("right"), RENAME_EXCHANGE) == 0, "%s",
        strerror(errno));
  // Truncate down, then up (the gap reads as zeros).
  char big[100000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
  int fd = open(at("trunc.bin"), O_RDWR | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  CHECK(write(fd, big, sizeof big) == (ssize_t)sizeof big);
  CHECK(ftruncate(fd, 1000) == 0);
  CHECK(truncate(at("trunc.bin"), 5000) == 0);
  CHECK(fsync(fd) == 0);
  close(fd);
  // Hard links.
  REQUIRE(mkdir(at("sub2"), 0750) == 0, "%s", strerror(errno));
  REQUIRE(link(at("new.txt"), at("sub2/hard.txt")) == 0, "%s", strerror(errno));
  struct stat st;
  CHECK(stat(at("new.txt"), &st) == 0 && st.st_nlink == 2);
  CHECK_ERR(link(at("sub2"), at("dirlink")), EPERM);
  // Symlinks, fast (in the inode) and slow (in a block).
  CHECK(symlink("new.txt", at("fast")) == 0);
  CHECK(symlink(slow_target, at("slow")) == 0);
  expect_file("fast", "one\ntwo\n", 8);
  CHECK_ERR(open(at("fast"), O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);  // a link is not followed
  CHECK(symlink("dangling-target", at("dangling")) == 0);
  fd = open(at("dangling"), O_WRONLY | O_CREAT, 0644);  // without O_EXCL it is: creates the target
  CHECK(fd >= 0, "%s", strerror(errno));
  close(fd);
  CHECK(access(at("dangling-target"), F_OK) == 0);
  // Deletes.
  CHECK_ERR(rmdir(at("sub")), ENOTEMPTY);
  CHECK(unlink(at("sub/b.txt")) == 0);
  CHECK(rmdir(at("sub")) == 0);
  CHECK_ERR(unlink(at("sub2")), EISDIR);
  CHECK_ERR(open(at("nothing/x"), O_RDONLY), ENOENT);
  CHECK_ERR(mkdir(at("new.txt/x"), 0755), ENOTDIR);
  // 10,000 files in one directory, then every other one removed.
  REQUIRE(mkdir(at("many"), 0755) == 0);
  char name[64];
  for (int i = 0; i < NFILES; i++) {
    snprintf(name, sizeof name, "many/f%05d", i);
    put(name, name + 5, O_EXCL);
  }
  CHECK(count_entries("many") == NFILES, "%d", count_entries("many"));
  for (int i = 1; i < NFILES; i += 2) {
    snprintf(name, sizeof name, "many/f%05d", i);
    CHECK(unlink(at(name)) == 0, "%s: %s", name, strerror(errno));
  }
  // Owners, modes, nanosecond times.
  CHECK(chmod(at("renamed.txt"), 0604) == 0);
  CHECK(chown(at("renamed.txt"), 1234, 5678) == 0);
  struct timespec ts[2] = {{1600000000, 111111111}, {1700000000, 987654321}};
  CHECK(utimensat(AT_FDCWD, at("renamed.txt"), ts, 0) == 0);
  // A sparse file past 4 GiB.
  fd = open(at("sparse"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  CHECK(pwrite(fd, "end", 3, 5LL << 30) == 3);
  close(fd);
  sync();
}

static void do_verify(void) {
  // Before anything reads renamed.txt (relatime would move its atime).
  struct stat st;
  CHECK(stat(at("renamed.txt"), &st) == 0);
  CHECK((st.st_mode & 07777) == 0604 && st.st_uid == 1234 && st.st_gid == 5678, "%o %u %u",
        st.st_mode, st.st_uid, st.st_gid);
  CHECK(st.st_atim.tv_sec == 1600000000 && st.st_atim.tv_nsec == 111111111);
  CHECK(st.st_mtim.tv_sec == 1700000000 && st.st_mtim.tv_nsec == 987654321);
  expect_file("new.txt", "one\ntwo\n", 8);
  expect_file("sub2/hard.txt", "one\ntwo\n", 8);
  expect_file("renamed.txt", "alpha\n", 6);
  expect_file("left", "R", 1);
  expect_file("right", "L", 1);
  CHECK(access(at("a.txt"), F_OK) == -1 && errno == ENOENT);
  CHECK(access(at("sub"), F_OK) == -1 && errno == ENOENT);
  char want[5000];
  for (int i = 0; i < 1000; i++) want[i] = (char)('a' + i % 26);
  memset(want + 1000, 0, 4000);
  expect_file("trunc.bin", want, 5000);
  expect_link("fast", "new.txt");
  expect_link("slow", slow_target);
  expect_link("link", "a.txt");  // from the fixture, now dangling
  CHECK(count_entries("many") == NFILES / 2, "%d", count_entries("many"));
  char name[64];
  for (int i = 0; i < NFILES; i += 997) {
    snprintf(name, sizeof name, "many/f%05d", i);
    if (i % 2 == 0) expect_file(name, name + 5, 6);
    else CHECK(access(at(name), F_OK) == -1 && errno == ENOENT, "%s", name);
  }
  CHECK(stat(at("new.txt"), &st) == 0 && st.st_nlink == 2);
  CHECK(stat(at("sub2"), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0750);
  CHECK(stat(at("sparse"), &st) == 0 && st.st_size == (5LL << 30) + 3);
  CHECK(st.st_blocks < 1024, "%lld blocks", (long long)st.st_blocks);
  (void)zeros;
}

// `blockdev DEV SIZE`: the device node of an image (flatux only).
static int check_blockdev(const char* dev, long long size) {
  struct stat st;
  REQUIRE(stat(dev, &st) == 0, "stat %s: %s", dev, strerror(errno));
  CHECK(S_ISBLK(st.st_mode) && major(st.st_rdev) == 98 && minor(st.st_rdev) == 0, "%o %u:%u", st.st_mode,
        major(st.st_rdev), minor(st.st_rdev));
  int fd = open(dev, O_RDONLY);
  REQUIRE(fd >= 0, "open %s: %s", dev, strerror(errno));
  unsigned long long bytes = 0;
  CHECK(ioctl(fd, BLKGETSIZE64, &bytes) == 0 && bytes == (unsigned long long)size, "%llu", bytes);
  unsigned char magic[2];
  CHECK(pread(fd, magic, 2, 1024 + 0x38) == 2 && magic[0] == 0x53 && magic[1] == 0xef);
  CHECK(lseek(fd, 0, SEEK_END) == size);
  close(fd);
  CHECK_ERR(open(dev, O_WRONLY), EROFS);
  if (guest_failures) return 1;
  printf("ext4_workload blockdev: ok\n");
  return 0;
}

int main(int argc, char** argv) {
  guest_name = "ext4_workload";
  if (argc == 4 && strcmp(argv[1], "blockdev") == 0) return check_blockdev(argv[2], atoll(argv[3]));
  if (argc != 3) {
    fprintf(stderr, "usage: ext4_workload write|verify DIR\n");
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[2]);
  memset(slow_target, 's', 150);
  memcpy(slow_target, "sub2/", 5);
  if (strcmp(argv[1], "write") == 0) do_write();
  do_verify();
  if (guest_failures) fprintf(stderr, "ext4_workload: %d failure(s)\n", guest_failures);
  else printf("ext4_workload %s: ok\n", argv[1]);
  return guest_failures ? 1 : 0;
}
