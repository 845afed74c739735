// Mount namespaces: unshare(CLONE_NEWNS) and clone(CLONE_NEWNS) give a
// process a copy of every mount; its mounts and unmounts are its own
// (/proc/PID/mountinfo shows each process its namespace's), but for shared
// mounts, whose copies are peers of the originals and pass events both
// ways; the root and working folder move onto the copies; the namespace's
// mounts go with its last process. Needs CAP_SYS_ADMIN (EPERM without);
// CLONE_NEWNS with CLONE_FS is EINVAL.
//
// argv[1] is a scratch folder. The run happens in a mount namespace of its
// own where the kernel has them (natively), on a tmpfs mounted on it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"
#include "guest_at.h"

// Whether /proc/PID/mountinfo (pid 0: self) lists a mount at DIR/rel.
static int listed(pid_t pid, const char* rel) {
  char path[64], line[4096], pt[PATH_MAX];
  if (pid) snprintf(path, sizeof path, "/proc/%d/mountinfo", (int)pid);
  else snprintf(path, sizeof path, "/proc/self/mountinfo");
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%*d %*d %*s %*s %4095s", pt) == 1 && strcmp(pt, at("%s", rel)) == 0) found = 1;
  fclose(f);
  return found;
}

static void make_dir(const char* rel) { REQUIRE(mkdir(at("%s", rel), 0755) == 0, "mkdir %s: %s", rel, strerror(errno)); }

static int mount_tmpfs(const char* rel) { return mount("none", at("%s", rel), "tmpfs", 0, "size=1m"); }

static int wait_status(pid_t c) {
  int st;
  if (waitpid(c, &st, 0) != c) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// A child in a namespace of its own, talking over two pipes: it runs
// `step` for each byte the parent sends, answering with step's result.
struct Peer {
  pid_t pid;
  int to, from;
};

static struct Peer start_peer(int (*step)(int), int by_clone) {
  int down[2], up[2];
  REQUIRE(pipe(down) == 0 && pipe(up) == 0);
  pid_t c = by_clone ? (pid_t)syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0) : fork();
  REQUIRE(c >= 0, "clone: %s", strerror(errno));
  if (c == 0) {
    close(down[1]);
    close(up[0]);
    if (!by_clone && unshare(CLONE_NEWNS) != 0) _exit(90);
    unsigned char b, r;
    while (read(down[0], &b, 1) == 1) {
      r = (unsigned char)step(b);
      if (write(up[1], &r, 1) != 1) _exit(91);
    }
    _exit(0);
  }
  close(down[0]);
  close(up[1]);
  struct Peer p = {c, down[1], up[0]};
  return p;
}

static int ask(struct Peer* p, int what) {
  unsigned char b = (unsigned char)what, r = 255;
  if (write(p->to, &b, 1) != 1 || read(p->from, &r, 1) != 1) return -1;
  return r;
}

static int stop_peer(struct Peer* p) {
  close(p->to);
  close(p->from);
  return wait_status(p->pid);
}

// The child's side: 1 mounts its own tmpfs on "own" with a file in it;
// 2 says whether it sees that file; 3 whether it sees "shared/from_parent";
// 4 mounts on "shared/from_child"; 5 whether it sees "private/late";
// 6 whether its mountinfo lists "own".
static int child_step(int what) {
  switch (what) {
    case 1:
      if (mount_tmpfs("own") != 0) return 100 + errno;
      return touch_at("own/mine") == 0 ? 0 : 99;
    case 2: return exists_at("own/mine");
    case 3: return exists_at("shared/from_parent/x");
    case 4: return mount_tmpfs("shared/from_child") == 0 ? 0 : 100 + errno;
    case 5: return exists_at("private/late/x");
    case 6: return listed(0, "own");
  }
  return 255;
}

static void test_private_and_shared(int by_clone) {
  const char* how = by_clone ? "clone" : "unshare";
  make_dir("own");
  make_dir("shared");
  make_dir("private");
  REQUIRE(mount_tmpfs("shared") == 0 && mount_tmpfs("private") == 0);
  REQUIRE(mount("none", at("shared"), NULL, MS_SHARED, NULL) == 0);
  make_dir("shared/from_parent");
  make_dir("shared/from_child");
  make_dir("private/late");

  struct Peer p = start_peer(child_step, by_clone);
  CHECK(ask(&p, 1) == 0, "%s: the child could not mount", how);
  CHECK(ask(&p, 2) == 1, "%s: the child does not see its own mount", how);
  CHECK(ask(&p, 6) == 1, "%s: the child's mountinfo lacks its mount", how);
  CHECK(!exists_at("own/mine"), "%s: the child's mount shows in the parent's namespace", how);
  CHECK(listed(0, "own") == 0, "%s: the parent's mountinfo lists the child's mount", how);
  CHECK(listed(p.pid, "own") == 1, "%s: /proc/CHILD/mountinfo lacks the child's mount", how);

  // Shared: the copies are peers, both ways.
  REQUIRE(mount_tmpfs("shared/from_parent") == 0);
  REQUIRE(touch_at("shared/from_parent/x") == 0);
  CHECK(ask(&p, 3) == 1, "%s: a mount on a shared mount did not reach the copy", how);
  CHECK(ask(&p, 4) == 0, "%s: the child could not mount on its shared copy", how);
  CHECK(listed(0, "shared/from_child") == 1, "%s: the child's mount on the shared copy did not come back", how);
  // Private: nothing passes.
  REQUIRE(mount_tmpfs("private/late") == 0);
  REQUIRE(touch_at("private/late/x") == 0);
  CHECK(ask(&p, 5) == 0, "%s: a mount on a private mount reached the copy", how);

  CHECK(stop_peer(&p) == 0, "%s: child status", how);
  CHECK_OK(umount(at("private/late")));
  CHECK_OK(umount(at("private")));
  CHECK_OK(umount(at("shared/from_child")));
  CHECK_OK(umount(at("shared/from_parent")));
  CHECK_OK(umount(at("shared")));
  CHECK(rmdir(at("own")) == 0 && rmdir(at("shared")) == 0 && rmdir(at("private")) == 0);
}

// The working folder moves onto the copy of its mount: the parent's
// mount is then not in use, and the child still stands in its copy.
static void test_cwd_moves(void) {
  make_dir("c");
  REQUIRE(mount_tmpfs("c") == 0);
  REQUIRE(touch_at("c/here") == 0);
  int ready[2], done[2];
  REQUIRE(pipe(ready) == 0 && pipe(done) == 0);
  pid_t c = fork();
  REQUIRE(c >= 0);
  if (c == 0) {
    char b;
    if (chdir(at("c")) != 0 || unshare(CLONE_NEWNS) != 0) _exit(1);
    if (write(ready[1], "x", 1) != 1 || read(done[0], &b, 1) != 1) _exit(2);
    // The parent unmounted its own: this copy still shows the files.
    _exit(access("here", F_OK) == 0 ? 0 : 3);
  }
  char b;
  REQUIRE(read(ready[0], &b, 1) == 1);
  CHECK_OK(umount(at("c")));  // EBUSY if the child's cwd still held this mount
  CHECK(write(done[1], "x", 1) == 1);
  CHECK(wait_status(c) == 0, "child status %d", wait_status(c));
  CHECK(!exists_at("c/here"));
  CHECK_OK(rmdir(at("c")));
}

static void test_errors(void) {
  pid_t c = fork();
  REQUIRE(c >= 0);
  if (c == 0) {
    if (syscall(SYS_clone, CLONE_NEWNS | CLONE_FS | SIGCHLD, 0, 0, 0, 0) != -1 || errno != EINVAL) _exit(10);
    if (setuid(65534) != 0) _exit(11);
    if (unshare(CLONE_NEWNS) != -1 || errno != EPERM) _exit(12);
    if (syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0) != -1 || errno != EPERM) _exit(13);
    _exit(0);
  }
  CHECK(wait_status(c) == 0, "clone with CLONE_FS: EINVAL; without CAP_SYS_ADMIN: EPERM (status %d)", wait_status(c));
}

// Many namespaces made and left in turn: each one's mounts go with it
// (the mount table would fill up otherwise).
static void test_many(void) {
  make_dir("m");
  for (int i = 0; i < 100; i++) {
    pid_t c = fork();
    REQUIRE(c >= 0);
    if (c == 0) _exit(unshare(CLONE_NEWNS) == 0 && mount_tmpfs("m") == 0 ? 0 : 1);
    int st = wait_status(c);
    if (st != 0) {
      CHECK(0, "namespace %d: status %d", i, st);
      break;
    }
  }
  CHECK(listed(0, "m") == 0);
  CHECK_OK(rmdir(at("m")));
}

int main(int argc, char** argv) {
  guest_name = "mount_ns";
  REQUIRE(argc == 2, "usage: mount_ns SCRATCH_DIR");
  guest_mount_scratch(argv[1], dir, "size=4m");
  REQUIRE(mount("none", dir, NULL, MS_PRIVATE, NULL) == 0);

  test_private_and_shared(0);
  test_private_and_shared(1);
  test_cwd_moves();
  test_errors();
  test_many();

  CHECK_OK(umount(dir));
  return guest_finish();
}
