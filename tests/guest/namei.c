// The namespace calls on a scratch folder: mkdir, mknod, unlink, rmdir,
// symlink, link, rename (and their *at forms), the attribute calls,
// truncate, fsync, chroot, with their error cases, as root and as an
// ordinary user. argv[1]: an empty scratch folder.
#include "guest_check.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[PATH_MAX];

static const char* at(const char* name) {
  static char buf[4][PATH_MAX];
  static int i;
  char* b = buf[i++ % 4];
  snprintf(b, PATH_MAX, "%s/%s", dir, name);
  return b;
}

static void make_file(const char* name, const char* text) {
  int fd = open(at(name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  REQUIRE(fd >= 0, "create %s: %s", name, strerror(errno));
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
}

static void read_file(const char* name, char* out, size_t n) {
  int fd = open(at(name), O_RDONLY);
  out[0] = 0;
  if (fd < 0) return;
  ssize_t r = read(fd, out, n - 1);
  out[r > 0 ? r : 0] = 0;
  close(fd);
}

static void test_mkdir_rmdir(void) {
  printf("mkdir/rmdir\n");
  CHECK_OK(syscall(SYS_mkdir, at("d"), 0755));
  CHECK_ERR(syscall(SYS_mkdir, at("d"), 0755), EEXIST);
  CHECK_ERR(syscall(SYS_mkdir, at("none/x"), 0755), ENOENT);
  make_file("f", "x");
  CHECK_ERR(syscall(SYS_mkdir, at("f/x"), 0755), ENOTDIR);
  CHECK_ERR(syscall(SYS_mkdir, "", 0755), ENOENT);
  struct stat st;
  CHECK_OK(stat(at("d"), &st));
  CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == (0755 & ~022), "mode %o", st.st_mode);
  CHECK_OK(syscall(SYS_mkdir, at("d/sub"), 0700));
  CHECK_ERR(syscall(SYS_rmdir, at("d")), ENOTEMPTY);
  CHECK_ERR(syscall(SYS_rmdir, at("f")), ENOTDIR);
  CHECK_ERR(syscall(SYS_rmdir, at("d/sub/.")), EINVAL);
  CHECK_ERR(syscall(SYS_rmdir, at("nothing")), ENOENT);
  CHECK_OK(syscall(SYS_rmdir, at("d/sub/")));
  int dfd = open(at("d"), O_RDONLY | O_DIRECTORY);
  REQUIRE(dfd >= 0);
  CHECK_OK(syscall(SYS_mkdirat, dfd, "viafd", 0755));
  CHECK_OK(stat(at("d/viafd"), &st));
  CHECK_OK(syscall(SYS_unlinkat, dfd, "viafd", AT_REMOVEDIR));
  CHECK_ERR(syscall(SYS_unlinkat, dfd, "viafd", 0x1234), EINVAL);
  CHECK_ERR(syscall(SYS_mkdirat, 1000, "x", 0755), EBADF);
  int ffd = open(at("f"), O_RDONLY);
  CHECK_ERR(syscall(SYS_mkdirat, ffd, "x", 0755), ENOTDIR);
  close(ffd);
  close(dfd);
  char longname[300];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  CHECK_ERR(syscall(SYS_mkdir, at(longname), 0755), ENAMETOOLONG);
  CHECK_OK(syscall(SYS_rmdir, at("d")));
  CHECK_OK(unlink(at("f")));
}

static void test_unlink_link(void) {
  printf("unlink/link\n");
  make_file("a", "hello");
  CHECK_OK(syscall(SYS_link, at("a"), at("b")));
  struct stat st;
  CHECK_OK(stat(at("a"), &st));
  CHECK(st.st_nlink == 2, "nlink %lu", (unsigned long)st.st_nlink);
  CHECK_ERR(syscall(SYS_link, at("a"), at("b")), EEXIST);
  CHECK_ERR(syscall(SYS_link, at("missing"), at("c")), ENOENT);
  CHECK_OK(syscall(SYS_mkdir, at("dd"), 0755));
  CHECK_ERR(syscall(SYS_link, at("dd"), at("dd2")), EPERM);
  CHECK_ERR(syscall(SYS_unlink, at("dd")), EISDIR);
  CHECK_ERR(syscall(SYS_unlink, at("a/")), ENOTDIR);
  CHECK_OK(syscall(SYS_unlink, at("a")));
  char buf[32];
  read_file("b", buf, sizeof buf);
  CHECK(strcmp(buf, "hello") == 0, "b holds '%s'", buf);
  CHECK_ERR(syscall(SYS_unlink, at("a")), ENOENT);
  // linkat with AT_SYMLINK_FOLLOW links the target, without it the link.
  CHECK_OK(symlink("b", at("sl")));
  CHECK_OK(syscall(SYS_linkat, AT_FDCWD, at("sl"), AT_FDCWD, at("hard-to-b"), AT_SYMLINK_FOLLOW));
  CHECK_OK(syscall(SYS_linkat, AT_FDCWD, at("sl"), AT_FDCWD, at("hard-to-sl"), 0));
  CHECK_OK(lstat(at("hard-to-b"), &st));
  CHECK(S_ISREG(st.st_mode), "hard-to-b mode %o", st.st_mode);
  CHECK_OK(lstat(at("hard-to-sl"), &st));
  CHECK(S_ISLNK(st.st_mode), "hard-to-sl mode %o", st.st_mode);
  CHECK_ERR(syscall(SYS_linkat, AT_FDCWD, at("sl"), AT_FDCWD, at("x"), 0x8000), EINVAL);
  const char* names[] = {"b", "sl", "hard-to-b", "hard-to-sl"};
  for (int i = 0; i < 4; i++) CHECK_OK(unlink(at(names[i])));
  CHECK_OK(rmdir(at("dd")));
}

static void test_tmpfile(void) {
  printf("O_TMPFILE\n");
  int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
  if (fd < 0 && errno == EOPNOTSUPP) {
    printf("  the folder's filesystem has no O_TMPFILE: skipped\n");
    return;
  }
  REQUIRE(fd >= 0, "O_TMPFILE: %s", strerror(errno));
  CHECK(write(fd, "anon", 4) == 4);
  CHECK_OK(syscall(SYS_linkat, fd, "", AT_FDCWD, at("named"), AT_EMPTY_PATH));
  char buf[8];
  read_file("named", buf, sizeof buf);
  CHECK(strcmp(buf, "anon") == 0, "named '%s'", buf);
  CHECK_ERR(syscall(SYS_linkat, fd, "", AT_FDCWD, at("named"), AT_EMPTY_PATH), EEXIST);
  CHECK_ERR(syscall(SYS_linkat, AT_FDCWD, "", AT_FDCWD, at("x"), AT_EMPTY_PATH), EPERM);  // the cwd: a directory
  close(fd);
  CHECK_ERR(open(dir, O_TMPFILE | O_RDONLY, 0600), EINVAL);
  CHECK_OK(unlink(at("named")));
}

static void test_symlinks(void) {
  printf("symlinks\n");
  CHECK_OK(syscall(SYS_mkdir, at("real"), 0755));
  make_file("real/file", "data");
  CHECK_OK(syscall(SYS_symlink, "real", at("rel")));
  CHECK_OK(syscall(SYS_symlink, at("real/file"), at("abs")));
  CHECK_OK(syscall(SYS_symlink, "../real/file", at("real/up")));
  char buf[PATH_MAX];
  read_file("rel/file", buf, sizeof buf);
  CHECK(strcmp(buf, "data") == 0, "through rel: '%s'", buf);
  read_file("abs", buf, sizeof buf);
  CHECK(strcmp(buf, "data") == 0, "through abs: '%s'", buf);
  read_file("rel/up", buf, sizeof buf);
  CHECK(strcmp(buf, "data") == 0, "through rel/up: '%s'", buf);
  // ".." after a link is the parent of where the link leads, not the
  // folder holding the link.
  CHECK_OK(mkdir(at("real/sub"), 0755));
  CHECK_OK(symlink("real/sub", at("into-sub")));
  read_file("into-sub/../file", buf, sizeof buf);
  CHECK(strcmp(buf, "data") == 0, "through into-sub/..: '%s'", buf);
  struct stat lst;
  CHECK_ERR(stat(at("real/file/.."), &lst), ENOTDIR);
  CHECK_OK(unlink(at("into-sub")));
  CHECK_OK(rmdir(at("real/sub")));
  ssize_t n = readlink(at("rel"), buf, sizeof buf);
  CHECK(n == 4 && memcmp(buf, "real", 4) == 0);
  CHECK_ERR(readlink(at("real/file"), buf, sizeof buf), EINVAL);
  CHECK_ERR(syscall(SYS_symlink, "x", at("rel")), EEXIST);
  CHECK_ERR(syscall(SYS_symlink, "", at("empty")), ENOENT);
  CHECK_ERR(open(at("abs"), O_RDONLY | O_NOFOLLOW), ELOOP);
  CHECK_OK(syscall(SYS_symlink, "loop", at("loop")));
  CHECK_ERR(open(at("loop"), O_RDONLY), ELOOP);
  CHECK_ERR(open(at("loop/x"), O_RDONLY), ELOOP);
  // A chain of 41 links is one too many; 40 resolve.
  char name[32], target[32];
  for (int i = 0; i < 41; i++) {
    snprintf(name, sizeof name, "c%d", i);
    snprintf(target, sizeof target, i == 40 ? "real/file" : "c%d", i + 1);
    CHECK_OK(symlink(target, at(name)));
  }
  int fd = open(at("c1"), O_RDONLY);
  CHECK(fd >= 0, "40 links: %s", strerror(errno));
  close(fd);
  CHECK_ERR(open(at("c0"), O_RDONLY), ELOOP);
  for (int i = 0; i < 41; i++) {
    snprintf(name, sizeof name, "c%d", i);
    unlink(at(name));
  }
  // O_CREAT through a dangling link creates its target.
  CHECK_OK(symlink("made-by-link", at("dangling")));
  fd = open(at("dangling"), O_CREAT | O_WRONLY, 0600);
  CHECK(fd >= 0);
  close(fd);
  struct stat st;
  CHECK_OK(lstat(at("made-by-link"), &st));
  CHECK_ERR(open(at("dangling"), O_CREAT | O_EXCL | O_WRONLY, 0600), EEXIST);
  // lstat of a link, stat through it; a trailing slash follows it.
  CHECK_OK(lstat(at("rel"), &st));
  CHECK(S_ISLNK(st.st_mode));
  CHECK_OK(lstat(at("rel/"), &st));
  CHECK(S_ISDIR(st.st_mode), "rel/ mode %o", st.st_mode);
  CHECK_ERR(stat(at("real/file/"), &st), ENOTDIR);
  const char* names[] = {"real/file", "real/up", "rel", "abs", "loop", "dangling", "made-by-link"};
  for (int i = 0; i < 7; i++) CHECK_OK(unlink(at(names[i])));
  CHECK_OK(rmdir(at("real")));
}

static void test_rename(void) {
  printf("rename\n");
  make_file("r1", "one");
  make_file("r2", "two");
  CHECK_OK(syscall(SYS_rename, at("r1"), at("r3")));
  CHECK_ERR(syscall(SYS_rename, at("r1"), at("r4")), ENOENT);
  CHECK_ERR(syscall(SYS_renameat2, AT_FDCWD, at("r3"), AT_FDCWD, at("r2"), RENAME_NOREPLACE), EEXIST);
  CHECK_OK(syscall(SYS_renameat2, AT_FDCWD, at("r3"), AT_FDCWD, at("r2"), RENAME_EXCHANGE));
  char buf[16];
  read_file("r2", buf, sizeof buf);
  CHECK(strcmp(buf, "one") == 0, "r2 '%s'", buf);
  read_file("r3", buf, sizeof buf);
  CHECK(strcmp(buf, "two") == 0, "r3 '%s'", buf);
  CHECK_ERR(syscall(SYS_renameat2, AT_FDCWD, at("r3"), AT_FDCWD, at("r2"), RENAME_EXCHANGE | RENAME_NOREPLACE), EINVAL);
  CHECK_ERR(syscall(SYS_renameat2, AT_FDCWD, at("r3"), AT_FDCWD, at("nope"), RENAME_EXCHANGE), ENOENT);
  CHECK_OK(syscall(SYS_rename, at("r3"), at("r2")));  // replaces
  read_file("r2", buf, sizeof buf);
  CHECK(strcmp(buf, "two") == 0, "r2 '%s'", buf);
  CHECK_OK(mkdir(at("rd"), 0755));
  CHECK_OK(mkdir(at("rd/inner"), 0755));
  CHECK_ERR(syscall(SYS_rename, at("rd"), at("rd/inner/x")), EINVAL);
  CHECK_ERR(syscall(SYS_rename, at("r2"), at("rd")), EISDIR);
  CHECK_ERR(syscall(SYS_rename, at("rd"), at("r2")), ENOTDIR);
  make_file("rd/inner/f", "x");
  CHECK_OK(mkdir(at("empty"), 0755));
  CHECK_ERR(syscall(SYS_rename, at("empty"), at("rd")), ENOTEMPTY);
  CHECK_OK(syscall(SYS_rename, at("rd"), at("empty")));  // over an empty directory
  struct stat st;
  CHECK_OK(stat(at("empty/inner/f"), &st));
  CHECK_OK(unlink(at("empty/inner/f")));
  CHECK_OK(rmdir(at("empty/inner")));
  CHECK_OK(rmdir(at("empty")));
  CHECK_OK(unlink(at("r2")));
}

static void test_attributes(void) {
  printf("attributes\n");
  make_file("m", "0123456789");
  CHECK_OK(syscall(SYS_chmod, at("m"), 0640));
  struct stat st;
  CHECK_OK(stat(at("m"), &st));
  CHECK((st.st_mode & 07777) == 0640, "mode %o", st.st_mode);
  int fd = open(at("m"), O_RDWR);
  REQUIRE(fd >= 0);
  CHECK_OK(syscall(SYS_fchmod, fd, 0604));
  CHECK_OK(fstat(fd, &st));
  CHECK((st.st_mode & 07777) == 0604, "mode %o", st.st_mode);
  CHECK_OK(syscall(SYS_fchmodat, AT_FDCWD, at("m"), 0600));
  CHECK_OK(syscall(SYS_chown, at("m"), 1234, 5678));
  CHECK_OK(stat(at("m"), &st));
  CHECK(st.st_uid == 1234 && st.st_gid == 5678, "owner %u:%u", st.st_uid, st.st_gid);
  CHECK_OK(syscall(SYS_fchown, fd, -1, 0));
  CHECK_OK(stat(at("m"), &st));
  CHECK(st.st_uid == 1234 && st.st_gid == 0, "owner %u:%u", st.st_uid, st.st_gid);
  CHECK_OK(syscall(SYS_fchownat, fd, "", 0, -1, AT_EMPTY_PATH));
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_uid == 0, "uid %u", st.st_uid);
  // Times: explicit, omitted, now.
  struct timespec ts[2] = {{1000000000, 5}, {1100000000, 7}};
  CHECK_OK(syscall(SYS_utimensat, AT_FDCWD, at("m"), ts, 0));
  CHECK_OK(stat(at("m"), &st));
  CHECK(st.st_atim.tv_sec == 1000000000 && st.st_mtim.tv_sec == 1100000000 && st.st_mtim.tv_nsec == 7,
        "times %ld %ld.%ld", (long)st.st_atim.tv_sec, (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  struct timespec omit_now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  CHECK_OK(syscall(SYS_utimensat, fd, NULL, omit_now, 0));
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_atim.tv_sec == 1000000000 && st.st_mtim.tv_sec > 1600000000);
  struct timespec bad[2] = {{0, 2000000000}, {0, 0}};
  CHECK_ERR(syscall(SYS_utimensat, AT_FDCWD, at("m"), bad, 0), EINVAL);
  struct timeval tv[2] = {{1200000000, 0}, {1300000000, 0}};
  CHECK_OK(syscall(SYS_utimes, at("m"), tv));
  CHECK_OK(stat(at("m"), &st));
  CHECK(st.st_mtim.tv_sec == 1300000000);
  CHECK_ERR(syscall(SYS_utimensat, AT_FDCWD, at("missing"), NULL, 0), ENOENT);
  // Sizes.
  CHECK_OK(syscall(SYS_truncate, at("m"), 4));
  CHECK_OK(stat(at("m"), &st));
  CHECK(st.st_size == 4, "size %ld", (long)st.st_size);
  CHECK_OK(syscall(SYS_ftruncate, fd, 100000));
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_size == 100000, "size %ld", (long)st.st_size);
  CHECK_ERR(syscall(SYS_truncate, at("m"), (long)-1), EINVAL);
  CHECK_ERR(syscall(SYS_truncate, dir, 0), EISDIR);
  int ro = open(at("m"), O_RDONLY);
  CHECK_ERR(syscall(SYS_ftruncate, ro, 0), EINVAL);
  CHECK_ERR(syscall(SYS_fallocate, ro, 0, 0, 4096), EBADF);
  close(ro);
  CHECK_OK(syscall(SYS_fallocate, fd, 0, 0, 200000));
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_size == 200000, "size after fallocate %ld", (long)st.st_size);
  CHECK_OK(syscall(SYS_fsync, fd));
  CHECK_OK(syscall(SYS_fdatasync, fd));
  CHECK_OK(syscall(SYS_syncfs, fd));
  syscall(SYS_sync);
  CHECK_ERR(syscall(SYS_fsync, 999), EBADF);
  close(fd);
  CHECK_OK(syscall(SYS_mknod, at("fifo"), S_IFIFO | 0644, 0));
  CHECK_OK(stat(at("fifo"), &st));
  CHECK(S_ISFIFO(st.st_mode));
  CHECK_ERR(syscall(SYS_mknod, at("fifo"), S_IFIFO | 0644, 0), EEXIST);
  CHECK_ERR(syscall(SYS_mknod, at("bad"), 0170000 | 0644, 0), EINVAL);
  CHECK_OK(unlink(at("fifo")));
  CHECK_OK(unlink(at("m")));
}

// In a child: raw calls only (a vfork child shares the parent's memory).
static int child_as_user(void) {
  if (syscall(SYS_setresgid, 65534, 65534, 65534) || syscall(SYS_setresuid, 65534, 65534, 65534)) return 10;
  if (syscall(SYS_mkdir, at("locked/x"), 0755) != -1 || errno != EACCES) return 11;
  if (syscall(SYS_unlink, at("locked/f")) != -1 || errno != EACCES) return 12;
  if (syscall(SYS_open, at("locked/f"), O_RDONLY) != -1 || errno != EACCES) return 13;
  if (syscall(SYS_chmod, at("locked/f"), 0777) != -1 || errno != EPERM) return 14;
  if (syscall(SYS_chown, at("open/mine"), 0, 0) != -1 || errno != EPERM) return 15;
  if (syscall(SYS_unlink, at("open/theirs")) != -1 || errno != EPERM) return 16;  // sticky
  if (syscall(SYS_unlink, at("open/mine"))) return 17;
  if (syscall(SYS_chroot, dir) != -1 || errno != EPERM) return 18;
  if (syscall(SYS_utimensat, AT_FDCWD, at("locked/f"), NULL, 0) != -1 || errno != EACCES) return 19;
  return 0;
}

static void test_as_user(void) {
  printf("as an ordinary user\n");
  CHECK_OK(mkdir(at("locked"), 0700));
  make_file("locked/f", "secret");
  CHECK_OK(chmod(at("locked/f"), 0600));
  CHECK_OK(chmod(at("locked"), 0755));
  CHECK_OK(mkdir(at("open"), 01777));
  CHECK_OK(chmod(at("open"), 01777));
  make_file("open/theirs", "x");
  make_file("open/mine", "x");
  CHECK_OK(chown(at("open/mine"), 65534, 65534));
  pid_t pid = vfork();
  if (pid == 0) _exit(child_as_user());
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x (exit = failing step)", status);
  unlink(at("open/theirs"));
  unlink(at("open/mine"));
  rmdir(at("open"));
  unlink(at("locked/f"));
  rmdir(at("locked"));
}

static int child_chroot(void) {
  if (syscall(SYS_chroot, dir)) return 20;
  if (syscall(SYS_chdir, "/")) return 21;
  struct stat st;
  if (syscall(SYS_stat, "/inside", &st)) return 22;
  if (syscall(SYS_stat, "/../../inside", &st)) return 23;  // ".." stops at the root
  char cwd[64];
  if (syscall(SYS_getcwd, cwd, sizeof cwd) < 0 || strcmp(cwd, "/") != 0) return 24;
  if (syscall(SYS_symlink, "/inside", "/abs-link")) return 25;
  if (syscall(SYS_stat, "/abs-link", &st)) return 26;  // absolute targets start at the new root
  return 0;
}

static void test_chroot(void) {
  printf("chroot\n");
  make_file("inside", "x");
  pid_t pid = vfork();
  if (pid == 0) _exit(child_chroot());
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
  struct stat st;
  CHECK_OK(lstat(at("abs-link"), &st));
  unlink(at("abs-link"));
  unlink(at("inside"));
  CHECK_ERR(syscall(SYS_chroot, at("nothing")), ENOENT);
}

int main(int argc, char** argv) {
  guest_name = "namei";
  REQUIRE(argc == 2, "usage: namei SCRATCH_DIR");
  REQUIRE(realpath(argv[1], dir) != NULL);
  umask(022);
  REQUIRE(chmod(dir, 0755) == 0);  // searchable by the ordinary user below
  test_mkdir_rmdir();
  test_unlink_link();
  test_tmpfile();
  test_symlinks();
  test_rename();
  test_attributes();
  if (getuid() == 0) {
    test_as_user();
    test_chroot();
  } else {
    printf("not root: the ordinary-user and chroot cases need root to set up\n");
  }
  return guest_finish();
}
