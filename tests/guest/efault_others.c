// A buffer is only as long as the caller's memory: a transfer running off
// the end of it stops there (a short read or write, as Linux's stops at
// the first fault), and memory that belongs to another process is not the
// caller's to name at all (EFAULT) -- under flatux it lies in the same
// address space, where a kernel checking only "is it mapped" would read
// or overwrite the other process for it.
//
// usage: efault_others                 (the checks)
//        efault_others child ADDR FD   (the other process: ADDR is ours)
#include "guest_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static char self_buf[4096];

// The other process: every call naming ADDR fails with EFAULT. Exits with
// the number of calls that did not.
static int child(uintptr_t addr, int fd) {
  int bad = 0;
  int zero = open("/dev/zero", O_RDONLY);
  int p[2];
  if (zero < 0 || pipe(p) != 0) return 100;
  errno = 0;
  if (read(zero, (void*)addr, 4096) != -1 || errno != EFAULT) bad++;                 // would overwrite
  if (write(p[1], (void*)addr, 4096) != -1 || errno != EFAULT) bad++;                // would read
  if (syscall(SYS_open, (const char*)addr, O_RDONLY) != -1 || errno != EFAULT) bad++;  // a path
  struct iovec iov = {(void*)addr, 64};
  if (readv(zero, &iov, 1) != -1 || errno != EFAULT) bad++;
  if (syscall(SYS_getrandom, (void*)addr, 16, 0) != -1 || errno != EFAULT) bad++;
  if (write(fd, "d", 1) != 1) return 101;
  return bad;
}

static void short_transfers(void) {
  printf("a buffer that runs off the caller's memory:\n");
  char* m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED, "mmap");
  REQUIRE(munmap(m + 2 * 4096, 4096) == 0, "munmap");
  int zero = open("/dev/zero", O_RDONLY);
  REQUIRE(zero >= 0, "open /dev/zero");
  memset(m, 'x', 2 * 4096);
  ssize_t n = read(zero, m + 4096, 3 * 4096);
  CHECK(n == 4096, "read of 3 pages into the last one: %zd (%s)", n, n < 0 ? strerror(errno) : "");
  CHECK(m[4095] == 'x' && m[4096] == 0 && m[8191] == 0, "what was read went where");
  printf("  read of 3 pages into the last page of a mapping -> %zd\n", n);

  char path[] = "/tmp/efault_others.XXXXXX";
  int f = mkstemp(path);
  REQUIRE(f >= 0, "mkstemp");
  unlink(path);
  n = write(f, m + 4096 + 100, 2 * 4096);
  CHECK(n == 4096 - 100, "write to a file of 2 pages from 100 bytes before the end: %zd", n);
  printf("  write to a file of 2 pages from 100 bytes before the end -> %zd\n", n);
  close(f);
  errno = 0;
  CHECK(read(zero, m + 2 * 4096, 16) == -1 && errno == EFAULT, "read into the unmapped page");
  struct iovec iov[2] = {{m, 16}, {m + 2 * 4096, 16}};
  n = readv(zero, iov, 2);
  CHECK(n == 16, "readv whose second buffer is unmapped: %zd", n);
  printf("  readv whose second buffer is unmapped                -> %zd\n", n);
  close(zero);
  munmap(m, 2 * 4096);
}

static void other_process(const char* self) {
  printf("another process's memory:\n");
  char* mine = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mine != MAP_FAILED, "mmap");
  memset(mine, 'm', 4096);
  strcpy(mine, "/etc/hostname");
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe");
  char addr[32], fd[16];
  snprintf(addr, sizeof addr, "%lu", (unsigned long)(uintptr_t)mine);
  snprintf(fd, sizeof fd, "%d", p[1]);
  char* const args[] = {(char*)self, "child", addr, fd, NULL};
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    execve(self, args, environ);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork");
  close(p[1]);
  char c;
  CHECK(read(p[0], &c, 1) == 1, "the child did not finish");
  int status;
  CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: %d calls did not fail with EFAULT (status %#x)",
        WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
  int intact = strcmp(mine, "/etc/hostname") == 0;
  for (int i = 14; i < 4096; i++) intact = intact && mine[i] == 'm';
  CHECK(intact, "our memory was changed by the other process's calls");
  printf("  read, write, open, readv, getrandom naming it: EFAULT; it is untouched\n");
  close(p[0]);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 4 && strcmp(argv[1], "child") == 0)
    return child((uintptr_t)strtoull(argv[2], NULL, 10), atoi(argv[3]));
  guest_name = "efault_others";
  const char* self = realpath(argv[0], self_buf) ? self_buf : argv[0];
  short_transfers();
  other_process(self);
  return guest_finish();
}
