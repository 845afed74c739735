// Bad user pointers make system calls fail with EFAULT; they never crash
// the program or the kernel. Raw syscall() keeps libc from checking or
// dereferencing the pointers first.
//
// usage: efault SYMLINK   (a symlink to a regular file of a few bytes)
#include "guest_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static void drain(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof buf) > 0) {
  }
}

int main(int argc, char** argv) {
  guest_name = "efault";
  REQUIRE(argc == 2, "usage: efault SYMLINK");
  const char* link = argv[1];

  // An address that was mapped a moment ago: a hole, not just an
  // improbable number.
  char* hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(hole != MAP_FAILED, "mmap: %s", strerror(errno));
  REQUIRE(munmap(hole, 4096) == 0, "munmap: %s", strerror(errno));
  char* const bad[] = {NULL, (char*)1, hole, hole + 4095};
  const char* const bad_name[] = {"NULL", "(void*)1", "unmapped page", "end of unmapped page"};

  int p[2];
  REQUIRE(pipe2(p, O_NONBLOCK) == 0, "pipe2: %s", strerror(errno));
  int file = open(link, O_RDONLY);
  REQUIRE(file >= 0, "open %s: %s", link, strerror(errno));
  int dir = open("/", O_RDONLY | O_DIRECTORY);
  REQUIRE(dir >= 0, "open /: %s", strerror(errno));

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char* b = bad[i];
    printf("%s (%p):\n", bad_name[i], (void*)b);
    // Data is waiting, so a read would otherwise succeed.
    REQUIRE(write(p[1], "abcdefgh", 8) == 8, "write to pipe");
    CHECK_ERR(syscall(SYS_read, p[0], b, 8), EFAULT);
    drain(p[0]);
    CHECK_ERR(syscall(SYS_read, file, b, 4), EFAULT);
    CHECK_ERR(syscall(SYS_pread64, file, b, 4, 0), EFAULT);
    CHECK_ERR(syscall(SYS_write, p[1], b, 8), EFAULT);
    CHECK_ERR(syscall(SYS_stat, b, hole), EFAULT);
    CHECK_ERR(syscall(SYS_stat, "/", b), EFAULT);
    CHECK_ERR(syscall(SYS_lstat, link, b), EFAULT);
    CHECK_ERR(syscall(SYS_fstat, file, b), EFAULT);
    CHECK_ERR(syscall(SYS_newfstatat, AT_FDCWD, b, hole, 0), EFAULT);
    CHECK_ERR(syscall(SYS_newfstatat, AT_FDCWD, "/", b, 0), EFAULT);
    CHECK_ERR(syscall(SYS_open, b, O_RDONLY), EFAULT);
    CHECK_ERR(syscall(SYS_openat, AT_FDCWD, b, O_RDONLY), EFAULT);
    CHECK_ERR(syscall(SYS_openat, dir, b, O_RDONLY), EFAULT);
    CHECK_ERR(syscall(SYS_access, b, F_OK), EFAULT);
    CHECK_ERR(syscall(SYS_readlink, b, hole, 16), EFAULT);
    CHECK_ERR(syscall(SYS_readlink, link, b, 16), EFAULT);
    CHECK_ERR(syscall(SYS_chdir, b), EFAULT);
    CHECK_ERR(syscall(SYS_getcwd, b, 256), EFAULT);
    CHECK_ERR(syscall(SYS_getdents64, dir, b, 4096), EFAULT);
    CHECK_ERR(syscall(SYS_uname, b), EFAULT);
    CHECK_ERR(syscall(SYS_pipe2, b, 0), EFAULT);
    CHECK_ERR(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, b), EFAULT);
    CHECK_ERR(syscall(SYS_nanosleep, b, NULL), EFAULT);
    CHECK_ERR(syscall(SYS_writev, p[1], b, 1), EFAULT);
    struct iovec iov = {b, 4};
    REQUIRE(write(p[1], "abcd", 4) == 4, "write to pipe");
    CHECK_ERR(syscall(SYS_readv, p[0], &iov, 1), EFAULT);
    drain(p[0]);
    CHECK(lseek(dir, 0, SEEK_SET) == 0, "rewinding /");
  }

  // flatux keeps its own heap at 0x7e0000000000, mapped in the same host
  // process as the guest: a kernel that checked only "is it mapped" would
  // read or overwrite its own data here. Natively nothing lives there.
  {
    char* const kern = (char*)0x7e0000001000;
    printf("kernel heap (%p):\n", (void*)kern);
    REQUIRE(write(p[1], "abcdefgh", 8) == 8, "write to pipe");
    CHECK_ERR(syscall(SYS_read, p[0], kern, 8), EFAULT);
    drain(p[0]);
    CHECK_ERR(syscall(SYS_read, file, kern, 4), EFAULT);
    CHECK_ERR(syscall(SYS_write, p[1], kern, 8), EFAULT);
    CHECK_ERR(syscall(SYS_openat, AT_FDCWD, kern, O_RDONLY), EFAULT);
    CHECK_ERR(syscall(SYS_openat, dir, kern, O_RDONLY), EFAULT);
    CHECK_ERR(syscall(SYS_fstat, file, kern), EFAULT);
    drain(p[0]);
  }

  // Nothing above left damage behind: the same calls with good pointers work.
  printf("good pointers afterwards:\n");
  char buf[256];
  CHECK(write(p[1], "xy", 2) == 2, "write to pipe: %s", strerror(errno));
  CHECK(syscall(SYS_read, p[0], buf, sizeof buf) == 2 && memcmp(buf, "xy", 2) == 0,
        "read from pipe");
  CHECK(syscall(SYS_read, file, buf, 4) == 4, "read from %s: %s", link, strerror(errno));
  CHECK(syscall(SYS_getcwd, buf, sizeof buf) > 0, "getcwd: %s", strerror(errno));
  CHECK(syscall(SYS_getdents64, dir, buf, sizeof buf) > 0, "getdents64 /: %s", strerror(errno));
  struct timespec ts;
  CHECK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) == 0, "clock_gettime: %s",
        strerror(errno));
  CHECK(syscall(SYS_readlink, link, buf, sizeof buf) > 0, "readlink: %s", strerror(errno));
  printf("  ok\n");
  return guest_finish();
}
