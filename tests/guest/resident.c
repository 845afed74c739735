// Resident memory, as /proc shows it: VmRSS and its parts RssAnon, RssFile
// and RssShmem in /proc/PID/status grow with the pages a process touches
// (not with what it maps) and shrink when it unmaps them; VmHWM keeps the
// most; statm's resident and shared fields and stat's rss field agree;
// another process (a forked child) is seen as well as oneself.
//
// Usage: resident SCRATCH_DIR
#define _GNU_SOURCE
#include "guest_check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kKiB = 1024, kMiB = 1024 * 1024 };
// Linux's RSS counters are per CPU and folded in batches (the oracle may
// read up to a batch per CPU short): 64 pages, 256 KiB, of slack.
enum { kSlackPages = 64, kSlackKiB = 256 };

// A "Name:  N kB" line of /proc/PID/status, in kB (-1: none).
static long status_kb(pid_t pid, const char* name) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE* f = fopen(path, "r");
  long kb = -1;
  size_t n = strlen(name);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, name, n) == 0 && line[n] == ':') {
      sscanf(line + n + 1, "%ld", &kb);
      break;
    }
  if (f) fclose(f);
  return kb;
}

// Field `i` (0-based) of /proc/self/statm, in pages.
static long statm(int i) {
  long v[7] = {0};
  FILE* f = fopen("/proc/self/statm", "r");
  int got = f ? fscanf(f, "%ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) : 0;
  if (f) fclose(f);
  return got == 7 ? v[i] : -1;
}

// Field 24 of /proc/self/stat (rss, pages).
static long stat_rss(void) {
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char* p = strrchr(buf, ')');  // the name may hold spaces
  long v = -1;
  for (int field = 2; p && field < 24; field++) p = strchr(p + 1, ' ');
  if (p) sscanf(p + 1, "%ld", &v);
  return v;
}

static void touch(char* m, size_t len) {
  for (size_t i = 0; i < len; i += 4096) m[i] = 1;
}

static void test_anon(void) {
  puts("anonymous memory");
  long rss0 = status_kb(getpid(), "VmRSS"), anon0 = status_kb(getpid(), "RssAnon");
  long statm0 = statm(1), stat0 = stat_rss();
  REQUIRE(rss0 > 0 && anon0 >= 0, "VmRSS %ld, RssAnon %ld kB", rss0, anon0);
  // (Linux's counters are per CPU and approximate by a few pages: a small
  // static program's stat may say 0.)
  CHECK(statm0 > 0 && stat0 >= 0, "statm resident %ld, stat rss %ld", statm0, stat0);
  char* m = mmap(NULL, 64 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  long mapped = status_kb(getpid(), "RssAnon");
  CHECK(mapped - anon0 < 2 * kKiB, "mapping 64 MiB is not touching it: RssAnon %ld kB, was %ld", mapped, anon0);
  touch(m, 16 * kMiB);
  long anon1 = status_kb(getpid(), "RssAnon"), rss1 = status_kb(getpid(), "VmRSS");
  CHECK(anon1 - anon0 >= 16 * kKiB - kSlackKiB && anon1 - anon0 < 24 * kKiB, "16 MiB touched: RssAnon %ld kB, was %ld",
        anon1, anon0);
  CHECK(rss1 - rss0 >= 16 * kKiB - kSlackKiB, "VmRSS %ld kB, was %ld", rss1, rss0);
  CHECK(statm(1) - statm0 >= 4096 - kSlackPages, "statm resident %ld pages, was %ld", statm(1), statm0);
  CHECK(stat_rss() - stat0 >= 4096 - kSlackPages, "stat rss %ld pages, was %ld", stat_rss(), stat0);
  CHECK(statm(0) >= statm(1), "size %ld >= resident %ld", statm(0), statm(1));
  munmap(m, 64 * kMiB);
  long anon2 = status_kb(getpid(), "RssAnon");
  CHECK(anon1 - anon2 >= 16 * kKiB - kSlackKiB, "unmapped: RssAnon %ld kB, was %ld", anon2, anon1);
  CHECK(status_kb(getpid(), "VmHWM") >= rss1 - kKiB, "VmHWM %ld kB keeps the most (%ld)",
        status_kb(getpid(), "VmHWM"), rss1);
}

static void test_shared(void) {
  puts("shared memory");
  long shmem0 = status_kb(getpid(), "RssShmem");
  REQUIRE(shmem0 >= 0);
  char* m = mmap(NULL, 8 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  long shared0 = statm(2);
  touch(m, 4 * kMiB);
  long shmem1 = status_kb(getpid(), "RssShmem");
  CHECK(shmem1 - shmem0 >= 4 * kKiB - kSlackKiB && shmem1 - shmem0 < 8 * kKiB, "4 MiB touched: RssShmem %ld kB, was %ld",
        shmem1, shmem0);
  CHECK(statm(2) - shared0 >= 1024 - kSlackPages, "statm shared %ld pages, was %ld", statm(2), shared0);
  munmap(m, 8 * kMiB);
}

static void test_file(const char* dir) {
  puts("a file's pages");
  char path[4200];
  snprintf(path, sizeof path, "%s/resident-file", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0, "%s: %s", path, strerror(errno));
  static char block[kMiB];
  memset(block, 'x', sizeof block);
  for (int i = 0; i < 4; i++) REQUIRE(write(fd, block, sizeof block) == (ssize_t)sizeof block);
  long file0 = status_kb(getpid(), "RssFile");
  char* m = mmap(NULL, 4 * kMiB, PROT_READ, MAP_PRIVATE, fd, 0);
  REQUIRE(m != MAP_FAILED);
  volatile char sum = 0;
  for (size_t i = 0; i < 4 * kMiB; i += 4096) sum += m[i];
  long file1 = status_kb(getpid(), "RssFile");
  CHECK(file1 - file0 >= 4 * kKiB - kSlackKiB, "4 MiB of a file read through a mapping: RssFile %ld kB, was %ld", file1,
        file0);
  munmap(m, 4 * kMiB);
  close(fd);
  unlink(path);
}

static void test_other_process(void) {
  puts("another process");
  int up[2], down[2];
  REQUIRE(pipe(up) == 0 && pipe(down) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char* m = mmap(NULL, 32 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) _exit(1);
    touch(m, 24 * kMiB);
    if (status_kb(getppid(), "VmRSS") <= 0) _exit(3);  // the parent, seen from here
    char c;
    if (write(up[1], "a", 1) != 1 || read(down[0], &c, 1) != 1) _exit(2);
    _exit(0);
  }
  char c;
  CHECK(read(up[0], &c, 1) == 1);
  long anon = status_kb(child, "RssAnon");
  CHECK(anon >= 24 * kKiB - kSlackKiB, "the child touched 24 MiB: its RssAnon %ld kB", anon);
  CHECK(status_kb(child, "VmRSS") >= anon, "its VmRSS %ld kB", status_kb(child, "VmRSS"));
  CHECK(write(down[1], "b", 1) == 1);
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char** argv) {
  guest_name = "resident";
  REQUIRE(argc == 2, "usage: resident SCRATCH_DIR");
  test_anon();
  test_shared();
  test_file(argv[1]);
  test_other_process();
  return guest_finish();
}
