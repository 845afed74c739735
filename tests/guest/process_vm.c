// process_vm_readv/writev and kcmp: another process's memory read (a
// forked child, a spawned one, oneself) and written (a spawned child,
// oneself), a transfer cut short where the target's memory ends, the
// errors (flags, pid, pointers, counts, permission), and kcmp's answers for
// shared and separate memory, tables, files and handlers, in both orders.
//
// The same through /proc/PID/mem (read, and written in a spawned child).
//
// Usage: process_vm [--hold] (the spawned child's part)
#define _GNU_SOURCE
#include "guest_check.h"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static long kcmp(pid_t a, pid_t b, int type, unsigned long x, unsigned long y) {
  return syscall(SYS_kcmp, a, b, type, x, y);
}

// The child's part: maps two pages, fills the first with a pattern, unmaps
// the second, says where they are, and waits until told to go (then
// reports the first bytes of its page, which the parent may have written).
static int hold(int out, int in) {
  char* m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 1;
  for (int i = 0; i < 4096; i++) m[i] = (char)(i * 7);
  munmap(m + 4096, 4096);
  uintptr_t at = (uintptr_t)m;
  if (write(out, &at, sizeof at) != sizeof at) return 2;
  char c;
  if (read(in, &c, 1) != 1) return 3;
  return write(out, m, 16) == 16 ? 0 : 4;
}

struct child {
  pid_t pid;
  int to, from;
  char* page;
};

static struct child start(int spawned) {
  int up[2], down[2];
  REQUIRE(pipe(up) == 0 && pipe(down) == 0);
  struct child c = {0};
  if (spawned) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, up[1], 3);
    posix_spawn_file_actions_adddup2(&fa, down[0], 4);
    char* argv[] = {"process_vm", "--hold", NULL};
    REQUIRE(posix_spawn(&c.pid, "/proc/self/exe", &fa, NULL, argv, environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
  } else {
    c.pid = fork();
    REQUIRE(c.pid >= 0);
    if (c.pid == 0) _exit(hold(up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);
  c.from = up[0];
  c.to = down[1];
  uintptr_t at = 0;
  REQUIRE(read(c.from, &at, sizeof at) == sizeof at);
  c.page = (char*)at;
  return c;
}

static void finish(struct child* c, char first16[16]) {
  CHECK(write(c->to, "g", 1) == 1);
  CHECK(read(c->from, first16, 16) == 16);
  int status;
  CHECK(waitpid(c->pid, &status, 0) == c->pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x",
        status);
  close(c->to);
  close(c->from);
}

static void read_child(int spawned) {
  printf("process_vm_readv of a %s child\n", spawned ? "spawned" : "forked");
  struct child c = start(spawned);
  char buf[4096];
  struct iovec local = {buf, sizeof buf}, remote = {c.page, 4096};
  CHECK(syscall(SYS_process_vm_readv, c.pid, &local, 1, &remote, 1, 0) == 4096);
  int same = 1;
  for (int i = 0; i < 4096; i++) same &= buf[i] == (char)(i * 7);
  CHECK(same, "the child's bytes");
  // Scattered on both sides: 3 + 5 local from 6 + 2 remote.
  char a[3], b[5];
  struct iovec l2[2] = {{a, 3}, {b, 5}}, r2[2] = {{c.page + 100, 6}, {c.page + 200, 2}};
  CHECK(syscall(SYS_process_vm_readv, c.pid, l2, 2, r2, 2, 0) == 8);
  CHECK(a[0] == (char)700 && b[2] == (char)(105 * 7) && b[3] == (char)1400 && b[4] == (char)(201 * 7));
  // Up to where its memory ends.
  static char big[8192];
  struct iovec lbig = {big, sizeof big}, rbig = {c.page, 8192};
  CHECK(syscall(SYS_process_vm_readv, c.pid, &lbig, 1, &rbig, 1, 0) == 4096, "a read past its mapping stops there");
  struct iovec gone = {c.page + 4096, 16};
  CHECK_ERR(syscall(SYS_process_vm_readv, c.pid, &local, 1, &gone, 1, 0), EFAULT);
  CHECK_ERR(syscall(SYS_process_vm_readv, c.pid, &local, 1, &remote, 1, 1), EINVAL);
  struct iovec bad_local = {(void*)8, 16};
  CHECK_ERR(syscall(SYS_process_vm_readv, c.pid, &bad_local, 1, &remote, 1, 0), EFAULT);
  CHECK_ERR(syscall(SYS_process_vm_readv, c.pid, (void*)8, 1, &remote, 1, 0), EFAULT);
  CHECK_ERR(syscall(SYS_process_vm_readv, c.pid, &local, 1025, &remote, 1, 0), EINVAL);
  CHECK(syscall(SYS_process_vm_readv, c.pid, &local, 0, &remote, 1, 0) == 0, "no local room: nothing moved");
  if (spawned) {
    // This process's own memory is not the spawned child's (under flatux
    // both live in one address space: only what the child owns counts).
    struct iovec not_its = {buf, 16};
    CHECK_ERR(syscall(SYS_process_vm_readv, c.pid, &local, 1, &not_its, 1, 0), EFAULT);
    CHECK_ERR(syscall(SYS_process_vm_writev, c.pid, &local, 1, &not_its, 1, 0), EFAULT);
    printf("process_vm_writev of a spawned child\n");
    struct iovec src = {"written!", 8}, dst = {c.page, 8};
    CHECK(syscall(SYS_process_vm_writev, c.pid, &src, 1, &dst, 1, 0) == 8);
  }
  // The same through /proc/PID/mem, whose offsets are addresses.
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", (int)c.pid);
  int mem = open(path, spawned ? O_RDWR : O_RDONLY);
  CHECK(mem >= 0, "open %s: %s", path, strerror(errno));
  char via_mem[16];
  CHECK(pread(mem, via_mem, 16, (off_t)(uintptr_t)(c.page + 16)) == 16 && via_mem[0] == (char)(16 * 7) &&
            via_mem[15] == (char)(31 * 7),
        "/proc/PID/mem reads the child's bytes");
  CHECK(pread(mem, via_mem, 16, (off_t)(uintptr_t)(c.page + 4096)) == -1 && errno == EIO, "past its memory: EIO");
  if (spawned) CHECK(pwrite(mem, "mem-wrt!", 8, (off_t)(uintptr_t)(c.page + 8)) == 8, "%s", strerror(errno));
  close(mem);
  char first16[16];
  finish(&c, first16);
  if (spawned)
    CHECK(memcmp(first16, "written!mem-wrt!", 16) == 0, "the child sees what was written: %.16s", first16);
  CHECK_ERR(syscall(SYS_process_vm_readv, c.pid, &local, 1, &remote, 1, 0), ESRCH);
}

static void test_self(void) {
  puts("oneself");
  char src[64] = "from here", dst[64] = {0};
  struct iovec l = {dst, sizeof dst}, r = {src, sizeof src};
  CHECK(syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0) == 64 && strcmp(dst, "from here") == 0);
  struct iovec from = {"to there", 9}, to = {dst, 9};
  CHECK(syscall(SYS_process_vm_writev, getpid(), &from, 1, &to, 1, 0) == 9 && strcmp(dst, "to there") == 0);
  CHECK_ERR(syscall(SYS_process_vm_readv, 999999, &l, 1, &r, 1, 0), ESRCH);
  int mem = open("/proc/self/mem", O_RDONLY);
  char back[10] = {0};
  CHECK(mem >= 0 && pread(mem, back, 9, (off_t)(uintptr_t)dst) == 9 && strcmp(back, "to there") == 0,
        "/proc/self/mem: %s", back);
  close(mem);
}

static void test_permission(void) {
  if (geteuid() != 0) return;
  puts("permission");
  pid_t parent = getpid();
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (syscall(SYS_setresuid, 65534, 65534, 65534) != 0) _exit(10);
    char buf[8];
    struct iovec l = {buf, 8}, r = {&buf, 8};
    if (syscall(SYS_process_vm_readv, parent, &l, 1, &r, 1, 0) != -1 || errno != EPERM) _exit(11);
    if (kcmp(parent, getpid(), KCMP_VM, 0, 0) != -1 || errno != EPERM) _exit(12);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)parent);
    if (open(path, O_RDONLY) != -1 || errno != EACCES) _exit(13);
    _exit(0);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "an ordinary user may not look into root's process: %#x", status);
}

static volatile pid_t thread_tid;
static volatile int thread_go;

static void* a_thread(void* arg) {
  thread_tid = (pid_t)syscall(SYS_gettid);
  while (!thread_go) usleep(1000);
  return NULL;
}

static void test_kcmp(void) {
  puts("kcmp");
  pid_t me = getpid();
  CHECK(kcmp(me, me, KCMP_VM, 0, 0) == 0);
  int fd = open("/proc/self/exe", O_RDONLY), dup_fd = dup(fd), other = open("/proc/self/exe", O_RDONLY);
  REQUIRE(fd >= 0 && dup_fd >= 0 && other >= 0);
  CHECK(kcmp(me, me, KCMP_FILE, fd, dup_fd) == 0, "a dup is the same file");
  long x = kcmp(me, me, KCMP_FILE, fd, other), y = kcmp(me, me, KCMP_FILE, other, fd);
  CHECK((x == 1 && y == 2) || (x == 2 && y == 1), "two opens differ, in an order: %ld %ld", x, y);
  CHECK_ERR(kcmp(me, me, KCMP_FILE, fd, 999), EBADF);
  CHECK_ERR(kcmp(me, me, 99, 0, 0), EINVAL);
  CHECK_ERR(kcmp(me, 999999, KCMP_VM, 0, 0), ESRCH);
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, a_thread, NULL) == 0);
  while (!thread_tid) usleep(1000);
  CHECK(kcmp(me, thread_tid, KCMP_VM, 0, 0) == 0 && kcmp(me, thread_tid, KCMP_FILES, 0, 0) == 0 &&
            kcmp(me, thread_tid, KCMP_FS, 0, 0) == 0 && kcmp(me, thread_tid, KCMP_SIGHAND, 0, 0) == 0,
        "a thread shares all");
  thread_go = 1;
  pthread_join(th, NULL);
  int hold_pipe[2];
  REQUIRE(pipe(hold_pipe) == 0);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    char c;
    close(hold_pipe[1]);
    read(hold_pipe[0], &c, 1);
    _exit(0);
  }
  CHECK(kcmp(me, child, KCMP_VM, 0, 0) > 0 && kcmp(me, child, KCMP_FILES, 0, 0) > 0 &&
            kcmp(me, child, KCMP_SIGHAND, 0, 0) > 0,
        "a fork child has its own");
  CHECK(kcmp(me, child, KCMP_FILE, fd, fd) == 0, "the same open file in both");
  long ab = kcmp(me, child, KCMP_VM, 0, 0), ba = kcmp(child, me, KCMP_VM, 0, 0);
  CHECK(ab + ba == 3, "the order turns round: %ld %ld", ab, ba);
  close(hold_pipe[1]);
  waitpid(child, NULL, 0);
  close(hold_pipe[0]);
  close(fd);
  close(dup_fd);
  close(other);
}

int main(int argc, char** argv) {
  guest_name = "process_vm";
  if (argc == 2 && strcmp(argv[1], "--hold") == 0) return hold(3, 4);
  test_self();
  read_child(0);
  read_child(1);
  test_permission();
  test_kcmp();
  return guest_finish();
}
