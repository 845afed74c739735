// devtmpfs as Linux's: the nodes every program expects, and root may make,
// change and remove nodes in it (mkdir, mknod, symlink, chown, chmod,
// unlink); a node made there opens the device its number names; every
// mount of devtmpfs is the same one instance.
//
// Only under flatux (a --root folder's /dev, or booted as init: `--init`
// then powers off): natively /dev is the host's, whose nodes a test must
// not change.
#include "guest_check.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static void test_nodes(void) {
  printf("the nodes programs expect:\n");
  static const char* const names[] = {"null", "zero", "full", "random", "urandom", "tty", "console",
                                      "kmsg", "ptmx", "pts", "shm", "fd", "stdin", "stdout", "stderr"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[64];
    snprintf(path, sizeof path, "/dev/%s", names[i]);
    struct stat st;
    CHECK(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
  }
  struct stat st;
  CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3 &&
            (st.st_mode & 07777) == 0666,
        "null: mode %o rdev %lx", st.st_mode, (unsigned long)st.st_rdev);
  CHECK(stat("/dev/shm", &st) == 0 && (st.st_mode & 07777) == 01777);
  char target[64] = "";
  CHECK(readlink("/dev/fd", target, sizeof target - 1) > 0 && strcmp(target, "/proc/self/fd") == 0, "%s", target);
  int fd = open("/dev/null", O_RDWR);
  char c;
  CHECK(fd >= 0 && write(fd, "x", 1) == 1 && read(fd, &c, 1) == 0);
  close(fd);
  DIR* d = opendir("/dev");
  int seen = 0;
  for (struct dirent* e; d && (e = readdir(d));) seen += strcmp(e->d_name, "urandom") == 0;
  if (d) closedir(d);
  CHECK(seen == 1, "urandom listed %d times", seen);
}

static void test_root_changes(void) {
  printf("root makes, changes and removes nodes:\n");
  CHECK(mkdir("/dev/mqueue-dir", 0755) == 0, "%s", strerror(errno));
  CHECK(rmdir("/dev/mqueue-dir") == 0);
  CHECK(mknod("/dev/mynull", S_IFCHR | 0600, makedev(1, 3)) == 0, "%s", strerror(errno));
  int fd = open("/dev/mynull", O_WRONLY);
  CHECK(fd >= 0 && write(fd, "abc", 3) == 3, "%s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK(mknod("/dev/nothing", S_IFCHR | 0600, makedev(99, 99)) == 0);
  CHECK_ERR(open("/dev/nothing", O_RDONLY), ENXIO);
  CHECK(unlink("/dev/nothing") == 0);
  CHECK(symlink("/dev/mynull", "/dev/alias") == 0);
  struct stat st;
  CHECK(stat("/dev/alias", &st) == 0 && S_ISCHR(st.st_mode));
  CHECK(unlink("/dev/alias") == 0 && unlink("/dev/mynull") == 0);
  CHECK(chmod("/dev/null", 0600) == 0 && chown("/dev/null", 65534, 65534) == 0);
  CHECK(stat("/dev/null", &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == 65534 && st.st_gid == 65534);
  CHECK(chmod("/dev/null", 0666) == 0 && chown("/dev/null", 0, 0) == 0);
  CHECK(stat("/dev/null", &st) == 0 && (st.st_mode & 07777) == 0666 && st.st_uid == 0);
}

// A device's open file has its node's inode (ttyname and getty compare
// fstat of the descriptor with stat of the node), and fchmod/fchown of
// the descriptor change the node.
static void test_open_node_is_the_inode(void) {
  printf("an open device is its node:\n");
  REQUIRE(mknod("/dev/mine", S_IFCHR | 0640, makedev(1, 3)) == 0, "%s", strerror(errno));
  int fd = open("/dev/mine", O_RDWR);
  REQUIRE(fd >= 0, "%s", strerror(errno));
  struct stat by_fd, by_path;
  CHECK(fstat(fd, &by_fd) == 0 && stat("/dev/mine", &by_path) == 0);
  CHECK(by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino && by_fd.st_mode == by_path.st_mode,
        "fstat dev %lx ino %lu mode %o, stat dev %lx ino %lu mode %o", (unsigned long)by_fd.st_dev,
        (unsigned long)by_fd.st_ino, by_fd.st_mode, (unsigned long)by_path.st_dev, (unsigned long)by_path.st_ino,
        by_path.st_mode);
  CHECK(fchmod(fd, 0620) == 0 && fchown(fd, 65534, 5) == 0, "%s", strerror(errno));
  CHECK(stat("/dev/mine", &by_path) == 0 && (by_path.st_mode & 07777) == 0620 && by_path.st_uid == 65534 &&
            by_path.st_gid == 5,
        "mode %o owner %u:%u", by_path.st_mode, by_path.st_uid, by_path.st_gid);
  CHECK(fstat(fd, &by_fd) == 0 && by_fd.st_uid == 65534);
  close(fd);
  CHECK(unlink("/dev/mine") == 0);
}

static void test_one_instance(void) {
  printf("every devtmpfs mount is the same instance:\n");
  CHECK(mkdir("/devtmpfs-again", 0755) == 0 || errno == EEXIST);
  REQUIRE(mount("devtmpfs", "/devtmpfs-again", "devtmpfs", 0, NULL) == 0, "mount: %s", strerror(errno));
  CHECK(mknod("/dev/seen-twice", S_IFCHR | 0600, makedev(1, 5)) == 0);
  struct stat st;
  CHECK(stat("/devtmpfs-again/seen-twice", &st) == 0 && S_ISCHR(st.st_mode));
  CHECK(unlink("/devtmpfs-again/seen-twice") == 0);
  CHECK(stat("/dev/seen-twice", &st) == -1 && errno == ENOENT);
  CHECK(umount("/devtmpfs-again") == 0);
  CHECK(stat("/dev/null", &st) == 0, "the instance went with a mount of it");
  rmdir("/devtmpfs-again");
}

int main(int argc, char** argv) {
  guest_name = "devtmpfs";
  setvbuf(stdout, NULL, _IONBF, 0);
  test_nodes();
  test_root_changes();
  test_open_node_is_the_inode();
  test_one_instance();
  int failures = guest_finish();
  if (argc > 1 && strcmp(argv[1], "--init") == 0 && failures == 0) {
    sync();
    syscall(SYS_reboot, 0xfee1dead, 672274793, 0x4321fedc, NULL);  // power off
  }
  return failures;
}
