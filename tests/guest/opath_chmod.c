// Changing a file through /proc/self/fd/N of an O_PATH descriptor, as
// glibc's fchmodat(AT_SYMLINK_NOFOLLOW) does (and tar x with it): the
// magic link reaches the open file itself, wherever it now is.
#include "guest_check.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned mode_of(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_mode & 07777 : 0xffff;
}

int main(int argc, char** argv) {
  guest_name = "opath_chmod";
  REQUIRE(argc == 2 && chdir(argv[1]) == 0, "usage: opath_chmod DIR");
  int fd = open("file", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  close(fd);
  int p = open("file", O_PATH);
  REQUIRE(p >= 0);
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", p);
  CHECK(chmod(link, 0640) == 0, "chmod %s: %s", link, strerror(errno));
  CHECK(mode_of("file") == 0640, "mode %o", mode_of("file"));
  CHECK_ERR(syscall(SYS_fchmod, p, 0600), EBADF);  // the descriptor itself cannot (musl's fchmod retries by name)
  CHECK(fchmodat(AT_FDCWD, "file", 0600, AT_SYMLINK_NOFOLLOW) == 0, "%s", strerror(errno));
  CHECK(mode_of("file") == 0600);
  CHECK(chown(link, (uid_t)-1, (gid_t)-1) == 0);
  struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
  CHECK(utimensat(AT_FDCWD, link, ts, 0) == 0, "utimensat: %s", strerror(errno));
  struct stat st;
  CHECK(stat("file", &st) == 0 && st.st_mtime == 1000000000);
  // Renamed since it was opened: the link still reaches it.
  CHECK(rename("file", "moved") == 0);
  CHECK(chmod(link, 0604) == 0, "after rename: %s", strerror(errno));
  CHECK(mode_of("moved") == 0604, "mode %o", mode_of("moved"));
  // A symlink has no mode of its own.
  CHECK(symlink("moved", "lnk") == 0);
  CHECK_ERR(fchmodat(AT_FDCWD, "lnk", 0600, AT_SYMLINK_NOFOLLOW), EOPNOTSUPP);
  CHECK(mode_of("moved") == 0604);
  close(p);
  unlink("lnk");
  unlink("moved");
  return guest_finish();
}
