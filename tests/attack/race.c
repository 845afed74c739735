// A guest racing hostfs with ordinary system calls, as root of a writable
// root folder, to make flatux act on a host path outside it:
//
//   mount  RENAME_EXCHANGE of a folder and a link to a host folder outside
//          while mount(2) asks for a hostfs of that folder
//   chmod  RENAME_EXCHANGE of a file and a link to a host file outside
//          while chmod, chown, utimensat, truncate and setxattr work on it
//   dotdot directories moved up and down the tree (and an ancestor of
//          theirs) while walkers follow `..` chains from them, by an open
//          descriptor, the cwd and a path: every `..` must stay on a
//          directory of the root, and OUTSIDE/marker, `..` enough times
//          above the root, must never open
//
// usage: race [--boot JAIL] mount|chmod|dotdot SECONDS JAIL OUTSIDE  (boot_init.h)
//   JAIL     the host path of the guest's root
//   OUTSIDE  a host folder next to it holding `marker` and `victim`
// Prints counts and "ESCAPED ..." for anything seen of OUTSIDE; attack.py
// checks OUTSIDE from the host. Exit 0: no escape seen.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "boot_init.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static atomic_int stop;
static atomic_long escapes;
static atomic_long swaps;
static const char* swap_a;
static const char* swap_b;

static void* swapper(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    if (syscall(SYS_renameat2, AT_FDCWD, swap_a, AT_FDCWD, swap_b, RENAME_EXCHANGE) == 0)
      atomic_fetch_add(&swaps, 1);
  }
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int race_mount(double seconds, const char* jail, const char* outside) {
  mkdir("/a", 0755);
  mkdir("/mnt", 0755);
  if (symlink(outside, "/b") != 0) perror("symlink /b");
  char source[4096];
  snprintf(source, sizeof source, "%s/a", jail);
  swap_a = "/a";
  swap_b = "/b";
  pthread_t th;
  pthread_create(&th, NULL, swapper, NULL);
  long tries = 0, mounted = 0, escaped = 0;
  double end = now() + seconds;
  while (now() < end) {
    tries++;
    if (mount("none", "/mnt", "hostfs", 0, source) != 0) continue;
    mounted++;
    if (access("/mnt/marker", F_OK) == 0) {
      if (escaped++ == 0) printf("ESCAPED: a hostfs of %s showed %s/marker\n", source, outside);
    }
    umount("/mnt");
  }
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  printf("mount race: %ld mounts tried, %ld made, %ld swaps, %ld escapes\n", tries, mounted,
         atomic_load(&swaps), escaped);
  return escaped ? 1 : 0;
}

static int race_chmod(double seconds, const char* outside) {
  int fd = open("/f", O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) close(fd);
  char victim[4096];
  snprintf(victim, sizeof victim, "%s/victim", outside);
  if (symlink(victim, "/l") != 0) perror("symlink /l");
  swap_a = "/f";
  swap_b = "/l";
  pthread_t th;
  pthread_create(&th, NULL, swapper, NULL);
  long calls = 0, done = 0;
  struct timespec epoch[2] = {{0, 0}, {0, 0}};
  double end = now() + seconds;
  while (now() < end) {
    done += chmod("/f", 0606) == 0;
    done += chown("/f", 1234, 1234) == 0;
    done += utimensat(AT_FDCWD, "/f", epoch, 0) == 0;
    done += truncate("/f", 0) == 0;
    done += setxattr("/f", "user.race", "x", 1, 0) == 0;
    done += lchown("/f", 4321, 4321) == 0;
    calls += 6;
  }
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  printf("chmod race: %ld calls, %ld succeeded on the guest's own file, %ld swaps\n", calls, done,
         atomic_load(&swaps));
  return 0;
}

// The directories of the root: where any `..` walk may end.
enum { MAX_DIRS = 8, WALKERS = 4, MAX_UP = 8 };
static struct stat jail_dirs[MAX_DIRS];
static int jail_dir_count;
static char marker_rel[256];

static void* mover(void* arg) {
  const char* const* pair = arg;
  while (!atomic_load(&stop)) {
    if (rename(pair[0], pair[1]) == 0) atomic_fetch_add(&swaps, 1);
    if (rename(pair[1], pair[0]) == 0) atomic_fetch_add(&swaps, 1);
  }
  return NULL;
}

static int in_jail(const struct stat* st) {
  for (int i = 0; i < jail_dir_count; i++)
    if (jail_dirs[i].st_dev == st->st_dev && jail_dirs[i].st_ino == st->st_ino) return 1;
  return 0;
}

static void escaped(const char* how, const char* path) {
  if (atomic_fetch_add(&escapes, 1) < 5) printf("ESCAPED: %s %s\n", how, path);
}

// `..` n times from dfd: a directory of the root, never more; and the
// marker `..` n times up, never.
static void walk_up(int dfd, const char* from) {
  char path[512] = "";
  for (int n = 1; n <= MAX_UP; n++) {
    strcat(path, "../");
    int fd = openat(dfd, path, O_PATH | O_DIRECTORY);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && !in_jail(&st)) escaped(from, path);
      close(fd);
    }
    char target[1024];
    snprintf(target, sizeof target, "%s%s", path, marker_rel);
    fd = openat(dfd, target, O_RDONLY);
    if (fd >= 0) {
      escaped(from, target);
      close(fd);
    }
  }
}

static atomic_long walks;

static void* dotdot_walker(void* arg) {
  long id = (long)arg;
  int dfd = open("/a/b/c/d", O_PATH | O_DIRECTORY);
  if (dfd < 0) {
    perror("walker: open /a/b/c/d");
    return NULL;
  }
  while (!atomic_load(&stop)) {
    if (id == 0) {
      walk_up(AT_FDCWD, "cwd");
    } else if (id == 1) {
      // By name, through whichever names are there now.
      walk_up(dfd, "fd");
      char p[1024];
      snprintf(p, sizeof p, "/a/b/c/d/../../../../../../%s", marker_rel);
      int fd = open(p, O_RDONLY);
      if (fd >= 0) {
        escaped("path", p);
        close(fd);
      }
    } else {
      walk_up(dfd, "fd");
    }
    atomic_fetch_add(&walks, 1);
  }
  close(dfd);
  return NULL;
}

static int race_dotdot(double seconds, const char* outside) {
  const char* dirs[] = {"/", "/a", "/a/b", "/a/b/c", "/a/b/c/d", "/top"};
  for (int i = 1; i < 6; i++) mkdir(dirs[i], 0755);
  for (int i = 0; i < 6; i++) {
    if (stat(dirs[i], &jail_dirs[jail_dir_count]) != 0) {
      printf("stat %s: %s\n", dirs[i], strerror(errno));
      return 2;
    }
    jail_dir_count++;
  }
  const char* base = strrchr(outside, '/');
  snprintf(marker_rel, sizeof marker_rel, "%s/marker", base ? base + 1 : outside);
  if (chdir("/a/b/c/d") != 0) return 2;
  // d between depth 4 and 1; a (d's ancestor) between depth 1 and 2.
  static const char* const move_d[] = {"/a/b/c/d", "/d"};
  static const char* const move_a[] = {"/a", "/top/a"};
  pthread_t movers[2], walkers[WALKERS];
  for (long i = 0; i < WALKERS; i++) pthread_create(&walkers[i], NULL, dotdot_walker, (void*)i);
  pthread_create(&movers[0], NULL, mover, (void*)move_d);
  pthread_create(&movers[1], NULL, mover, (void*)move_a);
  double end = now() + seconds;
  while (now() < end) usleep(10000);
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(movers[i], NULL);
  for (int i = 0; i < WALKERS; i++) pthread_join(walkers[i], NULL);
  printf("dotdot race: %ld walks of up to %d `..`, %ld renames, %ld escapes\n", atomic_load(&walks), MAX_UP,
         atomic_load(&swaps), atomic_load(&escapes));
  return atomic_load(&escapes) ? 1 : 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  boot_enter(&argc, &argv);
  if (argc != 5) {
    fprintf(stderr, "usage: race [--boot JAIL] mount|chmod|dotdot SECONDS JAIL OUTSIDE\n");
    return boot_exit(2);
  }
  double seconds = atof(argv[2]);
  if (!strcmp(argv[1], "mount")) return boot_exit(race_mount(seconds, argv[3], argv[4]));
  if (!strcmp(argv[1], "chmod")) return boot_exit(race_chmod(seconds, argv[4]));
  if (!strcmp(argv[1], "dotdot")) return boot_exit(race_dotdot(seconds, argv[4]));
  return boot_exit(2);
}
