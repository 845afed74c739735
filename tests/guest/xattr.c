// Extended attributes of the user namespace: get, set, list and remove,
// through a path, without following a link, and through a descriptor.
//
// usage: xattr DIR   (a fresh folder, removed by the caller, on a
// filesystem with user attributes: the host's ext4 or tmpfs)
#include "guest_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

static char dir[4096];

static const char* at(const char* name) {
  static char buf[2][4200];
  static int i;
  i ^= 1;
  snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
  return buf[i];
}

// Whether the NUL-separated list holds `name`.
static int listed(const char* list, long n, const char* name) {
  for (long i = 0; i < n; i += (long)strlen(list + i) + 1)
    if (strcmp(list + i, name) == 0) return 1;
  return 0;
}

static void test_file(void) {
  printf("a file\n");
  const char* f = at("file");
  int fd = open(f, O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0, "create: %s", strerror(errno));
  close(fd);
  char buf[256];
  CHECK_OK(setxattr(f, "user.a", "hello", 5, 0));
  CHECK(getxattr(f, "user.a", buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0);
  CHECK(getxattr(f, "user.a", NULL, 0) == 5, "the size alone");
  CHECK_ERR(getxattr(f, "user.a", buf, 2), ERANGE);
  CHECK_ERR(getxattr(f, "user.none", buf, sizeof buf), ENODATA);
  CHECK_ERR(setxattr(f, "user.a", "x", 1, XATTR_CREATE), EEXIST);
  CHECK_ERR(setxattr(f, "user.b", "x", 1, XATTR_REPLACE), ENODATA);
  CHECK_OK(setxattr(f, "user.b", "", 0, 0));
  CHECK(getxattr(f, "user.b", buf, sizeof buf) == 0, "an empty value");
  CHECK_OK(setxattr(f, "user.a", "bye", 3, XATTR_REPLACE));
  CHECK(getxattr(f, "user.a", buf, sizeof buf) == 3 && memcmp(buf, "bye", 3) == 0);

  long need = listxattr(f, NULL, 0);
  long n = listxattr(f, buf, sizeof buf);
  CHECK(n > 0 && n == need, "listxattr %ld, its size %ld", n, need);
  CHECK(listed(buf, n, "user.a") && listed(buf, n, "user.b"), "both names listed");
  CHECK_ERR(listxattr(f, buf, 3), ERANGE);

  CHECK_OK(removexattr(f, "user.b"));
  CHECK_ERR(removexattr(f, "user.b"), ENODATA);
  CHECK_ERR(getxattr(f, "user.b", buf, sizeof buf), ENODATA);
}

static void test_names_and_sizes(void) {
  printf("names and sizes\n");
  const char* f = at("file");
  char buf[64];
  char long_name[300];
  memset(long_name, 'n', sizeof long_name);
  memcpy(long_name, "user.", 5);
  long_name[256] = 0;  // 256 bytes: one too many
  CHECK_ERR(setxattr(f, long_name, "x", 1, 0), ERANGE);
  CHECK_ERR(getxattr(f, "", buf, sizeof buf), ERANGE);
  CHECK_ERR(setxattr(f, "nonamespace", "x", 1, 0), EOPNOTSUPP);
  CHECK_ERR(setxattr(f, "user.a", "x", 1, 4), EINVAL);  // an unknown flag
  static char big[70000];
  CHECK_ERR(setxattr(f, "user.big", big, sizeof big, 0), E2BIG);
  CHECK_ERR(getxattr(at("missing"), "user.a", buf, sizeof buf), ENOENT);
}

static void test_links_and_kinds(void) {
  printf("links, folders, FIFOs\n");
  char buf[64];
  CHECK_OK(symlink("file", at("link")));
  CHECK(getxattr(at("link"), "user.a", buf, sizeof buf) == 3, "through the link");
  CHECK_ERR(lgetxattr(at("link"), "user.a", buf, sizeof buf), ENODATA);
  CHECK_ERR(lsetxattr(at("link"), "user.a", "x", 1, 0), EPERM);
  CHECK(llistxattr(at("link"), buf, sizeof buf) >= 0, "a link lists what it has");

  CHECK_OK(mkdir(at("sub"), 0755));
  CHECK_OK(setxattr(at("sub"), "user.d", "dir", 3, 0));
  CHECK(getxattr(at("sub"), "user.d", buf, sizeof buf) == 3);

  CHECK_OK(mkfifo(at("fifo"), 0644));
  CHECK_ERR(setxattr(at("fifo"), "user.x", "x", 1, 0), EPERM);
  CHECK_ERR(getxattr(at("fifo"), "user.x", buf, sizeof buf), ENODATA);
}

static void test_descriptors(void) {
  printf("descriptors\n");
  char buf[64];
  int fd = open(at("file"), O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK_OK(fsetxattr(fd, "user.f", "fd", 2, 0));
  CHECK(fgetxattr(fd, "user.f", buf, sizeof buf) == 2 && memcmp(buf, "fd", 2) == 0);
  long n = flistxattr(fd, buf, sizeof buf);
  CHECK(n > 0 && listed(buf, n, "user.f"), "flistxattr");
  CHECK_OK(fremovexattr(fd, "user.f"));
  CHECK_ERR(fgetxattr(fd, "user.f", buf, sizeof buf), ENODATA);
  close(fd);
  int path = open(at("file"), O_PATH);
  REQUIRE(path >= 0);
  CHECK_ERR(fgetxattr(path, "user.a", buf, sizeof buf), EBADF);
  close(path);
  CHECK_ERR(fgetxattr(-1, "user.a", buf, sizeof buf), EBADF);
}

int main(int argc, char** argv) {
  guest_name = "xattr";
  REQUIRE(argc == 2, "usage: xattr DIR");
  snprintf(dir, sizeof dir, "%s", argv[1]);
  test_file();
  test_names_and_sizes();
  test_links_and_kinds();
  test_descriptors();
  return guest_finish();
}
