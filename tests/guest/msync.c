// msync on shared file mappings (the data reaches the file, the errnos are
// Linux's) and memory protection keys on a machine without them.
#include "guest_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PKEY_DISABLE_ACCESS
#define PKEY_DISABLE_ACCESS 0x1
#define PKEY_DISABLE_WRITE 0x2
#endif

static void check_msync(const char* dir) {
  printf("msync:\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/msync-file", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0, "open %s: %s", path, strerror(errno));
  long page = sysconf(_SC_PAGESIZE);
  REQUIRE(ftruncate(fd, 2 * page) == 0);
  char* m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(m != MAP_FAILED, "mmap: %s", strerror(errno));
  memcpy(m + 10, "through the mapping", 19);
  CHECK(msync(m, 2 * page, MS_SYNC) == 0, "MS_SYNC: %s", strerror(errno));
  char back[32] = "";
  CHECK(pread(fd, back, 19, 10) == 19 && memcmp(back, "through the mapping", 19) == 0);
  memcpy(m + page, "second page", 11);
  CHECK(msync(m + page, 1, MS_ASYNC) == 0, "MS_ASYNC: %s", strerror(errno));
  CHECK(msync(m, page, MS_INVALIDATE) == 0, "MS_INVALIDATE: %s", strerror(errno));
  CHECK(msync(m, 0, MS_SYNC) == 0);
  CHECK(pread(fd, back, 11, page) == 11 && memcmp(back, "second page", 11) == 0);
  // A reopened descriptor sees it too.
  int fd2 = open(path, O_RDONLY);
  CHECK(fd2 >= 0 && pread(fd2, back, 19, 10) == 19 && memcmp(back, "through the mapping", 19) == 0);
  close(fd2);

  CHECK_ERR(msync(m + 1, page, MS_SYNC), EINVAL);
  CHECK_ERR(msync(m, page, MS_SYNC | MS_ASYNC), EINVAL);
  CHECK_ERR(msync(m, page, 8), EINVAL);
  // Anonymous private memory is fine too; unmapped memory is ENOMEM.
  char* anon = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(anon != MAP_FAILED);
  CHECK(msync(anon, page, MS_SYNC) == 0);
  CHECK(munmap(anon + page, page) == 0);
  CHECK_ERR(msync(anon, 3 * page, MS_SYNC), ENOMEM);
  CHECK_ERR(msync(anon + page, page, MS_ASYNC), ENOMEM);
  munmap(anon, page);
  munmap(anon + 2 * page, page);
  CHECK(munmap(m, 2 * page) == 0);
  close(fd);
  unlink(path);
}

static void check_pkeys(void) {
  printf("protection keys (none on these machines):\n");
  CHECK_ERR(syscall(SYS_pkey_alloc, 1, 0), EINVAL);
  CHECK_ERR(syscall(SYS_pkey_alloc, 0, 4), EINVAL);
  // Without PKU, Linux's first pkey_alloc of a process fails setting the
  // key's rights (EINVAL) and leaves it taken; later ones find none (ENOSPC).
  long k = syscall(SYS_pkey_alloc, 0, PKEY_DISABLE_WRITE);
  if (k >= 0) {
    printf("  this CPU has protection keys: key %ld (skipping the rest)\n", k);
    syscall(SYS_pkey_free, k);
    return;
  }
  CHECK(errno == ENOSPC || errno == EINVAL, "pkey_alloc: %s", strerror(errno));
  CHECK_ERR(syscall(SYS_pkey_alloc, 0, 0), ENOSPC);
  CHECK_ERR(syscall(SYS_pkey_alloc, 0, PKEY_DISABLE_ACCESS), ENOSPC);
  CHECK_ERR(syscall(SYS_pkey_free, 1), EINVAL);
  long page = sysconf(_SC_PAGESIZE);
  char* m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  CHECK(syscall(SYS_pkey_mprotect, m, page, PROT_READ, -1) == 0, "%s", strerror(errno));
  CHECK_ERR(syscall(SYS_pkey_mprotect, m, page, PROT_READ, 1), EINVAL);
  CHECK_ERR(syscall(SYS_pkey_mprotect, m, page, PROT_READ, 0), EINVAL);
  munmap(m, page);
}

int main(int argc, char** argv) {
  guest_name = "msync";
  check_msync(argc > 1 ? argv[1] : ".");
  check_pkeys();
  return guest_finish();
}
