// Credentials: what an ordinary user (uid/gid 65534, switched to with
// setresuid keeping 0 saved) may and may not do, and who owns what it
// makes. Runs in the folder it is given; `--tmpfs` mounts a tmpfs there
// first (so the same checks cover tmpfs). Needs root to set up: exits 77
// (skipped) otherwise.
//
// Usage: creds [--tmpfs] DIR
#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define USER 65534
#define GROUP 4242

static char dir[4096];

// Names are relative to the folder (the cwd), so the folders above it
// need not be searchable by the ordinary user.
static const char* at(const char* name) { return name; }

// Real and effective ids become the user's; root stays saved, to come back.
static void become_user(void) {
  REQUIRE(syscall(SYS_setresgid, USER, USER, 0) == 0 && syscall(SYS_setresuid, USER, USER, 0) == 0);
}

static void become_root(void) {
  REQUIRE(syscall(SYS_setresuid, 0, 0, -1) == 0 && syscall(SYS_setresgid, 0, 0, -1) == 0);
}

static void make_file(const char* name, int mode) {
  int fd = open(at(name), O_WRONLY | O_CREAT | O_TRUNC, mode);
  REQUIRE(fd >= 0, "%s: %s", name, strerror(errno));
  REQUIRE(write(fd, "data\n", 5) == 5);
  close(fd);
  REQUIRE(chmod(at(name), mode) == 0);
}

static void check_owner(const char* name, uid_t uid, gid_t gid) {
  struct stat st;
  CHECK(lstat(at(name), &st) == 0, "%s: %s", name, strerror(errno));
  CHECK(st.st_uid == uid && st.st_gid == gid, "%s: owner %u:%u, want %u:%u", name, st.st_uid, st.st_gid, uid, gid);
}

static void setup(void) {
  REQUIRE(chmod(dir, 0755) == 0);
  REQUIRE(chdir(dir) == 0);
  REQUIRE(mkdir(at("open"), 0777) == 0 && chmod(at("open"), 0777) == 0);
  REQUIRE(mkdir(at("closed"), 0700) == 0);
  make_file("closed/f", 0666);
  REQUIRE(symlink("f", at("closed/l")) == 0);
  REQUIRE(mkdir(at("sg"), 0777) == 0 && chown(at("sg"), 0, GROUP) == 0 && chmod(at("sg"), 02777) == 0);
  make_file("rootfile", 0644);
  // A sticky folder anyone may write, with root's file and folder in it.
  REQUIRE(mkdir(at("sticky"), 0777) == 0 && chmod(at("sticky"), 01777) == 0);
  make_file("sticky/rootf", 0666);
  REQUIRE(mkdir(at("sticky/rootd"), 0777) == 0 && chmod(at("sticky/rootd"), 0777) == 0);
  // A path whose first folder the user may not search, and one it may
  // search but not read.
  REQUIRE(mkdir(at("outer"), 0700) == 0 && mkdir(at("outer/inner"), 0777) == 0 && chmod(at("outer/inner"), 0777) == 0);
  make_file("outer/inner/f", 0666);
  REQUIRE(mkdir(at("walk"), 0711) == 0 && chmod(at("walk"), 0711) == 0 && mkdir(at("walk/inner"), 0755) == 0);
  make_file("walk/inner/f", 0666);
  REQUIRE(mknod(at("rootfifo"), S_IFIFO | 0644, 0) == 0 && chmod(at("rootfifo"), 0644) == 0);
}

static void test_creating(void) {
  puts("an ordinary user creates in a mode-0777 folder");
  become_user();
  int fd = open(at("open/new"), O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0, "create: %s", strerror(errno));
  if (fd >= 0) {
    CHECK(write(fd, "x", 1) == 1, "write to the new file: %s", strerror(errno));
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0600, "mode %o", st.st_mode & 07777);
    close(fd);
  }
  fd = open(at("open/new"), O_WRONLY | O_CREAT, 0600);  // exists: opened, mode kept
  CHECK(fd >= 0, "reopen with O_CREAT: %s", strerror(errno));
  if (fd >= 0) close(fd);
  fd = open(at("open/ro"), O_RDWR | O_CREAT | O_EXCL, 0400);  // created read-only: open all the same
  CHECK(fd >= 0, "create a 0400 file O_RDWR: %s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_OK(mkdir(at("open/dir"), 0755));
  // An unnamed file (O_TMPFILE) is the user's too, where the filesystem has them.
  fd = open(at("open"), O_TMPFILE | O_RDWR, 0600);
  CHECK(fd >= 0 || errno == EOPNOTSUPP, "O_TMPFILE: %s", strerror(errno));
  if (fd >= 0) {
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_uid == USER && st.st_gid == USER, "O_TMPFILE owner %u:%u", st.st_uid,
          st.st_gid);
    close(fd);
  }
  CHECK_OK(symlink("new", at("open/link")));
  CHECK_OK(mknod(at("open/fifo"), S_IFIFO | 0644, 0));
  CHECK_ERR(open(at("made-in-roots"), O_WRONLY | O_CREAT, 0644), EACCES);
  CHECK_ERR(mkdir(at("dir-in-roots"), 0755), EACCES);
  fd = open(".", O_TMPFILE | O_RDWR, 0600);
  CHECK(fd == -1 && (errno == EACCES || errno == EOPNOTSUPP), "O_TMPFILE in root's folder: %d (%s)", fd,
        strerror(errno));
  if (fd >= 0) close(fd);
  // The group of a set-group-ID folder; a new folder there inherits the bit.
  fd = open(at("sg/f"), O_WRONLY | O_CREAT, 0644);
  CHECK(fd >= 0, "create in the setgid folder: %s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_OK(mkdir(at("sg/d"), 0755));
  become_root();
  check_owner("open/new", USER, USER);
  check_owner("open/ro", USER, USER);
  check_owner("open/dir", USER, USER);
  check_owner("open/link", USER, USER);
  check_owner("open/fifo", USER, USER);
  check_owner("sg/f", USER, GROUP);
  check_owner("sg/d", USER, GROUP);
  struct stat st;
  CHECK(stat(at("sg/d"), &st) == 0 && (st.st_mode & S_ISGID), "sg/d mode %o", st.st_mode & 07777);
}

static void test_attributes(void) {
  puts("chmod, chown: EPERM for another's file, EACCES for a folder not searchable");
  become_user();
  CHECK_OK(chmod(at("open/new"), 0640));
  CHECK_OK(chown(at("open/new"), -1, USER));
  CHECK_ERR(chown(at("open/new"), 0, -1), EPERM);
  CHECK_ERR(chown(at("open/new"), -1, 0), EPERM);
  CHECK_ERR(chmod(at("rootfile"), 0666), EPERM);
  CHECK_ERR(chmod(at("closed/f"), 0777), EACCES);
  CHECK_ERR(chown(at("closed/f"), USER, USER), EACCES);
  CHECK_ERR(syscall(SYS_truncate, at("closed/f"), 0), EACCES);
  struct stat st;
  CHECK_ERR(stat(at("closed/f"), &st), EACCES);
  char buf[16];
  CHECK_ERR(readlink(at("closed/l"), buf, sizeof buf), EACCES);
  CHECK_ERR(open(at("closed/f"), O_RDONLY), EACCES);
  CHECK_ERR(access(at("closed/f"), F_OK), EACCES);
  CHECK_ERR(unlink(at("closed/f")), EACCES);
  CHECK_ERR(mkdir(at("closed/x"), 0755), EACCES);
  become_root();
  // access() asks with the real ids, faccessat(AT_EACCESS) with the effective ones.
  REQUIRE(syscall(SYS_setresuid, -1, USER, 0) == 0);
  CHECK_OK(access(at("closed/f"), R_OK));
  CHECK_ERR(faccessat(AT_FDCWD, at("closed/f"), R_OK, AT_EACCESS), EACCES);
  CHECK_ERR(open(at("closed/f"), O_RDONLY), EACCES);
  REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0);
  REQUIRE(syscall(SYS_setresuid, USER, -1, -1) == 0);
  CHECK_ERR(access(at("rootfile"), W_OK), EACCES);
  CHECK_OK(faccessat(AT_FDCWD, at("rootfile"), W_OK, AT_EACCESS));
  become_root();
  // Root changes what an ordinary user owns.
  CHECK_OK(chmod(at("open/new"), 0604));
  int fd = open(at("open/new"), O_RDONLY);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK_OK(fchmod(fd, 0644));
    close(fd);
  }
  CHECK(stat(at("open/new"), &st) == 0 && (st.st_mode & 07777) == 0644, "mode %o", st.st_mode & 07777);
}

static void test_open_checks(void) {
  puts("open: access bits, O_TRUNC, O_NOATIME only for the owner");
  become_user();
  CHECK_ERR(open(at("rootfile"), O_WRONLY), EACCES);
  CHECK_ERR(open(at("rootfile"), O_RDONLY | O_TRUNC), EACCES);
  CHECK_ERR(open(at("rootfile"), O_RDONLY | O_NOATIME), EPERM);
  int fd = open(at("rootfile"), O_RDONLY);
  CHECK(fd >= 0, "read another's 0644 file: %s", strerror(errno));
  if (fd >= 0) {
    CHECK_ERR(fcntl(fd, F_SETFL, O_NOATIME), EPERM);
    close(fd);
  }
  fd = open(at("open/new"), O_RDONLY | O_NOATIME);
  CHECK(fd >= 0, "O_NOATIME on its own file: %s", strerror(errno));
  if (fd >= 0) close(fd);
  become_root();
  fd = open(at("rootfile"), O_RDONLY | O_NOATIME);
  CHECK(fd >= 0, "O_NOATIME as root: %s", strerror(errno));
  if (fd >= 0) close(fd);
}

static void test_sticky(void) {
  puts("a sticky folder: only the owner of the entry or of the folder removes or replaces it");
  become_user();
  CHECK_ERR(unlink(at("sticky/rootf")), EPERM);
  CHECK_ERR(rmdir(at("sticky/rootd")), EPERM);
  CHECK_ERR(rename(at("sticky/rootf"), at("sticky/moved")), EPERM);
  CHECK_ERR(rename(at("sticky/rootd"), at("open/moved")), EPERM);
  int fd = open(at("sticky/mine"), O_WRONLY | O_CREAT | O_EXCL, 0644);
  CHECK(fd >= 0, "create in the sticky folder: %s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_ERR(rename(at("sticky/mine"), at("sticky/rootf")), EPERM);  // replacing root's entry
  CHECK_ERR(link(at("sticky/mine"), at("sticky/rootf")), EEXIST);
  CHECK_OK(rename(at("sticky/mine"), at("sticky/mine2")));
  CHECK_OK(unlink(at("sticky/mine2")));
  // The owner of a sticky folder removes anyone's entries in it.
  CHECK_OK(mkdir(at("open/own-sticky"), 0777));
  CHECK_OK(chmod(at("open/own-sticky"), 01777));
  become_root();
  make_file("open/own-sticky/rootf", 0644);
  make_file("open/own-sticky/rootf2", 0644);
  become_user();
  CHECK_OK(unlink(at("open/own-sticky/rootf")));
  CHECK_OK(rename(at("open/own-sticky/rootf2"), at("open/own-sticky/renamed")));
  CHECK_OK(unlink(at("open/own-sticky/renamed")));
  CHECK_OK(rmdir(at("open/own-sticky")));
  become_root();
  // Root is not bound by the rule.
  CHECK_OK(rename(at("sticky/rootd"), at("sticky/rootd2")));
  CHECK_OK(rename(at("sticky/rootd2"), at("sticky/rootd")));
}

static void test_search(void) {
  puts("search permission on every folder of a path");
  become_user();
  struct stat st;
  CHECK_ERR(stat(at("outer/inner/f"), &st), EACCES);
  CHECK_ERR(open(at("outer/inner/f"), O_RDONLY), EACCES);
  CHECK_ERR(open(at("outer/inner/new"), O_WRONLY | O_CREAT, 0644), EACCES);
  CHECK_ERR(mkdir(at("outer/inner/d"), 0755), EACCES);
  CHECK_ERR(unlink(at("outer/inner/f")), EACCES);
  CHECK_ERR(rename(at("outer/inner/f"), at("open/stolen")), EACCES);
  CHECK_ERR(rename(at("open/new"), at("outer/inner/new")), EACCES);
  CHECK_ERR(rename(at("open/new"), at("missing/new")), ENOENT);
  CHECK_ERR(rename(at("open/dir"), at("missing/dir")), ENOENT);
  CHECK_ERR(link(at("open/new"), at("outer/inner/new")), EACCES);
  CHECK_ERR(symlink("x", at("outer/inner/l")), EACCES);
  CHECK_ERR(chdir(at("outer/inner")), EACCES);
  // Search without read: the names inside are reachable, the list is not.
  CHECK_OK(stat(at("walk/inner/f"), &st));
  int fd = open(at("walk/inner/f"), O_RDWR);
  CHECK(fd >= 0, "open through a 0711 folder: %s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_ERR(open(at("walk"), O_RDONLY | O_DIRECTORY), EACCES);
  CHECK_ERR(open(at("rootfile/x"), O_RDONLY), ENOTDIR);
  // An existing name is EEXIST before the folder's write permission.
  CHECK_ERR(mkdir(at("rootfile"), 0755), EEXIST);
  CHECK_ERR(mkdir(at("new-in-roots"), 0755), EACCES);
  become_root();
}

// Root, in another process (a child with root saved), changes the mode
// (mode >= 0) or owner (uid >= 0) of `name` in the test folder.
static void other_sets(const char* name, int mode, int uid) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (syscall(SYS_setresuid, 0, 0, -1) != 0 || syscall(SYS_setresgid, 0, 0, -1) != 0 || chdir(dir) != 0) _exit(2);
    if (uid >= 0 && chown(name, (uid_t)uid, -1) != 0) _exit(3);
    if (mode >= 0 && chmod(name, (mode_t)mode) != 0) _exit(4);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0, "chmod/chown %s by another process: status %#x", name,
          status);
}

// Every folder a walk looks a name up in is searched as it is now: one
// already walked through (cached), then closed by another process; the
// folder a walk starts in (the cwd) and its parent reached by "..";
// folders through a symlink; a mount's folder, the folder above its mount
// point, and ".." out of it.
static void test_search_now(void) {
  puts("search permission on folders as they are now, through links, \"..\" and mounts");
  REQUIRE(mkdir("later", 0755) == 0 && chmod("later", 0755) == 0 && mkdir("later/inner", 0755) == 0);
  make_file("later/inner/f", 0644);
  REQUIRE(symlink("later/inner", "lnk") == 0);
  REQUIRE(mkdir("up", 0755) == 0 && chmod("up", 0755) == 0 && mkdir("up/sub", 0755) == 0 && chmod("up/sub", 0755) == 0);
  make_file("up/sib", 0644);
  make_file("up/sub/f", 0644);
  REQUIRE(symlink("f", "up/sub/l") == 0);
  REQUIRE(mkdir("mp", 0755) == 0 && chmod("mp", 0755) == 0 && mkdir("mp/m", 0755) == 0);
  // A mount namespace of its own where there is one (natively), so the
  // mount is seen nowhere else.
  if (unshare(CLONE_NEWNS) == 0) REQUIRE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  REQUIRE(mount("none", "mp/m", "tmpfs", 0, "size=64k,mode=0755") == 0, "mount: %s", strerror(errno));
  REQUIRE(mkdir("mp/m/d", 0755) == 0);
  make_file("mp/m/d/f", 0644);
  int home = open(".", O_RDONLY | O_DIRECTORY);
  REQUIRE(home >= 0);
  struct stat st;

  become_user();
  CHECK_OK(stat("later/inner/f", &st));  // walked: cached now
  other_sets("later", 0700, -1);
  CHECK_ERR(stat("later/inner/f", &st), EACCES);
  CHECK_ERR(open("later/inner/f", O_RDONLY), EACCES);
  CHECK_ERR(stat("later/inner", &st), EACCES);
  CHECK_ERR(stat("later/.", &st), EACCES);
  CHECK_ERR(stat("later/..", &st), EACCES);
  CHECK_ERR(stat("lnk/f", &st), EACCES);
  CHECK_ERR(open("lnk/g", O_WRONLY | O_CREAT, 0644), EACCES);
  CHECK_ERR(chdir("later/inner"), EACCES);
  CHECK_OK(stat("later", &st));  // its own name is in a searchable folder
  CHECK_OK(lstat("lnk", &st));
  // Search without read: names inside are reachable, the list is not.
  other_sets("later", 0711, -1);
  CHECK_OK(stat("later/inner/f", &st));
  CHECK_OK(stat("lnk/f", &st));
  int fd = open("later/inner/f", O_RDONLY);
  CHECK(fd >= 0, "open through a 0711 folder: %s", strerror(errno));
  if (fd >= 0) close(fd);
  CHECK_ERR(open("later", O_RDONLY | O_DIRECTORY), EACCES);
  // The owner's bits once the user owns it; the others' once it does not.
  other_sets("later", 0700, USER);
  CHECK_OK(stat("later/inner/f", &st));
  other_sets("later", -1, 0);
  CHECK_ERR(stat("later/inner/f", &st), EACCES);
  other_sets("later", 0755, -1);
  CHECK_OK(stat("later/inner/f", &st));
  CHECK_OK(stat("lnk/f", &st));

  // The cwd and its parent, which the cwd's walk reaches by "..".
  REQUIRE(chdir("up/sub") == 0);
  CHECK_OK(stat("../sib", &st));
  other_sets("up", 0700, -1);
  CHECK_ERR(stat("../sib", &st), EACCES);
  CHECK_ERR(stat("../sub", &st), EACCES);
  CHECK_ERR(stat("../..", &st), EACCES);
  CHECK_OK(stat("..", &st));  // only the cwd is searched for that
  CHECK_OK(stat(".", &st));
  // A link's relative target is walked from the link's folder.
  CHECK_OK(stat("l", &st));
  fd = open("l", O_RDONLY);
  CHECK(fd >= 0, "open a link in the cwd below a closed folder: %s", strerror(errno));
  if (fd >= 0) close(fd);
  other_sets("up", 0755, -1);
  CHECK_OK(stat("../sib", &st));
  other_sets("up/sub", 0600, -1);
  CHECK_ERR(stat(".", &st), EACCES);
  CHECK_ERR(stat("..", &st), EACCES);
  CHECK_ERR(stat("../sib", &st), EACCES);
  CHECK_ERR(open("new", O_WRONLY | O_CREAT, 0644), EACCES);
  other_sets("up/sub", 0755, -1);
  CHECK_OK(stat("../sib", &st));
  CHECK_OK(stat(".", &st));
  REQUIRE(fchdir(home) == 0);

  // A mount: the folder above its mount point, and the mounted root itself.
  CHECK_OK(stat("mp/m/d/f", &st));
  other_sets("mp", 0700, -1);
  CHECK_ERR(stat("mp/m/d/f", &st), EACCES);
  CHECK_ERR(stat("mp/m", &st), EACCES);
  other_sets("mp", 0755, -1);
  CHECK_OK(stat("mp/m/d/f", &st));
  other_sets("mp/m", 0700, -1);  // the tmpfs's root, not the folder under it
  CHECK_ERR(stat("mp/m/d/f", &st), EACCES);
  CHECK_ERR(stat("mp/m/d", &st), EACCES);
  CHECK_OK(stat("mp/m", &st));
  other_sets("mp/m", 0711, -1);
  CHECK_OK(stat("mp/m/d/f", &st));
  // ".." out of the mount's root into a folder closed meanwhile.
  REQUIRE(chdir("mp/m") == 0);
  CHECK_OK(stat("../m/d", &st));
  other_sets("mp", 0700, -1);
  CHECK_OK(stat("d/f", &st));
  CHECK_OK(stat("..", &st));
  CHECK_ERR(stat("../m", &st), EACCES);
  CHECK_ERR(stat("../../rootfile", &st), EACCES);
  other_sets("mp", 0755, -1);
  CHECK_OK(stat("../m/d/f", &st));
  CHECK_OK(stat("../../rootfile", &st));
  REQUIRE(fchdir(home) == 0);
  become_root();

  close(home);
  CHECK_OK(umount("mp/m"));
  unlink("later/inner/f");
  unlink("lnk");
  unlink("up/sib");
  unlink("up/sub/l");
  unlink("up/sub/f");
  rmdir("later/inner");
  rmdir("later");
  rmdir("up/sub");
  rmdir("up");
  rmdir("mp/m");
  rmdir("mp");
}

static void test_open_errnos(void) {
  puts("open: EISDIR, ENOTDIR, ELOOP, and O_TRUNC needing write");
  for (int as_user = 0; as_user < 2; as_user++) {
    if (as_user) become_user();
    CHECK_ERR(open(at("open/dir"), O_WRONLY), EISDIR);
    CHECK_ERR(open(at("open/dir"), O_RDWR), EISDIR);
    CHECK_ERR(open(at("open/dir"), O_RDONLY | O_TRUNC), EISDIR);
    CHECK_ERR(open(at("open/dir"), O_RDONLY | O_CREAT, 0644), EISDIR);
    CHECK_ERR(open(".", O_WRONLY), EISDIR);  // before the bits: root's 0755 folder
    CHECK_ERR(open(at("rootfile"), O_RDONLY | O_DIRECTORY), ENOTDIR);
    CHECK_ERR(open(at("open/link"), O_RDONLY | O_NOFOLLOW), ELOOP);
    int fd = open(at("open/dir"), O_PATH | O_WRONLY);
    CHECK(fd >= 0, "O_PATH of a folder: %s", strerror(errno));
    if (fd >= 0) close(fd);
    become_root();
  }
  become_user();
  CHECK_ERR(open(at("rootfifo"), O_RDONLY | O_NONBLOCK | O_TRUNC), EACCES);
  // Its read end is the user's to open (flatux's ext4 opens no FIFOs yet:
  // ENXIO there; what matters here is that the bits allow it).
  int fd = open(at("rootfifo"), O_RDONLY | O_NONBLOCK);
  CHECK(fd >= 0 || errno == ENXIO, "read end of root's 0644 FIFO: %s", strerror(errno));
  if (fd >= 0) close(fd);
  become_root();
}

static void test_rename_dirs(void) {
  puts("rename: a folder changing parents must be writable itself");
  REQUIRE(mkdir(at("open/rootdir"), 0755) == 0 && chmod(at("open/rootdir"), 0755) == 0);
  become_user();
  CHECK_ERR(rename(at("open/rootdir"), at("open/dir/rootdir")), EACCES);
  CHECK_OK(rename(at("open/rootdir"), at("open/rootdir2")));  // same parent: ".." stays
  CHECK_OK(rename(at("open/rootdir2"), at("open/rootdir")));
  CHECK_OK(mkdir(at("open/mydir"), 0755));
  CHECK_OK(rename(at("open/mydir"), at("open/dir/mydir")));
  CHECK_OK(rmdir(at("open/dir/mydir")));
  become_root();
  CHECK_OK(rmdir(at("open/rootdir")));
}

// exec needs the caller's own execute bit: root's 0744 file is not an
// ordinary user's to run (a vfork child tries; its exit code says what happened).
static void test_exec(void) {
  puts("execve: the caller's execute bit");
  int in = open("/proc/self/exe", O_RDONLY);
  int out = open(at("rootprog"), O_WRONLY | O_CREAT | O_TRUNC, 0744);
  REQUIRE(in >= 0 && out >= 0);
  char buf[65536];
  for (ssize_t n; (n = read(in, buf, sizeof buf)) > 0;) REQUIRE(write(out, buf, (size_t)n) == n);
  close(in);
  close(out);
  REQUIRE(chmod(at("rootprog"), 0744) == 0);
  pid_t pid = vfork();
  if (pid == 0) {
    if (syscall(SYS_setresuid, USER, USER, USER) != 0) _exit(3);
    char* argv[] = {"rootprog", NULL};
    syscall(SYS_execve, "rootprog", argv, NULL);
    _exit(errno == EACCES ? 0 : 4);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exec of a 0744 root file as a user: status %#x", status);
  unlink(at("rootprog"));
}

static void cleanup(void) {
  const char* names[] = {"open/new", "open/ro",       "open/link",     "open/fifo",   "sg/f",
                         "closed/l", "closed/f",      "rootfile",      "sticky/rootf", "outer/inner/f",
                         "walk/inner/f", "rootfifo"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(at(names[i]));
  const char* dirs[] = {"open/dir", "sg/d", "open", "sg", "closed", "sticky/rootd", "sticky",
                        "outer/inner", "outer", "walk/inner", "walk"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) rmdir(at(dirs[i]));
}

int main(int argc, char** argv) {
  guest_name = "creds";
  int tmpfs = argc == 3 && strcmp(argv[1], "--tmpfs") == 0;
  REQUIRE(argc == 2 || tmpfs, "usage: creds [--tmpfs] DIR");
  if (geteuid() != 0) {
    puts("not root: an ordinary user's checks need root to set up (skipped)");
    return 77;
  }
  if (tmpfs) guest_mount_scratch(argv[2], dir, "size=1m");
  else REQUIRE(realpath(argv[1], dir) != NULL);
  umask(022);
  setup();
  test_creating();
  test_attributes();
  test_open_checks();
  test_sticky();
  test_search();
  test_search_now();
  test_open_errnos();
  test_rename_dirs();
  test_exec();
  cleanup();
  return guest_finish();
}
