// mount --move (MS_MOVE): a mount and the mounts below it change place,
// keeping their ids, contents and the processes inside them; the old place
// is a plain folder again. Errors as Linux's do_move_mount gives them, and a
// move onto a shared mount propagating to its peer.
//
// argv[1] is a scratch folder. The run happens in a mount namespace of its
// own where the kernel has them (natively), on a tmpfs mounted on it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"
#include "guest_at.h"

// The id and parent id of the topmost mount at DIR/rel; 0 when none.
static int mount_id(const char* rel, int* parent) {
  const char* point = rel[0] ? at("%s", rel) : dir;
  FILE* f = fopen("/proc/self/mountinfo", "r");
  if (!f) return 0;
  char line[4096], pt[PATH_MAX];
  int id = 0, found = 0, par = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%d %d %*s %*s %4095s", &id, &par, pt) == 3 && strcmp(pt, point) == 0) {
      found = id;
      if (parent) *parent = par;
    }
  fclose(f);
  return found;
}

static void mount_tmpfs(const char* rel) {
  REQUIRE(mount("none", at("%s", rel), "tmpfs", 0, "size=1m") == 0, "mount %s: %s", rel, strerror(errno));
}

static void make_dir(const char* rel) { REQUIRE(mkdir(at("%s", rel), 0755) == 0, "mkdir %s: %s", rel, strerror(errno)); }

static void touch(const char* rel) { REQUIRE(touch_at(rel) == 0, "%s: %s", rel, strerror(errno)); }

static int move(const char* from, const char* to) { return mount(at("%s", from), at("%s", to), NULL, MS_MOVE, NULL); }

static dev_t dev_of(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_dev : (dev_t)-1;
}

static void test_move_tree(void) {
  make_dir("a");
  make_dir("b");
  mount_tmpfs("a");
  touch("a/f");
  make_dir("a/sub");
  mount_tmpfs("a/sub");
  touch("a/sub/g");
  int scratch = mount_id("", NULL), id = mount_id("a", NULL), sub = mount_id("a/sub", NULL);
  REQUIRE(scratch && id && sub);
  char old_cwd[PATH_MAX], cwd[PATH_MAX];
  REQUIRE(getcwd(old_cwd, sizeof old_cwd));
  REQUIRE(chdir(at("a/sub")) == 0);
  int fd = open(at("a/f"), O_RDONLY);
  REQUIRE(fd >= 0);

  CHECK_OK(move("a", "b"));
  CHECK(exists_at("b/f") && exists_at("b/sub/g"), "the tree did not arrive");
  CHECK(!exists_at("a/f") && !exists_at("a/sub"), "the old place still shows the mount");
  CHECK(dev_of(at("a")) == dev_of(dir), "the old place is still a mount point");
  int parent = 0;
  CHECK(mount_id("b", &parent) == id, "the moved mount has id %d, was %d", mount_id("b", NULL), id);
  CHECK(parent == scratch, "parent %d, want %d", parent, scratch);
  CHECK(mount_id("b/sub", &parent) == sub && parent == id, "the mount below did not come along");
  CHECK(!mount_id("a", NULL) && !mount_id("a/sub", NULL), "mountinfo still lists the old places");
  CHECK(getcwd(cwd, sizeof cwd) && strcmp(cwd, at("b/sub")) == 0, "cwd %s", cwd);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_dev == dev_of(at("b")), "an open file lost its mount");
  close(fd);
  // Back again, through a path relative to the moved working folder.
  CHECK_OK(mount("..", at("a"), NULL, MS_MOVE, NULL));
  CHECK(getcwd(cwd, sizeof cwd) && strcmp(cwd, at("a/sub")) == 0, "cwd %s", cwd);
  CHECK(exists_at("a/sub/g") && !exists_at("b/f"));
  REQUIRE(chdir(old_cwd) == 0);
  CHECK_OK(umount(at("a/sub")));
  CHECK_OK(umount(at("a")));
}

static void test_errors(void) {
  make_dir("c");
  make_dir("d");
  touch("e");
  CHECK_ERR(move("c", "d"), EINVAL);        // not a mount's root
  CHECK_ERR(move("nothing", "d"), ENOENT);
  CHECK_ERR(move("d", "nothing"), ENOENT);
  mount_tmpfs("c");
  make_dir("c/in");
  CHECK_ERR(move("c", "c/in"), ELOOP);      // into its own tree
  CHECK_ERR(move("c", "c"), ELOOP);
  CHECK_ERR(move("c", "e"), EINVAL);        // a folder onto a file
  make_dir("c/x");
  mount_tmpfs("c/x");
  // A mount whose parent is shared stays: its peers would lose track of it.
  CHECK_OK(mount("none", at("c"), NULL, MS_SHARED, NULL));
  CHECK_ERR(move("c/x", "d"), EINVAL);
  CHECK_OK(mount("none", at("c"), NULL, MS_PRIVATE, NULL));
  CHECK_OK(move("c/x", "d"));
  CHECK(!mount_id("c/x", NULL) && mount_id("d", NULL));
  CHECK_OK(umount(at("d")));
  CHECK_OK(umount(at("c")));
}

// Onto a shared mount: the moved mount reaches its peer as a new one would.
static void test_onto_shared(void) {
  make_dir("p");
  make_dir("p2");
  make_dir("m");
  mount_tmpfs("p");
  make_dir("p/y");
  CHECK_OK(mount("none", at("p"), NULL, MS_SHARED, NULL));
  CHECK_OK(mount(at("p"), at("p2"), NULL, MS_BIND, NULL));
  mount_tmpfs("m");
  touch("m/h");
  CHECK_OK(move("m", "p/y"));
  CHECK(exists_at("p/y/h"), "the move did not arrive");
  CHECK(exists_at("p2/y/h"), "the peer did not receive the moved mount");
  CHECK_OK(umount(at("p/y")));
  CHECK(!exists_at("p2/y/h"), "the unmount did not reach the peer");
  CHECK_OK(umount(at("p2")));
  CHECK_OK(umount(at("p")));
}

int main(int argc, char** argv) {
  guest_name = "mount_move";
  REQUIRE(argc == 2, "usage: mount_move SCRATCH_DIR");
  guest_mount_scratch(argv[1], dir, "size=4m");
  // The scratch tmpfs lands private: a move out of it is allowed.
  REQUIRE(mount("none", dir, NULL, MS_PRIVATE, NULL) == 0);

  test_move_tree();
  test_errors();
  test_onto_shared();

  CHECK_OK(umount(dir));
  return guest_finish();
}
