// Memory, as /proc shows it: mremap with MREMAP_FIXED and
// MREMAP_DONTUNMAP, /proc/self/maps lines of shared and file mappings,
// /proc/self/pagemap, mlock and VmLck, and CPU time in /proc/self/stat.
//
// Usage: memory_maps SCRATCH_DIR
#define _GNU_SOURCE
#include "guest_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif

#define PG 4096

static char dir[4096];

// The /proc/self/maps line starting at `addr`, in out; 0 when found.
static int maps_line(void* addr, char* out, size_t n) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[512];
  int found = -1;
  while (found && fgets(line, sizeof line, f)) {
    unsigned long start;
    if (sscanf(line, "%lx-", &start) == 1 && start == (uintptr_t)addr) {
      snprintf(out, n, "%s", line);
      found = 0;
    }
  }
  fclose(f);
  return found;
}

static int mapped(void* addr) {
  char line[512];
  return maps_line(addr, line, sizeof line) == 0;
}

static void test_mremap(void) {
  puts("mremap: MREMAP_FIXED and MREMAP_DONTUNMAP");
  char* a = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* free_spot = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(a != MAP_FAILED && free_spot != MAP_FAILED);
  REQUIRE(munmap(free_spot, 2 * PG) == 0);
  strcpy(a + PG, "moved along");
  CHECK_ERR((long)mremap(a, 2 * PG, 2 * PG, MREMAP_FIXED, free_spot), EINVAL);  // without MAYMOVE
  CHECK_ERR((long)mremap(a, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, free_spot + 1), EINVAL);
  CHECK_ERR((long)mremap(a, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, a + PG), EINVAL);  // overlaps
  char* b = mremap(a, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, free_spot);
  CHECK(b == free_spot, "MREMAP_FIXED to free space: %p (%s)", (void*)b, strerror(errno));
  if (b == free_spot) {
    CHECK(strcmp(b + PG, "moved along") == 0);
    CHECK(!mapped(a), "the old range is gone");
  }
  // Onto one of our own mappings: it is replaced.
  char* c = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(c != MAP_FAILED);
  c[0] = 'c';
  char* d = mremap(b, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, c);
  CHECK(d == c && strcmp(d + PG, "moved along") == 0, "MREMAP_FIXED over our own mapping: %p", (void*)d);
  // DONTUNMAP: the pages move, the old range stays mapped (and empty).
  strcpy(d, "dontunmap");
  CHECK_ERR((long)mremap(d, 2 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0), EINVAL);
  CHECK_ERR((long)mremap(d, 2 * PG, 2 * PG, MREMAP_DONTUNMAP, 0), EINVAL);
  char* e = mremap(d, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0);
  CHECK(e != MAP_FAILED, "MREMAP_DONTUNMAP: %s", strerror(errno));
  if (e != MAP_FAILED) {
    CHECK(strcmp(e, "dontunmap") == 0);
    CHECK(mapped(d) && d[0] == 0, "the old range is still mapped, empty");
    munmap(e, 2 * PG);
  }
  munmap(d, 2 * PG);
}

static void test_maps(void) {
  puts("/proc/self/maps: shared and file mappings");
  char path[4200];
  snprintf(path, sizeof path, "%s/mapped", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0 && ftruncate(fd, 3 * PG) == 0);
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  char* shared = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG);
  char* priv = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 2 * PG);
  char* anon = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED && priv != MAP_FAILED && anon != MAP_FAILED);
  char line[512], perms[8], dev[16], name[4096];
  unsigned long off, ino;
  CHECK(maps_line(shared, line, sizeof line) == 0, "the shared mapping is listed");
  name[0] = 0;
  int n = sscanf(line, "%*x-%*x %7s %lx %15s %lu %4095s", perms, &off, dev, &ino, name);
  char want_dev[16];
  snprintf(want_dev, sizeof want_dev, "%02x:%02x", major(st.st_dev), minor(st.st_dev));
  CHECK(n == 5 && strcmp(perms, "rw-s") == 0 && off == PG && ino == st.st_ino && strcmp(dev, want_dev) == 0 &&
            strcmp(name, path) == 0,
        "line: %s (want rw-s %x %s %lu %s)", line, PG, want_dev, (unsigned long)st.st_ino, path);
  CHECK(strstr(line, path) - line == 73, "the path starts at column 73: %s", line);
  CHECK(maps_line(priv, line, sizeof line) == 0);
  n = sscanf(line, "%*x-%*x %7s %lx %15s %lu %4095s", perms, &off, dev, &ino, name);
  CHECK(n == 5 && strcmp(perms, "r--p") == 0 && off == 2 * PG && strcmp(name, path) == 0, "line: %s", line);
  CHECK(maps_line(anon, line, sizeof line) == 0);
  CHECK(strstr(line, "rw-s") && strstr(line, "/dev/zero (deleted)"), "shared anonymous: %s", line);
  // A piece of a split file mapping keeps its file and its offset.
  char* three = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(three != MAP_FAILED);
  REQUIRE(mprotect(three + PG, PG, PROT_READ) == 0);
  CHECK(maps_line(three + PG, line, sizeof line) == 0);
  n = sscanf(line, "%*x-%*x %7s %lx %15s %lu %4095s", perms, &off, dev, &ino, name);
  CHECK(n == 5 && strcmp(perms, "r--s") == 0 && off == PG && strcmp(name, path) == 0, "split piece: %s", line);
  int shm = shmget(IPC_PRIVATE, PG, IPC_CREAT | 0600);
  char* s = shmat(shm, NULL, 0);
  REQUIRE(s != (char*)-1);
  CHECK(maps_line(s, line, sizeof line) == 0 && strstr(line, "rw-s") && strstr(line, "/SYSV00000000 (deleted)"),
        "shm: %s", line);
  shmdt(s);
  shmctl(shm, IPC_RMID, NULL);
  munmap(three, 3 * PG);
  munmap(shared, PG);
  munmap(priv, PG);
  munmap(anon, PG);
  close(fd);
  unlink(path);
}

static void test_pagemap(void) {
  puts("/proc/self/pagemap");
  char* m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  REQUIRE(munmap(m + 2 * PG, PG) == 0);
  m[0] = 1;  // the first page is present, the second never touched
  int fd = open("/proc/self/pagemap", O_RDONLY);
  REQUIRE(fd >= 0, "open: %s", strerror(errno));
  uint64_t e[3] = {~0ull, ~0ull, ~0ull};
  off_t at = (off_t)((uintptr_t)m / PG * 8);
  CHECK(pread(fd, e, sizeof e, at) == (ssize_t)sizeof e, "pread: %s", strerror(errno));
  CHECK(e[0] >> 63 == 1, "touched page present: %016llx", (unsigned long long)e[0]);
  CHECK(e[1] >> 63 == 0, "untouched page absent: %016llx", (unsigned long long)e[1]);
  CHECK(e[2] == 0, "unmapped page: %016llx", (unsigned long long)e[2]);
  // Another process's: a page only a forked child has.
  int p[2], q[2];
  REQUIRE(pipe(p) == 0 && pipe(q) == 0);
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    char* mine = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mine[0] = 1;
    uintptr_t a = (uintptr_t)mine;
    char c;
    _exit(write(p[1], &a, sizeof a) == sizeof a && read(q[0], &c, 1) == 1 ? 0 : 1);
  }
  uintptr_t theirs = 0;
  REQUIRE(read(p[0], &theirs, sizeof theirs) == sizeof theirs);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/pagemap", pid);
  int cfd = open(path, O_RDONLY);
  uint64_t ce = 0;
  CHECK(cfd >= 0 && pread(cfd, &ce, 8, (off_t)(theirs / PG * 8)) == 8 && ce >> 63 == 1,
        "the child's page in /proc/%d/pagemap: %016llx", pid, (unsigned long long)ce);
  if (cfd >= 0) close(cfd);
  REQUIRE(write(q[1], "x", 1) == 1);
  int status;
  waitpid(pid, &status, 0);
  close(p[0]), close(p[1]), close(q[0]), close(q[1]);
  CHECK_ERR(pread(fd, e, 8, at + 1), EINVAL);
  CHECK_ERR(pread(fd, e, 7, at), EINVAL);
  struct stat st;
  CHECK(stat("/proc/self/pagemap", &st) == 0 && (st.st_mode & 0777) == 0400, "mode %o", st.st_mode & 0777);
  close(fd);
  munmap(m, 2 * PG);
}

static long vmlck_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmLck: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb;
}

static void test_mlock(void) {
  puts("mlock and VmLck");
  char* m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  long base = vmlck_kb();
  CHECK(base >= 0, "VmLck is shown");
  CHECK_OK(mlock(m + 10, 2 * PG));  // three pages: the range is rounded out
  CHECK(vmlck_kb() - base == 12, "VmLck after mlock: %ld kB (was %ld)", vmlck_kb(), base);
  CHECK_OK(munlock(m, 4 * PG));
  CHECK(vmlck_kb() == base, "VmLck after munlock: %ld kB", vmlck_kb());
  CHECK_ERR(syscall(SYS_mlock2, m, PG, 2), EINVAL);
  CHECK_OK(syscall(SYS_mlock2, m, PG, MLOCK_ONFAULT));
  CHECK(vmlck_kb() - base == 4, "mlock2(MLOCK_ONFAULT): %ld kB", vmlck_kb() - base);
  CHECK_OK(munlock(m, PG));
  munmap(m + 3 * PG, PG);
  CHECK_ERR(mlock(m + 2 * PG, 2 * PG), ENOMEM);  // part of it is not mapped
  CHECK_ERR(mlockall(0), EINVAL);
  CHECK_ERR(mlockall(MCL_ONFAULT), EINVAL);
  if (geteuid() == 0) {
    CHECK_OK(mlockall(MCL_CURRENT));
    CHECK(vmlck_kb() > base, "VmLck after mlockall: %ld kB", vmlck_kb());
    CHECK_OK(munlockall());
    CHECK(vmlck_kb() == 0, "VmLck after munlockall: %ld kB", vmlck_kb());
    // An ordinary user is held to RLIMIT_MEMLOCK.
    struct rlimit old, rl;
    getrlimit(RLIMIT_MEMLOCK, &old);
    rl.rlim_cur = 0;  // the soft limit only: raising the hard one back needs CAP_SYS_RESOURCE
    rl.rlim_max = old.rlim_max;
    REQUIRE(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit: %s", strerror(errno));
    REQUIRE(syscall(SYS_setresuid, -1, 65534, 0) == 0);
    CHECK_ERR(mlock(m, PG), EPERM);
    REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);
    rl.rlim_cur = PG;
    REQUIRE(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit: %s", strerror(errno));
    REQUIRE(syscall(SYS_setresuid, -1, 65534, 0) == 0);
    CHECK_ERR(mlock(m, 2 * PG), ENOMEM);
    CHECK_OK(mlock(m, PG));
    CHECK_OK(munlock(m, PG));
    REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);
    setrlimit(RLIMIT_MEMLOCK, &old);
  }
  munmap(m, 3 * PG);
}

extern char** environ;

// The spawned half: every way these calls could reach memory it does not
// own (its parent's page at `addr`; natively another address space, under
// flatux the same one) is tried. Whatever each returns, the parent's page
// must come through untouched.
static int attack(uintptr_t addr, int shm) {
  char* mine = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mine == MAP_FAILED) return 2;
  memset(mine, 'X', PG);
  mremap(mine, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, (void*)addr);
  shmat(shm, (void*)addr, SHM_REMAP);
  shmat(shm, (void*)0x7e0000000000ull, SHM_REMAP);  // flatux's kernel heap
  mremap(mine, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, (void*)0x7e0000000000ull);
  munlock((void*)addr, PG);
  munmap((void*)addr, PG);
  return 0;
}

static void test_isolation(void) {
  puts("another process's memory stays its own");
  char* secret = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(secret != MAP_FAILED);
  strcpy(secret, "the parent's page");
  int shm = shmget(IPC_PRIVATE, PG, IPC_CREAT | 0600);
  REQUIRE(shm >= 0);
  char self[4096], a1[32], a2[16];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = 0;
  snprintf(a1, sizeof a1, "%lu", (unsigned long)(uintptr_t)secret);
  snprintf(a2, sizeof a2, "%d", shm);
  char* argv[] = {self, "--attack", a1, a2, NULL};
  pid_t pid;
  fflush(stdout);
  REQUIRE(posix_spawn(&pid, self, NULL, NULL, argv, environ) == 0);
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the attacker: status %#x", status);
  CHECK(strcmp(secret, "the parent's page") == 0, "the page holds: %.20s", secret);
  secret[PG - 1] = 1;  // still mapped and writable
  shmctl(shm, IPC_RMID, NULL);
  munmap(secret, PG);
}

// personality(2): the old value back; PER_LINUX32 makes uname's machine
// i686; READ_IMPLIES_EXEC makes a readable mapping executable.
static void test_personality(void) {
  puts("personality");
  long old = syscall(SYS_personality, 0xffffffff);
  CHECK(old == 0, "PER_LINUX: %#lx", old);
  CHECK(syscall(SYS_personality, 0x0008) == 0);  // PER_LINUX32
  struct utsname u;
  CHECK(uname(&u) == 0 && strcmp(u.machine, "i686") == 0, "machine %s", u.machine);
  CHECK(syscall(SYS_personality, 0x0400000) == 0x0008);  // READ_IMPLIES_EXEC
  char* m = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  char line[512];
  CHECK(maps_line(m, line, sizeof line) == 0 && strstr(line, "r-xp"), "READ_IMPLIES_EXEC: %s", line);
  munmap(m, PG);
  CHECK(syscall(SYS_personality, 0) == 0x0400000);
  CHECK(uname(&u) == 0 && strcmp(u.machine, "x86_64") == 0, "machine %s", u.machine);
}

static unsigned long cpu_ticks(void) {
  FILE* f = fopen("/proc/self/stat", "r");
  unsigned long ut = 0, st = 0;
  if (f) {
    // Fields 14 and 15 (utime, stime), after the ")" that ends comm.
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    char* p = strrchr(buf, ')');
    if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) ut = st = 0;
    fclose(f);
  }
  return ut + st;
}

static void test_cpu_time(void) {
  puts("/proc/self/stat: CPU time advances for a busy process");
  unsigned long before = cpu_ticks();
  struct timespec t0, t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  volatile unsigned long spin = 0;
  do {
    for (int i = 0; i < 100000; i++) spin += i;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 300);
  unsigned long after = cpu_ticks();
  CHECK(after >= before + 15, "utime+stime %lu -> %lu ticks after 300 ms of CPU", before, after);
}

int main(int argc, char** argv) {
  guest_name = "memory_maps";
  if (argc == 4 && strcmp(argv[1], "--attack") == 0) return attack(strtoul(argv[2], NULL, 10), atoi(argv[3]));
  REQUIRE(argc == 2, "usage: memory_maps SCRATCH_DIR");
  REQUIRE(realpath(argv[1], dir) != NULL);
  test_mremap();
  test_maps();
  test_pagemap();
  test_mlock();
  test_isolation();
  test_personality();
  test_cpu_time();
  return guest_finish();
}
