// mmap, munmap, mprotect, mremap, madvise and brk.
//
// usage: memory FILE   (FILE = a fixture file holding NUMBERS below)
#include "guest_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NUMBERS "0123456789abcdefghijklmnopqrstuvwxyz\n"
#define PAGE 4096UL

#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif
#ifndef MADV_DONTNEED
#define MADV_DONTNEED 4
#endif

static int all_bytes(const unsigned char* p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

// Probes through the kernel, which reports an inaccessible range as
// EFAULT where touching it here would crash the program. A pipe, because
// writing to /dev/null never looks at the buffer.
static int probe[2] = {-1, -1};
static long kernel_reads(const void* p, size_t n) {
  long r = syscall(SYS_write, probe[1], p, n);
  int saved = errno;
  char sink[4096];
  while (read(probe[0], sink, sizeof sink) > 0) {
  }
  errno = saved;
  return r;
}
static long kernel_writes(int fd, void* p, size_t n, off_t off) {
  return syscall(SYS_pread64, fd, p, n, off);
}

static void anonymous(int fd) {
  printf("anonymous mappings:\n");
  size_t len = 4 * PAGE;
  unsigned char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED, "mmap anonymous: %s", strerror(errno));
  CHECK(((uintptr_t)p & (PAGE - 1)) == 0, "mmap returned unaligned %p", (void*)p);
  CHECK(all_bytes(p, len, 0), "fresh anonymous memory is not zero");
  memset(p, 0x5a, len);
  CHECK(all_bytes(p, len, 0x5a), "anonymous memory did not keep what was written");
  printf("  mmap 4 pages: zero-filled, writable\n");

  // Length 0 and unaligned addresses are refused.
  CHECK_ERR(mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0,
            EINVAL);
  CHECK_ERR(munmap(p + 1, PAGE), EINVAL);

  // mprotect: read-only memory can still be read, the kernel cannot write
  // into it; PROT_NONE cannot be read either.
  CHECK_OK(mprotect(p, PAGE, PROT_READ));
  CHECK(p[0] == 0x5a, "read-only page lost its contents");
  CHECK(kernel_reads(p, PAGE) == (long)PAGE, "kernel cannot read a PROT_READ page");
  CHECK_ERR(kernel_writes(fd, p, 8, 0), EFAULT);
  CHECK_OK(mprotect(p, PAGE, PROT_NONE));
  CHECK_ERR(kernel_reads(p, 16), EFAULT);
  CHECK_OK(mprotect(p, PAGE, PROT_READ | PROT_WRITE));
  p[0] = 1;
  p[PAGE - 1] = 2;
  CHECK(p[0] == 1 && p[PAGE - 1] == 2 && p[1] == 0x5a, "page made writable again");
  CHECK(kernel_writes(fd, p, 8, 0) == 8 && memcmp(p, "01234567", 8) == 0,
        "kernel cannot write into a page made writable again");
  printf("  mprotect READ / NONE / READ|WRITE ok\n");

  // munmap in the middle splits the mapping.
  CHECK_OK(munmap(p + PAGE, PAGE));
  CHECK_ERR(kernel_reads(p + PAGE, 16), EFAULT);
  CHECK(kernel_reads(p + 2 * PAGE, 16) == 16, "page after the hole is gone");
  CHECK(p[2 * PAGE] == 0x5a && p[len - 1] == 0x5a, "pages after the hole lost their contents");
  CHECK_OK(munmap(p, len));  // unmapping a range with a hole is fine
  CHECK_ERR(kernel_reads(p, 16), EFAULT);
  CHECK_ERR(kernel_reads(p + 3 * PAGE, 16), EFAULT);
  printf("  munmap ok\n");
}

static void remap(void) {
  printf("mremap:\n");
  size_t len = 2 * PAGE, big = 64 * PAGE;
  // The page after the mapping, made PROT_NONE, fences it in so it
  // cannot grow in place.
  unsigned char* p = mmap(NULL, len + PAGE, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
  for (size_t i = 0; i < len; i++) p[i] = (unsigned char)(i * 7);
  unsigned char* fence = p + len;
  CHECK_OK(mprotect(fence, PAGE, PROT_NONE));
  CHECK_ERR(mremap(p, len, big, 0) == MAP_FAILED ? -1 : 0, ENOMEM);
  unsigned char* q = mremap(p, len, big, MREMAP_MAYMOVE);
  REQUIRE(q != MAP_FAILED, "mremap grow: %s", strerror(errno));
  printf("  grown from %p to %p\n", (void*)p, (void*)q);
  int same = 1;
  for (size_t i = 0; i < len; i++) same &= q[i] == (unsigned char)(i * 7);
  CHECK(same, "mremap lost the contents");
  CHECK(all_bytes(q + len, big - len, 0), "grown part is not zero");
  memset(q + len, 0x33, big - len);
  unsigned char* r = mremap(q, big, PAGE, 0);
  CHECK(r == q, "mremap shrink moved or failed: %s", strerror(errno));
  CHECK(q[1] == 7, "shrinking lost the contents");
  CHECK_ERR(kernel_reads(q + PAGE, 16), EFAULT);
  CHECK_OK(munmap(q, PAGE));
  CHECK_OK(munmap(fence, PAGE));
  printf("  mremap MAYMOVE grow keeps contents, shrink ok\n");
}

static void program_break(void) {
  printf("brk:\n");
  // Nothing between the raw calls below may allocate: malloc may move the
  // break too.
  uintptr_t start = (uintptr_t)syscall(SYS_brk, 0);
  uintptr_t grown_to = start + (1UL << 20);
  uintptr_t got = (uintptr_t)syscall(SYS_brk, grown_to);
  uintptr_t queried = (uintptr_t)syscall(SYS_brk, 0);
  int zero = 0, kept = 0;
  if (got == grown_to) {
    unsigned char* b = (unsigned char*)start;
    zero = all_bytes(b, 1UL << 20, 0);
    memset(b, 0xc3, 1UL << 20);
    kept = all_bytes(b, 1UL << 20, 0xc3);
  }
  uintptr_t shrunk = (uintptr_t)syscall(SYS_brk, start + PAGE);
  uintptr_t after_shrink = (uintptr_t)syscall(SYS_brk, 0);
  long beyond = kernel_reads((void*)(start + 2 * PAGE), 16);
  int beyond_errno = errno;
  uintptr_t restored = (uintptr_t)syscall(SYS_brk, start);
  // A break below its start is refused by returning the current one.
  uintptr_t below = (uintptr_t)syscall(SYS_brk, start - (16UL << 20));

  printf("  start 0x%lx\n", (unsigned long)start);
  CHECK(start != 0, "brk(0) returned 0");
  CHECK(got == grown_to, "brk(start+1MiB)=0x%lx, want 0x%lx", (unsigned long)got,
        (unsigned long)grown_to);
  CHECK(queried == grown_to, "brk(0) after growing=0x%lx", (unsigned long)queried);
  CHECK(zero, "new break memory is not zero");
  CHECK(kept, "break memory did not keep what was written");
  CHECK(shrunk == start + PAGE && after_shrink == start + PAGE, "shrinking: 0x%lx then 0x%lx",
        (unsigned long)shrunk, (unsigned long)after_shrink);
  CHECK(beyond == -1 && beyond_errno == EFAULT,
        "memory above the shrunk break is still there (%ld, %s)", beyond, strerror(beyond_errno));
  CHECK(restored == start, "brk(start)=0x%lx", (unsigned long)restored);
  CHECK(below == start, "brk(below start)=0x%lx, want the current 0x%lx", (unsigned long)below,
        (unsigned long)start);
  printf("  grow by 1 MiB, write, shrink ok\n");
}

static void file_mapping(int fd) {
  printf("file mappings:\n");
  size_t flen = strlen(NUMBERS);
  char* p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  REQUIRE(p != MAP_FAILED, "mmap file: %s", strerror(errno));
  CHECK(memcmp(p, NUMBERS, flen) == 0, "mapping shows \"%.37s\"", p);
  CHECK(all_bytes((unsigned char*)p + flen, PAGE - flen, 0), "tail of the last page is not zero");
  // A private mapping's writes stay private.
  p[0] = 'X';
  char b[8];
  CHECK(pread(fd, b, 1, 0) == 1 && b[0] == '0', "private write reached the file");
  CHECK(p[0] == 'X', "private write lost");
  CHECK_OK(munmap(p, 2 * PAGE));

  // Mapped read-only and at an offset of the file's page 0 again.
  p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(p != MAP_FAILED && memcmp(p, NUMBERS, flen) == 0, "shared read-only mapping");
  if (p != MAP_FAILED) munmap(p, PAGE);
  CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 100) == MAP_FAILED ? -1 : 0, EINVAL);
  CHECK_ERR(mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED ? -1 : 0,
            EACCES);
  CHECK_ERR(mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, -1, 0) == MAP_FAILED ? -1 : 0, EBADF);
  printf("  MAP_PRIVATE file mapping shows the file, keeps writes private\n");
}

static void dontneed(void) {
  printf("madvise:\n");
  unsigned char* p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
  REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
  memset(p, 0xee, 3 * PAGE);
  CHECK_OK(madvise(p + PAGE, PAGE, MADV_DONTNEED));
  CHECK(all_bytes(p + PAGE, PAGE, 0), "MADV_DONTNEED page is not zero");
  CHECK(all_bytes(p, PAGE, 0xee) && all_bytes(p + 2 * PAGE, PAGE, 0xee),
        "MADV_DONTNEED touched neighbouring pages");
  p[PAGE] = 1;
  CHECK(p[PAGE] == 1, "page not usable after MADV_DONTNEED");
  CHECK_OK(munmap(p, 3 * PAGE));
  printf("  MADV_DONTNEED zeroes anonymous private memory\n");
}

static void fixed(int fd) {
  printf("MAP_FIXED:\n");
  unsigned char* p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
  REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
  memset(p, 0xaa, 4 * PAGE);
  unsigned char* q = mmap(p + PAGE, PAGE, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  CHECK(q == p + PAGE, "MAP_FIXED returned %p, want %p", (void*)q, (void*)(p + PAGE));
  CHECK(all_bytes(p + PAGE, PAGE, 0), "MAP_FIXED page still holds the old contents");
  CHECK(all_bytes(p, PAGE, 0xaa) && all_bytes(p + 2 * PAGE, 2 * PAGE, 0xaa),
        "MAP_FIXED disturbed the pages around it");
  // A file over the last page.
  q = mmap(p + 3 * PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  CHECK(q == p + 3 * PAGE && memcmp(q, NUMBERS, strlen(NUMBERS)) == 0,
        "MAP_FIXED file mapping over anonymous memory");
  CHECK(all_bytes(p + 2 * PAGE, PAGE, 0xaa), "file MAP_FIXED disturbed the page before");
  CHECK_ERR(mmap(p + 1, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
                    MAP_FAILED ? -1 : 0,
            EINVAL);
  CHECK_OK(munmap(p, 4 * PAGE));
  printf("  MAP_FIXED replaces part of an existing mapping\n");
}

static void large(void) {
  printf("large mapping:\n");
  size_t len = 256UL << 20;
  unsigned char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED, "mmap 256 MiB: %s", strerror(errno));
  for (size_t off = 0; off < len; off += 1UL << 20) p[off] = (unsigned char)(off >> 20);
  int ok = 1;
  for (size_t off = 0; off < len; off += 1UL << 20) ok &= p[off] == (unsigned char)(off >> 20);
  CHECK(ok, "256 MiB mapping did not keep sparse writes");
  CHECK(p[len - 1] == 0, "end of 256 MiB mapping not zero");
  CHECK_OK(munmap(p, len));
  printf("  256 MiB touched sparsely ok\n");
}

int main(int argc, char** argv) {
  guest_name = "memory";
  REQUIRE(argc == 2, "usage: memory FILE");
  REQUIRE(pipe2(probe, O_NONBLOCK | O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0, "open %s: %s", argv[1], strerror(errno));
  char b[64];
  REQUIRE(pread(fd, b, sizeof b, 0) == (ssize_t)strlen(NUMBERS) &&
              memcmp(b, NUMBERS, strlen(NUMBERS)) == 0,
          "%s does not hold the expected fixture contents", argv[1]);

  anonymous(fd);
  remap();
  program_break();
  file_mapping(fd);
  dontneed();
  fixed(fd);
  large();
  close(fd);
  return guest_finish();
}
