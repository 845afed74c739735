// Run under `flatux run --ro`: every change to the read-only root is EROFS
// (EEXIST where the name exists, as Linux checks that first), reads work,
// statvfs says ST_RDONLY, and devices stay writable. argv[1]: an existing
// file, argv[2]: an existing directory.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;

static void expect(const char* what, long r, int want) {
  int e = errno;
  if (r != -1 || e != want) {
    printf("FAIL %s: got %ld errno %d (%s), want %s\n", what, r, e, strerror(e), strerror(want));
    failures++;
  }
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const char* file = argv[1];
  const char* dir = argv[2];
  char path[4096];
  snprintf(path, sizeof path, "%s/flatux-ro-new", dir);
  expect("open O_CREAT new", open(path, O_CREAT | O_WRONLY, 0644), EROFS);
  expect("open O_WRONLY existing", open(file, O_WRONLY), EROFS);
  expect("open O_CREAT|O_EXCL existing", open(file, O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
  expect("mkdir new", syscall(SYS_mkdir, path, 0755), EROFS);
  expect("mkdir existing", syscall(SYS_mkdir, dir, 0755), EEXIST);
  expect("unlink", syscall(SYS_unlink, file), EROFS);
  expect("unlink missing", syscall(SYS_unlink, path), ENOENT);
  expect("rmdir", syscall(SYS_rmdir, dir), EROFS);
  expect("symlink", syscall(SYS_symlink, "x", path), EROFS);
  expect("link", syscall(SYS_link, file, path), EROFS);
  expect("rename", syscall(SYS_rename, file, path), EROFS);
  expect("chmod", syscall(SYS_chmod, file, 0600), EROFS);
  expect("chown", syscall(SYS_chown, file, 0, 0), EROFS);
  expect("utimensat", syscall(SYS_utimensat, AT_FDCWD, file, NULL, 0), EROFS);
  expect("truncate", syscall(SYS_truncate, file, 0L), EROFS);
  expect("access W_OK", access(file, W_OK), EROFS);
  int fd = open(file, O_RDONLY);
  char c;
  if (fd < 0 || read(fd, &c, 1) != 1) {
    printf("FAIL reading %s: %s\n", file, strerror(errno));
    failures++;
  }
  expect("fchmod", syscall(SYS_fchmod, fd, 0600), EROFS);
  struct statvfs sv;
  if (statvfs(file, &sv) != 0 || !(sv.f_flag & ST_RDONLY)) {
    printf("FAIL statvfs: ST_RDONLY not set (flags %#lx)\n", sv.f_flag);
    failures++;
  }
  int null = open("/dev/null", O_WRONLY);
  if (null < 0 || write(null, "x", 1) != 1) {
    printf("FAIL /dev/null on a read-only root: %s\n", strerror(errno));
    failures++;
  }
  printf("%s\n", failures ? "FAILED" : "readonly: all checks passed");
  return failures ? 1 : 0;
}
