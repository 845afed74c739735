// read/stat/getdents64 and friends on the fixture tree.
//
// usage: files TREE   (TREE = tests/guest/fixtures/tree)
#include "guest_check.h"

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HELLO "hello, flatux\n"
#define NUMBERS "0123456789abcdefghijklmnopqrstuvwxyz\n"
#define NESTED "nested file\n"

// The kernel's record; libc's struct dirent differs between libcs.
struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};
#define NAME_OFF offsetof(struct linux_dirent64, d_name)  // 19; sizeof pads to 24

static const struct {
  const char* name;
  unsigned char type;
} expected_entries[] = {
    {".", DT_DIR},           {"..", DT_DIR},           {"empty", DT_REG},
    {"hello.txt", DT_REG},   {"link-to-hello", DT_LNK}, {"numbers.txt", DT_REG},
    {"run.sh", DT_REG},      {"sub", DT_DIR},
};
#define NEXPECTED (sizeof expected_entries / sizeof expected_entries[0])

static void check_contents(int dirfd, const char* path, const char* want) {
  int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    CHECK(0, "openat(%s): %s", path, strerror(errno));
    return;
  }
  char buf[256];
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
    if (r < 0) {
      CHECK(0, "read(%s): %s", path, strerror(errno));
      break;
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  buf[len] = '\0';
  CHECK(len == strlen(want) && memcmp(buf, want, len) == 0, "%s holds \"%s\", want \"%s\"",
        path, buf, want);
  printf("  %-20s %zu bytes ok\n", path, len);
  close(fd);
}

// Lists a directory through raw getdents64 with a small buffer, so the
// listing takes several calls and exercises the resume offset.
static void check_listing(int dirfd) {
  int seen[NEXPECTED] = {0};
  int calls = 0, total = 0;
  union {
    char bytes[96];
    uint64_t align;
  } buf;
  for (;;) {
    long n = syscall(SYS_getdents64, dirfd, buf.bytes, sizeof buf.bytes);
    if (n < 0) {
      CHECK(0, "getdents64: %s", strerror(errno));
      return;
    }
    if (n == 0) break;
    calls++;
    for (long off = 0; off < n;) {
      struct linux_dirent64* d = (struct linux_dirent64*)(buf.bytes + off);
      CHECK(d->d_reclen >= NAME_OFF + 2 && d->d_reclen % 8 == 0 && off + d->d_reclen <= n,
            "bad d_reclen %u at offset %ld of %ld", d->d_reclen, off, n);
      if (d->d_reclen == 0) return;
      CHECK(memchr(d->d_name, '\0', d->d_reclen - NAME_OFF) != NULL,
            "d_name not NUL-terminated within its record");
      printf("  getdents64: \"%s\" type %u\n", d->d_name, d->d_type);
      size_t i = 0;
      while (i < NEXPECTED && strcmp(expected_entries[i].name, d->d_name) != 0) i++;
      if (i == NEXPECTED) {
        CHECK(0, "unexpected directory entry \"%s\"", d->d_name);
      } else {
        CHECK(!seen[i], "\"%s\" listed twice", d->d_name);
        seen[i] = 1;
        CHECK(d->d_type == DT_UNKNOWN || d->d_type == expected_entries[i].type,
              "\"%s\" has d_type %u, want %u", d->d_name, d->d_type,
              expected_entries[i].type);
      }
      CHECK(d->d_ino != 0, "\"%s\" has inode 0", d->d_name);
      total++;
      off += d->d_reclen;
    }
  }
  for (size_t i = 0; i < NEXPECTED; i++)
    CHECK(seen[i], "\"%s\" missing from the listing", expected_entries[i].name);
  CHECK(total == (int)NEXPECTED, "%d entries, want %zu", total, NEXPECTED);
  CHECK(calls > 1, "a %zu-byte buffer held the whole listing", sizeof buf.bytes);
  printf("getdents64: %d entries in %d calls ok\n", total, calls);

  // Exhausted: a further call returns 0; rewinding starts over.
  CHECK(syscall(SYS_getdents64, dirfd, buf.bytes, sizeof buf.bytes) == 0,
        "getdents64 after the end did not return 0");
  CHECK(lseek(dirfd, 0, SEEK_SET) == 0, "lseek(dir, 0): %s", strerror(errno));
  CHECK(syscall(SYS_getdents64, dirfd, buf.bytes, sizeof buf.bytes) > 0,
        "getdents64 after rewinding returned nothing");
  // A buffer too small for even one record.
  CHECK_ERR(syscall(SYS_getdents64, dirfd, buf.bytes, 8), EINVAL);
}

int main(int argc, char** argv) {
  guest_name = "files";
  REQUIRE(argc == 2, "usage: files TREE");
  const char* tree = argv[1];
  printf("fixture tree: %s\n", tree);

  int dirfd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dirfd >= 0, "open(%s, O_DIRECTORY): %s", tree, strerror(errno));

  printf("contents:\n");
  check_contents(dirfd, "hello.txt", HELLO);
  check_contents(dirfd, "numbers.txt", NUMBERS);
  check_contents(dirfd, "empty", "");
  check_contents(dirfd, "sub/nested.txt", NESTED);
  check_contents(dirfd, "link-to-hello", HELLO);
  check_contents(dirfd, "sub/up", NUMBERS);
  check_contents(dirfd, "sub/../hello.txt", HELLO);
  check_contents(dirfd, "./sub/./nested.txt", NESTED);

  printf("stat:\n");
  struct stat st;
  CHECK_OK(fstatat(dirfd, "hello.txt", &st, 0));
  CHECK(S_ISREG(st.st_mode) && st.st_size == (off_t)strlen(HELLO), "hello.txt mode 0%o size %ld",
        st.st_mode, (long)st.st_size);
  CHECK(st.st_nlink == 1, "hello.txt st_nlink=%lu", (unsigned long)st.st_nlink);
  CHECK(st.st_mode & S_IRUSR, "hello.txt not readable by its owner: 0%o", st.st_mode);
  ino_t hello_ino = st.st_ino;
  dev_t hello_dev = st.st_dev;

  CHECK_OK(fstatat(dirfd, "run.sh", &st, 0));
  CHECK(S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR), "run.sh mode 0%o, want executable",
        st.st_mode);
  CHECK_OK(fstatat(dirfd, "empty", &st, 0));
  CHECK(S_ISREG(st.st_mode) && st.st_size == 0, "empty: mode 0%o size %ld", st.st_mode,
        (long)st.st_size);

  CHECK_OK(fstatat(dirfd, "sub", &st, 0));
  CHECK(S_ISDIR(st.st_mode), "sub mode 0%o, want a directory", st.st_mode);
  CHECK(st.st_nlink >= 2, "sub st_nlink=%lu", (unsigned long)st.st_nlink);

  // stat follows the symlink, lstat does not.
  char path[4096];
  snprintf(path, sizeof path, "%s/link-to-hello", tree);
  CHECK_OK(stat(path, &st));
  CHECK(S_ISREG(st.st_mode) && st.st_ino == hello_ino && st.st_dev == hello_dev,
        "stat(link-to-hello) is not hello.txt");
  CHECK_OK(lstat(path, &st));
  CHECK(S_ISLNK(st.st_mode), "lstat(link-to-hello) mode 0%o, want a symlink", st.st_mode);
  CHECK(st.st_size == (off_t)strlen("hello.txt"), "symlink st_size=%ld", (long)st.st_size);
  CHECK_OK(fstatat(dirfd, "sub/up", &st, AT_SYMLINK_NOFOLLOW));
  CHECK(S_ISLNK(st.st_mode), "sub/up mode 0%o, want a symlink", st.st_mode);
  printf("  stat/lstat/fstatat modes and sizes ok\n");

  printf("readlink:\n");
  char target[256];
  ssize_t tl = readlink(path, target, sizeof target);
  CHECK(tl == 9 && memcmp(target, "hello.txt", 9) == 0, "readlink(link-to-hello)=%zd \"%.*s\"",
        tl, tl > 0 ? (int)tl : 0, target);
  tl = readlinkat(dirfd, "sub/up", target, sizeof target);
  CHECK(tl == 14 && memcmp(target, "../numbers.txt", 14) == 0, "readlinkat(sub/up)=%zd \"%.*s\"",
        tl, tl > 0 ? (int)tl : 0, target);
  // Truncates silently, without a NUL.
  memset(target, 'X', sizeof target);
  tl = readlinkat(dirfd, "sub/up", target, 4);
  CHECK(tl == 4 && memcmp(target, "../nX", 5) == 0, "readlinkat with 4 bytes=%zd", tl);
  CHECK_ERR(readlinkat(dirfd, "hello.txt", target, sizeof target), EINVAL);
  printf("  readlink ok\n");

  printf("errors:\n");
  CHECK_ERR(openat(dirfd, "missing", O_RDONLY), ENOENT);
  CHECK_ERR(openat(dirfd, "sub/missing/x", O_RDONLY), ENOENT);
  CHECK_ERR(openat(dirfd, "hello.txt/x", O_RDONLY), ENOTDIR);
  CHECK_ERR(openat(dirfd, "hello.txt", O_RDONLY | O_DIRECTORY), ENOTDIR);
  CHECK_ERR(openat(dirfd, "link-to-hello", O_RDONLY | O_NOFOLLOW), ELOOP);
  CHECK_ERR(fstatat(dirfd, "missing", &st, 0), ENOENT);
  snprintf(path, sizeof path, "%s/no/such/file", tree);
  CHECK_ERR(open(path, O_RDONLY), ENOENT);
  CHECK_ERR(stat(path, &st), ENOENT);
  CHECK_ERR(syscall(SYS_read, dirfd, target, sizeof target), EISDIR);
  // An absolute path ignores the dirfd, a relative one needs a directory.
  snprintf(path, sizeof path, "%s/hello.txt", tree);
  int fd = openat(-1, path, O_RDONLY);
  CHECK(fd >= 0, "openat(-1, absolute path): %s", strerror(errno));
  if (fd >= 0) {
    CHECK_ERR(openat(fd, "x", O_RDONLY), ENOTDIR);
    close(fd);
  }
  CHECK_ERR(openat(-1, "hello.txt", O_RDONLY), EBADF);

  printf("lseek/pread:\n");
  fd = openat(dirfd, "numbers.txt", O_RDONLY);
  REQUIRE(fd >= 0, "openat(numbers.txt): %s", strerror(errno));
  char b[64];
  CHECK(read(fd, b, 4) == 4 && memcmp(b, "0123", 4) == 0, "first read");
  CHECK(lseek(fd, 0, SEEK_CUR) == 4, "position after reading 4 bytes");
  CHECK(lseek(fd, 10, SEEK_SET) == 10, "SEEK_SET 10");
  CHECK(read(fd, b, 3) == 3 && memcmp(b, "abc", 3) == 0, "read at 10");
  CHECK(lseek(fd, 2, SEEK_CUR) == 15, "SEEK_CUR +2");
  CHECK(read(fd, b, 1) == 1 && b[0] == 'f', "read at 15");
  CHECK(lseek(fd, -2, SEEK_END) == 35, "SEEK_END -2");
  CHECK(read(fd, b, sizeof b) == 2 && memcmp(b, "z\n", 2) == 0, "read at 35");
  CHECK(read(fd, b, sizeof b) == 0, "read at EOF is not 0");
  CHECK(lseek(fd, 100, SEEK_SET) == 100, "seeking past EOF");
  CHECK(read(fd, b, sizeof b) == 0, "read past EOF is not 0");
  CHECK_ERR(lseek(fd, -1, SEEK_SET), EINVAL);
  CHECK(lseek(fd, 5, SEEK_SET) == 5, "SEEK_SET 5");
  CHECK(pread(fd, b, 6, 20) == 6 && memcmp(b, "klmnop", 6) == 0, "pread at 20");
  CHECK(pread(fd, b, sizeof b, 30) == 7 && memcmp(b, "uvwxyz\n", 7) == 0, "short pread at 30");
  CHECK(pread(fd, b, sizeof b, 37) == 0, "pread at EOF");
  CHECK(lseek(fd, 0, SEEK_CUR) == 5, "pread moved the file position");
  CHECK_ERR(pread(fd, b, 1, -1), EINVAL);

  // dup'd descriptors share one position.
  int fd2 = dup(fd);
  CHECK(fd2 >= 0 && fd2 != fd, "dup: %s", strerror(errno));
  CHECK(read(fd2, b, 2) == 2 && memcmp(b, "56", 2) == 0, "read via dup");
  CHECK(lseek(fd, 0, SEEK_CUR) == 7, "dup'd descriptors do not share one position");
  CHECK_ERR(write(fd, "x", 1), EBADF);
  close(fd2);
  close(fd);
  CHECK_ERR(read(fd, b, 1), EBADF);
  printf("  lseek/pread/dup ok\n");

  printf("directories:\n");
  check_listing(dirfd);

  // Relative paths resolve against the working directory.
  char cwd[4096];
  CHECK_OK(fchdir(dirfd));
  CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd: %s", strerror(errno));
  size_t cl = strlen(cwd);
  CHECK(cl >= 5 && strcmp(cwd + cl - 5, "/tree") == 0, "getcwd()=\"%s\"", cwd);
  check_contents(AT_FDCWD, "sub/nested.txt", NESTED);
  CHECK_OK(chdir("sub"));
  check_contents(AT_FDCWD, "../hello.txt", HELLO);
  check_contents(AT_FDCWD, "up", NUMBERS);
  CHECK_OK(access("nested.txt", R_OK));
  CHECK_ERR(access("missing", F_OK), ENOENT);
  close(dirfd);
  return guest_finish();
}
