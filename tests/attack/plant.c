// A guest root planting host privileges through hostfs with ordinary
// calls: a set-uid root program, a set-gid one, block and character
// device nodes, files of another user. The guest must see all of it as it
// asked; attack.py then checks from the host that no host file is set-id,
// a device node or owned by anyone but the invoking user.
//
// usage: plant   (inside the guest root of `flatux run --root JAIL`)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      failures++;                                            \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
    }                                                        \
  } while (0)

static void make(const char* path, mode_t mode) {
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
  if (fd >= 0) {
    CHECK(write(fd, "#!/bin/sh\n", 10) == 10, "write");
    close(fd);
  }
}

static struct stat look(const char* path) {
  struct stat st;
  memset(&st, 0, sizeof st);
  CHECK(lstat(path, &st) == 0, "lstat %s: %s", path, strerror(errno));
  return st;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  CHECK(geteuid() == 0, "the guest must start as root (euid %d)", (int)geteuid());
  umask(0);

  make("/suid", 0755);
  CHECK(chown("/suid", 0, 0) == 0, "chown: %s", strerror(errno));
  CHECK(chmod("/suid", 04755) == 0, "chmod 04755: %s", strerror(errno));
  struct stat st = look("/suid");
  CHECK((st.st_mode & 07777) == 04755 && st.st_uid == 0, "/suid shows %o uid %d", st.st_mode & 07777,
        (int)st.st_uid);

  make("/sgid", 02750);
  CHECK(chmod("/sgid", 02750) == 0, "chmod 02750: %s", strerror(errno));
  CHECK(chown("/sgid", 0, 42) == 0, "chown 0:42: %s", strerror(errno));
  st = look("/sgid");
  // chown by root keeps set-gid without group execute? Linux clears it when group may run it.
  CHECK(st.st_gid == 42 && (st.st_mode & 0777) == 0750, "/sgid shows %o gid %d", st.st_mode & 07777,
        (int)st.st_gid);

  CHECK(open("/created-suid", O_CREAT | O_WRONLY, 04711) >= 0, "create with 04711: %s", strerror(errno));
  st = look("/created-suid");
  CHECK((st.st_mode & 07777) == 04711, "/created-suid shows %o", st.st_mode & 07777);

  CHECK(mknod("/sda", S_IFBLK | 0660, makedev(8, 0)) == 0, "mknod b 8 0: %s", strerror(errno));
  st = look("/sda");
  CHECK(S_ISBLK(st.st_mode) && major(st.st_rdev) == 8 && minor(st.st_rdev) == 0 && (st.st_mode & 0777) == 0660,
        "/sda shows %o rdev %u:%u", st.st_mode, major(st.st_rdev), minor(st.st_rdev));
  CHECK(mknod("/mem", S_IFCHR | 0640, makedev(1, 1)) == 0, "mknod c 1 1: %s", strerror(errno));
  st = look("/mem");
  CHECK(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 1, "/mem shows %o", st.st_mode);
  CHECK(chown("/mem", 0, 15) == 0 && chmod("/mem", 0600) == 0, "chown/chmod a device node: %s", strerror(errno));
  st = look("/mem");
  CHECK(S_ISCHR(st.st_mode) && st.st_gid == 15 && (st.st_mode & 0777) == 0600, "/mem now %o gid %d", st.st_mode,
        (int)st.st_gid);
  // A device node works as one: the kernel's null device.
  CHECK(mknod("/null", S_IFCHR | 0666, makedev(1, 3)) == 0, "mknod c 1 3: %s", strerror(errno));
  int fd = open("/null", O_RDWR);
  CHECK(fd >= 0, "open /null: %s", strerror(errno));
  if (fd >= 0) {
    char c;
    CHECK(write(fd, "x", 1) == 1 && read(fd, &c, 1) == 0, "null reads nothing, takes everything");
    close(fd);
  }
  char target[64];
  CHECK(readlink("/null", target, sizeof target) < 0 && errno == EINVAL, "a device node is no link");
  CHECK(mkfifo("/fifo", 0644) == 0, "mkfifo: %s", strerror(errno));

  // flatux's records are its own.
  char buf[256];
  CHECK(setxattr("/suid", "user.flatux.attr", "x", 1, 0) < 0 && errno == EPERM, "a record cannot be forged");
  CHECK(getxattr("/suid", "user.flatux.attr", buf, sizeof buf) < 0 && errno == ENODATA, "a record cannot be read");
  long n = listxattr("/suid", buf, sizeof buf);
  CHECK(n == 0, "no names listed (%ld)", n);
  CHECK(symlink("\177flatux-node:c:1:1:666:0:0", "/forged") < 0 && errno == EINVAL, "a node link cannot be forged");

  CHECK(mkdir("/pub", 01777) == 0, "mkdir /pub: %s", strerror(errno));
  // Another user's files, made by a vfork child with raw calls (no libc
  // state touched while it borrows the parent's memory).
  pid_t pid = vfork();
  if (pid == 0) {
    if (syscall(SYS_setgid, 100) != 0 || syscall(SYS_setuid, 1000) != 0) syscall(SYS_exit, 3);
    long f = syscall(SYS_open, "/pub/user-file", O_CREAT | O_WRONLY, 0640);
    if (f < 0) syscall(SYS_exit, 4);
    syscall(SYS_close, f);
    if (syscall(SYS_mkdir, "/pub/user-dir", 0750) != 0) syscall(SYS_exit, 5);
    syscall(SYS_exit, 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the user's child: status %#x", status);
  st = look("/pub/user-file");
  struct stat d = look("/pub/user-dir");
  CHECK(st.st_uid == 1000 && st.st_gid == 100 && (st.st_mode & 0777) == 0640, "/pub/user-file shows %d:%d %o",
        (int)st.st_uid, (int)st.st_gid, st.st_mode & 07777);
  CHECK(S_ISDIR(d.st_mode) && d.st_uid == 1000 && d.st_gid == 100, "/pub/user-dir shows %d:%d", (int)d.st_uid,
        (int)d.st_gid);

  printf("%s: %d failure(s)\n", failures ? "FAILED" : "planted", failures);
  return failures ? 1 : 0;
}
