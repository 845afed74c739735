// /proc/self/fd/N and the mount table, as systemd uses them: an O_PATH
// descriptor reopened through its magic link is a new open file with the
// new flags; a mount on /proc/self/fd/N lands on the folder the descriptor
// names; statx tells a mount's root (STATX_ATTR_MOUNT_ROOT) and its id
// (STATX_MNT_ID, as /proc/self/mountinfo and /proc/self/fdinfo number it);
// fstat of a descriptor shows the device stat of its path shows; F_GETFL
// shows O_LARGEFILE for every open of a 64-bit process.
//
// argv[1] is a scratch folder. The run happens in a mount namespace of its
// own where the kernel has them (natively), on a tmpfs mounted on it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/stat.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"
#include "guest_at.h"

#define KERNEL_O_LARGEFILE 0100000  // glibc's O_LARGEFILE is 0 on x86_64

// The raw call: musl has no statx wrapper.
static int statx_of(int dirfd, const char* path, int flags, unsigned mask, struct statx* sx) {
  return (int)syscall(SYS_statx, dirfd, path, flags, mask, sx);
}

static const char* fd_link(int fd) {
  static char buf[64];
  snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
  return buf;
}

// The mount id /proc/self/mountinfo gives the mount at `point`, or -1.
static int mountinfo_id(const char* point) {
  FILE* f = fopen("/proc/self/mountinfo", "r");
  REQUIRE(f);
  char line[4096], pt[PATH_MAX];
  int id, found = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%d %*d %*s %*s %4095s", &id, pt) == 2 && strcmp(pt, point) == 0) found = id;
  fclose(f);
  return found;
}

static void test_reopen_opath(void) {
  int w = open(at("file"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  REQUIRE(w >= 0, "create: %s", strerror(errno));
  REQUIRE(write(w, "hello", 5) == 5);
  close(w);

  int p = open(at("file"), O_PATH | O_CLOEXEC);
  REQUIRE(p >= 0, "O_PATH: %s", strerror(errno));
  char buf[16] = {0};
  CHECK_ERR(read(p, buf, sizeof buf), EBADF);

  int r = open(fd_link(p), O_RDONLY | O_CLOEXEC);
  REQUIRE(r >= 0, "reopen O_RDONLY: %s", strerror(errno));
  CHECK(read(r, buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0, "reopened read: '%s'", buf);
  int fl = fcntl(r, F_GETFL);
  CHECK(fl == (O_RDONLY | KERNEL_O_LARGEFILE), "F_GETFL of the reopened file: 0%o", fl);
  CHECK(fcntl(p, F_GETFL) == O_PATH, "F_GETFL of the O_PATH descriptor: 0%o", fcntl(p, F_GETFL));

  int a = open(fd_link(p), O_WRONLY | O_APPEND);
  REQUIRE(a >= 0, "reopen O_WRONLY: %s", strerror(errno));
  CHECK(write(a, " there", 6) == 6, "append: %s", strerror(errno));
  struct stat st;
  CHECK(fstat(p, &st) == 0 && st.st_size == 11, "size after the append: %lld", (long long)st.st_size);
  CHECK(lseek(r, 0, SEEK_CUR) == 5, "the reopened files have positions of their own");

  // fdinfo: the descriptor's flags (with close-on-exec) and its mount.
  char path[64], text[512] = {0};
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", r);
  int fi = open(path, O_RDONLY);
  REQUIRE(fi >= 0, "%s: %s", path, strerror(errno));
  CHECK(read(fi, text, sizeof text - 1) > 0);
  close(fi);
  char want[64];
  snprintf(want, sizeof want, "pos:\t5\nflags:\t0%o\nmnt_id:\t%d\n", (unsigned)(fl | O_CLOEXEC), mountinfo_id(dir));
  CHECK(strncmp(text, want, strlen(want)) == 0, "fdinfo:\n%s\nwanted:\n%s", text, want);
  close(a);
  close(r);
  close(p);
}

static void test_statx_mount_root(void) {
  REQUIRE(mkdir(at("sub"), 0755) == 0);
  struct statx sx;
  REQUIRE(statx_of(AT_FDCWD, dir, 0, STATX_BASIC_STATS | STATX_MNT_ID, &sx) == 0);
  CHECK(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT, "the scratch tmpfs: no STATX_ATTR_MOUNT_ROOT in the mask");
  CHECK(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT, "the scratch tmpfs's root is not a mount root");
  CHECK((sx.stx_mask & STATX_MNT_ID) && (int)sx.stx_mnt_id == mountinfo_id(dir),
        "stx_mnt_id %llu, mountinfo %d", (unsigned long long)sx.stx_mnt_id, mountinfo_id(dir));
  REQUIRE(statx_of(AT_FDCWD, at("sub"), 0, STATX_BASIC_STATS, &sx) == 0);
  CHECK(!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT), "a folder in it is a mount root");
  int d = open(dir, O_PATH | O_DIRECTORY);
  REQUIRE(d >= 0);
  REQUIRE(statx_of(d, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) == 0);
  CHECK(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT, "through a descriptor: not a mount root");
  close(d);
}

static void test_mount_on_magic_link(void) {
  int d = open(at("sub"), O_PATH | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(d >= 0);
  CHECK_OK(mount("none", fd_link(d), "tmpfs", 0, "size=64k"));
  CHECK(mountinfo_id(at("sub")) > 0, "no mount at %s", at("sub"));
  CHECK(mountinfo_id(fd_link(d)) < 0, "a mount at %s itself", fd_link(d));
  struct statx sx;
  REQUIRE(statx_of(AT_FDCWD, at("sub"), 0, STATX_BASIC_STATS, &sx) == 0);
  CHECK(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT, "the new mount's root is not a mount root");
  close(d);
  CHECK_OK(umount(at("sub")));
}

// The device fstat gives an open folder is the one stat of its path gives
// (devpts's and procfs's folders are made by their kernels).
static void test_fstat_device(void) {
  static const char* const folders[] = {"/dev/pts", "/proc/sys", "/proc/self/fdinfo"};
  for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
    const char* p = folders[i];
    struct stat by_path, by_fd;
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    if (fd < 0) continue;
    REQUIRE(stat(p, &by_path) == 0 && fstat(fd, &by_fd) == 0);
    CHECK(by_path.st_dev == by_fd.st_dev && by_path.st_ino == by_fd.st_ino, "%s: stat %lx:%lu, fstat %lx:%lu", p,
          (unsigned long)by_path.st_dev, (unsigned long)by_path.st_ino, (unsigned long)by_fd.st_dev,
          (unsigned long)by_fd.st_ino);
    close(fd);
  }
}

int main(int argc, char** argv) {
  guest_name = "magic_links";
  REQUIRE(argc == 2, "usage: magic_links SCRATCH_DIR");
  guest_mount_scratch(argv[1], dir, "size=4m");

  test_reopen_opath();
  test_statx_mount_root();
  test_mount_on_magic_link();
  test_fstat_device();

  CHECK_OK(umount(dir));
  return guest_finish();
}
