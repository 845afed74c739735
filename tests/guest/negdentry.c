// A name looked up while missing is found as soon as it is created, by
// whatever way it is created: a kernel remembering missing names must
// never answer from a stale memory of one.
//
// Usage: negdentry CASE [--tmpfs] DIR
//   CASE  create_ways | rmdir_remake | rename_remake | race
//   DIR   a scratch folder (the host folder, or an ext4 mount point);
//         --tmpfs mounts a tmpfs on it first (needs root: 77 without).
#define _GNU_SOURCE
#define GUEST_MOUNT_SCRATCH
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest_check.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#include "guest_at.h"

// errno of lstat(path), 0 when it succeeds.
static int lstat_err(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0 ? 0 : errno;
}

// Looks `name` up while it is missing, as the last component and in the
// middle of a walk, twice (a remembered answer is used the second time).
static void look_while_missing(const char* name) {
  for (int i = 0; i < 2; i++) {
    CHECK(lstat_err(at("%s", name)) == ENOENT, "%s: %s", name, strerror(lstat_err(at("%s", name))));
    CHECK(lstat_err(at("%s/below", name)) == ENOENT, "%s/below", name);
    CHECK(access(at("%s/below/deeper", name), F_OK) < 0 && errno == ENOENT, "%s/below/deeper", name);
  }
}

enum Way { kCreat, kMkdir, kFifo, kSymlink, kLink, kRename, kExchange, kBind, kWays };
static const char* const kWayNames[kWays] = {"creat", "mkdir", "mknod_fifo", "symlink",
                                             "link", "rename", "exchange", "bind"};

// Makes `name` by way w; 0 or an errno.
static int make_by(enum Way w, const char* name) {
  const char* p = at("%s", name);
  int fd;
  switch (w) {
    case kCreat:
      fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) return errno;
      close(fd);
      return 0;
    case kMkdir: return mkdir(p, 0755) == 0 ? 0 : errno;
    case kFifo: return mknod(p, S_IFIFO | 0644, 0) == 0 ? 0 : errno;
    case kSymlink: return symlink("target_dir", p) == 0 ? 0 : errno;
    case kLink: return link(at("source_file"), p) == 0 ? 0 : errno;
    case kRename: {
      const char* from = at("%s.src", name);
      fd = open(from, O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) return errno;
      close(fd);
      return rename(from, p) == 0 ? 0 : errno;
    }
    case kExchange: {
      // `name` is an existing empty folder's "m": a folder holding an "m"
      // is exchanged with it.
      char folder[PATH_MAX], other[PATH_MAX + 8], other_m[PATH_MAX + 8];
      snprintf(folder, sizeof folder, "%s", p);
      *strrchr(folder, '/') = 0;
      snprintf(other, sizeof other, "%s.new", folder);
      snprintf(other_m, sizeof other_m, "%s.new/m", folder);
      if (mkdir(other, 0755) != 0) return errno;
      if (mkdir(other_m, 0755) != 0) return errno;
      return syscall(SYS_renameat2, AT_FDCWD, other, AT_FDCWD, folder, RENAME_EXCHANGE) == 0 ? 0 : errno;
    }
    case kBind: {
      struct sockaddr_un a = {.sun_family = AF_UNIX};
      // A path relative to DIR keeps sun_path short.
      if (snprintf(a.sun_path, sizeof a.sun_path, "%s", name) >= (int)sizeof a.sun_path) return ENAMETOOLONG;
      int s = socket(AF_UNIX, SOCK_STREAM, 0);
      if (s < 0) return errno;
      int r = chdir(dir) == 0 && bind(s, (struct sockaddr*)&a, sizeof a) == 0 ? 0 : errno;
      close(s);
      return r;
    }
    default: return EINVAL;
  }
}

// What lstat of name/below must say once name is made by w: a directory
// (or a link to one, followed in the middle of a walk) has no "below",
// anything else is no directory.
static int below_after(enum Way w) { return w == kMkdir || w == kSymlink || w == kExchange ? ENOENT : ENOTDIR; }

static void check_made(enum Way w, const char* name, const char* by) {
  int e = lstat_err(at("%s", name));
  CHECK(e == 0, "%s made by %s (%s): lstat says %s", name, kWayNames[w], by, strerror(e));
  e = lstat_err(at("%s/below", name));
  CHECK(e == below_after(w), "%s/below after %s (%s): %s, want %s", name, kWayNames[w], by, strerror(e),
        strerror(below_after(w)));
  if (w == kMkdir || w == kSymlink || w == kExchange) {
    e = lstat_err(at("%s/.", name));
    CHECK(e == 0, "%s/. after %s (%s): %s", name, kWayNames[w], by, strerror(e));
  }
}

// The name made by way w for `prefix`: an exchange makes "m" in a folder
// (which exists beforehand).
static const char* name_for(enum Way w, const char* prefix, char* out, size_t n) {
  snprintf(out, n, w == kExchange ? "%s_%s/m" : "%s_%s", prefix, kWayNames[w]);
  if (w == kExchange) {
    char folder[64];
    snprintf(folder, sizeof folder, "%s_%s", prefix, kWayNames[w]);
    REQUIRE(mkdir(at("%s", folder), 0755) == 0);
  }
  return out;
}

static char thread_name[64];

static void* make_in_thread(void* arg) { return (void*)(uintptr_t)make_by((enum Way)(uintptr_t)arg, thread_name); }

// Each way of making a name, by another process and by another thread,
// after the name was looked up while missing.
static void create_ways(void) {
  REQUIRE(mkdir(at("target_dir"), 0755) == 0);
  int fd = open(at("source_file"), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  close(fd);
  for (int w = 0; w < kWays; w++) {
    char name[64];
    name_for((enum Way)w, "p", name, sizeof name);
    look_while_missing(name);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(make_by((enum Way)w, name));
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (w == kBind && WIFEXITED(status) && WEXITSTATUS(status) == EACCES) {
      // flatux binds sockets in host folders only: no name is made here.
      printf("  %-12s refused here (EACCES): no name to see\n", kWayNames[w]);
      continue;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "making %s by %s: %s", name, kWayNames[w],
          strerror(WEXITSTATUS(status)));
    check_made((enum Way)w, name, "another process");

    name_for((enum Way)w, "t", thread_name, sizeof thread_name);
    look_while_missing(thread_name);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, make_in_thread, (void*)(uintptr_t)w) == 0);
    void* ret = NULL;
    pthread_join(th, &ret);
    CHECK(ret == NULL, "making %s by %s: %s", thread_name, kWayNames[w], strerror((int)(uintptr_t)ret));
    REQUIRE(chdir("/") == 0);  // bind changed the cwd
    check_made((enum Way)w, thread_name, "another thread");
    printf("  %-12s seen at once after it was made\n", kWayNames[w]);
  }
}

// A missing name looked up in a folder; the folder removed and made again
// (rmdir and mkdir, or another folder renamed over it) with the name in it.
static void remake(int by_rename) {
  char d[PATH_MAX];
  snprintf(d, sizeof d, "%s", at("folder"));
  REQUIRE(mkdir(d, 0755) == 0);
  look_while_missing("folder/m");
  if (by_rename) {
    REQUIRE(mkdir(at("other"), 0755) == 0);
    REQUIRE(mkdir(at("other/m"), 0755) == 0);
    REQUIRE(rename(at("other"), d) == 0, "rename over folder: %s", strerror(errno));
  } else {
    REQUIRE(rmdir(d) == 0);
    REQUIRE(mkdir(d, 0755) == 0);
    REQUIRE(mkdir(at("folder/m"), 0755) == 0);
  }
  CHECK(lstat_err(at("folder/m")) == 0, "folder/m: %s", strerror(lstat_err(at("folder/m"))));
  CHECK(lstat_err(at("folder/m/.")) == 0, "folder/m/.: %s", strerror(lstat_err(at("folder/m/."))));
  CHECK(lstat_err(at("folder/m/below")) == ENOENT);
}

// One thread makes and removes a folder over and over; others look it up.
// A lookup that ran wholly while the folder existed must find it.
static atomic_long race_gen;  // odd: the folder exists (made, not yet removed)
static atomic_int race_stop;
static atomic_long race_checked, race_stale;
static char race_dir[PATH_MAX], race_below[PATH_MAX], race_dot[PATH_MAX];

static void* race_looker(void* arg) {
  (void)arg;
  while (!atomic_load(&race_stop)) {
    long g1 = atomic_load(&race_gen);
    int e1 = lstat_err(race_below);  // ENOENT either way: remembers the folder as missing
    int e2 = lstat_err(race_dot);
    long g2 = atomic_load(&race_gen);
    if (g1 == g2 && (g1 & 1)) {
      atomic_fetch_add(&race_checked, 1);
      if (e2 != 0 || e1 != ENOENT) atomic_fetch_add(&race_stale, 1);
    }
  }
  return NULL;
}

static void spin(int n) {
  for (volatile int i = 0; i < n; i++) {
  }
}

static void race(void) {
  enum { kLookers = 3, kRounds = 3000 };
  snprintf(race_dir, sizeof race_dir, "%s", at("busy"));
  snprintf(race_below, sizeof race_below, "%s", at("busy/x"));
  snprintf(race_dot, sizeof race_dot, "%s", at("busy/."));
  pthread_t th[kLookers];
  for (int i = 0; i < kLookers; i++) REQUIRE(pthread_create(&th[i], NULL, race_looker, NULL) == 0);
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rounds = 0;
  for (; rounds < kRounds; rounds++) {
    REQUIRE(mkdir(race_dir, 0755) == 0, "mkdir: %s", strerror(errno));
    atomic_fetch_add(&race_gen, 1);
    spin(20000);
    atomic_fetch_add(&race_gen, 1);
    REQUIRE(rmdir(race_dir) == 0, "rmdir: %s", strerror(errno));
    spin(5000);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec >= 3) break;  // enough on a slow machine
  }
  atomic_store(&race_stop, 1);
  for (int i = 0; i < kLookers; i++) pthread_join(th[i], NULL);
  printf("  %d rounds, %ld lookups while the folder existed, %ld stale\n", rounds, atomic_load(&race_checked),
         atomic_load(&race_stale));
  CHECK(atomic_load(&race_stale) == 0, "%ld lookups missed a folder that existed", atomic_load(&race_stale));
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "negdentry";
  int tmpfs = argc == 4 && strcmp(argv[2], "--tmpfs") == 0;
  REQUIRE(argc == 3 || tmpfs, "usage: negdentry CASE [--tmpfs] DIR");
  const char* what = argv[1];
  if (tmpfs && geteuid() != 0) {
    printf("SKIP: --tmpfs mounts, which needs root\n");
    return 77;
  }
  if (tmpfs) guest_mount_scratch(argv[3], dir, "size=4m");
  else REQUIRE(realpath(argv[2], dir) != NULL);
  snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/neg_%s", what);
  REQUIRE(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
  printf("negdentry %s in %s\n", what, dir);
  if (!strcmp(what, "create_ways")) create_ways();
  else if (!strcmp(what, "rmdir_remake")) remake(0);
  else if (!strcmp(what, "rename_remake")) remake(1);
  else if (!strcmp(what, "race")) race();
  else REQUIRE(0, "unknown case %s", what);
  return guest_finish();
}
