// /proc/sys: the tunables programs read and root writes, Linux's
// permissions on them, pipe capacities against fs.pipe-max-size.
//
//   sysctl            what is safe anywhere: reads, refused and no-op
//                     writes (natively these are the host's values)
//   sysctl --change   also changes values and checks their effect; only
//                     ever run under flatux, whose values are its own
#include "guest_check.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static const struct {
  const char* path;
  unsigned mode;
} kFiles[] = {
    {"/proc/sys/kernel/tainted", 0644},      {"/proc/sys/kernel/pid_max", 0644},
    {"/proc/sys/kernel/core_pattern", 0644}, {"/proc/sys/vm/drop_caches", 0200},
    {"/proc/sys/fs/pipe-max-size", 0644},    {"/proc/sys/fs/lease-break-time", 0644},
    {"/proc/sys/fs/nr_open", 0644},          {"/proc/sys/kernel/shmmax", 0644},
    {"/proc/sys/kernel/shmall", 0644},       {"/proc/sys/kernel/shmmni", 0644},
    {"/proc/sys/kernel/sem", 0644},          {"/proc/sys/kernel/msgmax", 0644},
    {"/proc/sys/kernel/msgmnb", 0644},       {"/proc/sys/kernel/msgmni", 0644},
    {"/proc/sys/kernel/osrelease", 0444},    {"/proc/sys/kernel/hostname", 0644},
    {"/proc/sys/vm/max_map_count", 0644},    {"/proc/sys/kernel/random/boot_id", 0444},
    {"/proc/sys/kernel/random/uuid", 0444}, {"/proc/sys/kernel/cap_last_cap", 0444},
    {"/proc/sys/fs/mqueue/msg_max", 0644},   {"/proc/sys/fs/mqueue/queues_max", 0644},
    {"/proc/sys/fs/mqueue/msgsize_max", 0644},
};

static int root;

static long read_value(const char* path) {
  char buf[64] = {0};
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 ? strtol(buf, NULL, 10) : -1;
}

// write(2) of `text` to a /proc/sys file: its result, errno in *err.
static long write_value(const char* path, const char* text, int* err) {
  int fd = open(path, O_WRONLY);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  long r = write(fd, text, strlen(text));
  *err = errno;
  close(fd);
  return r;
}

static void check_write(const char* path, const char* text, int want_err) {
  int err = 0;
  long r = write_value(path, text, &err);
  if (want_err)
    CHECK(r == -1 && err == want_err, "write %s <- %s: %ld (%s), want %s", path, text, r, strerror(err),
          strerror(want_err));
  else
    CHECK(r == (long)strlen(text), "write %s <- %s: %ld (%s)", path, text, r, strerror(err));
}

static int listed(const char* dirpath, const char* name) {
  DIR* d = opendir(dirpath);
  if (!d) return 0;
  int found = 0;
  for (struct dirent* e; (e = readdir(d));) found |= strcmp(e->d_name, name) == 0;
  closedir(d);
  return found;
}

static void test_files(void) {
  puts("the files, their modes and values");
  for (size_t i = 0; i < sizeof kFiles / sizeof kFiles[0]; i++) {
    struct stat st;
    CHECK(stat(kFiles[i].path, &st) == 0, "%s: %s", kFiles[i].path, strerror(errno));
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == kFiles[i].mode && st.st_uid == 0, "%s: mode %o uid %u",
          kFiles[i].path, st.st_mode & 07777, st.st_uid);
  }
  CHECK(read_value("/proc/sys/kernel/pid_max") > 300);
  // A kernel starts with Linux's default: 32768, or 1024 for each CPU past
  // 32 (natively the host's setting may have changed it since boot).
  struct utsname u;
  if (uname(&u) == 0 && strstr(u.release, "flatux")) {
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    long want = cpus > 32 ? 1024 * cpus : 32768;
    CHECK(read_value("/proc/sys/kernel/pid_max") == want, "pid_max %ld, want %ld", read_value("/proc/sys/kernel/pid_max"), want);
  }
  CHECK(read_value("/proc/sys/fs/pipe-max-size") >= 4096);
  // CAP_CHECKPOINT_RESTORE (40) or later: capget's sets cover it.
  long last = read_value("/proc/sys/kernel/cap_last_cap");
  CHECK(last >= 40 && last < 64, "cap_last_cap %ld", last);
  CHECK(read_value("/proc/sys/fs/nr_open") >= 64);
  CHECK(read_value("/proc/sys/fs/lease-break-time") >= 0);
  CHECK(read_value("/proc/sys/kernel/tainted") >= 0);
  CHECK(listed("/proc/sys", "fs") && listed("/proc/sys", "vm") && listed("/proc/sys", "kernel"));
  CHECK(listed("/proc/sys/fs", "nr_open") && listed("/proc/sys/fs", "pipe-max-size") &&
        listed("/proc/sys/fs", "lease-break-time"));
  CHECK(listed("/proc/sys/vm", "drop_caches") && listed("/proc/sys/kernel", "core_pattern"));
  CHECK(listed("/proc/sysvipc", "shm") && listed("/proc/sysvipc", "sem") && listed("/proc/sysvipc", "msg"));
  char sem[64] = {0};
  int fd = open("/proc/sys/kernel/sem", O_RDONLY);
  CHECK(fd >= 0 && read(fd, sem, sizeof sem - 1) > 0);
  if (fd >= 0) close(fd);
  int v[4];
  CHECK(sscanf(sem, "%d\t%d\t%d\t%d", &v[0], &v[1], &v[2], &v[3]) == 4, "kernel/sem: %s", sem);
}

static void test_writes(void) {
  puts("writes: root's, refused ones, no-op ones");
  CHECK_ERR(open("/proc/sys/vm/drop_caches", O_RDONLY), EACCES);
  CHECK_ERR(open("/proc/sys/kernel/osrelease", O_WRONLY), EACCES);
  check_write("/proc/sys/vm/drop_caches", "0", EINVAL);
  check_write("/proc/sys/kernel/pid_max", "100", EINVAL);
  check_write("/proc/sys/kernel/pid_max", "junk", EINVAL);
  check_write("/proc/sys/fs/nr_open", "10", EINVAL);
  char same[32];
  snprintf(same, sizeof same, "%ld\n", read_value("/proc/sys/fs/lease-break-time"));
  check_write("/proc/sys/fs/lease-break-time", same, 0);
  snprintf(same, sizeof same, "%ld", read_value("/proc/sys/fs/nr_open"));
  check_write("/proc/sys/fs/nr_open", same, 0);
  check_write("/proc/sys/kernel/tainted", "0", 0);  // adds no taint bit
  REQUIRE(syscall(SYS_setresuid, -1, 65534, 0) == 0);
  CHECK_ERR(open("/proc/sys/fs/nr_open", O_WRONLY), EACCES);
  CHECK(read_value("/proc/sys/fs/nr_open") > 0, "readable by anyone");
  REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);
}

static void test_pipe_size(void) {
  puts("pipe capacities");
  int p[2];
  REQUIRE(pipe(p) == 0);
  int file = open("/proc/self/exe", O_RDONLY);
  CHECK_ERR(fcntl(file, F_GETPIPE_SZ), EBADF);
  CHECK_ERR(fcntl(file, F_SETPIPE_SZ, 4096), EBADF);
  close(file);
  CHECK(fcntl(p[1], F_GETPIPE_SZ) == 65536, "default %d", fcntl(p[1], F_GETPIPE_SZ));
  CHECK(fcntl(p[1], F_SETPIPE_SZ, 0) == 4096, "at least a page");
  CHECK(fcntl(p[1], F_SETPIPE_SZ, 100000) == 131072, "a power of two");
  CHECK(fcntl(p[0], F_GETPIPE_SZ) == 131072, "one pipe, both ends");
  CHECK_ERR(fcntl(p[1], F_SETPIPE_SZ, (1u << 31) + 1), EINVAL);
  long max = read_value("/proc/sys/fs/pipe-max-size");
  if (root) {
    REQUIRE(syscall(SYS_setresuid, -1, 65534, 0) == 0);
    CHECK_ERR(fcntl(p[1], F_SETPIPE_SZ, max * 2), EPERM);
    CHECK(fcntl(p[1], F_SETPIPE_SZ, 8192) == 8192, "shrinking is anyone's");
    REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);
  }
  close(p[0]);
  close(p[1]);
}

// Lines of /proc/self/maps: the process's mappings.
static int maps_count(void) {
  FILE* f = fopen("/proc/self/maps", "r");
  int n = 0;
  for (int c; f && (c = fgetc(f)) != EOF;) n += c == '\n';
  if (f) fclose(f);
  return n;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Only under flatux: each change must act on this kernel.
// /proc/sys files poll as always ready, and the UTS names' files say
// POLLPRI|POLLERR once for each setting (journald and hostnamed watch the
// hostname this way). `change`: set it (only ever under flatux).
static void test_hostname_poll(int change) {
  puts("polling kernel/hostname");
  int fd = open("/proc/sys/kernel/hostname", O_RDONLY);
  REQUIRE(fd >= 0);
  struct pollfd p = {fd, POLLPRI, 0};
  CHECK(poll(&p, 1, 0) == 0, "no setting yet: revents %#x", p.revents);
  p.events = POLLIN;
  CHECK(poll(&p, 1, 0) == 1 && p.revents == POLLIN, "readable: %#x", p.revents);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLPRI};
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
  if (change) {
    struct utsname u;
    REQUIRE(uname(&u) == 0);
    CHECK_OK(sethostname(u.nodename, strlen(u.nodename)));
    struct epoll_event out;
    CHECK(epoll_wait(ep, &out, 1, 1000) == 1 && (out.events & EPOLLPRI) && (out.events & EPOLLERR),
          "sethostname is reported: %#x", out.events);
    p.events = POLLPRI;
    CHECK(poll(&p, 1, 0) == 0, "once: %#x", p.revents);
    check_write("/proc/sys/kernel/hostname", u.nodename, 0);
    CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLPRI), "a write too: %#x", p.revents);
  }
  close(ep);
  close(fd);
}

static void test_changes(void) {
  puts("changed values take effect");
  check_write("/proc/sys/fs/nr_open", "4096", 0);
  CHECK(read_value("/proc/sys/fs/nr_open") == 4096);
  struct rlimit rl = {1024, 5000};
  CHECK_ERR(setrlimit(RLIMIT_NOFILE, &rl), EPERM);
  rl.rlim_max = 4096;
  CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));

  check_write("/proc/sys/fs/pipe-max-size", "5000", 0);
  CHECK(read_value("/proc/sys/fs/pipe-max-size") == 8192, "rounded to 8192: %ld",
        read_value("/proc/sys/fs/pipe-max-size"));
  int p[2];
  REQUIRE(pipe(p) == 0);
  CHECK(fcntl(p[1], F_SETPIPE_SZ, 4096) == 4096);
  REQUIRE(syscall(SYS_setresuid, -1, 65534, 0) == 0);
  CHECK_ERR(fcntl(p[1], F_SETPIPE_SZ, 16384), EPERM);
  REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);
  close(p[0]);
  close(p[1]);

  check_write("/proc/sys/kernel/tainted", "1", 0);
  check_write("/proc/sys/kernel/tainted", "0", 0);
  CHECK(read_value("/proc/sys/kernel/tainted") == 1, "taint bits stay");
  REQUIRE(syscall(SYS_setresuid, -1, 65534, 0) == 0);
  REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);

  check_write("/proc/sys/kernel/core_pattern", "|/bin/false %p\n", 0);
  char buf[64] = {0};
  int fd = open("/proc/sys/kernel/core_pattern", O_RDONLY);
  CHECK(fd >= 0 && read(fd, buf, sizeof buf - 1) > 0 && strcmp(buf, "|/bin/false %p\n") == 0, "core_pattern: %s", buf);
  if (fd >= 0) close(fd);

  check_write("/proc/sys/kernel/hostname", "tunable\n", 0);
  struct utsname u;
  CHECK(uname(&u) == 0 && strcmp(u.nodename, "tunable") == 0, "nodename %s", u.nodename);

  check_write("/proc/sys/vm/drop_caches", "3", 0);

  check_write("/proc/sys/kernel/shmmni", "0", 0);
  CHECK_ERR(shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600), ENOSPC);
  check_write("/proc/sys/kernel/msgmni", "0", 0);
  CHECK_ERR(msgget(IPC_PRIVATE, IPC_CREAT | 0600), ENOSPC);
  check_write("/proc/sys/kernel/sem", "250 32000 32 128", 0);
  int sem = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
  CHECK(sem >= 0);
  static struct sembuf ops[33];
  CHECK_ERR(semop(sem, ops, 33), E2BIG);
  semctl(sem, 0, IPC_RMID);

  check_write("/proc/sys/kernel/pid_max", "301", 0);
  CHECK(read_value("/proc/sys/kernel/pid_max") == 301);

  // vm.max_map_count: a munmap or mprotect that would split a mapping past
  // it is ENOMEM, and so is a new mapping.
  char* m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  char count[16];
  snprintf(count, sizeof count, "%d", maps_count());
  check_write("/proc/sys/vm/max_map_count", count, 0);
  CHECK_ERR(munmap(m + 4096, 4096), ENOMEM);
  CHECK_ERR(mprotect(m + 4096, 4096, PROT_READ), ENOMEM);
  CHECK_OK(mprotect(m, 3 * 4096, PROT_READ));  // no split
  snprintf(count, sizeof count, "%d", maps_count() - 2);
  check_write("/proc/sys/vm/max_map_count", count, 0);
  CHECK_ERR((long)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), ENOMEM);
  check_write("/proc/sys/vm/max_map_count", "65530", 0);
  CHECK_OK(munmap(m + 4096, 4096));
  munmap(m, 3 * 4096);

  // A lease whose holder never answers goes after fs.lease-break-time.
  check_write("/proc/sys/fs/lease-break-time", "1", 0);
  int lf = open("/proc/self/cwd/sysctl-lease", O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(lf >= 0);
  close(lf);
  lf = open("/proc/self/cwd/sysctl-lease", O_RDONLY);
  CHECK_OK(fcntl(lf, F_SETLEASE, F_RDLCK));
  signal(SIGIO, SIG_IGN);
  int64_t t0 = now_ms();
  int w = open("/proc/self/cwd/sysctl-lease", O_WRONLY);  // breaks our own lease
  int64_t waited = now_ms() - t0;
  CHECK(w >= 0 && waited >= 900 && waited < 10000, "the breaker waited %lld ms", (long long)waited);
  CHECK(fcntl(lf, F_GETLEASE) == F_UNLCK, "the lease was taken away");
  close(w);
  close(lf);
  unlink("/proc/self/cwd/sysctl-lease");
}

static int is_uuid(const char* s) {
  if (strlen(s) != 36) return 0;
  for (int i = 0; i < 36; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i])) return 0;
  }
  return s[14] == '4';  // version 4: random
}

static void test_random_ids(void) {
  puts("kernel/random: boot_id stays, uuid changes");
  char a[64], b[64], u[64], v[64];
  REQUIRE(guest_read_line("/proc/sys/kernel/random/boot_id", a, sizeof a) == 0);
  REQUIRE(guest_read_line("/proc/sys/kernel/random/boot_id", b, sizeof b) == 0);
  CHECK(is_uuid(a) && !strcmp(a, b), "boot_id '%s' then '%s'", a, b);
  REQUIRE(guest_read_line("/proc/sys/kernel/random/uuid", u, sizeof u) == 0);
  REQUIRE(guest_read_line("/proc/sys/kernel/random/uuid", v, sizeof v) == 0);
  CHECK(is_uuid(u) && is_uuid(v) && strcmp(u, v) && strcmp(u, a), "uuid '%s' then '%s'", u, v);
}

int main(int argc, char** argv) {
  guest_name = "sysctl";
  int change = argc == 2 && strcmp(argv[1], "--change") == 0;
  root = geteuid() == 0;
  test_files();
  if (root) test_writes();
  else puts("not root: root's writes are skipped");
  test_pipe_size();
  test_random_ids();
  test_hostname_poll(change);
  if (change) {
    REQUIRE(root, "--change needs root");
    test_changes();
  }
  return guest_finish();
}
