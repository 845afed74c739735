// Tries to leave the guest root of `flatux run --root ROOT`.
//
// usage (inside the guest): /prog CASE [HOST_MARKER HOST_ROOT]
//   CASE: dotdot | abs_symlink | rel_symlink | host_path | loop | proc_links | mounts |
//         dentry_swap | host_move_out (run by host_move_out.py)
//
// make_escape_root.py builds ROOT and puts a marker file next to it, in
// ROOT's parent. Every way of naming that marker from inside must fail with
// ENOENT; the equivalent in-root paths are opened too, to show the path
// walk itself works. Reading the marker's contents exits 3, any other
// failed check 1.
//
// There is no native run: without flatux this program would need chroot,
// which takes root or a user namespace, and without chroot every absolute
// path here would name the host's own files.
#include "guest_check.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MARKER "flatux hostfs escape marker: this file lies outside the guest root\n"
#define INSIDE "inside the guest root\n"

static int escaped;

static ssize_t slurp(int fd, char* buf, size_t cap) {
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, buf + len, cap - 1 - len);
    if (r < 0) return -1;
    if (r == 0) break;
    len += (size_t)r;
    if (len == cap - 1) break;
  }
  buf[len] = '\0';
  return (ssize_t)len;
}

// An in-root path that must open and hold INSIDE.
static void reachable(int dirfd, const char* path) {
  int fd = openat(dirfd, path, O_RDONLY);
  if (fd < 0) {
    CHECK(0, "%s: %s, want it to open (it names /inside)", path, strerror(errno));
    return;
  }
  char buf[256];
  ssize_t n = slurp(fd, buf, sizeof buf);
  close(fd);
  CHECK(n >= 0 && strcmp(buf, INSIDE) == 0, "%s holds \"%s\", want /inside's contents", path,
        n >= 0 ? buf : strerror(errno));
  printf("  reachable   %-48s ok\n", path);
}

// A path that names something outside the root, or nothing: open, stat and
// access must all say ENOENT.
static void unreachable(int dirfd, const char* path) {
  int fd = openat(dirfd, path, O_RDONLY);
  if (fd >= 0) {
    char buf[256];
    ssize_t n = slurp(fd, buf, sizeof buf);
    close(fd);
    if (n >= 0 && strcmp(buf, MARKER) == 0) {
      printf("ESCAPED: %s opened the marker outside the root\n", path);
      fprintf(stderr, "ESCAPED: %s opened the marker outside the root\n", path);
      escaped++;
    } else {
      CHECK(0, "%s opened, holding \"%s\"; want ENOENT", path, n >= 0 ? buf : "?");
    }
    return;
  }
  CHECK(errno == ENOENT, "open %s: %s, want ENOENT", path, strerror(errno));
  struct stat st;
  errno = 0;
  int r = fstatat(dirfd, path, &st, 0);
  if (r == 0 && S_ISREG(st.st_mode) && st.st_size == (off_t)strlen(MARKER))
    printf("  (stat %s found a file of the marker's size)\n", path);
  CHECK(r == -1 && errno == ENOENT, "stat %s: %d %s, want ENOENT", path, r, strerror(errno));
  errno = 0;
  r = faccessat(dirfd, path, F_OK, 0);
  CHECK(r == -1 && errno == ENOENT, "access %s: %d %s, want ENOENT", path, r, strerror(errno));
  printf("  unreachable %-48s ENOENT\n", path);
}

static void looping(const char* path, int flags) {
  errno = 0;
  int fd = open(path, O_RDONLY | flags);
  CHECK(fd == -1 && errno == ELOOP, "open %s%s: %d %s, want ELOOP", path,
        flags ? " O_NOFOLLOW" : "", fd, strerror(errno));
  if (fd >= 0) close(fd);
  if (!flags) {
    struct stat st;
    errno = 0;
    int r = stat(path, &st);
    CHECK(r == -1 && errno == ELOOP, "stat %s: %d %s, want ELOOP", path, r, strerror(errno));
  }
  printf("  looping     %-48s ELOOP%s\n", path, flags ? " (O_NOFOLLOW)" : "");
}

static void check_cwd(const char* want) {
  char cwd[PATH_MAX];
  CHECK(getcwd(cwd, sizeof cwd) && strcmp(cwd, want) == 0, "getcwd()=\"%s\", want \"%s\"",
        cwd, want);
}

static void dotdot(void) {
  printf("'..' chains:\n");
  reachable(AT_FDCWD, "/inside");
  reachable(AT_FDCWD, "/d1/d2/d3/../../../inside");
  // '..' at the root stays at the root.
  reachable(AT_FDCWD, "/../inside");
  reachable(AT_FDCWD, "/../../../../inside");
  unreachable(AT_FDCWD, "/../escape-marker");
  unreachable(AT_FDCWD, "/../../escape-marker");
  unreachable(AT_FDCWD, "/d1/d2/d3/../../../../escape-marker");
  unreachable(AT_FDCWD, "/d1/../../escape-marker");
  unreachable(AT_FDCWD, "/d1/d2/../../../d1/../../escape-marker");
  // The root's own name in its parent.
  unreachable(AT_FDCWD, "/../escape-root/inside");
  char deep[1024] = "/";
  for (int i = 0; i < 100; i++) strcat(deep, "../");
  strcat(deep, "escape-marker");
  unreachable(AT_FDCWD, deep);

  printf("relative to the working directory:\n");
  CHECK_OK(chdir("/"));
  unreachable(AT_FDCWD, "../escape-marker");
  reachable(AT_FDCWD, "../inside");
  CHECK_OK(chdir("/d1/d2/d3"));
  check_cwd("/d1/d2/d3");
  reachable(AT_FDCWD, "../../../inside");
  unreachable(AT_FDCWD, "../../../../escape-marker");
  unreachable(AT_FDCWD, deep + 1);
  CHECK_OK(chdir("../../../.."));
  check_cwd("/");
  CHECK_OK(chdir(".."));
  check_cwd("/");
  reachable(AT_FDCWD, "inside");
  unreachable(AT_FDCWD, "escape-marker");

  printf("relative to directory descriptors:\n");
  int root = open("/", O_RDONLY | O_DIRECTORY);
  REQUIRE(root >= 0, "open /: %s", strerror(errno));
  unreachable(root, "../escape-marker");
  reachable(root, "../inside");
  int up = openat(root, "..", O_RDONLY | O_DIRECTORY);
  REQUIRE(up >= 0, "openat(/, ..): %s", strerror(errno));
  struct stat a, b;
  CHECK(fstat(root, &a) == 0 && fstat(up, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev,
        "'..' of the root is not the root");
  unreachable(up, "escape-marker");
  reachable(up, "inside");
  CHECK_OK(fchdir(up));
  check_cwd("/");
  int d3 = open("/d1/d2/d3", O_RDONLY | O_DIRECTORY);
  REQUIRE(d3 >= 0, "open /d1/d2/d3: %s", strerror(errno));
  unreachable(d3, "../../../../escape-marker");
  reachable(d3, "../../../../inside");
  close(d3);
  close(up);
  close(root);
}

static void abs_symlink(void) {
  printf("absolute symlinks:\n");
  char target[PATH_MAX];
  ssize_t n = readlink("/link-to-root", target, sizeof target - 1);
  CHECK(n == 1 && target[0] == '/', "readlink /link-to-root = %zd", n);
  reachable(AT_FDCWD, "/link-to-root/inside");
  reachable(AT_FDCWD, "/link-to-root/link-to-root/inside");
  reachable(AT_FDCWD, "/d1/rootlink/inside");
  unreachable(AT_FDCWD, "/link-to-root/../escape-marker");
  unreachable(AT_FDCWD, "/link-to-root/../../escape-marker");
  unreachable(AT_FDCWD, "/link-to-root/link-to-root/../escape-marker");
  unreachable(AT_FDCWD, "/d1/rootlink/../escape-marker");
  unreachable(AT_FDCWD, "/d1/d2/d3/../../rootlink/../../escape-marker");
  // Links whose text is a host path: inside, that path does not exist.
  unreachable(AT_FDCWD, "/abs-marker");
  unreachable(AT_FDCWD, "/abs-parent/escape-marker");
  unreachable(AT_FDCWD, "/abs-parent/../escape-marker");
  CHECK_OK(chdir("/link-to-root"));
  unreachable(AT_FDCWD, "../escape-marker");
  check_cwd("/");
}

static void rel_symlink(void) {
  printf("relative symlinks:\n");
  reachable(AT_FDCWD, "/up/inside");
  reachable(AT_FDCWD, "/up/up/up/inside");
  reachable(AT_FDCWD, "/d1/d2/d3/up4/inside");
  unreachable(AT_FDCWD, "/up/escape-marker");
  unreachable(AT_FDCWD, "/up/up/escape-marker");
  unreachable(AT_FDCWD, "/up/../escape-marker");
  unreachable(AT_FDCWD, "/d1/d2/d3/up4/escape-marker");
  unreachable(AT_FDCWD, "/d1/d2/d3/up4/../escape-marker");
  unreachable(AT_FDCWD, "/d1/esc");
  CHECK_OK(chdir("/d1/d2/d3/up4"));
  check_cwd("/");
  unreachable(AT_FDCWD, "escape-marker");
  CHECK_OK(chdir("/d1"));
  unreachable(AT_FDCWD, "esc");
  unreachable(AT_FDCWD, "../up/../escape-marker");
}

static void host_path(const char* host_marker, const char* host_root) {
  printf("host paths (they mean nothing inside):\n");
  char path[PATH_MAX];
  unreachable(AT_FDCWD, host_marker);
  snprintf(path, sizeof path, "%s/../escape-marker", host_root);
  unreachable(AT_FDCWD, path);
  snprintf(path, sizeof path, "%s/inside", host_root);
  unreachable(AT_FDCWD, path);
  snprintf(path, sizeof path, "/link-to-root%s", host_marker);
  unreachable(AT_FDCWD, path);
}

// /proc's links name guest paths and are followed in the guest's
// namespace: the root link is the guest root, another process's cwd is a
// guest folder, and ".." after either stops at the root.
static void proc_links(const char* self) {
  printf("/proc links:\n");
  reachable(AT_FDCWD, "/proc/self/root/inside");
  unreachable(AT_FDCWD, "/proc/self/root/../escape-marker");
  unreachable(AT_FDCWD, "/proc/1/root/../../escape-marker");
  CHECK_OK(chdir("/d1"));
  reachable(AT_FDCWD, "/proc/self/cwd/../inside");
  unreachable(AT_FDCWD, "/proc/self/cwd/../../escape-marker");
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);  // the child keeps only its stdin copy
  pid_t child = vfork();
  if (child == 0) {
    dup2(p[0], 0);
    execl(self, self, "park", (char*)NULL);
    _exit(127);
  }
  REQUIRE(child > 0);
  close(p[0]);
  char path[PATH_MAX], cwd[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/cwd", (int)child);
  ssize_t n;
  for (int i = 0; i < 500; i++) {  // until the child has moved to /d1/d2/d3
    n = readlink(path, cwd, sizeof cwd - 1);
    if (n > 0 && (cwd[n] = 0, strcmp(cwd, "/d1/d2/d3") == 0)) break;
    usleep(10000);
  }
  CHECK(n > 0 && strcmp(cwd, "/d1/d2/d3") == 0, "%s -> \"%s\"", path, n > 0 ? cwd : "?");
  snprintf(path, sizeof path, "/proc/%d/cwd/../../../inside", (int)child);
  reachable(AT_FDCWD, path);
  snprintf(path, sizeof path, "/proc/%d/cwd/../../../../escape-marker", (int)child);
  unreachable(AT_FDCWD, path);
  close(p[1]);  // the child reads EOF and exits
  int status;
  waitpid(child, &status, 0);
}

// Mounts made inside the root: a bind mount's ".." climbs the guest's own
// tree, and hostfs may not mount a host folder outside the root.
static void mounts(void) {
  printf("mounts:\n");
  char point[64];
  snprintf(point, sizeof point, "/bind-%d", (int)getpid());
  REQUIRE(mkdir(point, 0755) == 0, "mkdir %s: %s", point, strerror(errno));
  REQUIRE(mount("/d1/d2", point, NULL, MS_BIND, NULL) == 0, "bind mount: %s", strerror(errno));
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/../inside", point);
  reachable(AT_FDCWD, path);
  snprintf(path, sizeof path, "%s/d3/../../inside", point);
  reachable(AT_FDCWD, path);
  snprintf(path, sizeof path, "%s/../../escape-marker", point);
  unreachable(AT_FDCWD, path);
  snprintf(path, sizeof path, "%s/d3/../../../../escape-marker", point);
  unreachable(AT_FDCWD, path);
  CHECK_OK(umount(point));
  CHECK(mount("none", point, "hostfs", 0, "/") == -1 && errno == EPERM,
        "hostfs mount of the host's / from inside the root: %s", strerror(errno));
  CHECK_OK(rmdir(point));
}

// The kernel caches the folders a walk went through, with a host
// descriptor each. Cached folders replaced by links to "/" and to paths
// climbing above the root (the guest's own rmdir and rename, with the old
// folders held open and as the cwd meanwhile): walks through the names
// follow the links inside the root, and the held folders reach nothing.
static void dentry_swap(void) {
  printf("cached folders swapped for links:\n");
  CHECK_OK(mkdir("/swap", 0755));
  CHECK_OK(mkdir("/swap/a", 0755));
  CHECK_OK(mkdir("/swap/a/b", 0755));
  CHECK_OK(chdir("/swap/a/b"));
  int held = open("/swap/a", O_RDONLY | O_DIRECTORY);
  REQUIRE(held >= 0);
  CHECK_OK(chdir("/"));
  CHECK_OK(rmdir("/swap/a/b"));
  CHECK_OK(rmdir("/swap/a"));
  CHECK_OK(symlink("/", "/swap/l"));
  CHECK_OK(rename("/swap/l", "/swap/a"));
  reachable(AT_FDCWD, "/swap/a/inside");
  unreachable(AT_FDCWD, "/swap/a/escape-marker");
  unreachable(AT_FDCWD, "/swap/a/../escape-marker");
  unreachable(AT_FDCWD, "/swap/a/b/../../escape-marker");
  unreachable(held, "escape-marker");
  unreachable(held, "../escape-marker");
  unreachable(held, "../../escape-marker");
  CHECK_OK(chdir("/swap/a"));
  check_cwd("/");
  unreachable(AT_FDCWD, "../escape-marker");
  CHECK_OK(chdir("/"));
  // Climbing links, made where the cached folders were.
  CHECK_OK(mkdir("/swap/c", 0755));
  CHECK_OK(mkdir("/swap/c/d", 0755));
  CHECK_OK(chdir("/swap/c/d"));
  CHECK_OK(chdir("/"));
  CHECK_OK(rmdir("/swap/c/d"));
  CHECK_OK(symlink("../../..", "/swap/c/d"));
  reachable(AT_FDCWD, "/swap/c/d/inside");
  unreachable(AT_FDCWD, "/swap/c/d/escape-marker");
  unreachable(AT_FDCWD, "/swap/c/d/../escape-marker");
  CHECK_ERR(rmdir("/swap/c/d"), ENOTDIR);  // a link: rmdir refuses it
  CHECK_OK(unlink("/swap/c/d"));
  CHECK_OK(symlink("../../../escape-marker", "/swap/c/d"));
  unreachable(AT_FDCWD, "/swap/c/d");
  CHECK_OK(chdir("/swap/c"));
  unreachable(AT_FDCWD, "d");
  unreachable(AT_FDCWD, "../../escape-marker");
  CHECK_OK(chdir("/"));
  close(held);
}

// A host process (host_move_out.py) moves a folder the guest has cached,
// holds open and works in out of the root, and puts the marker's
// contents in it. The kernel checks that a cached folder is still inside
// the root at most every 100 ms: after a generous bound, nothing the
// guest does reaches the moved folder.
static long ms_since(const struct timespec* t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

static int reads_marker(int dirfd, const char* path) {
  int fd = openat(dirfd, path, O_RDONLY);
  if (fd < 0) return 0;
  char buf[256];
  ssize_t n = slurp(fd, buf, sizeof buf);
  close(fd);
  return n >= 0 && strcmp(buf, MARKER) == 0;
}

static void host_move_out(void) {
  printf("a cached folder moved out of the root by the host:\n");
  CHECK_OK(mkdir("/mv", 0755));
  CHECK_OK(mkdir("/mv/sub", 0755));
  CHECK_OK(chdir("/mv/sub"));
  CHECK_OK(chdir("/"));
  CHECK_OK(chdir("/mv/sub"));
  int held = open("/mv/sub", O_RDONLY | O_DIRECTORY);
  REQUIRE(held >= 0);
  struct stat st;
  CHECK_OK(stat("/mv/sub/.", &st));
  printf("ready\n");
  fflush(stdout);
  char line[16];
  REQUIRE(fgets(line, sizeof line, stdin) && !strncmp(line, "go", 2), "no go from the driver");
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const char* const tries[] = {"secret", "./secret", "../secret2", "/mv/sub/secret", "/mv/secret2"};
  long early = 0, late = 0, ms;
  while ((ms = ms_since(&t0)) < 1500) {
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
      if (!reads_marker(AT_FDCWD, tries[i])) continue;
      if (ms < 1000) early++;
      else if (late++ == 0) printf("ESCAPED: %s read the moved folder after %ld ms\n", tries[i], ms);
    }
    if (reads_marker(held, "secret") && ms >= 1000 && late++ == 0)
      printf("ESCAPED: the held folder read the moved folder after %ld ms\n", ms);
    usleep(1000);
  }
  printf("  reads of the moved folder within the first second: %ld, after it: %ld\n", early, late);
  if (late) escaped++;
  CHECK_OK(chdir("/"));
  close(held);
}

// The other process of proc_links: sits in /d1/d2/d3 until stdin closes.
static int park(void) {
  if (chdir("/d1/d2/d3") != 0) return 1;
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return 0;
}

static void loop(void) {
  printf("symlink loops:\n");
  struct stat st;
  CHECK(lstat("/loop/a", &st) == 0 && S_ISLNK(st.st_mode), "lstat /loop/a: %s", strerror(errno));
  looping("/loop/a", 0);
  looping("/loop/b", 0);
  looping("/loop/a/x", 0);
  looping("/loop/a", O_NOFOLLOW);
  // Linux follows at most 40 links in one lookup: /chain/l2 takes 40 to
  // reach /inside, /chain/l1 takes 41.
  reachable(AT_FDCWD, "/chain/l2");
  looping("/chain/l1", 0);
}

int main(int argc, char** argv) {
  guest_name = "escape_probe";
  REQUIRE(argc >= 2, "usage: /prog CASE [HOST_MARKER HOST_ROOT]");
  const char* which = argv[1];
  if (strcmp(which, "dotdot") == 0) {
    dotdot();
  } else if (strcmp(which, "abs_symlink") == 0) {
    abs_symlink();
  } else if (strcmp(which, "rel_symlink") == 0) {
    rel_symlink();
  } else if (strcmp(which, "host_path") == 0) {
    REQUIRE(argc == 4, "host_path needs HOST_MARKER HOST_ROOT");
    host_path(argv[2], argv[3]);
  } else if (strcmp(which, "loop") == 0) {
    loop();
  } else if (strcmp(which, "proc_links") == 0) {
    proc_links(argv[0]);
  } else if (strcmp(which, "mounts") == 0) {
    mounts();
  } else if (strcmp(which, "host_move_out") == 0) {
    host_move_out();
  } else if (strcmp(which, "dentry_swap") == 0) {
    dentry_swap();
  } else if (strcmp(which, "park") == 0) {
    return park();
  } else {
    REQUIRE(0, "unknown case %s", which);
  }
  if (escaped) {
    fprintf(stderr, "escape_probe: the marker outside the root was read %d time(s)\n", escaped);
    return 3;
  }
  return guest_finish();
}
