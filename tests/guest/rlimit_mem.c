// RLIMIT_AS and RLIMIT_DATA are enforced as Linux's may_expand_vm does:
// mmap, mremap and brk that would pass them fail with ENOMEM; read-only
// and shared mappings count for RLIMIT_AS only; unmapping gives room back.
// Each limit is tried in a child process of its own.
#include "guest_check.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1024ul * 1024)

static void* map(size_t len, int prot, int flags) {
  void* p = mmap(NULL, len, prot, flags | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void set_limit(int which, rlim_t cur) {
  struct rlimit rl;
  REQUIRE(getrlimit(which, &rl) == 0, "getrlimit");
  rl.rlim_cur = cur;
  REQUIRE(setrlimit(which, &rl) == 0, "setrlimit: %s", strerror(errno));
}

static void address_space(void) {
  set_limit(RLIMIT_AS, 1024 * MiB);
  errno = 0;
  CHECK(map(2048 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE) == NULL && errno == ENOMEM,
        "2 GiB mapped under a 1 GiB RLIMIT_AS (errno %d)", errno);
  void* a = map(400 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  CHECK(a != NULL, "400 MiB: %s", strerror(errno));
  void* b = map(400 * MiB, PROT_NONE, MAP_PRIVATE);  // PROT_NONE counts too
  CHECK(b != NULL, "another 400 MiB: %s", strerror(errno));
  errno = 0;
  void* c = map(400 * MiB, PROT_READ, MAP_SHARED);
  CHECK(c == NULL && errno == ENOMEM, "1.2 GiB mapped under 1 GiB (errno %d)", errno);
  if (c) munmap(c, 400 * MiB);
  errno = 0;
  void* grown = mremap(a, 400 * MiB, 800 * MiB, MREMAP_MAYMOVE);
  CHECK(grown == MAP_FAILED && errno == ENOMEM, "mremap past RLIMIT_AS (errno %d)", errno);
  if (grown != MAP_FAILED) a = grown;
  CHECK(munmap(b, 400 * MiB) == 0, "munmap");
  c = map(400 * MiB, PROT_READ, MAP_SHARED);
  CHECK(c != NULL, "400 MiB after an unmap: %s", strerror(errno));
  errno = 0;
  void* brk0 = sbrk(0);
  CHECK(sbrk(600 * MiB) == (void*)-1, "sbrk past RLIMIT_AS grew the heap");
  CHECK(sbrk(0) == brk0, "the break moved");
}

static void data(void) {
  set_limit(RLIMIT_DATA, 64 * MiB);
  errno = 0;
  CHECK(map(128 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE) == NULL && errno == ENOMEM,
        "128 MiB private writable under a 64 MiB RLIMIT_DATA (errno %d)", errno);
  void* ro = map(128 * MiB, PROT_READ, MAP_PRIVATE);
  CHECK(ro != NULL, "read-only memory is not data: %s", strerror(errno));
  void* sh = map(128 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED);
  CHECK(sh != NULL, "shared memory is not data: %s", strerror(errno));
  void* small = map(16 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  CHECK(small != NULL, "16 MiB of data: %s", strerror(errno));
  void* brk0 = sbrk(0);
  CHECK(sbrk(100 * MiB) == (void*)-1, "sbrk past RLIMIT_DATA grew the heap");
  CHECK(sbrk(0) == brk0, "the break moved");
}

static void in_child(void (*fn)(void), const char* what) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    fn();
    fflush(stdout);
    _exit(guest_failures ? 1 : 0);
  }
  REQUIRE(pid > 0, "fork: %s", strerror(errno));
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %#x", what, status);
  printf("%s: %s\n", what, WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "enforced" : "FAILED");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "rlimit_mem";
  in_child(address_space, "RLIMIT_AS");
  in_child(data, "RLIMIT_DATA");
  return guest_finish();
}
