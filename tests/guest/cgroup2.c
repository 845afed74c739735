// The cgroup v2 filesystem: a cgroup per folder, moving a process by
// writing its pid to cgroup.procs (and what /proc/PID/cgroup then says),
// the interface files a non-root cgroup has, rmdir of a populated cgroup,
// cgroup.max.depth, cgroup.kill, the pids controller (pids.max refuses
// a fork with EAGAIN, counted in pids.events) and the memory controller
// (memory.current follows what a process touches and unmaps, not what it
// maps; past memory.max the process gets what Linux gives without swap:
// its mapping is made, and touching it past the limit kills it, counted
// in memory.events as max, oom and oom_kill) where the hierarchy has them;
// memory.oom.group; cgroup.freeze
// (a computing process and one blocked in read stop until thawed; a frozen
// cgroup's processes still die of cgroup.kill); cpu.stat (the CPU time of
// a process that ran and ended there stays counted).
//
// argv[1] is a scratch folder: the hierarchy is mounted there, in a mount
// namespace of its own where the kernel has them (natively). Natively this
// works in the host's own hierarchy (a child of the program's cgroup, gone
// afterwards); a host whose cgroup v2 hierarchy has no pids or memory
// controller (all bound to v1) skips those checks, saying so.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest_check.h"

static char top[PATH_MAX];   // the mount
static char home[PATH_MAX];  // the program's own cgroup's folder
static char self_rel[PATH_MAX];

static const char* path_of(const char* fmt, const char* a, const char* b) {
  static char buf[4][PATH_MAX];
  static int i;
  char* p = buf[i++ & 3];
  snprintf(p, PATH_MAX, fmt, a, b);
  return p;
}

static int read_file(const char* path, char* out, size_t n) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t r = read(fd, out, n - 1);
  close(fd);
  if (r < 0) return -1;
  out[r] = 0;
  return (int)r;
}

// Writes `s` in one write(2); -1 with errno on refusal.
static int write_file(const char* path, const char* s) {
  int fd = open(path, O_WRONLY);
  if (fd < 0) return -1;
  ssize_t r = write(fd, s, strlen(s));
  int e = errno;
  close(fd);
  errno = e;
  return r == (ssize_t)strlen(s) ? 0 : -1;
}

static void own_cgroup(int pid, char* out, size_t n) {
  char p[64], buf[PATH_MAX];
  snprintf(p, sizeof p, "/proc/%d/cgroup", pid);
  REQUIRE(read_file(p, buf, sizeof buf) > 0, "%s: %s", p, strerror(errno));
  char* line = strstr(buf, "0::");
  REQUIRE(line, "no cgroup v2 line in %s: %s", p, buf);
  line += 3;
  line[strcspn(line, "\n")] = 0;
  snprintf(out, n, "%s", line);
}

static int lists(const char* file, const char* word) {
  char buf[4096];
  if (read_file(file, buf, sizeof buf) < 0) return 0;
  for (char* t = strtok(buf, " \n"); t; t = strtok(NULL, " \n"))
    if (strcmp(t, word) == 0) return 1;
  return 0;
}

static void move_to(const char* dir, int pid) {
  char s[32];
  snprintf(s, sizeof s, "%d\n", pid);
  REQUIRE(write_file(path_of("%s/%s", dir, "cgroup.procs"), s) == 0, "moving %d to %s: %s", pid, dir,
          strerror(errno));
}

static void test_membership(const char* cg) {
  printf("membership\n");
  struct stat st;
  CHECK(stat(path_of("%s/%s", cg, "cgroup.events"), &st) == 0 && S_ISREG(st.st_mode));
  CHECK(stat(path_of("%s/%s", cg, "cgroup.kill"), &st) == 0 && (st.st_mode & 0777) == 0200);
  char buf[256];
  CHECK(read_file(path_of("%s/%s", cg, "cgroup.type"), buf, sizeof buf) > 0 && strcmp(buf, "domain\n") == 0);
  CHECK(read_file(path_of("%s/%s", cg, "cgroup.events"), buf, sizeof buf) > 0 && strstr(buf, "populated 0"));
  move_to(cg, 0);  // 0: the writer
  char now[PATH_MAX], want[PATH_MAX];
  own_cgroup(getpid(), now, sizeof now);
  snprintf(want, sizeof want, "%s%s%s", self_rel, strcmp(self_rel, "/") ? "/" : "", strrchr(cg, '/') + 1);
  CHECK(strcmp(now, want) == 0, "/proc/self/cgroup says %s, want %s", now, want);
  char me[32];
  snprintf(me, sizeof me, "%d", getpid());
  CHECK(lists(path_of("%s/%s", cg, "cgroup.procs"), me));
  CHECK(read_file(path_of("%s/%s", cg, "cgroup.events"), buf, sizeof buf) > 0 && strstr(buf, "populated 1"));
  CHECK_ERR(rmdir(cg), EBUSY);
  CHECK_ERR(mkdir(path_of("%s/%s", cg, "cgroup.procs"), 0755), EEXIST);
  // A child forked now starts in the same cgroup.
  pid_t c = fork();
  if (c == 0) {
    pause();
    _exit(0);
  }
  char theirs[PATH_MAX];
  own_cgroup(c, theirs, sizeof theirs);
  CHECK(strcmp(theirs, want) == 0, "a child is in %s, want %s", theirs, want);
  kill(c, SIGKILL);
  waitpid(c, NULL, 0);
  CHECK(write_file(path_of("%s/%s", cg, "cgroup.procs"), "-3\n") == -1 && errno == EINVAL, "errno %d", errno);
  move_to(home, getpid());
  CHECK(read_file(path_of("%s/%s", cg, "cgroup.events"), buf, sizeof buf) > 0 && strstr(buf, "populated 0"));
}

static void test_depth(const char* cg) {
  printf("max.depth\n");
  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.max.depth"), "0\n"));
  CHECK_ERR(mkdir(path_of("%s/%s", cg, "deeper"), 0755), EAGAIN);
  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.max.depth"), "max\n"));
  CHECK_OK(mkdir(path_of("%s/%s", cg, "deeper"), 0755));
  char buf[256];
  CHECK(read_file(path_of("%s/%s", cg, "cgroup.stat"), buf, sizeof buf) > 0 && strstr(buf, "nr_descendants 1"), "%s",
        buf);
  CHECK_ERR(rmdir(cg), EBUSY);
  CHECK_OK(rmdir(path_of("%s/%s", cg, "deeper")));
}

static void test_kill(const char* cg) {
  printf("cgroup.kill\n");
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t c = fork();
  if (c == 0) {
    move_to(cg, 0);
    (void)!write(ready[1], "x", 1);
    for (;;) pause();
  }
  char x;
  REQUIRE(read(ready[0], &x, 1) == 1);
  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.kill"), "1\n"));
  int status = 0;
  CHECK(waitpid(c, &status, 0) == c && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
  CHECK(write_file(path_of("%s/%s", cg, "cgroup.kill"), "2\n") == -1 && errno == ERANGE, "errno %d", errno);
  close(ready[0]);
  close(ready[1]);
}

static int under_flatux(void) {
  struct utsname u;
  return uname(&u) == 0 && strstr(u.release, "flatux") != NULL;
}

// Whether the hierarchy has the controller for cg's children; a host may
// lack it (all bound to v1: the checks are skipped), flatux must not.
static int has_controller(const char* name) {
  if (lists(path_of("%s/%s", home, "cgroup.controllers"), name)) return 1;
  CHECK(!under_flatux(), "flatux's hierarchy has no %s controller", name);
  printf("%s: no %s controller in this hierarchy here: skipped\n", name, name);
  return 0;
}

static void test_pids(const char* cg) {
  if (!has_controller("pids")) return;
  printf("pids\n");
  const char* control = path_of("%s/%s", home, "cgroup.subtree_control");
  int enabled_here = !lists(control, "pids");
  if (enabled_here && write_file(control, "+pids\n") != 0) {
    printf("pids: cannot enable it for the children of %s (%s): skipped\n", home, strerror(errno));
    return;
  }
  CHECK(lists(path_of("%s/%s", cg, "cgroup.controllers"), "pids"));
  char buf[256];
  CHECK(read_file(path_of("%s/%s", cg, "pids.max"), buf, sizeof buf) > 0 && strcmp(buf, "max\n") == 0, "%s", buf);
  CHECK_OK(write_file(path_of("%s/%s", cg, "pids.max"), "2\n"));
  move_to(cg, 0);
  CHECK(read_file(path_of("%s/%s", cg, "pids.current"), buf, sizeof buf) > 0 && strcmp(buf, "1\n") == 0, "%s", buf);
  pid_t first = fork();
  if (first == 0) {
    pause();
    _exit(0);
  }
  CHECK(first > 0);
  CHECK(read_file(path_of("%s/%s", cg, "pids.current"), buf, sizeof buf) > 0 && strcmp(buf, "2\n") == 0, "%s", buf);
  errno = 0;
  pid_t second = fork();
  if (second == 0) _exit(0);
  CHECK(second == -1 && errno == EAGAIN, "a fork past pids.max: %d errno %d", (int)second, errno);
  CHECK(read_file(path_of("%s/%s", cg, "pids.events"), buf, sizeof buf) > 0 && strcmp(buf, "max 1\n") == 0, "%s",
        buf);
  // Enabling a controller for the children of a cgroup with processes in it.
  CHECK(write_file(path_of("%s/%s", cg, "cgroup.subtree_control"), "+pids\n") == -1 && errno == EBUSY, "errno %d",
        errno);
  kill(first, SIGKILL);
  waitpid(first, NULL, 0);
  move_to(home, getpid());
  CHECK(read_file(path_of("%s/%s", cg, "pids.current"), buf, sizeof buf) > 0 && strcmp(buf, "0\n") == 0, "%s", buf);
  if (enabled_here) CHECK_OK(write_file(control, "-pids\n"));
}

static long long read_number(const char* cg, const char* file) {
  char buf[64];
  if (read_file(path_of("%s/%s", cg, file), buf, sizeof buf) <= 0) return -1;
  return strtoll(buf, NULL, 10);
}

// The number after `key` in a "key value" file, or -1.
static long long read_keyed(const char* cg, const char* file, const char* key) {
  char buf[1024];
  if (read_file(path_of("%s/%s", cg, file), buf, sizeof buf) <= 0) return -1;
  size_t n = strlen(key);
  for (char* line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
    if (strncmp(line, key, n) == 0 && line[n] == ' ') return strtoll(line + n + 1, NULL, 10);
  return -1;
}

enum { kMiB = 1 << 20 };

// The child of test_memory: joins cg, maps 64 MiB and touches 4 MiB of it
// (then says 'a'), unmaps it at 'b' (then says 'c'), then, at 'd', maps 256 MiB,
// past memory.max (exit 13 if that is refused), and touches it all, for
// a minute (exit 3 if it is still alive then).
static void memory_child(const char* cg, int to_parent, int from_parent) {
  move_to(cg, 0);
  char* some = mmap(NULL, 64 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (some == MAP_FAILED) _exit(10);
  memset(some, 1, 4 * kMiB);
  char c;
  if (write(to_parent, "a", 1) != 1 || read(from_parent, &c, 1) != 1) _exit(11);
  munmap(some, 64 * kMiB);
  if (write(to_parent, "c", 1) != 1 || read(from_parent, &c, 1) != 1) _exit(12);
  char* big = mmap(NULL, 256 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (big == MAP_FAILED) _exit(13);
  for (time_t end = time(NULL) + 60; time(NULL) < end;) memset(big, 1, 256 * kMiB);
  _exit(3);
}

static void test_memory(const char* cg) {
  if (!has_controller("memory")) return;
  printf("memory\n");
  char control[PATH_MAX], max[PATH_MAX];  // path_of's buffers are reused
  snprintf(control, sizeof control, "%s/cgroup.subtree_control", home);
  int enabled_here = !lists(control, "memory");
  if (enabled_here && write_file(control, "+memory\n") != 0) {
    printf("memory: cannot enable it for the children of %s (%s): skipped\n", home, strerror(errno));
    return;
  }
  CHECK(lists(path_of("%s/%s", cg, "cgroup.controllers"), "memory"));
  char buf[256];
  snprintf(max, sizeof max, "%s/memory.max", cg);
  CHECK(read_file(max, buf, sizeof buf) > 0 && strcmp(buf, "max\n") == 0, "%s", buf);
  CHECK_OK(write_file(max, "100000\n"));
  CHECK(read_number(cg, "memory.max") == 98304, "memory.max kept in pages: %lld", read_number(cg, "memory.max"));
  CHECK_OK(write_file(max, "96M\n"));
  CHECK(read_number(cg, "memory.max") == 96LL * kMiB, "%lld", read_number(cg, "memory.max"));
  CHECK_ERR(write_file(max, "lots\n"), EINVAL);
  CHECK(read_number(cg, "memory.current") >= 0 && read_number(cg, "memory.peak") >= 0);

  int up[2], down[2];
  REQUIRE(pipe(up) == 0 && pipe(down) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0, "fork: %s", strerror(errno));
  if (child == 0) memory_child(cg, up[1], down[0]);
  char c = 0;
  CHECK(read(up[0], &c, 1) == 1 && c == 'a', "the child mapped 4 MiB (%c)", c);
  long long with = read_number(cg, "memory.current");
  CHECK(with >= 4 * kMiB && with < 32 * kMiB, "memory.current %lld with 4 MiB of 64 touched", with);
  CHECK(read_keyed(cg, "memory.stat", "anon") >= 4 * kMiB, "memory.stat anon %lld",
        read_keyed(cg, "memory.stat", "anon"));
  CHECK(write(down[1], "b", 1) == 1);
  CHECK(read(up[0], &c, 1) == 1 && c == 'c', "the child unmapped it (%c)", c);
  long long without = read_number(cg, "memory.current");
  CHECK(without >= 0 && without <= with - 3 * kMiB, "memory.current %lld, then %lld unmapped", with, without);
  CHECK(write(down[1], "d", 1) == 1);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "past memory.max: killed (status 0x%x)", status);
  CHECK(read_keyed(cg, "memory.events", "max") >= 1 && read_keyed(cg, "memory.events", "oom") >= 1 &&
            read_keyed(cg, "memory.events", "oom_kill") >= 1,
        "memory.events counts it: max %lld, oom %lld, oom_kill %lld", read_keyed(cg, "memory.events", "max"),
        read_keyed(cg, "memory.events", "oom"), read_keyed(cg, "memory.events", "oom_kill"));
  CHECK(read_number(cg, "memory.peak") >= 4 * kMiB, "memory.peak %lld", read_number(cg, "memory.peak"));
  CHECK(read_number(cg, "memory.current") < kMiB, "memory.current %lld once it is empty",
        read_number(cg, "memory.current"));
  char group[PATH_MAX];
  snprintf(group, sizeof group, "%s/memory.oom.group", cg);
  CHECK(read_number(cg, "memory.oom.group") == 0);
  CHECK_OK(write_file(group, "1\n"));
  CHECK(read_number(cg, "memory.oom.group") == 1);
  CHECK_ERR(write_file(group, "2\n"), EINVAL);
  CHECK_OK(write_file(group, "0\n"));
  close(up[0]);
  close(up[1]);
  close(down[0]);
  close(down[1]);
  if (enabled_here) CHECK_OK(write_file(control, "-memory\n"));
}

static int events_frozen(const char* cg) { return (int)read_keyed(cg, "cgroup.events", "frozen"); }

// Polls cgroup.events until "frozen" says `want` (Linux reaches it a moment
// after the write); whether it did within 5 s.
static int wait_frozen(const char* cg, int want) {
  for (int i = 0; i < 500; i++) {
    if (events_frozen(cg) == want) return 1;
    usleep(10000);
  }
  return 0;
}

static void test_freeze(const char* cg) {
  printf("freeze\n");
  volatile unsigned long* counter =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(counter != MAP_FAILED);
  int ping[2], pong[2];
  REQUIRE(pipe(ping) == 0 && pipe(pong) == 0);
  pid_t spinner = fork();
  if (spinner == 0) {
    move_to(cg, 0);
    for (;;) (*counter)++;  // no system calls: only a kick stops it
  }
  pid_t reader = fork();
  if (reader == 0) {
    move_to(cg, 0);
    char c;
    while (read(ping[0], &c, 1) == 1)
      if (write(pong[1], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  REQUIRE(spinner > 0 && reader > 0, "fork: %s", strerror(errno));
  char c = 'x';
  CHECK(write(ping[1], &c, 1) == 1 && read(pong[0], &c, 1) == 1, "the reader answers");
  while (*counter == 0) usleep(1000);
  char buf[16];
  CHECK(read_file(path_of("%s/%s", cg, "cgroup.freeze"), buf, sizeof buf) > 0 && strcmp(buf, "0\n") == 0, "%s", buf);
  CHECK(events_frozen(cg) == 0);
  CHECK_ERR(write_file(path_of("%s/%s", cg, "cgroup.freeze"), "2\n"), ERANGE);

  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.freeze"), "1\n"));
  CHECK(wait_frozen(cg, 1), "cgroup.events says frozen 1");
  unsigned long then = *counter;
  usleep(100000);
  CHECK(*counter == then, "the spinner stopped (%lu, then %lu)", then, *counter);
  CHECK(write(ping[1], "y", 1) == 1);
  struct pollfd p = {pong[0], POLLIN, 0};
  CHECK(poll(&p, 1, 200) == 0, "the frozen reader does not answer");

  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.freeze"), "0\n"));
  CHECK(wait_frozen(cg, 0), "cgroup.events says frozen 0");
  CHECK(poll(&p, 1, 5000) == 1 && read(pong[0], &c, 1) == 1 && c == 'y', "thawed, the reader answers");
  then = *counter;
  usleep(50000);
  CHECK(*counter != then, "thawed, the spinner runs");

  // Frozen processes still die of SIGKILL.
  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.freeze"), "1\n"));
  CHECK(wait_frozen(cg, 1), "frozen again");
  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.kill"), "1\n"));
  int st1 = 0, st2 = 0;
  CHECK(waitpid(spinner, &st1, 0) == spinner && WIFSIGNALED(st1) && WTERMSIG(st1) == SIGKILL, "0x%x", st1);
  CHECK(waitpid(reader, &st2, 0) == reader && WIFSIGNALED(st2) && WTERMSIG(st2) == SIGKILL, "0x%x", st2);
  CHECK_OK(write_file(path_of("%s/%s", cg, "cgroup.freeze"), "0\n"));
  close(ping[0]);
  close(ping[1]);
  close(pong[0]);
  close(pong[1]);
  munmap((void*)counter, 4096);
}

static long long cpu_ns_of_self(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void test_cpu_stat(const char* cg) {
  printf("cpu.stat\n");
  long long before = read_keyed(cg, "cpu.stat", "usage_usec");
  CHECK(before >= 0 && read_keyed(cg, "cpu.stat", "user_usec") >= 0 &&
        read_keyed(cg, "cpu.stat", "system_usec") >= 0, "cpu.stat of %s", cg);
  pid_t child = fork();
  if (child == 0) {
    move_to(cg, 0);
    volatile unsigned long n = 0;
    while (cpu_ns_of_self() < 200000000LL)  // 200 ms of CPU, mostly in user code
      for (int i = 0; i < 1000000; i++) n++;
    _exit(0);
  }
  REQUIRE(child > 0, "fork: %s", strerror(errno));
  int st = 0;
  CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st));
  long long usage = read_keyed(cg, "cpu.stat", "usage_usec"), user = read_keyed(cg, "cpu.stat", "user_usec");
  CHECK(usage - before >= 190000, "usage_usec %lld, then %lld after 200 ms of CPU", before, usage);
  // How much of it is user time is the host's to say: some, and no more
  // than all of it.
  CHECK(user > 0 && user <= usage, "user_usec %lld of %lld", user, usage);
}

int main(int argc, char** argv) {
  guest_name = "cgroup2";
  REQUIRE(argc == 2, "usage: cgroup2 SCRATCH_DIR");
  REQUIRE(realpath(argv[1], top));
  if (unshare(CLONE_NEWNS) == 0) REQUIRE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  if (mount("none", top, "cgroup2", 0, NULL) != 0) {
    // Not allowed here (no root): skipped. A kernel without cgroup2 (ENODEV) fails.
    REQUIRE(errno == EPERM || errno == EACCES, "mount cgroup2: %s", strerror(errno));
    printf("cgroup2: cannot mount a cgroup v2 hierarchy here (%s): skipped\n", strerror(errno));
    return 77;
  }
  struct statfs sf;
  CHECK(statfs(top, &sf) == 0 && sf.f_type == 0x63677270, "f_type %#lx", (unsigned long)sf.f_type);
  own_cgroup(getpid(), self_rel, sizeof self_rel);
  snprintf(home, sizeof home, "%s%s", top, strcmp(self_rel, "/") ? self_rel : "");
  static char cg[PATH_MAX];
  // Natively the host's hierarchy is shared with other runs of this test.
  snprintf(cg, sizeof cg, "%s/flatux-cg.%d", home, (int)getpid());
  REQUIRE(mkdir(cg, 0755) == 0, "mkdir %s: %s", cg, strerror(errno));
  CHECK_ERR(mkdir(cg, 0755), EEXIST);

  test_membership(cg);
  test_depth(cg);
  test_kill(cg);
  test_pids(cg);
  test_memory(cg);
  test_freeze(cg);
  test_cpu_stat(cg);

  CHECK_OK(rmdir(cg));
  CHECK_ERR(rmdir(cg), ENOENT);
  CHECK_OK(umount(top));
  return guest_finish();
}
