// /proc/PID/ns and setns(2): each namespace as a link ("mnt:[N]") whose
// target's inode is N; a descriptor of one (an open link) joins it, or a
// pidfd joins a process's. Joining another process's mount namespace shows
// its mounts, with the root and working folder at its "/"; a descriptor
// keeps a namespace (and its mounts) after its last process; a UTS
// namespace brings its host name. Errors as Linux's: a descriptor of the
// wrong kind or of no namespace EINVAL, a bad one EBADF, one's own user
// namespace EINVAL, a pidfd with no namespace flag EINVAL, a process with
// other threads EINVAL (mount), no CAP_SYS_ADMIN EPERM.
//
// argv[1] is a scratch folder; natively the run needs root.
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"

static char dir[PATH_MAX];  // the scratch tmpfs
static char marker[PATH_MAX + 16];

static const char* const kNames[] = {"cgroup", "ipc", "mnt", "net", "pid", "pid_for_children",
                                     "time", "time_for_children", "user", "uts"};
enum { kNamesCount = sizeof kNames / sizeof kNames[0] };

static int ns_fd(pid_t pid, const char* name) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/ns/%s", (int)pid, name);
  return open(p, O_RDONLY | O_CLOEXEC);
}

static unsigned long ns_inode(pid_t pid, const char* name) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/ns/%s", (int)pid, name);
  struct stat st;
  return stat(p, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static void test_links(void) {
  printf("/proc/self/ns\n");
  DIR* d = opendir("/proc/self/ns");
  REQUIRE(d, "opendir: %s", strerror(errno));
  int seen = 0;
  for (struct dirent* e; (e = readdir(d));)
    for (int i = 0; i < kNamesCount; i++)
      if (strcmp(e->d_name, kNames[i]) == 0) {
        seen |= 1 << i;
        CHECK(e->d_type == DT_LNK, "%s is a link (%d)", e->d_name, e->d_type);
      }
  closedir(d);
  CHECK(seen == (1 << kNamesCount) - 1, "every namespace listed (%#x)", seen);
  dev_t dev = 0;
  for (int i = 0; i < kNamesCount; i++) {
    char p[64], target[64] = {0};
    snprintf(p, sizeof p, "/proc/self/ns/%s", kNames[i]);
    struct stat st, lst;
    CHECK(readlink(p, target, sizeof target - 1) > 0, "readlink %s: %s", p, strerror(errno));
    CHECK(stat(p, &st) == 0 && S_ISREG(st.st_mode) && lstat(p, &lst) == 0 && S_ISLNK(lst.st_mode), "%s", p);
    // "TYPE:[INODE]", TYPE the name without _for_children.
    char want[64];
    snprintf(want, sizeof want, "%.*s:[%lu]", (int)strcspn(kNames[i], "_"), kNames[i], (unsigned long)st.st_ino);
    CHECK(strcmp(target, want) == 0, "%s -> %s, want %s", p, target, want);
    if (i == 0) dev = st.st_dev;
    CHECK(st.st_dev == dev, "%s on nsfs's device", p);
    int fd = open(p, O_RDONLY);
    char c;
    CHECK(fd >= 0 && read(fd, &c, 1) == -1 && errno == EINVAL, "%s: read is EINVAL", p);
    struct stat fst;
    CHECK(fd >= 0 && fstat(fd, &fst) == 0 && fst.st_ino == st.st_ino, "%s: fstat", p);
    close(fd);
  }
  CHECK(ns_inode(getpid(), "pid") == ns_inode(getpid(), "pid_for_children"));
}

// A child in a mount namespace of its own with a tmpfs on the scratch
// folder holding `marker`, and a UTS namespace named "inner"; it waits
// until its pipe closes.
static pid_t other_namespaces(int* release) {
  int go[2], ready[2];
  REQUIRE(pipe(go) == 0 && pipe(ready) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(go[1]);
    close(ready[0]);
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) _exit(10);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) _exit(11);
    if (mount("none", dir, "tmpfs", 0, "size=1m") != 0) _exit(12);
    int fd = open(marker, O_CREAT | O_WRONLY, 0644);
    if (fd < 0) _exit(13);
    close(fd);
    if (sethostname("inner", 5) != 0) _exit(14);
    if (write(ready[1], "r", 1) != 1) _exit(15);
    char c;
    (void)read(go[0], &c, 1);
    _exit(0);
  }
  close(go[0]);
  close(ready[1]);
  char c;
  REQUIRE(read(ready[0], &c, 1) == 1, "the child made its namespaces");
  close(ready[0]);
  *release = go[1];
  return pid;
}

// Runs fn in a forked child; its exit status (0: all its checks passed).
static int in_child(int (*fn)(void*), void* arg) {
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(fn(arg));
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int join_mnt_and_look(void* arg) {
  int fd = *(int*)arg;
  if (setns(fd, CLONE_NEWNS) != 0) return 20;
  if (access(marker, F_OK) != 0) return 21;  // its tmpfs is seen
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd) || strcmp(cwd, "/") != 0) return 22;  // at its "/"
  return 0;
}

static int join_uts_and_look(void* arg) {
  int fd = *(int*)arg;
  if (setns(fd, 0) != 0) return 30;
  struct utsname u;
  return uname(&u) == 0 && strcmp(u.nodename, "inner") == 0 ? 0 : 31;
}

static int join_by_pidfd(void* arg) {
  int pidfd = (int)syscall(SYS_pidfd_open, *(pid_t*)arg, 0);
  if (pidfd < 0) return 40;
  if (setns(pidfd, CLONE_NEWNS | CLONE_NEWUTS) != 0) return 41;
  struct utsname u;
  if (uname(&u) != 0 || strcmp(u.nodename, "inner") != 0) return 42;
  return access(marker, F_OK) == 0 ? 0 : 43;
}

// From a working folder on the scratch tmpfs, into the other namespace
// and back: the folder it stood in is let go once, so the tmpfs is whole
// (a second release dropped the mount while mounted).
static int away_and_back(void* arg) {
  int* fds = arg;  // the other namespace, then our own
  if (chdir(dir) != 0) return 70;
  for (int i = 0; i < 50; i++)
    if (setns(fds[0], CLONE_NEWNS) != 0 || setns(fds[1], CLONE_NEWNS) != 0) return 71;
  if (chdir(dir) != 0) return 72;
  int fd = open("left-behind", O_CREAT | O_WRONLY, 0644);
  if (fd < 0) return 73;
  close(fd);
  struct stat st;
  return stat(dir, &st) == 0 && unlink("left-behind") == 0 ? 0 : 74;
}

static void* park(void* arg) {
  (void)arg;
  pause();
  return NULL;
}

static int join_with_a_thread(void* arg) {
  pthread_t th;
  if (pthread_create(&th, NULL, park, NULL) != 0) return 50;
  return setns(*(int*)arg, CLONE_NEWNS) == -1 && errno == EINVAL ? 0 : 51;
}

static int join_without_privilege(void* arg) {
  if (setresuid(65534, 65534, 65534) != 0) return 60;
  return setns(*(int*)arg, CLONE_NEWNS) == -1 && errno == EPERM ? 0 : 61;
}

static void test_join(void) {
  printf("joining another process's namespaces\n");
  int release;
  pid_t other = other_namespaces(&release);
  CHECK(access(marker, F_OK) != 0, "its tmpfs is not seen here");
  CHECK(ns_inode(other, "mnt") != ns_inode(getpid(), "mnt"), "another mount namespace");
  CHECK(ns_inode(other, "uts") != ns_inode(getpid(), "uts"), "another UTS namespace");
  CHECK(ns_inode(other, "pid") == ns_inode(getpid(), "pid"), "the same pid namespace");
  int mnt = ns_fd(other, "mnt"), uts = ns_fd(other, "uts"), own_user = ns_fd(getpid(), "user");
  REQUIRE(mnt >= 0 && uts >= 0 && own_user >= 0, "open: %s", strerror(errno));
  CHECK(in_child(join_mnt_and_look, &mnt) == 0, "setns into its mount namespace: %d", in_child(join_mnt_and_look, &mnt));
  CHECK(in_child(join_uts_and_look, &uts) == 0, "setns into its UTS namespace");
  CHECK(in_child(join_by_pidfd, &other) == 0, "setns by pidfd: %d", in_child(join_by_pidfd, &other));
  int both[2] = {mnt, ns_fd(getpid(), "mnt")};
  CHECK(in_child(away_and_back, both) == 0, "away and back 50 times: %d", in_child(away_and_back, both));
  CHECK(umount(dir) == 0 && mount("none", dir, "tmpfs", 0, "size=1m") == 0, "the scratch tmpfs is whole: %s",
        strerror(errno));
  close(both[1]);
  CHECK(in_child(join_with_a_thread, &mnt) == 0, "a process with another thread: EINVAL");
  CHECK(in_child(join_without_privilege, &mnt) == 0, "without CAP_SYS_ADMIN: EPERM");

  printf("errors\n");
  CHECK_ERR(setns(mnt, CLONE_NEWUTS), EINVAL);
  CHECK_ERR(setns(own_user, 0), EINVAL);
  int plain = open("/proc/self/stat", O_RDONLY);
  CHECK_ERR(setns(plain, 0), EINVAL);
  close(plain);
  CHECK_ERR(setns(987, 0), EBADF);
  int pidfd = (int)syscall(SYS_pidfd_open, other, 0);
  CHECK_ERR(setns(pidfd, 0), EINVAL);
  CHECK_ERR(setns(pidfd, CLONE_FILES), EINVAL);
  CHECK_ERR(setns(pidfd, CLONE_NEWUSER), EINVAL);

  printf("a descriptor keeps a namespace after its last process\n");
  close(release);
  int st = 0;
  CHECK(waitpid(other, &st, 0) == other && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
  CHECK(in_child(join_mnt_and_look, &mnt) == 0, "its tmpfs is still there");
  close(pidfd);
  close(mnt);
  close(uts);
  close(own_user);
}

int main(int argc, char** argv) {
  guest_name = "setns";
  REQUIRE(argc == 2, "usage: setns SCRATCH_DIR");
  if (geteuid() != 0) {
    printf("setns: needs root (CAP_SYS_ADMIN): skipped\n");
    return 77;
  }
  guest_mount_scratch(argv[1], dir, "size=1m");
  REQUIRE(mount("none", dir, NULL, MS_PRIVATE, NULL) == 0);
  snprintf(marker, sizeof marker, "%s/only-in-the-other", dir);
  test_links();
  test_join();
  CHECK_OK(umount(dir));
  return guest_finish();
}
