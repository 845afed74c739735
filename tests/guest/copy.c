// sendfile, copy_file_range, splice, tee, memfd_create (with seals and a
// shared mapping), readahead. argv[1]: a scratch folder.
#include "guest_check.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

static char src[PATH_MAX], dst[PATH_MAX];
static char data[200000];

static void fill_source(void) {
  for (size_t i = 0; i < sizeof data; i++) data[i] = (char)('a' + i * 7 % 26);
  int fd = open(src, O_CREAT | O_TRUNC | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, data, sizeof data) == (ssize_t)sizeof data);
  close(fd);
}

static int same_as(int fd, size_t from, size_t n) {
  static char buf[sizeof data];
  ssize_t got = pread(fd, buf, n, 0);
  return got == (ssize_t)n && memcmp(buf, data + from, n) == 0;
}

static void test_sendfile(void) {
  printf("sendfile\n");
  int in = open(src, O_RDONLY), out = open(dst, O_CREAT | O_TRUNC | O_RDWR, 0644);
  REQUIRE(in >= 0 && out >= 0);
  off_t off = 1000;
  ssize_t n = sendfile(out, in, &off, 50000);
  CHECK(n == 50000 && off == 51000, "n %ld off %ld", (long)n, (long)off);
  CHECK(lseek(in, 0, SEEK_CUR) == 0, "offset given: the file position stays");
  CHECK(same_as(out, 1000, 50000));
  n = sendfile(out, in, NULL, sizeof data);  // from the position, to EOF
  CHECK(n == (ssize_t)sizeof data, "n %ld", (long)n);
  CHECK(lseek(in, 0, SEEK_CUR) == (off_t)sizeof data);
  CHECK(sendfile(out, in, NULL, 10) == 0, "at EOF");
  int p[2];
  REQUIRE(pipe(p) == 0);
  off = 0;
  CHECK(sendfile(p[1], in, &off, 100) == 100);
  char buf[100];
  CHECK(read(p[0], buf, 100) == 100 && memcmp(buf, data, 100) == 0);
  CHECK_ERR(sendfile(in, out, NULL, 10), EBADF);  // in is read-only: not an output
  close(p[0]);
  close(p[1]);
  close(in);
  close(out);
}

static void test_copy_file_range(void) {
  printf("copy_file_range\n");
  int in = open(src, O_RDONLY), out = open(dst, O_CREAT | O_TRUNC | O_RDWR, 0644);
  REQUIRE(in >= 0 && out >= 0);
  loff_t oi = 10, oo = 0;
  ssize_t n = syscall(SYS_copy_file_range, in, &oi, out, &oo, 100000, 0);
  CHECK(n > 0 && oi == 10 + n && oo == n, "n %ld", (long)n);
  CHECK(same_as(out, 10, (size_t)n));
  CHECK_ERR(syscall(SYS_copy_file_range, in, NULL, out, NULL, 10, 1), EINVAL);
  int p[2];
  REQUIRE(pipe(p) == 0);
  CHECK_ERR(syscall(SYS_copy_file_range, in, NULL, p[1], NULL, 10, 0), EINVAL);
  int app = open(dst, O_WRONLY | O_APPEND);
  CHECK_ERR(syscall(SYS_copy_file_range, in, NULL, app, NULL, 10, 0), EBADF);
  close(app);
  close(p[0]);
  close(p[1]);
  close(in);
  close(out);
}

static void test_splice_tee(void) {
  printf("splice/tee\n");
  int in = open(src, O_RDONLY), out = open(dst, O_CREAT | O_TRUNC | O_RDWR, 0644);
  int a[2], b[2];
  REQUIRE(in >= 0 && out >= 0 && pipe(a) == 0 && pipe(b) == 0);
  loff_t off = 5;
  CHECK(syscall(SYS_splice, in, &off, a[1], NULL, 4000, 0) == 4000 && off == 4005);
  CHECK(syscall(SYS_tee, a[0], b[1], 4000, 0) == 4000);
  CHECK(syscall(SYS_splice, a[0], NULL, out, NULL, 4000, 0) == 4000);
  CHECK(same_as(out, 5, 4000));
  char buf[4000];
  CHECK(read(b[0], buf, sizeof buf) == 4000 && memcmp(buf, data + 5, 4000) == 0, "tee copy");
  CHECK_ERR(syscall(SYS_splice, in, NULL, out, NULL, 10, 0), EINVAL);  // no pipe
  CHECK_ERR(syscall(SYS_splice, a[0], &off, out, NULL, 10, 0), ESPIPE);
  CHECK_ERR(syscall(SYS_tee, in, b[1], 10, 0), EINVAL);
  close(a[0]); close(a[1]); close(b[0]); close(b[1]);
  close(in);
  close(out);
}

static void test_memfd(void) {
  printf("memfd\n");
  int fd = syscall(SYS_memfd_create, "flatux-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  REQUIRE(fd >= 0, "memfd_create: %s", strerror(errno));
  CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
  CHECK(ftruncate(fd, 8192) == 0);
  char* m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(m != MAP_FAILED);
  strcpy(m + 4096, "through the mapping");
  char buf[32] = {0};
  CHECK(pread(fd, buf, 19, 4096) == 19 && strcmp(buf, "through the mapping") == 0, "read '%s'", buf);
  munmap(m, 8192);
  CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK));
  CHECK(fcntl(fd, F_GET_SEALS) == (F_SEAL_GROW | F_SEAL_SHRINK));
  CHECK_ERR(ftruncate(fd, 100), EPERM);
  CHECK_ERR(syscall(SYS_memfd_create, "x", 0x1000), EINVAL);
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[PATH_MAX];
  ssize_t n = readlink(link, target, sizeof target - 1);
  target[n > 0 ? n : 0] = 0;
  CHECK(n > 0 && strstr(target, "memfd:flatux-test"), "fd link '%s'", target);
  close(fd);
  int in = open(src, O_RDONLY);
  CHECK_OK(syscall(SYS_readahead, in, 0, 4096));
  close(in);
}

int main(int argc, char** argv) {
  guest_name = "copy";
  REQUIRE(argc == 2, "usage: copy SCRATCH_DIR");
  snprintf(src, sizeof src, "%s/src", argv[1]);
  snprintf(dst, sizeof dst, "%s/dst", argv[1]);
  fill_source();
  test_sendfile();
  test_copy_file_range();
  test_splice_tee();
  test_memfd();
  return guest_finish();
}
