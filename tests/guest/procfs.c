// /proc and /dev as programs use them: links to the executable and open
// files, cmdline, stat/status/maps, the process list, the global files, and
// the basic character devices.
#include "guest_check.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t slurp(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  size_t n = 0;
  ssize_t r;
  while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
  close(fd);
  buf[n] = 0;
  return n;
}

static void self_links(int argc, char** argv) {
  printf("/proc/self links:\n");
  char exe[PATH_MAX], want[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
  exe[n] = 0;
  REQUIRE(realpath(argv[0], want), "realpath %s", argv[0]);
  CHECK(strcmp(exe, want) == 0, "exe is %s, want %s", exe, want);
  char self[32], pid[32];
  n = readlink("/proc/self", self, sizeof self - 1);
  CHECK(n > 0, "readlink /proc/self");
  self[n > 0 ? n : 0] = 0;
  snprintf(pid, sizeof pid, "%d", getpid());
  CHECK(strcmp(self, pid) == 0, "/proc/self -> %s, want %s", self, pid);
  char cwd[PATH_MAX], link[PATH_MAX];
  REQUIRE(getcwd(cwd, sizeof cwd), "getcwd");
  n = readlink("/proc/self/cwd", link, sizeof link - 1);
  link[n > 0 ? n : 0] = 0;
  CHECK(strcmp(link, cwd) == 0, "cwd link %s, want %s", link, cwd);
  int fd = open(argv[0], O_RDONLY);
  char fdpath[64];
  snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
  n = readlink(fdpath, link, sizeof link - 1);
  link[n > 0 ? n : 0] = 0;
  CHECK(strcmp(link, want) == 0, "%s -> %s, want %s", fdpath, link, want);
  close(fd);
  // /proc/self opened as a folder, then names below it: the walk starts
  // at the process's own directory, not at the link.
  int self_dir = open("/proc/self", O_RDONLY | O_DIRECTORY);
  CHECK(self_dir >= 0, "open /proc/self: %s", strerror(errno));
  int status = openat(self_dir, "status", O_RDONLY);
  CHECK(status >= 0, "openat(/proc/self, status): %s", strerror(errno));
  if (status >= 0) close(status);
  n = readlinkat(self_dir, "cwd", link, sizeof link - 1);
  link[n > 0 ? n : 0] = 0;
  CHECK(strcmp(link, cwd) == 0, "readlinkat(/proc/self, cwd) %s, want %s", link, cwd);
  if (self_dir >= 0) close(self_dir);
  char cmd[4096];
  size_t len = slurp("/proc/self/cmdline", cmd, sizeof cmd);
  size_t want_len = 0;
  for (int i = 0; i < argc; i++) want_len += strlen(argv[i]) + 1;
  CHECK(len == want_len && strcmp(cmd, argv[0]) == 0, "cmdline %zu bytes, want %zu", len, want_len);
  printf("  exe, self, cwd, fd/N and cmdline are right\n");
}

// O_PATH | O_NOFOLLOW opens a /proc link itself: fstat shows the link,
// readlinkat(fd, "") reads it, and a walk cannot start from it.
static void link_itself(const char* path, const char* want) {
  int fd = open(path, O_PATH | O_NOFOLLOW);
  CHECK(fd >= 0, "open(%s, O_PATH|O_NOFOLLOW): %s", path, strerror(errno));
  if (fd < 0) return;
  struct stat st;
  CHECK(fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 && S_ISLNK(st.st_mode), "fstatat(%s, AT_EMPTY_PATH): mode %o (%s)",
        path, st.st_mode, strerror(errno));
  CHECK(fstat(fd, &st) == 0 && S_ISLNK(st.st_mode), "fstat(%s): mode %o", path, st.st_mode);
  char buf[64];
  ssize_t n = readlinkat(fd, "", buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  CHECK(n > 0 && strcmp(buf, want) == 0, "readlinkat(%s, \"\"): '%s' (%s), want '%s'", path, buf,
        n < 0 ? strerror(errno) : "", want);
  CHECK_ERR(openat(fd, "status", O_RDONLY), ENOTDIR);
  CHECK_ERR(read(fd, buf, sizeof buf), EBADF);
  close(fd);
}

static void self_link_itself(void) {
  printf("/proc/self and /proc/thread-self opened with O_PATH|O_NOFOLLOW:\n");
  char pid[32], tself[64];
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  snprintf(tself, sizeof tself, "%d/task/%ld", (int)getpid(), (long)syscall(SYS_gettid));
  link_itself("/proc/self", pid);
  link_itself("/proc/thread-self", tself);
  char buf[64];
  ssize_t n = readlink("/proc/thread-self", buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  CHECK(n > 0 && strcmp(buf, tself) == 0, "readlink /proc/thread-self: '%s', want '%s'", buf, tself);
  struct stat a, b;
  CHECK(stat("/proc/thread-self/status", &a) == 0, "stat /proc/thread-self/status: %s", strerror(errno));
  CHECK(stat("/proc/self/status", &b) == 0, "stat /proc/self/status: %s", strerror(errno));
  // Not a symlink: readlinkat(fd, "") of a folder finds nothing to read.
  int dir = open("/proc/self", O_PATH);
  CHECK(dir >= 0, "open(/proc/self, O_PATH): %s", strerror(errno));
  CHECK_ERR(readlinkat(dir, "", buf, sizeof buf), ENOENT);
  if (dir >= 0) close(dir);
}

static void pid_files(void) {
  printf("/proc/self/{stat,status,maps}, the process list:\n");
  char buf[65536], want[64];
  slurp("/proc/self/stat", buf, sizeof buf);
  snprintf(want, sizeof want, "%d (", getpid());
  CHECK(strncmp(buf, want, strlen(want)) == 0, "stat starts '%.20s'", buf);
  slurp("/proc/self/status", buf, sizeof buf);
  snprintf(want, sizeof want, "\nPid:\t%d\n", getpid());
  CHECK(strstr(buf, want) != NULL, "status has no '%s'", want + 1);
  CHECK(strstr(buf, "\nPPid:\t") != NULL, "status has PPid");
  slurp("/proc/self/maps", buf, sizeof buf);
  CHECK(strstr(buf, "[stack]") != NULL, "maps shows [stack]");
  DIR* d = opendir("/proc");
  REQUIRE(d, "opendir /proc: %s", strerror(errno));
  int saw_self = 0, saw_me = 0;
  snprintf(want, sizeof want, "%d", getpid());
  for (struct dirent* e; (e = readdir(d));) {
    if (!strcmp(e->d_name, "self")) saw_self = 1;
    if (!strcmp(e->d_name, want)) saw_me = 1;
  }
  closedir(d);
  CHECK(saw_self && saw_me, "/proc lists self (%d) and %s (%d)", saw_self, want, saw_me);
  d = opendir("/proc/self/fd");
  REQUIRE(d, "opendir /proc/self/fd: %s", strerror(errno));
  int fds = 0, saw_own = 0;
  for (struct dirent* e; (e = readdir(d));) {
    fds += e->d_name[0] >= '0' && e->d_name[0] <= '9';
    saw_own |= atoi(e->d_name) == dirfd(d) && e->d_name[0] != '.';
  }
  closedir(d);
  CHECK(fds >= 3, "/proc/self/fd lists %d descriptors", fds);
  CHECK(saw_own, "/proc/self/fd lists the descriptor reading it");
  slurp("/proc/meminfo", buf, sizeof buf);
  CHECK(strncmp(buf, "MemTotal:", 9) == 0, "meminfo starts '%.20s'", buf);
  slurp("/proc/uptime", buf, sizeof buf);
  CHECK(buf[0] >= '0' && buf[0] <= '9', "uptime '%s'", buf);
  printf("  stat, status, maps, /proc and /proc/self/fd listings, meminfo, uptime\n");
}

static void reopen_pipe(void) {
  printf("/proc/self/fd/N reopens the same pipe:\n");
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe");
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
  int r = open(path, O_RDONLY);
  CHECK(r >= 0, "open %s: %s", path, strerror(errno));
  CHECK(write(p[1], "via proc", 8) == 8, "write");
  char buf[16] = {0};
  CHECK(r >= 0 && read(r, buf, sizeof buf) == 8 && !memcmp(buf, "via proc", 8), "read back '%s'", buf);
  close(r); close(p[0]); close(p[1]);
  printf("  data written to the pipe arrives through the reopened descriptor\n");
}

static void devices(void) {
  printf("/dev basics:\n");
  int fd = open("/dev/null", O_RDWR);
  REQUIRE(fd >= 0, "open /dev/null: %s", strerror(errno));
  char buf[16];
  CHECK(write(fd, "x", 1) == 1 && read(fd, buf, 1) == 0, "/dev/null swallows and is empty");
  close(fd);
  fd = open("/dev/zero", O_RDONLY);
  memset(buf, 1, sizeof buf);
  CHECK(fd >= 0 && read(fd, buf, sizeof buf) == sizeof buf && buf[0] == 0 && buf[15] == 0, "/dev/zero");
  close(fd);
  fd = open("/dev/urandom", O_RDONLY);
  CHECK(fd >= 0 && read(fd, buf, sizeof buf) == sizeof buf, "/dev/urandom");
  close(fd);
  fd = open("/dev/full", O_WRONLY);
  CHECK_ERR(write(fd, "x", 1), ENOSPC);
  close(fd);
  struct stat st;
  CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
            minor(st.st_rdev) == 3, "/dev/null is char 1:3");
  CHECK(access("/dev/stdin", F_OK) == 0, "/dev/stdin exists");
  printf("  null, zero, urandom, full and their device numbers\n");
}

// /proc/PID/oom_score_adj: written whole, within [-1000, 1000], kept
// across fork; fs/file-max is a number.
static void oom_score_adj(void) {
  int fd = open("/proc/self/oom_score_adj", O_RDWR);
  REQUIRE(fd >= 0, "oom_score_adj: %s", strerror(errno));
  CHECK_ERR(write(fd, "2000", 4), EINVAL);
  CHECK_ERR(write(fd, "x", 1), EINVAL);
  CHECK(write(fd, "250\n", 4) == 4, "write 250: %s", strerror(errno));
  close(fd);
  char buf[32] = {0};
  fd = open("/proc/self/oom_score_adj", O_RDONLY);
  CHECK(read(fd, buf, sizeof buf - 1) > 0 && strcmp(buf, "250\n") == 0, "read back '%s'", buf);
  close(fd);
  pid_t child = fork();
  if (child == 0) {
    char cbuf[32] = {0};
    int cfd = open("/proc/self/oom_score_adj", O_RDONLY);
    _exit(read(cfd, cbuf, sizeof cbuf - 1) > 0 && strcmp(cbuf, "250\n") == 0 ? 0 : 1);
  }
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's value");
  fd = open("/proc/self/oom_score_adj", O_WRONLY);
  CHECK(write(fd, "0", 1) == 1);
  close(fd);
  fd = open("/proc/sys/fs/file-max", O_RDONLY);
  memset(buf, 0, sizeof buf);
  CHECK(fd >= 0 && read(fd, buf, sizeof buf - 1) > 1 && atol(buf) > 0, "fs/file-max: '%s'", buf);
  close(fd);
}

int main(int argc, char** argv) {
  guest_name = "procfs";
  setvbuf(stdout, NULL, _IOLBF, 0);
  self_links(argc, argv);
  self_link_itself();
  pid_files();
  reopen_pipe();
  devices();
  oom_score_adj();
  return guest_finish();
}
