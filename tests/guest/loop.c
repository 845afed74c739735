// Loop devices: /dev/loop-control (LOOP_CTL_GET_FREE, ADD, REMOVE), the
// loop ioctls on /dev/loopN with their errors (EBUSY on a bound device,
// ENXIO on an unbound one, EBADF/EINVAL for bad backing files), reads and
// writes through a device, read-only binding, LOOP_CONFIGURE, autoclear
// on the last close, and an ext2 image mounted from a loop device over a
// tmpfs file.
//
// argv[1] is an ext2 image holding the guest fixture tree, argv[2] an
// empty ext2 image big enough to hold it, argv[3] a scratch folder. The run happens in a mount namespace of its own where
// the kernel has them (natively), with a tmpfs on the scratch folder and a
// devtmpfs in it, so the devices are the running kernel's own.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <sched.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"

static char scratch[PATH_MAX];
static int ctl = -1;

static void path_of(char* out, const char* rel) {
  if (snprintf(out, PATH_MAX, "%s/%s", scratch, rel) >= PATH_MAX) out[0] = 0;
}

static void dev_path(char* out, int n) {
  char rel[32];
  snprintf(rel, sizeof rel, "dev/loop%d", n);
  path_of(out, rel);
}

// A file in the scratch tmpfs of `size` bytes, each byte its offset's low
// eight bits.
static int make_file(const char* rel, size_t size) {
  char p[PATH_MAX];
  path_of(p, rel);
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0, "%s: %s", p, strerror(errno));
  unsigned char buf[4096];
  for (size_t off = 0; off < size; off += sizeof buf) {
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(off + i);
    REQUIRE(pwrite(fd, buf, sizeof buf, (off_t)off) == (ssize_t)sizeof buf);
  }
  return fd;
}

// Binds a free device to `file` (opening the device with dev_flags), as
// losetup -f does: another program may take the device first, then the
// next free one is tried.
static int bind_free(int file, int dev_flags, int* index) {
  for (int attempt = 0; attempt < 50; attempt++) {
    int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    REQUIRE(n >= 0, "LOOP_CTL_GET_FREE: %s", strerror(errno));
    char p[PATH_MAX];
    dev_path(p, n);
    int dev = open(p, dev_flags);
    REQUIRE(dev >= 0, "%s: %s", p, strerror(errno));
    if (ioctl(dev, LOOP_SET_FD, file) == 0) {
      *index = n;
      return dev;
    }
    REQUIRE(errno == EBUSY, "LOOP_SET_FD: %s", strerror(errno));
    close(dev);
  }
  guest_fatal(__FILE__, __LINE__, "bind_free", "no free loop device after 50 tries");
}

// Waits (2 s at most) until loop device n is unbound again.
static int becomes_unbound(int n) {
  char p[PATH_MAX];
  dev_path(p, n);
  for (int i = 0; i < 200; i++) {
    int fd = open(p, O_RDONLY);
    if (fd < 0) return errno == ENXIO || errno == ENOENT;
    struct loop_info64 info;
    int r = ioctl(fd, LOOP_GET_STATUS64, &info);
    int e = errno;
    close(fd);
    if (r == -1 && e == ENXIO) return 1;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

static void test_control(void) {
  puts("loop-control: GET_FREE, ADD, REMOVE");
  int n = ioctl(ctl, LOOP_CTL_GET_FREE);
  CHECK(n >= 0, "LOOP_CTL_GET_FREE: %s", strerror(errno));
  // A number nobody uses, for ADD and REMOVE.
  int idx = -1;
  for (int i = 100 + getpid() % 50; i < 250 && idx < 0; i++) {
    long r = ioctl(ctl, LOOP_CTL_ADD, i);
    if (r == i) idx = i;
    else REQUIRE(r == -1 && errno == EEXIST, "LOOP_CTL_ADD %d: %ld %s", i, r, strerror(errno));
  }
  REQUIRE(idx >= 0);
  CHECK_ERR(ioctl(ctl, LOOP_CTL_ADD, idx), EEXIST);
  char p[PATH_MAX];
  dev_path(p, idx);
  struct stat st;
  CHECK_OK(stat(p, &st));
  CHECK(S_ISBLK(st.st_mode) && major(st.st_rdev) == 7 && minor(st.st_rdev) == (unsigned)idx);
  int dev = open(p, O_RDWR);
  CHECK(dev >= 0, "%s: %s", p, strerror(errno));
  CHECK_ERR(ioctl(ctl, LOOP_CTL_REMOVE, idx), EBUSY);
  close(dev);
  CHECK_OK(ioctl(ctl, LOOP_CTL_REMOVE, idx));
  CHECK_ERR(ioctl(ctl, LOOP_CTL_REMOVE, idx), ENODEV);
  CHECK_ERR(ioctl(ctl, LOOP_CTL_REMOVE, -1), EINVAL);
  CHECK_ERR(ioctl(ctl, 0x4C9F, 0), ENOSYS);
}

static void test_unbound_and_bad_files(void) {
  puts("unbound device: ENXIO; bad backing files");
  int n = ioctl(ctl, LOOP_CTL_GET_FREE);
  REQUIRE(n >= 0);
  char p[PATH_MAX];
  dev_path(p, n);
  int dev = open(p, O_RDWR);
  REQUIRE(dev >= 0, "%s: %s", p, strerror(errno));
  struct loop_info64 info;
  memset(&info, 0, sizeof info);
  uint64_t size = 1;
  // Another test may bind it meanwhile natively: only check when unbound.
  if (ioctl(dev, LOOP_GET_STATUS64, &info) == -1 && errno == ENXIO) {
    CHECK_ERR(ioctl(dev, LOOP_SET_STATUS64, &info), ENXIO);
    CHECK_ERR(ioctl(dev, LOOP_CLR_FD, 0), ENXIO);
    CHECK_ERR(ioctl(dev, LOOP_SET_CAPACITY, 0), ENXIO);
    CHECK_OK(ioctl(dev, BLKGETSIZE64, &size));
    CHECK(size == 0, "size %llu", (unsigned long long)size);
    char c;
    CHECK(read(dev, &c, 1) == 0);
  }
  CHECK_ERR(ioctl(dev, LOOP_GET_STATUS64, NULL), EINVAL);
  CHECK_ERR(ioctl(dev, LOOP_SET_FD, 999), EBADF);
  int dir = open(scratch, O_RDONLY | O_DIRECTORY);
  CHECK_ERR(ioctl(dev, LOOP_SET_FD, dir), EINVAL);
  close(dir);
  int path_fd = open(scratch, O_PATH);
  CHECK_ERR(ioctl(dev, LOOP_SET_FD, path_fd), EBADF);
  close(path_fd);
  CHECK_ERR(ioctl(dev, LOOP_SET_FD, dev), EBADF);  // itself
  close(dev);
}

static void test_bound_io(void) {
  puts("bound device: status, I/O, autoclear");
  const size_t size = 64 * 1024;
  int file = make_file("plain", size);
  struct stat fst;
  REQUIRE(fstat(file, &fst) == 0);
  int n;
  int dev = bind_free(file, O_RDWR, &n);
  CHECK_ERR(ioctl(dev, LOOP_SET_FD, file), EBUSY);
  uint64_t bytes = 0;
  CHECK_OK(ioctl(dev, BLKGETSIZE64, &bytes));
  CHECK(bytes == size, "BLKGETSIZE64 %llu", (unsigned long long)bytes);
  int ro = -1;
  CHECK_OK(ioctl(dev, BLKROGET, &ro));
  CHECK(ro == 0);

  struct loop_info64 info;
  memset(&info, 0, sizeof info);
  CHECK_OK(ioctl(dev, LOOP_GET_STATUS64, &info));
  CHECK(info.lo_number == (unsigned)n && info.lo_offset == 0 && !(info.lo_flags & LO_FLAGS_READ_ONLY));
  CHECK(info.lo_inode == fst.st_ino && info.lo_device == fst.st_dev, "ino %llu dev %llx",
        (unsigned long long)info.lo_inode, (unsigned long long)info.lo_device);
  // Only AUTOCLEAR and PARTSCAN are set this way; READ_ONLY is not.
  strcpy((char*)info.lo_file_name, "flatux-loop-test");
  info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_READ_ONLY;
  CHECK_OK(ioctl(dev, LOOP_SET_STATUS64, &info));
  memset(&info, 0, sizeof info);
  CHECK_OK(ioctl(dev, LOOP_GET_STATUS64, &info));
  CHECK(strcmp((char*)info.lo_file_name, "flatux-loop-test") == 0);
  CHECK((info.lo_flags & (LO_FLAGS_AUTOCLEAR | LO_FLAGS_READ_ONLY)) == LO_FLAGS_AUTOCLEAR, "flags %x",
        info.lo_flags);
  struct loop_info old;
  CHECK_OK(ioctl(dev, LOOP_GET_STATUS, &old));
  CHECK(old.lo_number == n && strcmp(old.lo_name, "flatux-loop-test") == 0);

  // Reads show the file; a write reaches it once synced.
  unsigned char buf[512], want[512];
  CHECK(pread(dev, buf, sizeof buf, 4096 + 512) == (ssize_t)sizeof buf);
  for (size_t i = 0; i < sizeof buf; i++) want[i] = (unsigned char)(4096 + 512 + i);
  CHECK(memcmp(buf, want, sizeof buf) == 0);
  memset(buf, 0x5a, sizeof buf);
  CHECK(pwrite(dev, buf, sizeof buf, 8192) == (ssize_t)sizeof buf);
  CHECK_OK(fsync(dev));
  CHECK(pread(file, want, sizeof want, 8192) == (ssize_t)sizeof want && memcmp(buf, want, sizeof buf) == 0);
  memset(buf, 0xa5, sizeof buf);
  CHECK(pwrite(file, buf, sizeof buf, 16384) == (ssize_t)sizeof buf);
  CHECK(pread(dev, want, sizeof want, 16384) == (ssize_t)sizeof want && memcmp(buf, want, sizeof buf) == 0);
  CHECK(pread(dev, buf, sizeof buf, (off_t)size) == 0);

  // SET_STATUS with an offset moves the window and shrinks the device.
  CHECK_OK(ioctl(dev, LOOP_GET_STATUS64, &info));
  info.lo_offset = 4096;
  CHECK_OK(ioctl(dev, LOOP_SET_STATUS64, &info));
  CHECK_OK(ioctl(dev, BLKGETSIZE64, &bytes));
  CHECK(bytes == size - 4096, "BLKGETSIZE64 %llu", (unsigned long long)bytes);

  // Autoclear: the device lets go of the file at its last close.
  close(file);
  close(dev);
  CHECK(becomes_unbound(n), "loop%d still bound after its last close", n);
}

static void test_clr_fd_and_configure(void) {
  puts("LOOP_CLR_FD, LOOP_CONFIGURE, read-only");
  int file = make_file("plain2", 64 * 1024);
  int n;
  int dev = bind_free(file, O_RDWR, &n);
  CHECK_OK(ioctl(dev, LOOP_CLR_FD, 0));
  close(dev);
  CHECK(becomes_unbound(n), "loop%d still bound after LOOP_CLR_FD and close", n);

  // LOOP_CONFIGURE: binding and status in one call.
  char p[PATH_MAX];
  for (int attempt = 0; attempt < 50; attempt++) {
    n = ioctl(ctl, LOOP_CTL_GET_FREE);
    REQUIRE(n >= 0);
    dev_path(p, n);
    dev = open(p, O_RDWR);
    REQUIRE(dev >= 0);
    struct loop_config c;
    memset(&c, 0, sizeof c);
    c.fd = (unsigned)file;
    c.block_size = 4096;
    c.info.lo_offset = 8192;
    c.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
    strcpy((char*)c.info.lo_file_name, "configured");
    c.info.lo_flags |= 0x100;  // not a flag LOOP_CONFIGURE sets
    CHECK_ERR(ioctl(dev, LOOP_CONFIGURE, &c), EINVAL);
    c.info.lo_flags &= ~0x100u;
    if (ioctl(dev, LOOP_CONFIGURE, &c) == 0) break;
    REQUIRE(errno == EBUSY, "LOOP_CONFIGURE: %s", strerror(errno));
    close(dev);
    dev = -1;
  }
  REQUIRE(dev >= 0);
  struct loop_info64 info;
  CHECK_OK(ioctl(dev, LOOP_GET_STATUS64, &info));
  CHECK(info.lo_offset == 8192 && strcmp((char*)info.lo_file_name, "configured") == 0);
  CHECK((info.lo_flags & (LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR)) == (LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR),
        "flags %x", info.lo_flags);
  int bs = 0, ro = 0;
  uint64_t bytes = 0;
  CHECK_OK(ioctl(dev, BLKSSZGET, &bs));
  CHECK(bs == 4096, "BLKSSZGET %d", bs);
  CHECK_OK(ioctl(dev, BLKROGET, &ro));
  CHECK(ro == 1);
  CHECK_OK(ioctl(dev, BLKGETSIZE64, &bytes));
  CHECK(bytes == 64 * 1024 - 8192, "BLKGETSIZE64 %llu", (unsigned long long)bytes);
  CHECK_ERR(ioctl(dev, LOOP_SET_BLOCK_SIZE, 1000), EINVAL);
  char c = 0;
  CHECK_ERR(pwrite(dev, &c, 1, 0), EPERM);
  close(dev);
  CHECK(becomes_unbound(n));

  // A file opened read-only makes a read-only device.
  char fp[PATH_MAX];
  path_of(fp, "plain2");
  int rofile = open(fp, O_RDONLY);
  REQUIRE(rofile >= 0);
  dev = bind_free(rofile, O_RDWR, &n);
  CHECK_OK(ioctl(dev, LOOP_GET_STATUS64, &info));
  CHECK(info.lo_flags & LO_FLAGS_READ_ONLY, "flags %x", info.lo_flags);
  CHECK_OK(ioctl(dev, LOOP_CLR_FD, 0));
  close(dev);
  close(rofile);
  close(file);
  CHECK(becomes_unbound(n));
}

// The mountinfo line of a mount point: its source and type.
static int mount_source(const char* point, char* source, char* type) {
  FILE* f = fopen("/proc/self/mountinfo", "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    char pt[PATH_MAX];
    if (sscanf(line, "%*d %*d %*s %*s %4095s", pt) != 1 || strcmp(pt, point) != 0) continue;
    char* sep = strstr(line, " - ");
    found = sep && sscanf(sep + 3, "%63s %4095s", type, source) == 2;
  }
  fclose(f);
  return found;
}

static void test_mount_ext2(const char* image) {
  puts("ext2 on a loop device over a tmpfs file");
  int in = open(image, O_RDONLY);
  REQUIRE(in >= 0, "%s: %s", image, strerror(errno));
  char img[PATH_MAX], mnt[PATH_MAX];
  path_of(img, "e2img");
  path_of(mnt, "mnt");
  int out = open(img, O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(out >= 0);
  char buf[65536];
  ssize_t got;
  while ((got = read(in, buf, sizeof buf)) > 0) REQUIRE(write(out, buf, (size_t)got) == got);
  close(in);
  close(out);
  REQUIRE(mkdir(mnt, 0755) == 0);

  // Bound read-only (the file opened O_RDONLY), as mount -r -o loop does.
  int file = open(img, O_RDONLY);
  int n;
  int dev = bind_free(file, O_RDONLY, &n);
  close(file);
  struct loop_info64 info;
  memset(&info, 0, sizeof info);
  strcpy((char*)info.lo_file_name, img + strlen(img) - 5);
  info.lo_flags = LO_FLAGS_AUTOCLEAR;
  CHECK_OK(ioctl(dev, LOOP_SET_STATUS64, &info));
  char dp[PATH_MAX];
  dev_path(dp, n);
  CHECK_ERR(mount(dp, mnt, "ext2", 0, NULL), EACCES);
  CHECK_ERR(mount(img, mnt, "ext2", MS_RDONLY, NULL), ENOTBLK);
  REQUIRE(mount(dp, mnt, "ext2", MS_RDONLY, NULL) == 0, "mount %s: %s", dp, strerror(errno));
  close(dev);  // the mount holds the device now

  char p[PATH_MAX], text[64] = "";
  snprintf(p, sizeof p, "%s/hello.txt", mnt);
  int fd = open(p, O_RDONLY);
  CHECK(fd >= 0, "%s: %s", p, strerror(errno));
  if (fd >= 0) {
    CHECK(read(fd, text, sizeof text - 1) == 14);
    CHECK(strcmp(text, "hello, flatux\n") == 0, "hello.txt: %s", text);
    close(fd);
  }
  CHECK_ERR(open(p, O_WRONLY), EROFS);
  struct stat st;
  CHECK_OK(stat(mnt, &st));
  CHECK(major(st.st_dev) == 7 && minor(st.st_dev) == (unsigned)n, "st_dev %u:%u", major(st.st_dev),
        minor(st.st_dev));
  char source[PATH_MAX], type[64];
  CHECK(mount_source(mnt, source, type) && strcmp(source, dp) == 0 && strcmp(type, "ext2") == 0);

  // The tmpfs holding the read-only file remounts read-only.
  CHECK_OK(mount(NULL, scratch, NULL, MS_REMOUNT | MS_RDONLY, NULL));
  CHECK_ERR(umount(scratch), EBUSY);
  CHECK_OK(umount(mnt));
  CHECK(becomes_unbound(n), "loop%d still bound after the umount", n);
  CHECK_OK(mount(NULL, scratch, NULL, MS_REMOUNT, NULL));
}

// Copies a host file into the scratch tmpfs (or onto a mounted volume).
static void copy_file(const char* from, const char* to) {
  int in = open(from, O_RDONLY);
  REQUIRE(in >= 0, "%s: %s", from, strerror(errno));
  int out = open(to, O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(out >= 0, "%s: %s", to, strerror(errno));
  static char buf[65536];
  ssize_t got;
  while ((got = read(in, buf, sizeof buf)) > 0) REQUIRE(write(out, buf, (size_t)got) == got);
  REQUIRE(got == 0 && fsync(out) == 0);
  close(in);
  close(out);
}

// A loop device over a file on a volume that is itself on a loop device:
// the inner volume's reads go through the outer volume's filesystem.
static void test_nested(const char* image, const char* outer_image) {
  puts("ext2 on a loop over a file on ext2 on a loop");
  char outer[PATH_MAX], inner[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
  path_of(outer, "outer.img");
  path_of(a, "a");
  path_of(b, "b");
  copy_file(outer_image, outer);
  REQUIRE(mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0);
  int file = open(outer, O_RDWR);
  int n1, n2;
  int dev1 = bind_free(file, O_RDWR, &n1);
  close(file);
  char d1[PATH_MAX], d2[PATH_MAX];
  dev_path(d1, n1);
  REQUIRE(mount(d1, a, "ext2", 0, NULL) == 0, "mount %s: %s", d1, strerror(errno));
  snprintf(inner, sizeof inner, "%s/inner.img", a);
  copy_file(image, inner);
  file = open(inner, O_RDWR);
  REQUIRE(file >= 0);
  int dev2 = bind_free(file, O_RDWR, &n2);
  close(file);
  dev_path(d2, n2);
  REQUIRE(mount(d2, b, "ext2", 0, NULL) == 0, "mount %s: %s", d2, strerror(errno));
  char p[PATH_MAX], text[64] = "";
  snprintf(p, sizeof p, "%s/hello.txt", b);
  int fd = open(p, O_RDONLY);
  CHECK(fd >= 0 && read(fd, text, sizeof text - 1) == 14 && strcmp(text, "hello, flatux\n") == 0);
  if (fd >= 0) close(fd);
  snprintf(p, sizeof p, "%s/new.txt", b);
  fd = open(p, O_WRONLY | O_CREAT, 0644);
  CHECK(fd >= 0 && write(fd, "nested\n", 7) == 7 && fsync(fd) == 0);
  if (fd >= 0) close(fd);
  CHECK_OK(umount(b));
  CHECK_OK(ioctl(dev2, LOOP_CLR_FD, 0));
  close(dev2);
  CHECK_OK(umount(a));
  CHECK_OK(ioctl(dev1, LOOP_CLR_FD, 0));
  close(dev1);
  CHECK(becomes_unbound(n1) && becomes_unbound(n2));
}

int main(int argc, char** argv) {
  guest_name = "loop";
  REQUIRE(argc == 4, "usage: loop EXT2_IMAGE EMPTY_EXT2_IMAGE SCRATCH_DIR");
  guest_mount_scratch(argv[3], scratch, "size=32m");
  char dev[PATH_MAX];
  path_of(dev, "dev");
  REQUIRE(mkdir(dev, 0755) == 0);
  REQUIRE(mount("devtmpfs", dev, "devtmpfs", 0, NULL) == 0, "devtmpfs: %s", strerror(errno));
  char p[PATH_MAX];
  path_of(p, "dev/loop-control");
  ctl = open(p, O_RDWR | O_CLOEXEC);
  if (ctl < 0 && errno == ENOENT) {
    puts("SKIP: this kernel has no loop devices (no /dev/loop-control)");
    return 0;
  }
  REQUIRE(ctl >= 0, "%s: %s", p, strerror(errno));
  struct stat st;
  REQUIRE(fstat(ctl, &st) == 0);
  CHECK(S_ISCHR(st.st_mode) && st.st_rdev == makedev(10, 237));

  test_control();
  test_unbound_and_bad_files();
  test_bound_io();
  test_clr_fd_and_configure();
  test_mount_ext2(argv[1]);
  test_nested(argv[1], argv[2]);

  close(ctl);
  CHECK_OK(umount(dev));
  CHECK_OK(umount(scratch));
  return guest_finish();
}
