// execve of an ET_EXEC program whose link address range is already taken
// in the caller's memory: it still runs (under flatux, in a fresh host
// process), from vfork, posix_spawn-style vfork from a thread-free parent,
// fork, and a plain exec, and the exit status comes back.
//
// usage: exec_busy HELPER   (HELPER: a non-PIE program linked at 0x400000
//                            that prints "etexec ARG" and exits 23)
#include "guest_check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static const char* helper;

// Runs `how` and checks what the helper wrote to the pipe and its status.
static void run_helper(const char* how) {
  printf("%s:\n", how);
  int p[2];
  REQUIRE(pipe(p) == 0);
  pid_t pid = strcmp(how, "vfork") == 0 ? vfork() : fork();
  REQUIRE(pid >= 0, "%s: %s", how, strerror(errno));
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    execl(helper, helper, how, (char*)NULL);
    _exit(99);
  }
  close(p[1]);
  char buf[64] = "";
  ssize_t n = 0, got;
  while ((got = read(p[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0) n += got;
  close(p[0]);
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 23, "%s: status %#x", how, st);
  char want[64];
  snprintf(want, sizeof want, "etexec %s\n", how);
  CHECK(strcmp(buf, want) == 0, "%s: output '%s'", how, buf);
}

int main(int argc, char** argv) {
  guest_name = "exec_busy";
  setvbuf(stdout, NULL, _IONBF, 0);
  REQUIRE(argc == 2, "usage: exec_busy HELPER");
  helper = argv[1];
  // Take the helper's link address range (it is free in a PIE program).
  size_t len = 4 << 20;
  void* at = mmap((void*)0x400000, len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  REQUIRE(at == (void*)0x400000, "mmap at 0x400000: %p %s", at, strerror(errno));
  memset(at, 0x5a, len);
  run_helper("vfork");
  run_helper("fork");
  // Our own memory there is untouched.
  CHECK(((unsigned char*)at)[0] == 0x5a && ((unsigned char*)at)[len - 1] == 0x5a);
  // A forked child that then execs twice: helper from a process whose
  // range is free runs in place; the second exec replaces an ET_EXEC image
  // at the same address.
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    munmap(at, len);
    execl(helper, helper, "plain", (char*)NULL);
    _exit(99);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 23, "plain: %#x", st);
  return guest_finish();
}
