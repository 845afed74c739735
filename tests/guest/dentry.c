// Names follow the objects they name: a cwd and open directories survive
// renames of themselves and of their ancestors, `..` is the parent the
// directory has now, a removed cwd is seen as removed, a walk racing a
// rename sees the old or the new name and nothing else, bind mounts follow
// their source, and openat2's RESOLVE_* flags confine a walk.
//
// Usage: dentry CASE [--tmpfs] DIR
//   CASE  cwd_rename | fd_rename | rmdir_cwd | cwd_removed_listing | rename_race | dotdot_moved |
//         bind_rename | openat2 | proc_links | rename_over_dir |
//         chroot_rename | mount_rename_race | chroot_proc_links |
//         chroot_removed | chroot_removed_listing | rmdir_mkdir | symlink_over | rename_cached |
//         host_rename (run by host_changes.py, which changes DIR meanwhile)
//   DIR   a scratch folder (the host folder, or an ext4 mount point);
//         --tmpfs mounts a tmpfs on it first. bind_rename, openat2,
//         mount_rename_race and --tmpfs mount, and the chroot_ cases
//         chroot, so they need root (exit 77 without it).
#define _GNU_SOURCE
#define GUEST_MOUNT_SCRATCH
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest_check.h"

#include "guest_at.h"

static int exists(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static ino_t ino_of(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_ino : 0;
}

static int make_file(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_CREAT | O_WRONLY | O_EXCL, 0644);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

// getcwd(2) itself: a libc may work around what the kernel says.
static long raw_getcwd(char* buf, size_t size) { return syscall(SYS_getcwd, buf, size); }

static void check_cwd(const char* want) {
  char buf[PATH_MAX] = "";
  long n = raw_getcwd(buf, sizeof buf);
  CHECK(n > 0 && strcmp(buf, want) == 0, "getcwd: got %ld '%s' (%s), want '%s'", n, buf,
        n < 0 ? strerror(errno) : "", want);
}

static void check_link(const char* link, const char* want) {
  char buf[PATH_MAX];
  ssize_t n = readlink(link, buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  CHECK(n > 0 && strcmp(buf, want) == 0, "readlink %s: got '%s' (%s), want '%s'", link, buf,
        n < 0 ? strerror(errno) : "", want);
}

// The cwd renamed, then an ancestor of it: getcwd follows, and relative
// creates land in the directory under its new name, not in a new
// directory that took the old one.
static void cwd_rename(void) {
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/a"), 0755) == 0);
  REQUIRE(chdir(at("p/a")) == 0);
  REQUIRE(rename(at("p/a"), at("p/b")) == 0);
  check_cwd(at("p/b"));
  CHECK_OK(make_file(AT_FDCWD, "g"));
  CHECK(exists(at("p/b/g")), "a relative create after the rename is not in p/b");
  REQUIRE(rename(at("p"), at("q")) == 0);
  check_cwd(at("q/b"));
  CHECK_OK(make_file(AT_FDCWD, "h"));
  CHECK(exists(at("q/b/h")), "a relative create after the ancestor's rename is not in q/b");
  // The old names taken by new directories: nothing goes there.
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/a"), 0755) == 0 && mkdir(at("q/a"), 0755) == 0);
  CHECK_OK(make_file(AT_FDCWD, "i"));
  CHECK_OK(mkdirat(AT_FDCWD, "sub", 0755));
  CHECK(exists(at("q/b/i")) && exists(at("q/b/sub")), "creates after the old names were reused");
  CHECK(!exists(at("p/a/i")) && !exists(at("q/a/i")) && !exists(at("p/a/sub")),
        "a create went to a new directory with the old name");
  check_cwd(at("q/b"));
  struct stat dot, there;
  CHECK(stat(".", &dot) == 0 && stat(at("q/b"), &there) == 0 && dot.st_ino == there.st_ino,
        "'.' is not q/b");
  REQUIRE(chdir("/") == 0);
}

// An open directory renamed, then an ancestor of it: the *at calls on it
// create in the directory under its new name; fchdir to it gives the new
// name.
static void fd_rename(void) {
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/a"), 0755) == 0);
  int dfd = open(at("p/a"), O_RDONLY | O_DIRECTORY);
  REQUIRE(dfd >= 0);
  int pfd = open(at("p/a"), O_PATH | O_DIRECTORY);
  REQUIRE(pfd >= 0);
  REQUIRE(rename(at("p/a"), at("p/b")) == 0);
  CHECK_OK(make_file(dfd, "g"));
  CHECK_OK(mkdirat(dfd, "k", 0755));
  CHECK_OK(make_file(pfd, "g2"));
  CHECK(exists(at("p/b/g")) && exists(at("p/b/k")) && exists(at("p/b/g2")),
        "*at creates after the rename are not in p/b");
  REQUIRE(rename(at("p"), at("q")) == 0);
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/a"), 0755) == 0 && mkdir(at("p/b"), 0755) == 0);
  CHECK_OK(make_file(dfd, "l"));
  CHECK_OK(symlinkat("g", dfd, "sl"));
  CHECK_OK(renameat(dfd, "l", dfd, "l2"));
  CHECK(exists(at("q/b/l2")) && exists(at("q/b/sl")), "*at calls after the ancestor's rename are not in q/b");
  CHECK(!exists(at("p/a/l")) && !exists(at("p/b/l")) && !exists(at("p/b/l2")),
        "an *at create went to a new directory with the old name");
  struct stat st;
  CHECK(fstatat(dfd, "g", &st, 0) == 0, "fstatat(dfd, g): %s", strerror(errno));
  CHECK(fstatat(pfd, "k", &st, 0) == 0, "fstatat(pfd, k): %s", strerror(errno));
  REQUIRE(fchdir(dfd) == 0);
  check_cwd(at("q/b"));
  REQUIRE(chdir("/") == 0);
  close(dfd);
  close(pfd);
}

// rmdir of the cwd: getcwd says ENOENT, /proc/self/cwd ends in
// " (deleted)", nothing can be made in it, and a new directory of the same
// name is another directory.
static void rmdir_cwd(void) {
  REQUIRE(mkdir(at("gone"), 0755) == 0);
  REQUIRE(chdir(at("gone")) == 0);
  struct stat before;
  REQUIRE(stat(".", &before) == 0);
  REQUIRE(rmdir(at("gone")) == 0);
  char buf[PATH_MAX];
  CHECK_ERR(raw_getcwd(buf, sizeof buf), ENOENT);
  char want[PATH_MAX + 16];
  snprintf(want, sizeof want, "%s (deleted)", at("gone"));
  check_link("/proc/self/cwd", want);
  CHECK_ERR(open("x", O_CREAT | O_WRONLY, 0644), ENOENT);
  CHECK_ERR(mkdir("y", 0755), ENOENT);
  struct stat dot;
  CHECK(stat(".", &dot) == 0 && dot.st_ino == before.st_ino && dot.st_nlink == 0,
        "stat('.') of the removed cwd: nlink %lu", (unsigned long)dot.st_nlink);
  REQUIRE(mkdir(at("gone"), 0755) == 0);
  CHECK_ERR(open("z", O_CREAT | O_WRONLY, 0644), ENOENT);
  CHECK(!exists(at("gone/z")), "a create in the removed cwd landed in its namesake");
  CHECK_ERR(raw_getcwd(buf, sizeof buf), ENOENT);
  REQUIRE(chdir("/") == 0);
}

// A removed cwd read as a folder: "." still opens it (nlink 0, its own
// inode, not the namesake made since), it lists nothing (getdents:
// ENOENT, also through a descriptor opened before the removal), it is
// not opened for writing (EISDIR), and nothing is found or made through it.
static void cwd_removed_listing(void) {
  REQUIRE(mkdir(at("gone"), 0755) == 0);
  REQUIRE(chdir(at("gone")) == 0);
  struct stat before, st;
  REQUIRE(stat(".", &before) == 0);
  int early = open(".", O_RDONLY | O_DIRECTORY);
  REQUIRE(early >= 0);
  REQUIRE(rmdir(at("gone")) == 0);
  REQUIRE(mkdir(at("gone"), 0755) == 0 && make_file(AT_FDCWD, at("gone/decoy")) == 0);
  char ents[4096];
  int fd = open(".", O_RDONLY | O_DIRECTORY);
  CHECK(fd >= 0, "open('.') of the removed cwd: %s", strerror(errno));
  if (fd >= 0) {
    CHECK(fstat(fd, &st) == 0 && st.st_ino == before.st_ino && st.st_nlink == 0,
          "open('.') is not the removed cwd: nlink %lu", (unsigned long)st.st_nlink);
    long n = syscall(SYS_getdents64, fd, ents, sizeof ents);
    CHECK(n < 0 && errno == ENOENT, "getdents64 of the removed cwd: %ld (%s)", n, strerror(errno));
    CHECK_ERR(openat(fd, "made", O_CREAT | O_WRONLY, 0644), ENOENT);
    CHECK_ERR(fstatat(fd, "decoy", &st, 0), ENOENT);
    close(fd);
  }
  long n = syscall(SYS_getdents64, early, ents, sizeof ents);
  CHECK(n < 0 && errno == ENOENT, "getdents64 through an earlier descriptor: %ld (%s)", n, strerror(errno));
  fd = open(".", O_PATH | O_DIRECTORY);
  CHECK(fd >= 0, "open('.', O_PATH) of the removed cwd: %s", strerror(errno));
  if (fd >= 0) {
    CHECK(fstat(fd, &st) == 0 && st.st_ino == before.st_ino && st.st_nlink == 0, "O_PATH '.': nlink %lu",
          (unsigned long)st.st_nlink);
    CHECK_ERR(fstatat(fd, "decoy", &st, 0), ENOENT);
    close(fd);
  }
  close(early);
  CHECK_ERR(open(".", O_RDWR), EISDIR);
  CHECK_ERR(open(".", O_RDONLY | O_CREAT, 0644), EISDIR);
  REQUIRE(chdir("/") == 0);
  CHECK(!exists(at("gone/made")), "a create in the removed cwd landed in its namesake");
  REQUIRE(unlink(at("gone/decoy")) == 0 && rmdir(at("gone")) == 0);
}

// A thread renames p/a to p/b and back while 8 threads walk through it by
// both names: each walk reaches p/?/leaf/file (its inode) or fails ENOENT.
// p/c/leaf/file, a decoy of the same shape, must never be reached.
enum { WALKERS = 8, RENAMES = 3000 };
static atomic_int race_done;
static ino_t race_ino;
static atomic_long race_hits, race_misses, race_wrong;

static void* walker(void* arg) {
  long id = (long)arg;
  static const char* const tails[] = {"%s/leaf/file", "%s/leaf/../leaf/file", "%s/./leaf//file"};
  const char* names[] = {"p/a", "p/b"};
  for (long i = 0; !atomic_load(&race_done); i++) {
    char rel[64], path[PATH_MAX];
    snprintf(rel, sizeof rel, tails[(i + id) % 3], names[(i + id) & 1]);
    if (snprintf(path, sizeof path, "%s/%s", dir, rel) >= (int)sizeof path) break;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
      if (errno == ENOENT) {
        atomic_fetch_add(&race_misses, 1);
      } else {
        if (atomic_fetch_add(&race_wrong, 1) < 5) printf("  walk %s: %s\n", rel, strerror(errno));
      }
      continue;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_ino == race_ino) {
      atomic_fetch_add(&race_hits, 1);
    } else if (atomic_fetch_add(&race_wrong, 1) < 5) {
      printf("  walk %s reached inode %lu, not the file's %lu\n", rel, (unsigned long)st.st_ino,
             (unsigned long)race_ino);
    }
    close(fd);
  }
  return NULL;
}

static void rename_race(void) {
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/a"), 0755) == 0 && mkdir(at("p/a/leaf"), 0755) == 0);
  REQUIRE(mkdir(at("p/c"), 0755) == 0 && mkdir(at("p/c/leaf"), 0755) == 0);
  REQUIRE(make_file(AT_FDCWD, at("p/a/leaf/file")) == 0 && make_file(AT_FDCWD, at("p/c/leaf/file")) == 0);
  race_ino = ino_of(at("p/a/leaf/file"));
  pthread_t th[WALKERS];
  for (long i = 0; i < WALKERS; i++) REQUIRE(pthread_create(&th[i], NULL, walker, (void*)i) == 0);
  long renames = 0;
  for (int i = 0; i < RENAMES; i++) {
    CHECK_OK(rename(at("p/a"), at("p/b")));
    CHECK_OK(rename(at("p/b"), at("p/a")));
    renames += 2;
  }
  atomic_store(&race_done, 1);
  for (int i = 0; i < WALKERS; i++) pthread_join(th[i], NULL);
  printf("  %ld renames; walks: %ld reached the file, %ld ENOENT, %ld anything else\n", renames,
         atomic_load(&race_hits), atomic_load(&race_misses), atomic_load(&race_wrong));
  CHECK(atomic_load(&race_wrong) == 0, "walks racing a rename reached something else");
  CHECK(atomic_load(&race_hits) > 0, "no walk got through");
}

// x/y/z with y moved under w: `..` chains from z (cwd and an open fd) go
// through w, its parent now.
static void dotdot_moved(void) {
  REQUIRE(mkdir(at("x"), 0755) == 0 && mkdir(at("x/y"), 0755) == 0 && mkdir(at("x/y/z"), 0755) == 0);
  REQUIRE(mkdir(at("w"), 0755) == 0);
  int zfd = open(at("x/y/z"), O_RDONLY | O_DIRECTORY);
  REQUIRE(zfd >= 0);
  REQUIRE(chdir(at("x/y/z")) == 0);
  REQUIRE(rename(at("x/y"), at("w/y")) == 0);
  ino_t w = ino_of(at("w")), x = ino_of(at("x"));
  CHECK(ino_of("../..") == w, "cwd ../.. is inode %lu, want w %lu (x is %lu)", (unsigned long)ino_of("../.."),
        (unsigned long)w, (unsigned long)x);
  struct stat st;
  CHECK(fstatat(zfd, "../..", &st, 0) == 0 && st.st_ino == w, "fd ../.. is not w");
  CHECK(fstatat(zfd, "../../..", &st, 0) == 0 && st.st_ino == ino_of(dir), "fd ../../.. is not DIR");
  check_cwd(at("w/y/z"));
  CHECK_OK(make_file(AT_FDCWD, "../../m"));
  CHECK_OK(make_file(zfd, "../../n"));
  CHECK(exists(at("w/m")) && exists(at("w/n")), "creates through ../.. are not in w");
  CHECK(!exists(at("x/m")) && !exists(at("x/n")), "creates through ../.. went to x, the old grandparent");
  // And back out through the new path, by `..` alone.
  CHECK(chdir("../../..") == 0 && ino_of(".") == ino_of(dir), "cd ../../.. is not DIR");
  REQUIRE(chdir("/") == 0);
  close(zfd);
}

static int mounted_here(const char* point, char* root_out) {
  FILE* f = fopen("/proc/self/mountinfo", "r");
  if (!f) return 0;
  char line[4096], root[PATH_MAX], mp[PATH_MAX];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%*d %*d %*u:%*u %4095s %4095s", root, mp) == 2 && strcmp(mp, point) == 0) {
      strcpy(root_out, root);
      found = 1;
    }
  }
  fclose(f);
  return found;
}

static int ends_with(const char* s, const char* tail) {
  size_t n = strlen(s), t = strlen(tail);
  return n >= t && strcmp(s + n - t, tail) == 0;
}

// A bind mount of p/sub on mnt, then p renamed to q: the mount still
// shows the directory (now q/sub), creates through it land there, and
// mountinfo's root names it by its new path. A mount whose mount point's
// parent is renamed moves with it.
static void bind_rename(void) {
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/sub"), 0755) == 0 && mkdir(at("mnt"), 0755) == 0);
  REQUIRE(make_file(AT_FDCWD, at("p/sub/f")) == 0);
  REQUIRE(mount(at("p/sub"), at("mnt"), NULL, MS_BIND, NULL) == 0, "bind: %s", strerror(errno));
  REQUIRE(rename(at("p"), at("q")) == 0);
  CHECK(exists(at("mnt/f")), "the bind mount lost its directory when its parent was renamed");
  CHECK_OK(make_file(AT_FDCWD, at("mnt/g")));
  CHECK(exists(at("q/sub/g")), "a create through the bind mount is not in q/sub");
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/sub"), 0755) == 0);
  CHECK_OK(make_file(AT_FDCWD, at("mnt/h")));
  CHECK(exists(at("q/sub/h")) && !exists(at("p/sub/h")), "a create through the bind mount went to the new p/sub");
  char root[PATH_MAX] = "";
  CHECK(mounted_here(at("mnt"), root) && ends_with(root, "/q/sub"), "mountinfo root of the bind: '%s', want .../q/sub",
        root);
  CHECK_OK(umount(at("mnt")));
  // The mount point's parent renamed: the mount goes along.
  REQUIRE(mkdir(at("mp"), 0755) == 0 && mkdir(at("mp/mnt"), 0755) == 0);
  REQUIRE(mount(at("q/sub"), at("mp/mnt"), NULL, MS_BIND, NULL) == 0);
  REQUIRE(rename(at("mp"), at("mp2")) == 0);
  CHECK(exists(at("mp2/mnt/f")), "the mount did not move with its mount point's parent");
  CHECK(mounted_here(at("mp2/mnt"), root), "mountinfo does not show the mount at mp2/mnt");
  CHECK(umount(at("mp2/mnt")) == 0, "umount mp2/mnt: %s", strerror(errno));
}

struct how {
  uint64_t flags, mode, resolve;
};
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define R_NO_XDEV 0x01
#define R_NO_MAGICLINKS 0x02
#define R_NO_SYMLINKS 0x04
#define R_BENEATH 0x08
#define R_IN_ROOT 0x10

// With RESOLVE_BENEATH or RESOLVE_IN_ROOT, Linux fails a walk through `..`
// with EAGAIN when any rename or mount happened on the system meanwhile
// (openat2(2)); other tests renaming in parallel made that happen natively.
// The man page's advice is to retry.
static long openat2_(int dfd, const char* path, uint64_t flags, uint64_t resolve) {
  struct how h = {flags, 0, resolve};
  long r;
  int tries = 0;
  do r = syscall(SYS_openat2, dfd, path, &h, sizeof h);
  while (r < 0 && errno == EAGAIN && ++tries < 1000);
  return r;
}

// openat2 on r (the root of the walk): r/dir/file, links out of it and
// in it, and a bind mount at r/mnt.
static void openat2_case(void) {
  REQUIRE(mkdir(at("r"), 0755) == 0 && mkdir(at("r/dir"), 0755) == 0 && mkdir(at("r/mnt"), 0755) == 0);
  REQUIRE(make_file(AT_FDCWD, at("r/dir/file")) == 0 && make_file(AT_FDCWD, at("outside")) == 0);
  REQUIRE(symlink("/dir", at("r/abs")) == 0 && symlink("../outside", at("r/up")) == 0);
  REQUIRE(symlink("dir/file", at("r/in")) == 0);
  REQUIRE(mount(at("r/dir"), at("r/mnt"), NULL, MS_BIND, NULL) == 0, "bind: %s", strerror(errno));
  int r = open(at("r"), O_PATH | O_DIRECTORY);
  REQUIRE(r >= 0);
  ino_t file = ino_of(at("r/dir/file")), rdir = ino_of(at("r/dir"));
  struct stat st;
#define OPENS(expr, want_ino)                                                               \
  do {                                                                                      \
    long fd_ = (expr);                                                                      \
    CHECK(fd_ >= 0 && fstat(fd_, &st) == 0 && st.st_ino == (want_ino), "%s: %ld %s", #expr, \
          fd_, fd_ < 0 ? strerror(errno) : "(another file)");                               \
    if (fd_ >= 0) close(fd_);                                                               \
  } while (0)
  // The arguments are checked first.
  struct how h = {O_RDONLY, 0, 0};
  CHECK_ERR(syscall(SYS_openat2, r, "dir", &h, 8), EINVAL);
  h.resolve = 0x1000;
  CHECK_ERR(syscall(SYS_openat2, r, "dir", &h, sizeof h), EINVAL);
  h.resolve = R_BENEATH | R_IN_ROOT;
  CHECK_ERR(syscall(SYS_openat2, r, "dir", &h, sizeof h), EINVAL);
  h.resolve = 0;
  h.mode = 0644;
  CHECK_ERR(syscall(SYS_openat2, r, "dir", &h, sizeof h), EINVAL);
  h.mode = 0;
  h.flags = 1ull << 40;
  CHECK_ERR(syscall(SYS_openat2, r, "dir", &h, sizeof h), EINVAL);
  char big[64] = {0};
  memcpy(big, &(struct how){O_RDONLY, 0, 0}, sizeof(struct how));
  big[40] = 1;
  CHECK_ERR(syscall(SYS_openat2, r, "dir", big, sizeof big), E2BIG);
  big[40] = 0;
  long fd = syscall(SYS_openat2, r, "dir/file", big, sizeof big);
  CHECK(fd >= 0, "openat2 with a larger zero-padded how: %s", strerror(errno));
  if (fd >= 0) close(fd);
  OPENS(openat2_(r, "dir/file", O_RDONLY, 0), file);

  // RESOLVE_BENEATH: no `..` above r, no absolute path or link.
  OPENS(openat2_(r, "dir/../dir/file", O_RDONLY, R_BENEATH), file);
  OPENS(openat2_(r, "in", O_RDONLY, R_BENEATH), file);
  CHECK_ERR(openat2_(r, "../outside", O_RDONLY, R_BENEATH), EXDEV);
  CHECK_ERR(openat2_(r, "dir/../../outside", O_RDONLY, R_BENEATH), EXDEV);
  CHECK_ERR(openat2_(r, "/etc", O_RDONLY, R_BENEATH), EXDEV);
  CHECK_ERR(openat2_(r, "abs", O_RDONLY, R_BENEATH), EXDEV);
  CHECK_ERR(openat2_(r, "up", O_RDONLY, R_BENEATH), EXDEV);
  CHECK_ERR(openat2_(AT_FDCWD, at("r/dir/file"), O_RDONLY, R_BENEATH), EXDEV);

  // RESOLVE_IN_ROOT: r is `/`: `..` stops there, absolute paths and links
  // start there.
  OPENS(openat2_(r, "../../dir/file", O_RDONLY, R_IN_ROOT), file);
  OPENS(openat2_(r, "/dir/file", O_RDONLY, R_IN_ROOT), file);
  OPENS(openat2_(r, "abs", O_RDONLY | O_DIRECTORY, R_IN_ROOT), rdir);
  CHECK_ERR(openat2_(r, "up", O_RDONLY, R_IN_ROOT), ENOENT);
  CHECK_ERR(openat2_(r, "/outside", O_RDONLY, R_IN_ROOT), ENOENT);

  // RESOLVE_NO_SYMLINKS: any link on the way is ELOOP, the last one too
  // unless it is opened itself (O_PATH|O_NOFOLLOW).
  CHECK_ERR(openat2_(r, "in", O_RDONLY, R_NO_SYMLINKS), ELOOP);
  CHECK_ERR(openat2_(r, "abs/file", O_RDONLY, R_NO_SYMLINKS), ELOOP);
  OPENS(openat2_(r, "dir/file", O_RDONLY, R_NO_SYMLINKS), file);
  fd = openat2_(r, "in", O_PATH | O_NOFOLLOW, R_NO_SYMLINKS);
  CHECK(fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode), "O_PATH|O_NOFOLLOW of a link: %s",
        strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_ERR(openat2_(r, "in", O_RDONLY | O_NOFOLLOW, R_NO_SYMLINKS), ELOOP);

  // RESOLVE_NO_MAGICLINKS: /proc/self/fd/N is refused.
  char magic[64];
  snprintf(magic, sizeof magic, "/proc/self/fd/%d", r);
  CHECK_ERR(openat2_(AT_FDCWD, magic, O_PATH, R_NO_MAGICLINKS), ELOOP);
  OPENS(openat2_(AT_FDCWD, magic, O_PATH, 0), ino_of(at("r")));

  // RESOLVE_NO_XDEV: no mount crossed, down into one or up out of it.
  CHECK_ERR(openat2_(r, "mnt/file", O_RDONLY, R_NO_XDEV), EXDEV);
  OPENS(openat2_(r, "dir/file", O_RDONLY, R_NO_XDEV), file);
  int m = open(at("r/mnt"), O_PATH | O_DIRECTORY);
  REQUIRE(m >= 0);
  OPENS(openat2_(m, "file", O_RDONLY, R_NO_XDEV), file);
  CHECK_ERR(openat2_(m, "../dir", O_RDONLY, R_NO_XDEV), EXDEV);
  CHECK_ERR(openat2_(AT_FDCWD, at("r/mnt/file"), O_RDONLY, R_NO_XDEV), EXDEV);
  close(m);
  close(r);
  CHECK_OK(umount(at("r/mnt")));
}

// /proc/self/cwd and /proc/self/fd/N name what they point at now.
static void proc_links(void) {
  REQUIRE(mkdir(at("p"), 0755) == 0 && mkdir(at("p/a"), 0755) == 0);
  REQUIRE(make_file(AT_FDCWD, at("p/a/f")) == 0);
  int dfd = open(at("p/a"), O_RDONLY | O_DIRECTORY);
  int ffd = open(at("p/a/f"), O_RDONLY);
  REQUIRE(dfd >= 0 && ffd >= 0);
  REQUIRE(chdir(at("p/a")) == 0);
  char dlink[64], flink[64];
  snprintf(dlink, sizeof dlink, "/proc/self/fd/%d", dfd);
  snprintf(flink, sizeof flink, "/proc/self/fd/%d", ffd);
  check_link("/proc/self/cwd", at("p/a"));
  REQUIRE(rename(at("p/a"), at("p/b")) == 0);
  check_link("/proc/self/cwd", at("p/b"));
  check_link(dlink, at("p/b"));
  check_link(flink, at("p/b/f"));
  REQUIRE(rename(at("p"), at("q")) == 0);
  check_link("/proc/self/cwd", at("q/b"));
  check_link(dlink, at("q/b"));
  check_link(flink, at("q/b/f"));
  REQUIRE(rename(at("q/b/f"), at("q/g")) == 0);
  check_link(flink, at("q/g"));
  REQUIRE(unlink(at("q/g")) == 0);
  char want[PATH_MAX + 16];
  snprintf(want, sizeof want, "%s (deleted)", at("q/g"));
  check_link(flink, want);
  // Through the links: opening /proc/self/fd/N of the renamed directory
  // reaches it.
  char path[128];
  snprintf(path, sizeof path, "%s/new", dlink);
  CHECK_OK(make_file(AT_FDCWD, path));
  CHECK(exists(at("q/b/new")), "a create through /proc/self/fd/N is not in q/b");
  REQUIRE(chdir("/") == 0);
  close(dfd);
  close(ffd);
}

// Renaming a directory over an empty one removes the replaced directory:
// held open, it has no links left and takes no new names (as after rmdir).
static void rename_over_dir(void) {
  REQUIRE(mkdir(at("src"), 0755) == 0 && mkdir(at("dst"), 0755) == 0);
  struct stat parent, src, dst;
  REQUIRE(stat(dir, &parent) == 0 && stat(at("src"), &src) == 0);
  int fd = open(at("dst"), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0 && fstat(fd, &dst) == 0 && dst.st_nlink == 2);
  REQUIRE(rename(at("src"), at("dst")) == 0);
  struct stat held, now, p2;
  CHECK(fstat(fd, &held) == 0 && held.st_ino == dst.st_ino && held.st_nlink == 0,
        "fstat of the replaced directory: nlink %lu", (unsigned long)held.st_nlink);
  CHECK(stat(at("dst"), &now) == 0 && now.st_ino == src.st_ino && now.st_nlink == 2,
        "the moved directory: nlink %lu", (unsigned long)now.st_nlink);
  CHECK(stat(dir, &p2) == 0 && p2.st_nlink == parent.st_nlink - 1, "the parent's nlink %lu, was %lu",
        (unsigned long)p2.st_nlink, (unsigned long)parent.st_nlink);
  CHECK_ERR(openat(fd, "x", O_CREAT | O_WRONLY, 0644), ENOENT);
  CHECK_ERR(mkdirat(fd, "y", 0755), ENOENT);
  CHECK(!exists(at("dst/x")) && !exists(at("dst/y")), "a create in the replaced directory reached its old name");
  close(fd);
}

// The process root is a directory, not a name: renamed, it stays the
// root; ".." at it stays there; a cwd outside it is "(unreachable)".
static void chroot_rename(void) {
  REQUIRE(mkdir(at("jail"), 0755) == 0 && mkdir(at("jail/in"), 0755) == 0 && mkdir(at("out"), 0755) == 0);
  int up[2], down[2];
  REQUIRE(pipe(up) == 0 && pipe(down) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    char buf[PATH_MAX] = "", want[PATH_MAX + 16];
    REQUIRE(chdir(at("out")) == 0 && chroot(at("jail")) == 0);
    snprintf(want, sizeof want, "(unreachable)%s", at("out"));
    CHECK(raw_getcwd(buf, sizeof buf) > 0 && strcmp(buf, want) == 0, "getcwd outside the root: %s", buf);
    REQUIRE(chdir("/") == 0);
    struct stat root, dotdot;
    CHECK(stat("/", &root) == 0 && stat("/..", &dotdot) == 0 && root.st_ino == dotdot.st_ino,
          "'..' at the root left it");
    REQUIRE(write(up[1], "r", 1) == 1);
    char c;
    REQUIRE(read(down[0], &c, 1) == 1);  // renamed meanwhile
    CHECK(raw_getcwd(buf, sizeof buf) > 0 && strcmp(buf, "/") == 0, "getcwd at the renamed root: %s", buf);
    CHECK_OK(make_file(AT_FDCWD, "/in/made"));
    CHECK(stat("/..", &dotdot) == 0 && dotdot.st_ino == root.st_ino, "'..' at the renamed root left it");
    CHECK(stat("/in/..", &dotdot) == 0 && dotdot.st_ino == root.st_ino, "/in/.. is not the root");
    _exit(guest_finish());
  }
  char c, link[64];
  REQUIRE(read(up[0], &c, 1) == 1);
  snprintf(link, sizeof link, "/proc/%d/root", (int)pid);
  check_link(link, at("jail"));
  REQUIRE(rename(at("jail"), at("moved")) == 0);
  check_link(link, at("moved"));
  REQUIRE(write(down[1], "g", 1) == 1);
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the chrooted child failed: %#x", status);
  CHECK(exists(at("moved/in/made")), "a create at the renamed root is not in it");
  CHECK(!exists(at("jail")), "a create at the renamed root made its old name again");
}

// Puts the directories of `rel` ("a/b") in the kernel's cache of names:
// chdir there and back.
static void visit(const char* rel) {
  REQUIRE(chdir(at("%s", rel)) == 0, "chdir %s: %s", rel, strerror(errno));
  REQUIRE(chdir(dir) == 0);
}

// rmdir and mkdir of the same names while the old directories are cached:
// the new ones are other directories, and what is made in them is found
// (a cache still naming the removed directory would lose it). Repeated, so
// that a file system reusing inode numbers reuses them.
static void rmdir_mkdir(void) {
  REQUIRE(mkdir(at("d"), 0755) == 0 && mkdir(at("d/e"), 0755) == 0);
  int old = open(at("d"), O_RDONLY | O_DIRECTORY);
  REQUIRE(old >= 0);
  for (int i = 0; i < 20; i++) {
    visit("d/e");
    REQUIRE(rmdir(at("d/e")) == 0 && rmdir(at("d")) == 0);
    REQUIRE(mkdir(at("d"), 0755) == 0 && mkdir(at("d/e"), 0755) == 0);
    REQUIRE(chdir(at("d/e")) == 0);
    check_cwd(at("d/e"));
    char name[16];
    snprintf(name, sizeof name, "f%d", i);
    CHECK_OK(make_file(AT_FDCWD, name));
    CHECK(exists(at("d/e/%s", name)), "round %d: a file made in the new d/e is not there", i);
    REQUIRE(chdir(dir) == 0);
    snprintf(name, sizeof name, "d/e/g%d", i);
    CHECK_OK(make_file(AT_FDCWD, name));
    CHECK(exists(at("%s", name)), "round %d: a file made through the new names is not there", i);
    int nfd = open(at("d"), O_RDONLY | O_DIRECTORY);
    REQUIRE(nfd >= 0);
    snprintf(name, sizeof name, "e/h%d", i);
    CHECK_OK(mkdirat(nfd, name, 0755));
    CHECK(exists(at("d/%s", name)), "round %d: mkdirat in the new d is not there", i);
    close(nfd);
    if (i + 1 < 20) {  // emptied for the next round
      char path[64];
      snprintf(path, sizeof path, "d/e/f%d", i);
      REQUIRE(unlink(at("%s", path)) == 0);
      snprintf(path, sizeof path, "d/e/g%d", i);
      REQUIRE(unlink(at("%s", path)) == 0);
      snprintf(path, sizeof path, "d/e/h%d", i);
      REQUIRE(rmdir(at("%s", path)) == 0);
    }
  }
  // The first d, held open, is removed: it takes no names.
  CHECK_ERR(openat(old, "x", O_CREAT | O_WRONLY, 0644), ENOENT);
  CHECK(!exists(at("d/x")), "a create in the removed d reached the new one");
  close(old);
}

// A symlink takes the name of a cached directory (removed first; a rename
// over a directory needs one): walks through the name follow the link,
// to "/" and to a sibling, not into the directory that was there.
static void symlink_over(void) {
  REQUIRE(mkdir(at("d"), 0755) == 0 && mkdir(at("d/e"), 0755) == 0 && mkdir(at("other"), 0755) == 0);
  REQUIRE(make_file(AT_FDCWD, at("d/e/inner")) == 0 && make_file(AT_FDCWD, at("other/there")) == 0);
  REQUIRE(mkdir(at("r"), 0755) == 0 && mkdir(at("r/e"), 0755) == 0);
  visit("d/e");
  visit("r/e");
  REQUIRE(unlink(at("d/e/inner")) == 0 && rmdir(at("d/e")) == 0 && rmdir(at("d")) == 0);
  REQUIRE(symlink("/", at("l")) == 0 && rename(at("l"), at("d")) == 0);
  struct stat st, root;
  CHECK(lstat(at("d"), &st) == 0 && S_ISLNK(st.st_mode), "d is not the link");
  CHECK(stat(at("d"), &st) == 0 && stat("/", &root) == 0 && st.st_ino == root.st_ino && st.st_dev == root.st_dev,
        "d does not lead to /");
  CHECK(!exists(at("d/e/inner")), "d/e/inner reached the removed directory");
  CHECK_OK(chdir(at("d")));
  check_cwd("/");
  REQUIRE(chdir(dir) == 0);
  // A relative link, climbing: r/e becomes ../other.
  REQUIRE(rmdir(at("r/e")) == 0 && symlink("../other", at("r/e")) == 0);
  CHECK(exists(at("r/e/there")), "r/e/there: %s", strerror(errno));
  CHECK_OK(chdir(at("r/e")));
  check_cwd(at("other"));
  CHECK(exists("there"), "the cwd through r/e is not other");
  REQUIRE(chdir(dir) == 0);
}

// A cached directory renamed by the guest: its new name reaches it, the
// old one nothing, then a new directory of the old name, then the old
// name back by a rename.
static void rename_cached(void) {
  REQUIRE(mkdir(at("a"), 0755) == 0 && mkdir(at("a/sub"), 0755) == 0);
  REQUIRE(make_file(AT_FDCWD, at("a/sub/f")) == 0);
  visit("a/sub");
  int afd = open(at("a"), O_RDONLY | O_DIRECTORY);
  REQUIRE(afd >= 0);
  REQUIRE(rename(at("a"), at("b")) == 0);
  CHECK(exists(at("b/sub/f")), "b/sub/f after the rename");
  CHECK(!exists(at("a")) && !exists(at("a/sub/f")), "the old name still reaches something");
  CHECK_ERR(chdir(at("a/sub")), ENOENT);
  CHECK_OK(chdir(at("b/sub")));
  check_cwd(at("b/sub"));
  CHECK(exists("f"), "the cwd b/sub has no f");
  REQUIRE(chdir(dir) == 0);
  REQUIRE(mkdir(at("a"), 0755) == 0);
  CHECK_ERR(chdir(at("a/sub")), ENOENT);
  REQUIRE(mkdir(at("a/sub"), 0755) == 0);
  CHECK_OK(chdir(at("a/sub")));
  CHECK_OK(make_file(AT_FDCWD, "n"));
  CHECK(exists(at("a/sub/n")) && !exists(at("b/sub/n")), "a create in the new a/sub went elsewhere");
  REQUIRE(chdir(dir) == 0);
  struct stat st;
  CHECK(fstatat(afd, "sub/f", &st, 0) == 0, "the open directory (now b): %s", strerror(errno));
  REQUIRE(rename(at("a"), at("c")) == 0 && rename(at("b"), at("a")) == 0);
  CHECK(exists(at("a/sub/f")) && exists(at("c/sub/n")) && !exists(at("b")), "after renaming back");
  CHECK_OK(chdir(at("a/sub")));
  CHECK(exists("f") && !exists("n"), "the cwd a/sub is not the first directory");
  REQUIRE(chdir(dir) == 0);
  CHECK(fstatat(afd, "sub/f", &st, 0) == 0, "the open directory (a again): %s", strerror(errno));
  close(afd);
}

// Another host process (host_changes.py) renames a cached directory away
// and makes a new one of its name while this one keeps walking through
// it: within a bounded time the name leads to the new directory (at once
// natively; flatux re-checks a cached host folder after a short time).
static void host_rename(void) {
  REQUIRE(mkdir(at("d"), 0755) == 0 && mkdir(at("d/sub"), 0755) == 0);
  REQUIRE(make_file(AT_FDCWD, at("d/sub/old")) == 0);
  visit("d/sub");
  int sfd = open(at("d/sub"), O_RDONLY | O_DIRECTORY);
  REQUIRE(sfd >= 0);
  printf("ready %s\n", dir);
  char line[16];
  REQUIRE(fgets(line, sizeof line, stdin) && !strncmp(line, "go", 2), "no go from the driver");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int seen = 0;
  long ms = 0;
  while (ms < 10000) {  // the bound is generous: the machine may be loaded
    if (exists(at("d/sub/new")) && !exists(at("d/sub/old"))) {
      seen = 1;
      break;
    }
    usleep(2000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  }
  CHECK(seen, "d/sub still leads to the renamed directory after %ld ms", ms);
  printf("  the new d/sub seen after %ld ms\n", ms);
  CHECK_OK(chdir(at("d/sub")));
  CHECK(exists("new") && !exists("old"), "chdir d/sub reached the renamed directory");
  CHECK_OK(make_file(AT_FDCWD, "made"));
  CHECK(exists(at("d/sub/made")) && !exists(at("moved/sub/made")), "a create in d/sub went to the renamed one");
  REQUIRE(chdir(dir) == 0);
  CHECK(exists(at("moved/sub/old")), "the renamed directory lost its file");
  CHECK_OK(make_file(sfd, "byfd"));
  CHECK(exists(at("moved/sub/byfd")), "the open directory does not follow its host rename");
  close(sfd);
}

// A mount whose parent folder is renamed back and forth while threads
// read /proc/self/mountinfo and getcwd inside the mount: each sees the
// old place or the new one, never a mix (two long names of one length,
// which a reader racing the mount table's update would mix).
#define PLACE_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define PLACE_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
static atomic_int place_done;
static atomic_long place_reads, place_wrong;
// Made before the readers start (at() is not for threads).
static char place_cwd_a[PATH_MAX], place_cwd_b[PATH_MAX], place_mnt_a[PATH_MAX], place_mnt_b[PATH_MAX];

static int is_either(const char* got, const char* a, const char* b) { return !strcmp(got, a) || !strcmp(got, b); }

static void* cwd_reader(void* arg) {
  const char *a = place_cwd_a, *b = place_cwd_b;
  char buf[PATH_MAX];
  while (!atomic_load(&place_done)) {
    long n = raw_getcwd(buf, sizeof buf);
    if (n <= 0 || !is_either(buf, a, b)) {
      if (atomic_fetch_add(&place_wrong, 1) == 0) fprintf(stderr, "getcwd: %ld '%s'\n", n, n > 0 ? buf : "");
    }
    atomic_fetch_add(&place_reads, 1);
  }
  return arg;
}

static void* mountinfo_reader(void* arg) {
  const char *a = place_mnt_a, *b = place_mnt_b;
  char line[2 * PATH_MAX];
  size_t dlen = strlen(dir);
  while (!atomic_load(&place_done)) {
    FILE* f = fopen("/proc/self/mountinfo", "r");
    if (!f) {
      atomic_fetch_add(&place_wrong, 1);
      break;
    }
    int ours = 0;
    while (fgets(line, sizeof line, f)) {
      char point[PATH_MAX];
      if (sscanf(line, "%*d %*d %*s %*s %4095s", point) != 1 || strncmp(point, dir, dlen) != 0) continue;
      if (strcmp(point + strlen(point) - 4, "/mnt") != 0) continue;
      ours++;
      if (!is_either(point, a, b) && atomic_fetch_add(&place_wrong, 1) == 0)
        fprintf(stderr, "mountinfo: '%s'\n", point);
    }
    fclose(f);
    if (ours != 1 && atomic_fetch_add(&place_wrong, 1) == 0) fprintf(stderr, "mountinfo: %d lines of ours\n", ours);
    atomic_fetch_add(&place_reads, 1);
  }
  return arg;
}

static void mount_rename_race(void) {
  REQUIRE(mkdir(at(PLACE_A), 0755) == 0 && mkdir(at(PLACE_A "/mnt"), 0755) == 0);
  REQUIRE(mount("none", at(PLACE_A "/mnt"), "tmpfs", 0, "size=1m") == 0, "mount: %s", strerror(errno));
  REQUIRE(mkdir(at(PLACE_A "/mnt/sub"), 0755) == 0 && chdir(at(PLACE_A "/mnt/sub")) == 0);
  snprintf(place_cwd_a, PATH_MAX, "%s", at(PLACE_A "/mnt/sub"));
  snprintf(place_cwd_b, PATH_MAX, "%s", at(PLACE_B "/mnt/sub"));
  snprintf(place_mnt_a, PATH_MAX, "%s", at(PLACE_A "/mnt"));
  snprintf(place_mnt_b, PATH_MAX, "%s", at(PLACE_B "/mnt"));
  pthread_t cwd_th, info_th;
  REQUIRE(pthread_create(&cwd_th, NULL, cwd_reader, NULL) == 0);
  REQUIRE(pthread_create(&info_th, NULL, mountinfo_reader, NULL) == 0);
  for (int i = 0; i < 1000; i++) {
    CHECK_OK(rename(at(PLACE_A), at(PLACE_B)));
    CHECK_OK(rename(at(PLACE_B), at(PLACE_A)));
  }
  atomic_store(&place_done, 1);
  pthread_join(cwd_th, NULL);
  pthread_join(info_th, NULL);
  printf("  2000 renames, %ld reads, %ld wrong\n", atomic_load(&place_reads), atomic_load(&place_wrong));
  CHECK(atomic_load(&place_wrong) == 0, "a reader saw the mount somewhere else");
  REQUIRE(chdir("/") == 0);
  CHECK_OK(umount(at(PLACE_A "/mnt")));
}

// readlinkat(fd, name) as a string ("" on error).
static const char* link_at(int fd, const char* name) {
  static char bufs[4][PATH_MAX];
  static int next;
  char* buf = bufs[next++ % 4];
  ssize_t n = readlinkat(fd, name, buf, PATH_MAX - 1);
  buf[n > 0 ? n : 0] = 0;
  return buf;
}

#define CHECK_LINK(fd, name, want)                                                            \
  do {                                                                                        \
    const char* got_ = link_at(fd, name);                                                     \
    CHECK(strcmp(got_, want) == 0, "readlink %s: got '%s', want '%s'", name, got_, want); \
  } while (0)

// Inside a chroot, /proc's links show paths from the reader's root (Linux's
// d_path); one not below it is shown whole. Following them stays right.
static void chroot_proc_links(void) {
  REQUIRE(mkdir(at("jail"), 0755) == 0 && mkdir(at("jail/in"), 0755) == 0 && mkdir(at("out"), 0755) == 0);
  REQUIRE(chdir(at("jail")) == 0);  // the parent's cwd, read by the child
  pid_t parent = getpid();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int self = open("/proc/self", O_RDONLY | O_DIRECTORY);
    int proc = open("/proc", O_RDONLY | O_DIRECTORY);
    int out = open(at("out"), O_RDONLY | O_DIRECTORY);
    int in = open(at("jail/in"), O_RDONLY | O_DIRECTORY);
    REQUIRE(self >= 0 && proc >= 0 && out >= 0 && in >= 0);
    REQUIRE(chdir(at("jail/in")) == 0 && chroot(at("jail")) == 0);
    char name[64], want[PATH_MAX + 16];
    CHECK_LINK(self, "cwd", "/in");
    CHECK_LINK(self, "root", "/");
    snprintf(name, sizeof name, "fd/%d", in);
    CHECK_LINK(self, name, "/in");
    snprintf(name, sizeof name, "fd/%d", out);
    CHECK_LINK(self, name, at("out"));
    snprintf(name, sizeof name, "%d/cwd", (int)parent);
    CHECK_LINK(proc, name, "/");
    snprintf(name, sizeof name, "%d/root", (int)parent);
    CHECK_LINK(proc, name, "/");
    // Followed: the cwd itself.
    CHECK_OK(make_file(self, "cwd/made"));
    CHECK(exists("/in/made"), "a create through /proc/self/cwd is not in the cwd");
    REQUIRE(fchdir(out) == 0);
    CHECK_LINK(self, "cwd", at("out"));
    char buf[PATH_MAX];
    snprintf(want, sizeof want, "(unreachable)%s", at("out"));
    CHECK(raw_getcwd(buf, sizeof buf) > 0 && strcmp(buf, want) == 0, "getcwd outside the root: %s", buf);
    _exit(guest_finish());
  }
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the chrooted child failed: %#x", status);
  CHECK(exists(at("jail/in/made")), "the create through /proc/self/cwd went elsewhere");
  REQUIRE(chdir("/") == 0);
}

// A chroot directory removed under the process (by rmdir, or by a rename
// of another folder over it): it stays the root, "/" still stats it
// (nlink 0), nothing is found or made below it (not in a new folder of the
// same name either), getcwd is ENOENT, /proc shows "(deleted)".
static void chroot_removed_by(int renamed_over, int listing) {
  printf("  removed by %s\n", renamed_over ? "rename over it" : "rmdir");
  REQUIRE(mkdir(at("jail"), 0755) == 0);
  int up[2], down[2];
  REQUIRE(pipe(up) == 0 && pipe(down) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int self = open("/proc/self", O_RDONLY | O_DIRECTORY);
    int out = open(at("out"), O_RDONLY | O_DIRECTORY);
    REQUIRE(self >= 0 && out >= 0);
    REQUIRE(chdir(at("jail")) == 0 && chroot(at("jail")) == 0);
    struct stat root, dotdot;
    REQUIRE(stat("/", &root) == 0);
    REQUIRE(write(up[1], "r", 1) == 1);
    char c, buf[PATH_MAX], want[PATH_MAX + 16];
    REQUIRE(read(down[0], &c, 1) == 1);  // removed meanwhile, a new one made at its name
    CHECK(raw_getcwd(buf, sizeof buf) < 0 && errno == ENOENT, "getcwd in the removed root: '%s'", buf);
    CHECK_LINK(self, "root", "/ (deleted)");
    CHECK_LINK(self, "cwd", "/ (deleted)");
    struct stat st;
    CHECK(stat("/", &st) == 0 && st.st_ino == root.st_ino && st.st_nlink == 0, "stat / : %s, nlink %lu",
          strerror(errno), (unsigned long)st.st_nlink);
    CHECK(stat("/..", &dotdot) == 0 && dotdot.st_ino == root.st_ino, "/.. is not the removed root");
    CHECK(stat(".", &st) == 0 && st.st_ino == root.st_ino, "'.' is not the removed root");
    CHECK_ERR(stat("/decoy", &st), ENOENT);
    CHECK_ERR(open("/made", O_CREAT | O_WRONLY, 0644), ENOENT);
    CHECK_ERR(mkdir("/dir", 0755), ENOENT);
    // The root itself stays usable: opened, entered, and ".." from it
    // stays there.
    int rfd = open("/", O_PATH | O_DIRECTORY);
    CHECK(rfd >= 0, "open(/, O_PATH) : %s", strerror(errno));
    if (rfd >= 0) {
      CHECK(fstat(rfd, &st) == 0 && st.st_ino == root.st_ino, "open / is not the removed root");
      CHECK_ERR(openat(rfd, "made", O_CREAT | O_WRONLY, 0644), ENOENT);
      CHECK_ERR(fstatat(rfd, "decoy", &st, 0), ENOENT);
      close(rfd);
    }
    CHECK(chdir("/") == 0, "chdir / : %s", strerror(errno));
    CHECK(stat(".", &st) == 0 && st.st_ino == root.st_ino, "chdir / did not enter the removed root");
    CHECK(chdir("..") == 0 && stat(".", &st) == 0 && st.st_ino == root.st_ino, "chdir .. left the root: %s",
          strerror(errno));
    CHECK(chdir("/.") == 0 && chdir("./..") == 0, "chdir /. or ./.. : %s", strerror(errno));
    CHECK(stat("..", &st) == 0 && st.st_ino == root.st_ino, "stat .. : %s", strerror(errno));
    CHECK_ERR(open("made", O_CREAT | O_WRONLY, 0644), ENOENT);
    CHECK_ERR(mkdir("../dir", 0755), ENOENT);
    CHECK_ERR(stat("/decoy/..", &st), ENOENT);
    if (listing) {
      // Read, a removed folder lists nothing (getdents: ENOENT), and a
      // walk from it climbs no higher than itself.
      rfd = open("/", O_RDONLY | O_DIRECTORY);
      CHECK(rfd >= 0, "open / : %s", strerror(errno));
      if (rfd >= 0) {
        char ents[4096];
        long n = syscall(SYS_getdents64, rfd, ents, sizeof ents);
        CHECK(n < 0 && errno == ENOENT, "getdents64 of the removed root: %ld (%s)", n, strerror(errno));
        CHECK(fstatat(rfd, "..", &st, 0) == 0 && st.st_ino == root.st_ino, "'..' of the root fd: %s",
              strerror(errno));
        close(rfd);
      }
    }
    REQUIRE(fchdir(out) == 0);
    snprintf(want, sizeof want, "(unreachable)%s", at("out"));
    CHECK(raw_getcwd(buf, sizeof buf) > 0 && strcmp(buf, want) == 0, "getcwd outside the root: %s", buf);
    CHECK_LINK(self, "cwd", at("out"));
    _exit(guest_finish());
  }
  char c, link[64], want[PATH_MAX + 16];
  REQUIRE(read(up[0], &c, 1) == 1);
  if (renamed_over) {
    REQUIRE(mkdir(at("other"), 0755) == 0 && make_file(AT_FDCWD, at("other/decoy")) == 0);
    REQUIRE(rename(at("other"), at("jail")) == 0);
  } else {
    REQUIRE(rmdir(at("jail")) == 0);
    REQUIRE(mkdir(at("jail"), 0755) == 0 && make_file(AT_FDCWD, at("jail/decoy")) == 0);
  }
  snprintf(want, sizeof want, "%s (deleted)", at("jail"));
  snprintf(link, sizeof link, "/proc/%d/root", (int)pid);
  check_link(link, want);
  snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
  check_link(link, want);
  REQUIRE(write(down[1], "g", 1) == 1);
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the chrooted child failed: %#x", status);
  CHECK(!exists(at("jail/made")) && !exists(at("jail/dir")), "a create in the removed root reached the new folder");
  REQUIRE(unlink(at("jail/decoy")) == 0 && rmdir(at("jail")) == 0);
}

static void chroot_removed(void) {
  REQUIRE(mkdir(at("out"), 0755) == 0);
  chroot_removed_by(0, 0);
  chroot_removed_by(1, 0);
}

// The removed root read as a folder, and walks from it through "..".
static void chroot_removed_listing(void) {
  REQUIRE(mkdir(at("out"), 0755) == 0);
  chroot_removed_by(0, 1);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "dentry";
  int tmpfs = argc == 4 && strcmp(argv[2], "--tmpfs") == 0;
  REQUIRE(argc == 3 || tmpfs, "usage: dentry CASE [--tmpfs] DIR");
  const char* what = argv[1];
  int mounts = tmpfs || !strcmp(what, "bind_rename") || !strcmp(what, "openat2") ||
               !strcmp(what, "mount_rename_race");
  if ((mounts || !strncmp(what, "chroot_", 7)) && geteuid() != 0) {
    printf("SKIP: %s mounts or chroots, which needs root\n", what);
    return 77;
  }
  if (tmpfs) {
    guest_mount_scratch(argv[3], dir, "size=4m");
  } else {
    REQUIRE(realpath(argv[2], dir) != NULL);
    // Natively, mounts go in a namespace of their own.
    if (mounts && unshare(CLONE_NEWNS) == 0) REQUIRE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  }
  // Every case works in a fresh folder of its own.
  snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%s", what);
  REQUIRE(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
  printf("dentry %s in %s\n", what, dir);
  if (!strcmp(what, "cwd_rename")) cwd_rename();
  else if (!strcmp(what, "fd_rename")) fd_rename();
  else if (!strcmp(what, "rmdir_cwd")) rmdir_cwd();
  else if (!strcmp(what, "cwd_removed_listing")) cwd_removed_listing();
  else if (!strcmp(what, "rename_race")) rename_race();
  else if (!strcmp(what, "dotdot_moved")) dotdot_moved();
  else if (!strcmp(what, "bind_rename")) bind_rename();
  else if (!strcmp(what, "openat2")) openat2_case();
  else if (!strcmp(what, "proc_links")) proc_links();
  else if (!strcmp(what, "rename_over_dir")) rename_over_dir();
  else if (!strcmp(what, "chroot_rename")) chroot_rename();
  else if (!strcmp(what, "mount_rename_race")) mount_rename_race();
  else if (!strcmp(what, "chroot_proc_links")) chroot_proc_links();
  else if (!strcmp(what, "chroot_removed")) chroot_removed();
  else if (!strcmp(what, "chroot_removed_listing")) chroot_removed_listing();
  else if (!strcmp(what, "rmdir_mkdir")) rmdir_mkdir();
  else if (!strcmp(what, "symlink_over")) symlink_over();
  else if (!strcmp(what, "rename_cached")) rename_cached();
  else if (!strcmp(what, "host_rename")) host_rename();
  else REQUIRE(0, "unknown case %s", what);
  return guest_finish();
}
