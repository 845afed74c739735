// fcntl F_NOTIFY (dnotify): SIGIO when a watched directory's entries
// change, one-shot or DN_MULTISHOT, and the errnos.
#include "guest_check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t sigio;
static void on_sigio(int sig) { (void)sig; sigio++; }

static void touch(const char* name) {
  int fd = open(name, O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) close(fd);
}

int main(int argc, char** argv) {
  guest_name = "dnotify";
  REQUIRE(argc == 2 && chdir(argv[1]) == 0, "usage: dnotify DIR");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigio;
  REQUIRE(sigaction(SIGIO, &sa, NULL) == 0);
  REQUIRE(mkdir("w", 0755) == 0 && mkdir("other", 0755) == 0);
  int d = open("w", O_RDONLY | O_DIRECTORY);
  REQUIRE(d >= 0);

  printf("errors:\n");
  touch("w/plain");
  int plain = open("w/plain", O_RDONLY);
  CHECK_ERR(fcntl(plain, F_NOTIFY, DN_CREATE), ENOTDIR);
  int path = open("w", O_PATH);
  CHECK_ERR(fcntl(path, F_NOTIFY, DN_CREATE), EBADF);
  close(path);
  // DN_MULTISHOT does not fit in an int (Python's test_fcntl_64_bit).
  CHECK(syscall(SYS_fcntl, d, F_NOTIFY, (unsigned long)DN_MULTISHOT) == 0, "%s", strerror(errno));
  CHECK(fcntl(d, F_NOTIFY, 0) == 0);

  printf("multishot create:\n");
  sigio = 0;
  CHECK(fcntl(d, F_NOTIFY, DN_CREATE | DN_MULTISHOT) == 0);
  touch("w/a");
  CHECK(sigio == 1, "after one create: %d", (int)sigio);
  CHECK(mkdir("w/sub", 0755) == 0);
  CHECK(sigio == 2, "after mkdir: %d", (int)sigio);
  touch("other/x");  // another directory: nothing
  CHECK(sigio == 2);
  unlink("w/a");  // not asked for
  CHECK(sigio == 2, "unlink without DN_DELETE: %d", (int)sigio);

  printf("one-shot delete, rename, attributes, data:\n");
  CHECK(fcntl(d, F_NOTIFY, 0) == 0);
  sigio = 0;
  CHECK(fcntl(d, F_NOTIFY, DN_DELETE) == 0);
  touch("w/b");
  touch("w/c");
  CHECK(unlink("w/b") == 0 && unlink("w/c") == 0);
  CHECK(sigio == 1, "one-shot: %d", (int)sigio);
  sigio = 0;
  CHECK(fcntl(d, F_NOTIFY, DN_RENAME | DN_ATTRIB | DN_MODIFY | DN_MULTISHOT) == 0);
  CHECK(rename("w/plain", "w/renamed") == 0);
  CHECK(sigio == 1, "rename: %d", (int)sigio);
  CHECK(chmod("w/renamed", 0600) == 0);
  CHECK(sigio == 2, "chmod: %d", (int)sigio);
  int fd = open("w/renamed", O_WRONLY);
  CHECK(write(fd, "data", 4) == 4);
  close(fd);
  CHECK(sigio == 3, "write: %d", (int)sigio);
  CHECK(fcntl(d, F_NOTIFY, 0) == 0);
  touch("w/after");
  CHECK(chmod("w/after", 0600) == 0);
  CHECK(sigio == 3, "after removing the watch: %d", (int)sigio);
  close(plain);
  close(d);
  return guest_finish();
}
