// Run as init with mem=64m: allocating 200 MiB must fail with ENOMEM (mmap,
// brk, malloc) while small allocations keep working; then the machine
// powers off, so flatux exits 0 only if every check held.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;
#define CHECK(c)                                         \
  do {                                                   \
    if (!(c)) {                                          \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                        \
    }                                                    \
  } while (0)

int main(void) {
  size_t big = 200u << 20;
  errno = 0;
  void* p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(p == MAP_FAILED && errno == ENOMEM);
  // Reserving is free; making it writable is what counts.
  void* r = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(r != MAP_FAILED);
  errno = 0;
  CHECK(r != MAP_FAILED && mprotect(r, big, PROT_READ | PROT_WRITE) == -1 && errno == ENOMEM);
  if (r != MAP_FAILED) munmap(r, big);
  uintptr_t cur = (uintptr_t)syscall(SYS_brk, 0);
  CHECK((uintptr_t)syscall(SYS_brk, cur + big) == cur);  // refused: brk stays
  CHECK(malloc(big) == NULL);
  // Ten chunks of 4 MiB fit in 64 MiB next to init's own memory...
  void* chunks[10];
  for (int i = 0; i < 10; i++) {
    chunks[i] = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(chunks[i] != MAP_FAILED);
    if (chunks[i] != MAP_FAILED) memset(chunks[i], 0x5a, 4u << 20);
  }
  // ...and once they are given back, the same memory can be had again.
  for (int i = 0; i < 10; i++)
    if (chunks[i] != MAP_FAILED) munmap(chunks[i], 4u << 20);
  p = mmap(NULL, 40u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(p != MAP_FAILED);
  FILE* f = fopen("/proc/meminfo", "r");
  char line[128] = "";
  CHECK(f && fgets(line, sizeof line, f) && strstr(line, "65536 kB"));
  if (f) fclose(f);
  printf("mem_hog: %d failure(s)\n", failures);
  fflush(stdout);
  if (failures) return 1;  // init exits: the kernel panics, flatux fails
  syscall(SYS_reboot, 0xfee1deadu, 672274793u, 0x4321fedcu, 0);
  return 2;
}
