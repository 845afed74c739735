// tmpfs: files, sparse data, every namespace call and its errors, FIFOs and
// device nodes, O_TMPFILE, timestamps, permissions as an unprivileged
// user, and the size= / nr_inodes= limits. argv[1] is a scratch folder
// (empty, removed afterwards); a tmpfs is mounted on it for the run.
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest_check.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#endif

static char mnt[PATH_MAX];

static void unmount_scratch(void) { umount2(mnt, MNT_DETACH); }

static int renameat2_(const char* a, const char* b, unsigned flags) {
  return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static void write_file(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0, "%s: %s", path, strerror(errno));
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
}

static int time_after(struct timespec a, struct timespec b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

// Sets a path's times a day back so any later update is visible.
static void age(const char* path) {
  struct timespec old[2] = {{time(NULL) - 86400, 0}, {time(NULL) - 86400, 0}};
  CHECK_OK(utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW));
}

static void test_data(void) {
  puts("data: read/write, sparse files, seek data/hole, truncate, append");
  int fd = open("data", O_RDWR | O_CREAT | O_EXCL, 0640);
  REQUIRE(fd >= 0);
  CHECK_ERR(open("data", O_RDWR | O_CREAT | O_EXCL, 0640), EEXIST);
  CHECK(write(fd, "hello", 5) == 5);
  CHECK(pwrite(fd, "far", 3, 1 << 20) == 3);
  struct stat st;
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_size == (1 << 20) + 3);
  CHECK(st.st_blocks <= 16, "sparse file has %ld blocks", (long)st.st_blocks);
  CHECK((st.st_mode & 07777) == 0640);
  char buf[16] = {0};
  CHECK(pread(fd, buf, 8, (1 << 20) - 5) == 8);
  CHECK(memcmp(buf, "\0\0\0\0\0far", 8) == 0);
  CHECK(lseek(fd, 0, SEEK_DATA) == 0);
  CHECK(lseek(fd, 0, SEEK_HOLE) == 4096);
  CHECK(lseek(fd, 8192, SEEK_DATA) == 1 << 20);
  CHECK_ERR(lseek(fd, (1 << 20) + 3, SEEK_DATA), ENXIO);
  CHECK_ERR(lseek(fd, -1, SEEK_SET), EINVAL);
  CHECK(lseek(fd, 0, SEEK_END) == (1 << 20) + 3);
  CHECK_OK(ftruncate(fd, 3));
  CHECK_OK(ftruncate(fd, 10));
  CHECK(pread(fd, buf, 16, 0) == 10);
  CHECK(memcmp(buf, "hel\0\0\0\0\0\0\0", 10) == 0);
  CHECK_ERR(ftruncate(fd, -1), EINVAL);
  close(fd);

  fd = open("data", O_WRONLY | O_APPEND);
  CHECK(lseek(fd, 0, SEEK_SET) == 0);
  CHECK(write(fd, "!", 1) == 1);
  CHECK(lseek(fd, 0, SEEK_CUR) == 11);
  close(fd);
  CHECK_OK(truncate("data", 0));
  CHECK_OK(stat("data", &st));
  CHECK(st.st_size == 0 && st.st_blocks == 0);

  // MAP_PRIVATE sees the file's contents; writes stay private.
  write_file("mapped", "mapped contents");
  fd = open("mapped", O_RDWR);
  char* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  REQUIRE(p != MAP_FAILED, "%s", strerror(errno));
  CHECK(memcmp(p, "mapped contents", 15) == 0 && p[15] == 0);
  p[0] = 'M';
  CHECK(pread(fd, buf, 1, 0) == 1 && buf[0] == 'm');
  munmap(p, 4096);
  close(fd);
}

static void test_dirs_and_names(void) {
  puts("names: mkdir, rmdir, unlink, link, symlink errors");
  CHECK_OK(mkdir("d", 0755));
  CHECK_ERR(mkdir("d", 0755), EEXIST);
  CHECK_ERR(mkdir("missing/x", 0755), ENOENT);
  write_file("d/f", "x");
  CHECK_ERR(mkdir("d/f/x", 0755), ENOTDIR);
  CHECK_ERR(open("d/f/", O_RDONLY), ENOTDIR);
  CHECK_ERR(unlink("d"), EISDIR);
  CHECK_ERR(rmdir("d/f"), ENOTDIR);
  CHECK_ERR(rmdir("d"), ENOTEMPTY);
  CHECK_ERR(open("d", O_WRONLY), EISDIR);
  CHECK_ERR(unlink("nothing"), ENOENT);
  CHECK_ERR(open("not-made", O_CREAT | O_DIRECTORY | O_RDWR, 0644), EINVAL);
  CHECK_ERR(access("not-made", F_OK), ENOENT);
  char longname[300];
  memset(longname, 'n', 256);
  longname[256] = 0;
  CHECK_ERR(mkdir(longname, 0755), ENAMETOOLONG);
  longname[255] = 0;
  CHECK_OK(mkdir(longname, 0755));
  CHECK_OK(rmdir(longname));

  struct stat st;
  CHECK_OK(mkdir("d/sub", 0700));
  CHECK_OK(stat("d", &st));
  CHECK(st.st_nlink == 3, "nlink %ld", (long)st.st_nlink);

  CHECK_OK(link("d/f", "d/f2"));
  CHECK_OK(stat("d/f", &st));
  CHECK(st.st_nlink == 2);
  CHECK_ERR(link("d/f", "d/f2"), EEXIST);
  CHECK_ERR(link("d", "d2"), EPERM);
  CHECK_OK(unlink("d/f2"));
  CHECK_OK(stat("d/f", &st));
  CHECK(st.st_nlink == 1);

  CHECK_OK(symlink("d/f", "rel"));
  CHECK_OK(symlink("sub/../f", "d/link"));
  char buf[64] = {0};
  CHECK(readlink("d/link", buf, sizeof buf) == 8 && memcmp(buf, "sub/../f", 8) == 0);
  CHECK_OK(lstat("d/link", &st));
  CHECK(S_ISLNK(st.st_mode) && st.st_size == 8);
  CHECK_OK(stat("d/link", &st));
  CHECK(S_ISREG(st.st_mode));
  CHECK_ERR(readlink("d/f", buf, sizeof buf), EINVAL);
  CHECK_ERR(symlink("x", "rel"), EEXIST);
  CHECK_OK(symlink("loop2", "loop1"));
  CHECK_OK(symlink("loop1", "loop2"));
  CHECK_ERR(open("loop1", O_RDONLY), ELOOP);
  CHECK_ERR(open("rel", O_RDONLY | O_NOFOLLOW), ELOOP);
  CHECK_OK(symlink("created-through-link", "dangling"));
  int fd = open("dangling", O_WRONLY | O_CREAT, 0600);
  CHECK(fd >= 0);
  close(fd);
  CHECK_OK(stat("created-through-link", &st));
  CHECK_ERR(open("dangling", O_WRONLY | O_CREAT | O_EXCL, 0600), EEXIST);
  CHECK_OK(rmdir("d/sub"));
  CHECK_OK(stat("d", &st));
  CHECK(st.st_nlink == 2);
}

static void test_rename(void) {
  puts("rename: replace, type clashes, own subtree, noreplace, exchange, EXDEV");
  CHECK_OK(mkdir("r", 0755));
  CHECK_OK(mkdir("r/a", 0755));
  CHECK_OK(mkdir("r/a/b", 0755));
  CHECK_OK(mkdir("r/empty", 0755));
  write_file("r/f", "f");
  write_file("r/g", "g");
  CHECK_ERR(rename("r/a", "r/a/b/c"), EINVAL);
  CHECK_ERR(rename("r/a", "r/f"), ENOTDIR);
  CHECK_ERR(rename("r/f", "r/a"), EISDIR);
  CHECK_ERR(rename("r/empty", "r/a"), ENOTEMPTY);
  CHECK_ERR(rename("r/none", "r/x"), ENOENT);
  CHECK_ERR(renameat2_("r/f", "r/g", RENAME_NOREPLACE), EEXIST);
  CHECK_ERR(renameat2_("r/f", "r/none", RENAME_EXCHANGE), ENOENT);
  CHECK_ERR(renameat2_("r/f", "r/g", RENAME_EXCHANGE | RENAME_NOREPLACE), EINVAL);
  CHECK_OK(renameat2_("r/f", "r/a/b", RENAME_EXCHANGE));
  struct stat st;
  CHECK_OK(stat("r/f", &st));
  CHECK(S_ISDIR(st.st_mode));
  CHECK_OK(stat("r/a/b", &st));
  CHECK(S_ISREG(st.st_mode));
  CHECK_OK(renameat2_("r/f", "r/a/b", RENAME_EXCHANGE));
  CHECK_OK(rename("r/a", "r/empty"));  // an empty directory is replaced
  CHECK_OK(stat("r/empty/b", &st));
  CHECK_ERR(stat("r/a", &st), ENOENT);
  CHECK_OK(rename("r/g", "r/f"));
  char c = 0;
  int fd = open("r/f", O_RDONLY);
  CHECK(read(fd, &c, 1) == 1 && c == 'g');
  close(fd);
  CHECK_OK(link("r/f", "r/f-link"));
  CHECK_OK(rename("r/f", "r/f-link"));  // two names of one file: nothing happens
  CHECK_OK(stat("r/f", &st));

  // A directory descriptor follows its directory through a rename.
  int dfd = open("r/empty", O_RDONLY | O_DIRECTORY);
  CHECK(dfd >= 0);
  CHECK_OK(rename("r/empty", "r/moved"));
  CHECK_OK(mkdirat(dfd, "made-after", 0755));
  CHECK_OK(stat("r/moved/made-after", &st));
  close(dfd);

  CHECK_OK(mkdir("other", 0755));
  CHECK_OK(mount("none", "other", "tmpfs", 0, "size=64k"));
  CHECK_ERR(rename("r/f", "other/f"), EXDEV);
  CHECK_ERR(link("r/f", "other/f"), EXDEV);
  CHECK_OK(umount("other"));
}

static void test_getdents(void) {
  puts("getdents64: a listing survives unlinks in the middle");
  CHECK_OK(mkdir("many", 0755));
  char name[300];
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "many/e%02d", i);
    write_file(name, "");
  }
  int fd = open("many", O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  int seen[40] = {0};
  char buf[200];  // a few entries per call
  long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
  CHECK(n > 0);
  int first_batch = 0;
  for (long off = 0; off < n;) {
    struct dirent64* d = (struct dirent64*)(buf + off);
    int i;
    if (sscanf(d->d_name, "e%d", &i) == 1) {
      seen[i]++;
      first_batch++;
      snprintf(name, sizeof name, "many/%s", d->d_name);
      CHECK_OK(unlink(name));  // already listed: removing it must not shift the cursor
    }
    off += d->d_reclen;
  }
  int dead = 0;  // one entry not listed yet: removed now, it must never appear
  while (seen[dead]) dead++;
  snprintf(name, sizeof name, "many/e%02d", dead);
  CHECK_OK(unlink(name));
  for (;;) {
    n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct dirent64* d = (struct dirent64*)(buf + off);
      int i;
      if (sscanf(d->d_name, "e%d", &i) == 1) seen[i]++;
      off += d->d_reclen;
    }
  }
  CHECK(n == 0);
  int once = 0;
  for (int i = 0; i < 40; i++) {
    CHECK(seen[i] <= 1, "e%02d listed %d times", i, seen[i]);
    once += seen[i] == 1;
  }
  CHECK(seen[dead] == 0);
  CHECK(once == 39, "%d of 39 listed (first call %d)", once, first_batch);
  close(fd);
  fd = open("many", O_RDONLY | O_DIRECTORY);
  CHECK_ERR(syscall(SYS_getdents64, fd, buf, 8), EINVAL);  // not even one entry fits
  close(fd);
}

static void test_special_files(void) {
  puts("special files: FIFO, character device, socket node, O_TMPFILE");
  CHECK_OK(mkfifo("fifo", 0644));
  struct stat st;
  CHECK_OK(stat("fifo", &st));
  CHECK(S_ISFIFO(st.st_mode));
  CHECK_ERR(open("fifo", O_WRONLY | O_NONBLOCK), ENXIO);
  int rd = open("fifo", O_RDONLY | O_NONBLOCK);
  int wr = open("fifo", O_WRONLY | O_NONBLOCK);
  CHECK(rd >= 0 && wr >= 0);
  CHECK(write(wr, "pipe", 4) == 4);
  char buf[8] = {0};
  CHECK(read(rd, buf, sizeof buf) == 4 && memcmp(buf, "pipe", 4) == 0);
  CHECK_OK(fstat(rd, &st));
  CHECK(S_ISFIFO(st.st_mode));
  close(wr);
  CHECK(read(rd, buf, sizeof buf) == 0);
  close(rd);

  CHECK_OK(mknod("null", S_IFCHR | 0666, makedev(1, 3)));
  CHECK_OK(stat("null", &st));
  CHECK(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);
  int fd = open("null", O_RDWR);
  CHECK(fd >= 0);
  CHECK(write(fd, "gone", 4) == 4);
  CHECK(read(fd, buf, 4) == 0);
  close(fd);
  CHECK_OK(mknod("sock", S_IFSOCK | 0644, 0));
  CHECK_OK(stat("sock", &st));
  CHECK(S_ISSOCK(st.st_mode));
  CHECK_ERR(mknod("bad", 0170000 | 0644, 0), EINVAL);

  fd = open(".", O_TMPFILE | O_RDWR, 0600);
  REQUIRE(fd >= 0, "O_TMPFILE: %s", strerror(errno));
  CHECK(write(fd, "temp", 4) == 4);
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_nlink == 0 && S_ISREG(st.st_mode));
  CHECK_OK(linkat(fd, "", AT_FDCWD, "from-tmpfile", AT_EMPTY_PATH));
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_nlink == 1);
  close(fd);
  fd = open("from-tmpfile", O_RDONLY);
  CHECK(read(fd, buf, 8) == 4 && memcmp(buf, "temp", 4) == 0);
  close(fd);
  fd = open(".", O_TMPFILE | O_RDWR | O_EXCL, 0600);
  CHECK(fd >= 0);
  CHECK_ERR(linkat(fd, "", AT_FDCWD, "never", AT_EMPTY_PATH), ENOENT);
  close(fd);
  CHECK_ERR(open("data", O_TMPFILE | O_RDWR, 0600), ENOTDIR);
  CHECK_ERR(open(".", O_TMPFILE | O_RDONLY, 0600), EINVAL);
}

static void test_times_and_attrs(void) {
  puts("timestamps and attributes");
  struct stat before, after;
  CHECK_OK(mkdir("t", 0755));
  age("t");
  CHECK_OK(stat("t", &before));
  write_file("t/f", "1");
  CHECK_OK(stat("t", &after));
  CHECK(time_after(after.st_mtim, before.st_mtim) && time_after(after.st_ctim, before.st_ctim));

  age("t/f");
  CHECK_OK(stat("t/f", &before));
  int fd = open("t/f", O_WRONLY);
  CHECK(write(fd, "2", 1) == 1);
  close(fd);
  CHECK_OK(stat("t/f", &after));
  CHECK(time_after(after.st_mtim, before.st_mtim));
  CHECK(time_after(after.st_ctim, before.st_ctim));
  CHECK(after.st_atim.tv_sec == before.st_atim.tv_sec);  // a write leaves atime alone

  age("t/f");
  fd = open("t/f", O_RDONLY);
  char c;
  CHECK(read(fd, &c, 1) == 1);
  close(fd);
  CHECK_OK(stat("t/f", &after));
  CHECK(after.st_atim.tv_sec > time(NULL) - 3600, "relatime: an old atime moves on read");
  // An atime newer than mtime and ctime (and not a day old) stays.
  struct timespec newer[2] = {{time(NULL) + 3600, 0}, {time(NULL) - 86400, 0}};
  CHECK_OK(utimensat(AT_FDCWD, "t/f", newer, 0));
  fd = open("t/f", O_RDONLY);
  CHECK(read(fd, &c, 1) == 1);
  close(fd);
  CHECK_OK(stat("t/f", &after));
  CHECK(after.st_atim.tv_sec == newer[0].tv_sec, "relatime: a recent atime stays");

  CHECK_OK(mkdir("strict", 0755));
  CHECK_OK(mount("none", "strict", "tmpfs", MS_STRICTATIME, "size=64k"));
  write_file("strict/f", "s");
  fd = open("strict/f", O_RDONLY);
  CHECK(read(fd, &c, 1) == 1);  // atime now after mtime
  CHECK_OK(fstat(fd, &before));
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  CHECK(pread(fd, &c, 1, 0) == 1);
  CHECK_OK(fstat(fd, &after));
  CHECK(time_after(after.st_atim, before.st_atim), "strictatime: every read moves atime");
  close(fd);
  CHECK_OK(umount("strict"));

  CHECK_OK(stat("t/f", &before));
  CHECK_OK(chmod("t/f", 04751));
  CHECK_OK(chown("t/f", 123, 456));
  CHECK_OK(stat("t/f", &after));
  CHECK((after.st_mode & 07777) == 0751, "chown clears setuid: %o", after.st_mode & 07777);
  CHECK(after.st_uid == 123 && after.st_gid == 456);
  struct timespec set[2] = {{1000, 5}, {2000, 7}};
  CHECK_OK(utimensat(AT_FDCWD, "t/f", set, 0));
  CHECK_OK(stat("t/f", &after));
  CHECK(after.st_atim.tv_sec == 1000 && after.st_atim.tv_nsec == 5);
  CHECK(after.st_mtim.tv_sec == 2000 && after.st_mtim.tv_nsec == 7);
  CHECK(after.st_ctim.tv_sec > 2000);
}

// What an unprivileged user may not do; runs in a vfork child so only the
// child changes identity. Results come back through shared memory.
static void test_unprivileged(void) {
  puts("as uid 65534: EACCES and EPERM");
  CHECK_OK(mkdir("p", 0755));
  CHECK_OK(mkdir("p/sticky", 0));
  CHECK_OK(chmod("p/sticky", 01777));  // mkdir's mode goes through the umask
  CHECK_OK(mkdir("p/closed", 0700));
  write_file("p/sticky/roots", "r");
  write_file("p/secret", "s");
  CHECK_OK(chmod("p/secret", 0600));
  static volatile long res[10];
  static volatile int errs[10];
  pid_t pid = vfork();
  if (pid == 0) {
    long i = 0;
#define TRY(expr) (res[i] = (long)(expr), errs[i] = errno, i++)
    if (syscall(SYS_setresuid, 65534, 65534, 65534) != 0) _exit(3);
    TRY(syscall(SYS_mkdirat, AT_FDCWD, "p/new", 0755));
    TRY(syscall(SYS_openat, AT_FDCWD, "p/secret", O_RDONLY));
    TRY(syscall(SYS_unlinkat, AT_FDCWD, "p/sticky/roots", 0));
    TRY(syscall(SYS_fchmodat, AT_FDCWD, "p/secret", 0777));
    TRY(syscall(SYS_openat, AT_FDCWD, "p/closed/x", O_RDONLY));
    TRY(syscall(SYS_mkdirat, AT_FDCWD, "p/sticky/mine", 0755));
    TRY(syscall(SYS_renameat, AT_FDCWD, "p/sticky/roots", AT_FDCWD, "p/sticky/stolen"));
    TRY(syscall(SYS_mount, "none", "p", "tmpfs", 0, 0));
    TRY(syscall(SYS_umount2, mnt, 0));
    TRY(syscall(SYS_linkat, AT_FDCWD, "p/secret", AT_FDCWD, "p/sticky/hard", 0));
#undef TRY
    _exit(0);
  }
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
  static const int want[10] = {EACCES, EACCES, EPERM, EPERM, EACCES, 0, EPERM, EPERM, EPERM, EPERM};
  static const char* what[10] = {"mkdir in root's 0755 dir", "open root's 0600 file",
                                 "unlink another's file in a sticky dir", "chmod another's file",
                                 "walk through a 0700 dir", "mkdir in a sticky 1777 dir",
                                 "rename another's file in a sticky dir", "mount",
                                 "umount2", "link another's unreadable file"};
  for (int i = 0; i < 10; i++) {
    if (want[i] == 0)
      CHECK(res[i] == 0, "%s: %ld errno %d", what[i], res[i], errs[i]);
    else
      CHECK(res[i] == -1 && errs[i] == want[i], "%s: %ld errno %d (%s), want %s", what[i], res[i],
            errs[i], strerror(errs[i]), strerror(want[i]));
  }
  struct stat st;
  CHECK_OK(stat("p/sticky/mine", &st));
  CHECK(st.st_uid == 65534);
}

// Copies this program onto tmpfs and runs it from there ("--exit-42").
static int run_copy(const char* path) {
  int in = open("/proc/self/exe", O_RDONLY);
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  if (in < 0 || out < 0) return -1;
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) return -1;
  close(in);
  close(out);
  pid_t pid = vfork();
  if (pid == 0) {
    char* argv[] = {(char*)path, "--exit-42", NULL};
    execv(path, argv);
    _exit(errno == EACCES ? 77 : 99);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

static void test_exec_and_shared_maps(void) {
  puts("exec from tmpfs, noexec mounts, MAP_SHARED");
  int r = run_copy("copy");
  CHECK(r == 42, "the copy exited %d", r);
  CHECK_OK(mkdir("noexec", 0755));
  CHECK_OK(mount("none", "noexec", "tmpfs", MS_NOEXEC, "size=16m"));
  r = run_copy("noexec/copy");
  CHECK(r == 77, "exec on a noexec mount: %d, want EACCES", r);
  CHECK_OK(umount("noexec"));
  CHECK_OK(unlink("copy"));

  // A shared mapping and the file are the same memory, both ways.
  write_file("shared", "0123456789");
  int fd = open("shared", O_RDWR);
  REQUIRE(fd >= 0);
  char* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(p != MAP_FAILED, "MAP_SHARED: %s", strerror(errno));
  CHECK(memcmp(p, "0123456789", 10) == 0);
  p[0] = 'X';
  char buf[4] = {0};
  CHECK(pread(fd, buf, 1, 0) == 1 && buf[0] == 'X');
  CHECK(pwrite(fd, "Y", 1, 1) == 1);
  CHECK(p[1] == 'Y');
  struct stat st;
  CHECK_OK(fstat(fd, &st));
  CHECK(st.st_size == 10 && st.st_blocks == 8, "size %ld blocks %ld", (long)st.st_size, (long)st.st_blocks);
  munmap(p, 4096);
  close(fd);
  fd = open("shared", O_RDONLY);
  CHECK(read(fd, buf, 3) == 3 && memcmp(buf, "XY2", 3) == 0);
  close(fd);
}

static void test_limits(void) {
  puts("limits: size= and nr_inodes= give ENOSPC; statfs counts");
  CHECK_OK(mkdir("lim", 0755));
  CHECK_OK(mount("none", "lim", "tmpfs", 0, "size=64k,nr_inodes=8"));
  struct statfs sf;
  CHECK_OK(statfs("lim", &sf));
  CHECK(sf.f_type == TMPFS_MAGIC);
  CHECK(sf.f_bsize == 4096 && sf.f_blocks == 16 && sf.f_bfree == 16);
  CHECK(sf.f_files == 8 && sf.f_namelen == 255);
  int fd = open("lim/big", O_WRONLY | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  char block[4096];
  memset(block, 'b', sizeof block);
  int written = 0;
  while (write(fd, block, sizeof block) == (ssize_t)sizeof block) written++;
  CHECK(written == 16, "wrote %d pages", written);
  CHECK_ERR(write(fd, block, 1), ENOSPC);
  CHECK_OK(fstatfs(fd, &sf));
  CHECK(sf.f_bfree == 0);
  CHECK_ERR(fallocate(fd, 0, 1 << 20, 4096), ENOSPC);
  CHECK_OK(ftruncate(fd, 0));
  CHECK_OK(fstatfs(fd, &sf));
  CHECK(sf.f_bfree == 16);
  close(fd);
  char name[32];
  int made = 0;
  for (;; made++) {
    snprintf(name, sizeof name, "lim/n%d", made);
    fd = open(name, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) break;
    close(fd);
  }
  CHECK(errno == ENOSPC && made == 6, "made %d: %s", made, strerror(errno));  // root and big hold 2
  CHECK_ERR(mkdir("lim/dir", 0755), ENOSPC);
  CHECK_OK(umount("lim"));
}

static const char* at_mnt(const char* rel) {
  static char bufs[4][PATH_MAX];
  static int next;
  char* b = bufs[next++ % 4];
  snprintf(b, PATH_MAX, "%s/%s", mnt, rel);
  return b;
}

// A lazily unmounted tmpfs lives on while a cwd is inside it: names are
// found and made there, and it goes when the cwd leaves (nothing it held,
// cached names included, outlives it).
static void test_detached_cwd(void) {
  puts("umount2(MNT_DETACH) with the cwd inside, then leaving it");
  REQUIRE(mount("none", mnt, "tmpfs", 0, "size=1m") == 0, "mount: %s", strerror(errno));
  REQUIRE(mkdir(at_mnt("d"), 0755) == 0 && mkdir(at_mnt("d/sub"), 0755) == 0);
  write_file(at_mnt("d/sub/f"), "kept");
  REQUIRE(chdir(at_mnt("d")) == 0);
  struct stat st;
  CHECK_OK(stat("sub/f", &st));  // cached by the walk
  CHECK_OK(umount2(mnt, MNT_DETACH));
  CHECK_OK(stat("sub/f", &st));
  CHECK(st.st_size == 4, "sub/f has %lld bytes", (long long)st.st_size);
  int fd = open("sub/new", O_CREAT | O_WRONLY, 0644);
  CHECK(fd >= 0, "create in the detached tree: %s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_OK(stat("../d/sub/new", &st));
  CHECK_OK(unlink("sub/f"));
  CHECK_ERR(stat("sub/f", &st), ENOENT);
  REQUIRE(chdir("/") == 0);  // the last reference: the tmpfs goes
  CHECK_ERR(stat(at_mnt("d"), &st), ENOENT);
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--exit-42") == 0) return 42;  // run_copy's child
  guest_name = "tmpfs";
  REQUIRE(argc == 2, "usage: tmpfs SCRATCH_DIR");
  REQUIRE(realpath(argv[1], mnt));
  REQUIRE(mount("none", mnt, "tmpfs", 0, "size=4m,nr_inodes=1000,mode=755") == 0, "mount: %s",
          strerror(errno));
  atexit(unmount_scratch);
  REQUIRE(chdir(mnt) == 0);
  struct stat st;
  CHECK_OK(stat(".", &st));
  CHECK((st.st_mode & 07777) == 0755 && st.st_uid == 0 && st.st_nlink == 2);

  test_data();
  test_dirs_and_names();
  test_rename();
  test_getdents();
  test_special_files();
  test_times_and_attrs();
  test_unprivileged();
  test_exec_and_shared_maps();
  test_limits();

  puts("umount: busy while the cwd is inside");
  CHECK_ERR(umount(mnt), EBUSY);
  REQUIRE(chdir("/") == 0);
  CHECK_OK(umount(mnt));
  test_detached_cwd();
  return guest_finish();
}
