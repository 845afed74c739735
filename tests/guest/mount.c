// mount(2) and umount2(2): tmpfs and proc mounts, bind and recursive bind
// mounts, read-only remounts (of a mount and of a superblock), the
// nosuid/nodev/noexec flags, busy and lazy unmounts, and what /proc/mounts
// and /proc/self/mountinfo say about each. argv[1] is a scratch folder; a
// tmpfs is mounted on it for the run, so nothing outside it changes.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest_check.h"

static char mnt[PATH_MAX];

static void unmount_scratch(void) { umount2(mnt, MNT_DETACH); }

static void path_of(char* out, const char* rel) {
  if (snprintf(out, PATH_MAX, "%s/%s", mnt, rel) >= PATH_MAX) out[0] = 0;
}

static int write_file(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  int ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
  close(fd);
  return ok ? 0 : -1;
}

// One mountinfo line, split into the fields the tests look at.
struct Info {
  int id, parent;
  unsigned major, minor;
  char root[PATH_MAX], point[PATH_MAX], opts[256], fstype[64], source[PATH_MAX], super[512];
};

// The last mountinfo line for the mount point (the top of a stack).
static int find_info(const char* point, struct Info* out) {
  FILE* f = fopen("/proc/self/mountinfo", "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    struct Info i;
    int n = 0;
    if (sscanf(line, "%d %d %u:%u %4095s %4095s %255s %n", &i.id, &i.parent, &i.major, &i.minor, i.root,
               i.point, i.opts, &n) < 7)
      continue;
    char* sep = strstr(line + n, "- ");
    if (!sep || sscanf(sep + 2, "%63s %4095s %511s", i.fstype, i.source, i.super) != 3) continue;
    if (strcmp(i.point, point) == 0) {
      *out = i;
      found = 1;
    }
  }
  fclose(f);
  return found;
}

// The /proc/mounts line for the mount point: "source point type opts 0 0".
static int find_mounts_line(const char* point, char* type, char* opts) {
  FILE* f = fopen("/proc/mounts", "r");
  if (!f) return 0;
  char src[PATH_MAX], pt[PATH_MAX], ty[64], op[512];
  int a, b, found = 0;
  while (fscanf(f, "%4095s %4095s %63s %511s %d %d", src, pt, ty, op, &a, &b) == 6) {
    if (strcmp(pt, point) == 0) {
      strcpy(type, ty);
      strcpy(opts, op);
      found = a == 0 && b == 0;
    }
  }
  fclose(f);
  return found;
}

// Whether the comma-separated list holds the option.
static int has_opt(const char* list, const char* opt) {
  size_t n = strlen(opt);
  for (const char* p = list; p; p = strchr(p, ',')) {
    if (*p == ',') p++;
    if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == 0)) return 1;
  }
  return 0;
}

static void test_tmpfs_mount_and_proc_lines(void) {
  puts("tmpfs mount: /proc/mounts and mountinfo");
  char a[PATH_MAX];
  path_of(a, "a");
  CHECK_OK(mkdir(a, 0755));
  CHECK_ERR(umount(a), EINVAL);  // not a mount point
  CHECK_OK(mount("scratchfs", a, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=700"));
  struct stat st;
  CHECK_OK(stat(a, &st));
  CHECK((st.st_mode & 07777) == 0700);
  struct Info i, parent;
  REQUIRE(find_info(a, &i), "no mountinfo line for %s", a);
  REQUIRE(find_info(mnt, &parent));
  CHECK(i.parent == parent.id, "parent %d, want %d", i.parent, parent.id);
  CHECK(strcmp(i.root, "/") == 0);
  CHECK(strcmp(i.fstype, "tmpfs") == 0 && strcmp(i.source, "scratchfs") == 0);
  CHECK(major(st.st_dev) == i.major && minor(st.st_dev) == i.minor);
  CHECK(has_opt(i.opts, "rw") && has_opt(i.opts, "nosuid") && has_opt(i.opts, "nodev"), "%s", i.opts);
  CHECK(!has_opt(i.opts, "noexec"));
  CHECK(has_opt(i.super, "rw") && has_opt(i.super, "size=1024k") && has_opt(i.super, "mode=700"), "%s",
        i.super);
  char type[64], opts[512];
  REQUIRE(find_mounts_line(a, type, opts));
  CHECK(strcmp(type, "tmpfs") == 0);
  CHECK(has_opt(opts, "rw") && has_opt(opts, "nosuid") && has_opt(opts, "size=1024k"), "%s", opts);

  char dev[PATH_MAX];
  path_of(dev, "a/null");
  CHECK_OK(mknod(dev, S_IFCHR | 0666, makedev(1, 3)));
  CHECK_ERR(open(dev, O_RDWR), EACCES);  // nodev

  CHECK_ERR(mount("none", a, "no-such-fs", 0, NULL), ENODEV);
  char missing[PATH_MAX];
  path_of(missing, "missing");
  CHECK_ERR(mount("none", missing, "tmpfs", 0, NULL), ENOENT);
  char file[PATH_MAX];
  path_of(file, "a/file");
  CHECK_OK(write_file(file, "x"));
  CHECK_ERR(mount("none", file, "tmpfs", 0, NULL), ENOTDIR);
  CHECK_ERR(mount("none", a, "tmpfs", 0, "size=nonsense"), EINVAL);

  // A second mount on the same point hides the first until it goes.
  CHECK_OK(mount("none", a, "tmpfs", 0, NULL));
  CHECK_ERR(stat(file, &st), ENOENT);
  CHECK_OK(umount(a));
  CHECK_OK(stat(file, &st));
}

static void test_bind_and_remount(void) {
  puts("bind mounts, MS_REC, read-only remounts");
  char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], sub[PATH_MAX], p[PATH_MAX];
  path_of(a, "a");
  path_of(b, "b");
  path_of(c, "c");
  path_of(sub, "a/sub");
  CHECK_OK(mkdir(b, 0755));
  CHECK_OK(mkdir(c, 0755));
  CHECK_OK(mkdir(sub, 0755));
  CHECK_OK(mount(a, b, NULL, MS_BIND, NULL));
  path_of(p, "b/through-bind");
  CHECK_OK(write_file(p, "bound"));
  path_of(p, "a/through-bind");
  struct stat st;
  CHECK_OK(stat(p, &st));
  struct Info ia, ib;
  REQUIRE(find_info(a, &ia) && find_info(b, &ib));
  CHECK(ia.major == ib.major && ia.minor == ib.minor);
  CHECK(ia.id != ib.id);

  // A bind of a subfolder: mountinfo's root field names it.
  CHECK_OK(mount(sub, c, NULL, MS_BIND, NULL));
  struct Info ic;
  REQUIRE(find_info(c, &ic));
  CHECK(strcmp(ic.root, "/sub") == 0, "root %s", ic.root);
  CHECK_OK(umount(c));

  // Read-only bind: writes through b fail, through a they work.
  CHECK_OK(mount(NULL, b, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL));
  path_of(p, "b/new");
  CHECK_ERR(open(p, O_WRONLY | O_CREAT, 0644), EROFS);
  CHECK_ERR(mkdir(p, 0755), EROFS);
  path_of(p, "b/through-bind");
  CHECK_ERR(unlink(p), EROFS);
  CHECK_ERR(open(p, O_WRONLY), EROFS);
  int fd = open(p, O_RDONLY);
  CHECK(fd >= 0);
  close(fd);
  REQUIRE(find_info(b, &ib));
  CHECK(has_opt(ib.opts, "ro") && has_opt(ib.super, "rw"), "%s / %s", ib.opts, ib.super);
  path_of(p, "a/new");
  CHECK_OK(write_file(p, "rw"));
  CHECK_OK(umount(b));

  // Read-only superblock: every mount of it refuses writes.
  CHECK_OK(mount(NULL, a, NULL, MS_REMOUNT | MS_RDONLY, "size=2m"));
  path_of(p, "a/other");
  CHECK_ERR(open(p, O_WRONLY | O_CREAT, 0644), EROFS);
  REQUIRE(find_info(a, &ia));
  CHECK(has_opt(ia.super, "ro") && has_opt(ia.super, "size=2048k"), "%s", ia.super);
  CHECK_OK(mount(NULL, a, NULL, MS_REMOUNT, "size=2m"));
  CHECK_OK(write_file(p, "rw again"));
  CHECK_ERR(mount(NULL, c, NULL, MS_REMOUNT, NULL), EINVAL);  // not a mount point

  // MS_REC takes the mounts below along; a plain bind does not.
  path_of(p, "a/sub/inner");
  CHECK_OK(write_file(p, "inner"));
  char nested[PATH_MAX];
  path_of(nested, "a/sub");
  CHECK_OK(mount("none", nested, "tmpfs", 0, NULL));
  CHECK_OK(mount(a, b, NULL, MS_BIND, NULL));
  path_of(p, "b/sub/inner");
  CHECK_OK(stat(p, &st));  // the folder under the nested mount
  CHECK_OK(umount(b));
  CHECK_OK(mount(a, b, NULL, MS_BIND | MS_REC, NULL));
  CHECK_ERR(stat(p, &st), ENOENT);  // the nested (empty) tmpfs
  path_of(p, "b/sub");
  struct Info in;
  CHECK(find_info(p, &in), "recursive bind brought no mount at %s", p);
  CHECK_OK(umount(p));
  CHECK_OK(umount(b));
  CHECK_OK(umount(nested));
}

static void test_umount_rules(void) {
  puts("umount2: EBUSY, MNT_DETACH, flags, proc");
  char a[PATH_MAX], p[PATH_MAX];
  path_of(a, "a");
  path_of(p, "a/held");
  CHECK_OK(write_file(p, "still here"));
  int fd = open(p, O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK_ERR(umount(a), EBUSY);
  CHECK_ERR(umount2(a, 0x100), EINVAL);
  CHECK_ERR(umount2(a, MNT_EXPIRE | MNT_FORCE), EINVAL);
  char nested[PATH_MAX];
  path_of(nested, "a/sub");
  CHECK_OK(mount("none", nested, "tmpfs", 0, NULL));
  CHECK_ERR(umount2(a, MNT_FORCE), EBUSY);
  CHECK_OK(umount2(a, MNT_DETACH));  // with the mount below it
  struct Info i;
  CHECK(!find_info(a, &i));
  CHECK(!find_info(nested, &i));
  char buf[16] = {0};
  CHECK(read(fd, buf, sizeof buf) == 10 && memcmp(buf, "still here", 10) == 0);
  close(fd);
  struct stat st;
  CHECK_ERR(stat(p, &st), ENOENT);  // the folder under it is empty

  char proc[PATH_MAX];
  path_of(proc, "proc");
  CHECK_OK(mkdir(proc, 0755));
  CHECK_OK(mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
  char self[PATH_MAX];
  path_of(self, "proc/self/status");
  CHECK_OK(stat(self, &st));
  REQUIRE(find_info(proc, &i));
  CHECK(strcmp(i.fstype, "proc") == 0 && has_opt(i.opts, "noexec"), "%s %s", i.fstype, i.opts);
  CHECK_OK(umount(proc));
}

static int have_fstype(const char* name) {
  FILE* f = fopen("/proc/filesystems", "r");
  char line[128];
  int found = 0;
  while (f && fgets(line, sizeof line, f)) {
    char* tab = strchr(line, '\t');
    line[strcspn(line, "\n")] = 0;
    if (tab && strcmp(tab + 1, name) == 0) found = 1;
  }
  if (f) fclose(f);
  return found;
}

// hostfs exists where the kernel is flatux (or UML): a host folder mounted
// with UML's syntax, and the root remounted read-only and back, which on a
// real host would be too much for a test to do.
static void test_hostfs(void) {
  if (!have_fstype("hostfs")) {
    puts("hostfs: not a filesystem type here");
    return;
  }
  puts("hostfs: mount -t hostfs none DIR -o HOSTDIR; remount,ro /");
  char exe[PATH_MAX], dir[PATH_MAX], a[PATH_MAX], p[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(n > 0);
  exe[n] = 0;
  strcpy(dir, exe);
  *strrchr(dir, '/') = 0;
  path_of(a, "host");
  CHECK_OK(mkdir(a, 0755));
  CHECK_OK(mount("none", a, "hostfs", 0, dir));
  snprintf(p, sizeof p, "%s%s", a, strrchr(exe, '/'));
  struct stat st;
  CHECK_OK(stat(p, &st));
  struct Info i;
  REQUIRE(find_info(a, &i));
  CHECK(strcmp(i.fstype, "hostfs") == 0);
  CHECK_OK(umount(a));

  CHECK_OK(mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL));
  snprintf(p, sizeof p, "/tmp/flatux-ro-probe-%d", (int)getpid());
  CHECK_ERR(mkdir(p, 0755), EROFS);
  CHECK_ERR(open(p, O_WRONLY | O_CREAT, 0600), EROFS);
  REQUIRE(find_info("/", &i));
  CHECK(has_opt(i.opts, "ro") && has_opt(i.super, "ro"), "%s / %s", i.opts, i.super);
  CHECK_OK(mount(NULL, "/", NULL, MS_REMOUNT, NULL));
  REQUIRE(find_info("/", &i));
  CHECK(has_opt(i.opts, "rw") && has_opt(i.super, "rw"), "%s / %s", i.opts, i.super);
}

// mount and umount2 need CAP_SYS_ADMIN: refused for uid 65534.
static void test_unprivileged(void) {
  puts("as uid 65534: EPERM");
  static volatile long res[2];
  static volatile int errs[2];
  pid_t pid = vfork();
  if (pid == 0) {
    if (syscall(SYS_setresuid, 65534, 65534, 65534) != 0) _exit(3);
    res[0] = syscall(SYS_mount, "none", mnt, "tmpfs", 0, 0);
    errs[0] = errno;
    res[1] = syscall(SYS_umount2, mnt, 0);
    errs[1] = errno;
    _exit(0);
  }
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(res[0] == -1 && errs[0] == EPERM, "mount: %ld %d", res[0], errs[0]);
  CHECK(res[1] == -1 && errs[1] == EPERM, "umount2: %ld %d", res[1], errs[1]);
}

// A thread remounts a bind mount between two sets of flags while statvfs
// reads them: the per-mount flags change as one (read-only may lag them:
// Linux changes it in a step of its own).
enum { FLIPS = 4000 };
static atomic_int flips_done;
static const char* flip_target;
static long flip_errors;

static void* flipper(void* arg) {
  (void)arg;
  for (int i = 0; i < FLIPS; i++) {
    unsigned long set = i & 1 ? MS_NODEV : MS_RDONLY | MS_NOSUID;
    if (mount(NULL, flip_target, NULL, MS_REMOUNT | MS_BIND | set, NULL) != 0) flip_errors++;
  }
  atomic_store(&flips_done, 1);
  return NULL;
}

static void test_remount_race(void) {
  puts("remount while others read the mount's flags");
  char a[PATH_MAX], b[PATH_MAX];
  path_of(a, "flip-a");
  path_of(b, "flip-b");
  CHECK_OK(mkdir(a, 0755));
  CHECK_OK(mkdir(b, 0755));
  CHECK_OK(mount(a, b, NULL, MS_BIND, NULL));
  CHECK_OK(mount(NULL, b, NULL, MS_REMOUNT | MS_BIND | MS_NODEV, NULL));
  flip_target = b;
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, flipper, NULL) == 0);
  long reads = 0, mixed = 0, failed = 0;
  while (!atomic_load(&flips_done)) {
    struct statvfs sv;
    if (statvfs(b, &sv) != 0) {
      failed++;
      continue;
    }
    if (!!(sv.f_flag & ST_NOSUID) == !!(sv.f_flag & ST_NODEV) && mixed++ < 3) printf("  f_flag %#lx\n", sv.f_flag);
    reads++;
  }
  pthread_join(th, NULL);
  CHECK(flip_errors == 0, "%ld remounts failed", flip_errors);
  CHECK(failed == 0 && mixed == 0, "%ld of %ld statvfs calls saw a mix of two remounts' flags (%ld failed)", mixed,
        reads, failed);
  CHECK_OK(umount(b));
}

// Linux's mounts_poll: a reader of mountinfo learns of each change of the
// mount table once, as POLLPRI|POLLERR, by poll or epoll (systemd and
// libmount's monitor wait for mounts this way).
static void mountinfo_poll(void) {
  char a[PATH_MAX + 16];
  snprintf(a, sizeof a, "%s/polled", mnt);
  REQUIRE(mkdir(a, 0755) == 0);
  int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  struct pollfd p = {fd, POLLPRI, 0};
  CHECK(poll(&p, 1, 0) == 0, "nothing changed yet: revents %#x", p.revents);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLPRI, .data.u32 = 7};
  CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
  fflush(stdout);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    usleep(100000);
    _exit(mount("none", a, "tmpfs", 0, "size=1m") == 0 ? 0 : 1);
  }
  struct epoll_event out = {0};
  int n = epoll_wait(ep, &out, 1, 5000);
  CHECK(n == 1 && (out.events & EPOLLPRI) && (out.events & EPOLLERR) && out.data.u32 == 7,
        "epoll_wait woke for another process's mount: %d events %#x", n, out.events);
  int st;
  CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the mount: %#x", st);
  // Once reported, a change is not reported again (the first look may
  // still see one made meanwhile on the host, natively).
  poll(&p, 1, 0);
  p.revents = 0;
  CHECK(poll(&p, 1, 0) == 0, "a change is reported once: revents %#x", p.revents);
  CHECK_OK(umount(a));
  CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLPRI) && (p.revents & POLLERR), "umount: revents %#x", p.revents);
  close(ep);
  close(fd);
  CHECK_OK(rmdir(a));
}

// In a child with a mount namespace of its own where there is one
// (natively), so that other mounts on the host do not show as changes.
static void test_mountinfo_poll(void) {
  puts("/proc/self/mountinfo: poll and epoll report changes of the mount table");
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) _exit(3);
    mountinfo_poll();
    fflush(stdout);
    _exit(guest_failures ? 1 : 0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the poll checks: %#x", st);
}

// Read again from the start, the table is as it is now (Linux's seq_file
// starts a new pass at offset 0): systemd seeks back and re-reads after
// each mount it makes. With `by_read`, read() from the current position
// (after an lseek), else pread at 0.
static int mountinfo_lists(int fd, const char* point, int by_read) {
  static char buf[65536];
  size_t len = 0;
  ssize_t n;
  if (by_read) {
    while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
  } else if ((n = pread(fd, buf, sizeof buf - 1, 0)) >= 0) {
    len = (size_t)n;
  }
  buf[len] = 0;
  char want[PATH_MAX + 2];
  snprintf(want, sizeof want, " %s ", point);
  return strstr(buf, want) != NULL;
}

static void test_mountinfo_reread(void) {
  char point[PATH_MAX];
  snprintf(point, sizeof point, "%s/reread", mnt);
  REQUIRE(mkdir(point, 0755) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) _exit(3);
    int fd = open("/proc/self/mountinfo", O_RDONLY);
    if (fd < 0) _exit(4);
    if (mountinfo_lists(fd, point, 1) != 0) _exit(5);
    if (mount("none", point, "tmpfs", 0, "size=1m") != 0) _exit(6);
    if (lseek(fd, 0, SEEK_SET) != 0) _exit(7);
    if (mountinfo_lists(fd, point, 1) != 1) _exit(8);
    if (umount(point) != 0) _exit(9);
    if (mountinfo_lists(fd, point, 0) != 0) _exit(10);
    _exit(0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "mountinfo read again from the start (status %#x)", st);
  CHECK_OK(rmdir(point));
}

int main(int argc, char** argv) {
  guest_name = "mount";
  REQUIRE(argc == 2, "usage: mount SCRATCH_DIR");
  REQUIRE(realpath(argv[1], mnt));
  REQUIRE(mount("none", mnt, "tmpfs", 0, "size=4m") == 0, "mount: %s", strerror(errno));
  atexit(unmount_scratch);

  test_tmpfs_mount_and_proc_lines();
  test_bind_and_remount();
  test_remount_race();
  test_umount_rules();
  test_unprivileged();
  test_hostfs();
  test_mountinfo_poll();
  test_mountinfo_reread();

  CHECK_OK(umount(mnt));
  return guest_finish();
}
