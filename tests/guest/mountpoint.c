// Mounts stand on the folder they were mounted on, not on its name: a
// rename of another folder of that name (reached from below a mount that
// hides it) moves nothing, a rename of a folder above a mount point takes
// the mount along and a new folder of the old name shows no mount, and a
// mount point reached through a bind mount of its folder cannot be
// removed or renamed (EBUSY), as Linux's is_local_mountpoint.
//
// argv[1] is a scratch folder. The run happens in a mount namespace of its
// own where the kernel has them (natively), on a tmpfs mounted on it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"
#include "guest_at.h"


static void make_dir(const char* rel) { REQUIRE(mkdir(at("%s", rel), 0755) == 0, "mkdir %s: %s", rel, strerror(errno)); }

static void touch(const char* rel) { REQUIRE(touch_at(rel) == 0, "%s: %s", rel, strerror(errno)); }

static void mount_tmpfs(const char* rel) {
  REQUIRE(mount("none", at("%s", rel), "tmpfs", 0, "size=1m") == 0, "mount %s: %s", rel, strerror(errno));
}

// How many mounts /proc/self/mountinfo shows at `rel`.
static int mounts_at(const char* rel) {
  const char* point = at("%s", rel);
  FILE* f = fopen("/proc/self/mountinfo", "r");
  REQUIRE(f);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    char pt[PATH_MAX];
    if (sscanf(line, "%*d %*d %*s %*s %4095s", pt) == 1 && strcmp(pt, point) == 0) n++;
  }
  fclose(f);
  return n;
}

// A folder of the scratch filesystem named like a mount point on the
// filesystem mounted over its parent: renaming the hidden one (through a
// descriptor opened before the parent was covered) moves no mount.
static void test_hidden_namesake(void) {
  make_dir("a");
  make_dir("a/b");
  int lower = open(at("a"), O_RDONLY | O_DIRECTORY);
  REQUIRE(lower >= 0);
  mount_tmpfs("a");
  make_dir("a/b");
  mount_tmpfs("a/b");
  touch("a/b/mark");
  CHECK_OK(renameat(lower, "b", lower, "c"));
  CHECK(exists_at("a/b/mark"), "the mount stays on the upper folder b");
  CHECK(!exists_at("a/c"), "the renamed folder is still hidden");
  CHECK(mounts_at("a/b") == 1, "mounts at a/b");
  CHECK(mounts_at("a/c") == 0, "mounts at a/c");
  struct stat st;
  CHECK_OK(fstatat(lower, "c", &st, 0));
  CHECK_OK(umount(at("a/b")));
  CHECK_OK(umount(at("a")));
  close(lower);
}

// A folder above a mount point renamed, and a new one made under the old
// name: the mount went with the folder.
static void test_renamed_above(void) {
  make_dir("d");
  make_dir("d/m");
  mount_tmpfs("d/m");
  touch("d/m/mark");
  CHECK_OK(rename(at("d"), at("e")));
  make_dir("d");
  make_dir("d/m");
  CHECK(!exists_at("d/m/mark"), "the new folder shows no mount");
  CHECK(exists_at("e/m/mark"), "the mount followed its folder");
  CHECK(mounts_at("d/m") == 0, "mounts at d/m");
  CHECK(mounts_at("e/m") == 1, "mounts at e/m");
  // And back: the mount point's path follows every rename.
  CHECK_OK(rmdir(at("d/m")));
  CHECK_OK(rmdir(at("d")));
  CHECK_OK(rename(at("e"), at("d")));
  CHECK(exists_at("d/m/mark"));
  CHECK(mounts_at("d/m") == 1, "mounts at d/m");
  CHECK_OK(umount(at("d/m")));
}

// The mount point seen through a bind mount of its folder, where nothing
// is mounted on it: it is still a mount point, which rmdir and rename
// leave alone.
static void test_busy_through_bind(void) {
  make_dir("p");
  make_dir("p/q");
  make_dir("bp");
  mount_tmpfs("p/q");
  touch("p/q/mark");
  REQUIRE(mount(at("p"), at("bp"), NULL, MS_BIND, NULL) == 0, "bind: %s", strerror(errno));
  CHECK(!exists_at("bp/q/mark"), "a bind mount does not bring the mount below along");
  CHECK_ERR(rmdir(at("bp/q")), EBUSY);
  CHECK_ERR(rename(at("bp/q"), at("bp/r")), EBUSY);
  make_dir("bp/r");
  CHECK_ERR(rename(at("bp/r"), at("bp/q")), EBUSY);
  CHECK(exists_at("p/q/mark"), "the mount stands where it did");
  CHECK_OK(umount(at("bp")));
  CHECK_OK(umount(at("p/q")));
}

int main(int argc, char** argv) {
  guest_name = "mountpoint";
  REQUIRE(argc == 2, "usage: mountpoint SCRATCH_DIR");
  guest_mount_scratch(argv[1], dir, "size=4m");

  test_hidden_namesake();
  test_renamed_above();
  test_busy_through_bind();

  CHECK_OK(umount(dir));
  return guest_finish();
}
