// Memory a memfd or a pipe makes the kernel hold.
//
// With no argument (natively and under flatux): a memfd's size is free
// until pages are written (ftruncate to 1 TiB is a hole), its pages come
// and go with writes, fallocate and truncation; a pipe holds 64 KiB by
// default and F_SETPIPE_SZ resizes it; a reopened /proc/self/fd link is
// the same memfd.
//
// "limited" (under `flatux run --mem=64M` only: natively the machine's
// memory is the limit): a memfd cannot grow past mem= (write, fallocate:
// ENOSPC, as a full tmpfs; rewriting its pages still works), pipes cannot
// hold more than mem= (F_SETPIPE_SZ: EPERM; new pipes shrink to 8 KiB,
// then pipe() fails with ENFILE, as past Linux's pipe-user-pages limits),
// absurd sizes (memfd and tmpfs) are refused at once or stay holes, a
// mapping keeps a closed memfd's pages charged, and everything is given
// back when closed: a second round gets as far as the first, and after a
// few hundred rounds sysinfo's free memory is where it started.
#include "guest_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <unistd.h>

#define KiB 1024l
#define MiB (1024l * 1024)

static char chunk[MiB];

static int new_memfd(const char* name) {
  int fd = (int)syscall(SYS_memfd_create, name, 0);
  REQUIRE(fd >= 0, "memfd_create: %s", strerror(errno));
  return fd;
}

static long blocks_bytes(int fd) {
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0, "fstat: %s", strerror(errno));
  return (long)st.st_blocks * 512;
}

static void sizes_are_free(void) {
  int fd = new_memfd("sparse");
  CHECK_OK(ftruncate(fd, 1l << 40));
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_size == 1l << 40, "size %ld", (long)st.st_size);
  CHECK(blocks_bytes(fd) == 0, "a 1 TiB hole holds %ld bytes", blocks_bytes(fd));
  memset(chunk, 'm', sizeof chunk);
  CHECK(pwrite(fd, chunk, MiB, 4 * MiB) == MiB, "pwrite: %s", strerror(errno));
  CHECK(blocks_bytes(fd) == MiB, "1 MiB written, %ld held", blocks_bytes(fd));
  CHECK_OK(fallocate(fd, 0, 8 * MiB, 2 * MiB));
  CHECK(blocks_bytes(fd) == 3 * MiB, "after fallocate: %ld held", blocks_bytes(fd));
  CHECK_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8 * MiB, MiB));
  CHECK(blocks_bytes(fd) == 2 * MiB, "after a punched hole: %ld held", blocks_bytes(fd));
  CHECK_OK(ftruncate(fd, 5 * MiB));
  CHECK(blocks_bytes(fd) == MiB, "after truncation: %ld held", blocks_bytes(fd));
  // The magic link reopens the same memfd.
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int again = open(path, O_RDWR);
  CHECK(again >= 0, "reopen: %s", strerror(errno));
  if (again >= 0) {
    CHECK(pwrite(again, "reopened", 8, 0) == 8, "pwrite through the reopened link: %s", strerror(errno));
    char got[9] = "";
    CHECK(pread(fd, got, 8, 0) == 8 && memcmp(got, "reopened", 8) == 0, "read back %s", got);
    close(again);
  }
  close(fd);
  printf("memfd: a 1 TiB size holds nothing; pages follow writes, fallocate and truncation\n");
}

static void pipe_sizes(void) {
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe: %s", strerror(errno));
  CHECK(fcntl(p[0], F_GETPIPE_SZ) == 64 * KiB, "default capacity %d", fcntl(p[0], F_GETPIPE_SZ));
  CHECK(fcntl(p[1], F_SETPIPE_SZ, MiB) == MiB, "F_SETPIPE_SZ 1 MiB: %s", strerror(errno));
  CHECK(fcntl(p[0], F_GETPIPE_SZ) == MiB, "capacity after growth %d", fcntl(p[0], F_GETPIPE_SZ));
  CHECK(fcntl(p[1], F_SETPIPE_SZ, 4096) == 4096, "F_SETPIPE_SZ 4 KiB: %s", strerror(errno));
  close(p[0]);
  close(p[1]);
  printf("pipe: 64 KiB by default, resized by F_SETPIPE_SZ\n");
}

// ---- under flatux run --mem=64M ----

static long free_bytes(void) {
  struct sysinfo si;
  REQUIRE(sysinfo(&si) == 0, "sysinfo: %s", strerror(errno));
  return (long)si.freeram * (long)(si.mem_unit ? si.mem_unit : 1);
}

// Writes 1 MiB at a time until a write fails; how much went in.
static long fill_memfd(int fd, int* err) {
  long total = 0;
  for (;;) {
    ssize_t r = write(fd, chunk, MiB);
    if (r < 0) {
      *err = errno;
      return total;
    }
    total += r;
    REQUIRE(total < 4096 * MiB, "a memfd took 4 GiB under a 64 MiB limit");
  }
}

static long memfd_round(int round) {
  int fd = new_memfd("hog");
  int err = 0;
  long got = fill_memfd(fd, &err);
  CHECK(err == ENOSPC, "round %d: the write past the limit failed with %s, want ENOSPC", round, strerror(err));
  CHECK(got < 64 * MiB && got > 8 * MiB, "round %d: the memfd took %ld MiB under 64 MiB", round, got / MiB);
  CHECK(blocks_bytes(fd) <= got + 4 * KiB, "round %d: it holds %ld bytes, %ld written", round, blocks_bytes(fd), got);
  CHECK_ERR(fallocate(fd, 0, 0, 1024 * MiB), ENOSPC);
  CHECK_ERR(fallocate(fd, 0, 0, 1l << 50), ENOSPC);
  // A size is a hole, and pages it already has can be written again.
  CHECK_OK(ftruncate(fd, 1l << 50));
  CHECK(pwrite(fd, chunk, 4096, 0) == 4096, "rewriting a page at the limit: %s", strerror(errno));
  struct iovec iov[2] = {{chunk, 4096}, {chunk, 4096}};
  CHECK(pwritev(fd, iov, 2, 4096) == 8192, "rewriting two pages with pwritev: %s", strerror(errno));
  CHECK_ERR(pwrite(fd, chunk, 4096, 1l << 40), ENOSPC);
  struct iovec eight[8];
  for (int i = 0; i < 8; i++) eight[i] = (struct iovec){chunk, MiB};
  CHECK(pwritev(fd, eight, 8, 0) == 8 * MiB, "rewriting 8 MiB at the limit: %s", strerror(errno));
  CHECK(blocks_bytes(fd) <= got + 4 * KiB, "round %d: rewritten, it holds %ld bytes", round, blocks_bytes(fd));
  CHECK_OK(ftruncate(fd, 0));
  CHECK(blocks_bytes(fd) == 0, "truncated, it holds %ld", blocks_bytes(fd));
  close(fd);
  return got;
}

static int host_refused;

// Pipes of 1 MiB until F_SETPIPE_SZ fails, then default pipes until pipe()
// does; every pipe is filled. Returns the bytes held; *count the pipes.
static long pipe_round(int round, int fds[][2], int max, int* count) {
  long held = 0;
  int n = 0, grow_err = 0, pipe_err = 0;
  for (; n < max; n++) {
    if (pipe2(fds[n], O_NONBLOCK) != 0) {
      pipe_err = errno;
      break;
    }
    if (!grow_err && fcntl(fds[n][1], F_SETPIPE_SZ, MiB) < 0) {
      grow_err = errno;
      // The host's own pipe-user-pages-soft (all of its user's pipes, other
      // programs' too) may refuse first: then this round proves nothing.
      if (free_bytes() > 2 * MiB) host_refused = 1;
    }
    for (;;) {
      ssize_t r = write(fds[n][1], chunk, MiB);
      if (r <= 0) break;
      held += r;
    }
  }
  *count = n;
  for (int i = 0; i < n; i++) {
    close(fds[i][0]);
    close(fds[i][1]);
  }
  if (host_refused) return held;
  CHECK(grow_err == EPERM, "round %d: F_SETPIPE_SZ past the limit: %s, want EPERM", round, strerror(grow_err));
  CHECK(pipe_err == ENFILE, "round %d: pipe() past the limit: %s, want ENFILE (%d pipes)", round,
        strerror(pipe_err), n);
  CHECK(held < 64 * MiB, "round %d: %d pipes held %ld MiB under 64 MiB", round, n, held / MiB);
  return held;
}

// A closed memfd's pages stay charged while a mapping shows them.
static void mapping_keeps_charge(long start) {
  int fd = new_memfd("mapped");
  for (int i = 0; i < 24; i++) REQUIRE(write(fd, chunk, MiB) == MiB, "write: %s", strerror(errno));
  void* p = mmap(NULL, 24 * MiB, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
  close(fd);
  long mapped = free_bytes();
  CHECK(start - mapped >= 24 * MiB, "mapped and closed, the memfd holds only %ld KiB", (start - mapped) / KiB);
  int other = new_memfd("other");
  int err = 0;
  long got = fill_memfd(other, &err);
  close(other);
  CHECK(munmap(p, 24 * MiB) == 0, "munmap");
  long after = free_bytes();
  CHECK(start - after < 256 * KiB && after - start < 256 * KiB, "unmapped: %ld KiB free, %ld before", after / KiB,
        start / KiB);
  printf("a read-only mapping of a closed 24 MiB memfd: %ld MiB free for another memfd, %ld MiB after munmap\n",
         got / MiB, after / MiB);
}

// Pages written through a shared mapping stay charged once it is gone:
// a second memfd cannot do the same again.
static void mapped_writes_stay_charged(long start) {
  int fds[2];
  long dirtied[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    fds[i] = new_memfd("dirty");
    CHECK_OK(ftruncate(fds[i], 36 * MiB));
    char* p = mmap(NULL, 36 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
    if (p == MAP_FAILED) {
      CHECK(i == 1 && errno == ENOMEM, "mapping memfd %d: %s", i, strerror(errno));
      continue;
    }
    memset(p, 'd', 36 * MiB);
    dirtied[i] = 36 * MiB;
    CHECK(munmap(p, 36 * MiB) == 0, "munmap");
    CHECK(start - free_bytes() >= 36 * MiB, "unmapped, the memfd's 36 MiB are charged as %ld KiB",
          (start - free_bytes()) / KiB);
  }
  CHECK(dirtied[1] == 0, "a second 36 MiB memfd was written through a mapping under 64 MiB");
  close(fds[0]);
  close(fds[1]);
  long after = free_bytes();
  CHECK(start - after < 256 * KiB && after - start < 256 * KiB, "closed: %ld KiB free, %ld before", after / KiB,
        start / KiB);
  printf("36 MiB written through a mapping of a memfd stay charged after munmap; a second one is refused\n");
}

// A memfd passed over a socket is charged again in its new holder's hands.
static void passed_keeps_charge(long start) {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
  int fd = new_memfd("passed");
  for (int i = 0; i < 16; i++) REQUIRE(write(fd, chunk, MiB) == MiB, "write: %s", strerror(errno));
  char c = 'x', ctl[CMSG_SPACE(sizeof(int))];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {&c, 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr* cm = CMSG_FIRSTHDR(&m);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &fd, sizeof fd);
  REQUIRE(sendmsg(sv[0], &m, 0) == 1, "sendmsg: %s", strerror(errno));
  close(fd);
  memset(ctl, 0, sizeof ctl);
  REQUIRE(recvmsg(sv[1], &m, 0) == 1, "recvmsg: %s", strerror(errno));
  cm = CMSG_FIRSTHDR(&m);
  REQUIRE(cm && cm->cmsg_type == SCM_RIGHTS, "no descriptor received");
  memcpy(&fd, CMSG_DATA(cm), sizeof fd);
  CHECK(start - free_bytes() >= 16 * MiB, "received, the memfd holds only %ld KiB", (start - free_bytes()) / KiB);
  int err = 0;
  long more = fill_memfd(fd, &err);
  CHECK(err == ENOSPC && more < 48 * MiB, "the received memfd grew by %ld MiB (%s)", more / MiB, strerror(err));
  close(fd);
  close(sv[0]);
  close(sv[1]);
  long after = free_bytes();
  CHECK(start - after < 256 * KiB && after - start < 256 * KiB, "closed: %ld KiB free, %ld before", after / KiB,
        start / KiB);
  printf("a memfd passed over a socket: charged when received, given back when closed\n");
}

// Absurd sizes are refused or made holes at once: no walk over them.
static void absurd_sizes(void) {
  int m = new_memfd("absurd");
  CHECK_OK(ftruncate(m, 0x7fffffffffffffffl));
  CHECK_ERR(fallocate(m, 0, 0, 1l << 62), ENOSPC);
  CHECK_OK(ftruncate(m, 0));
  close(m);
  // A tmpfs of its own over /tmp, in this guest's view only.
  REQUIRE(mount("none", "/tmp", "tmpfs", 0, "size=100g") == 0, "mount: %s", strerror(errno));
  int t = open("/tmp/absurd", O_RDWR | O_CREAT, 0600);
  REQUIRE(t >= 0, "open: %s", strerror(errno));
  CHECK_OK(ftruncate(t, 0x7fffffffffffffffl));
  CHECK_OK(ftruncate(t, 1l << 62));
  CHECK_ERR(fallocate(t, 0, 0, 1l << 62), ENOSPC);  // past size=
  CHECK_ERR(fallocate(t, 0, 0, 1l << 40), ENOSPC);
  CHECK_ERR(fallocate(t, 0, 0, 200 * MiB), ENOMEM);  // past mem=
  CHECK(pwrite(t, "x", 1, 1l << 61) == 1, "pwrite far out: %s", strerror(errno));
  CHECK_OK(ftruncate(t, 0));
  close(t);
  // A named pipe's buffer is charged while it is open.
  CHECK_OK(mkfifo("/tmp/fifo", 0600));
  long before = free_bytes();
  int ff = open("/tmp/fifo", O_RDWR | O_NONBLOCK);
  CHECK(ff >= 0, "open the fifo: %s", strerror(errno));
  if (ff >= 0) {
    fcntl(ff, F_SETPIPE_SZ, MiB);  // the host may refuse (see pipe_round)
    long cap = fcntl(ff, F_GETPIPE_SZ), during = free_bytes();
    CHECK(before - during >= cap, "an open fifo of %ld KiB: %ld KiB charged", cap / KiB, (before - during) / KiB);
    close(ff);
  }
  long after = free_bytes();
  CHECK(before - after < 64 * KiB && after - before < 64 * KiB, "the fifo closed: %ld KiB free, %ld before",
        after / KiB, before / KiB);
  CHECK_OK(unlink("/tmp/fifo"));
  CHECK_OK(umount("/tmp"));
  printf("absurd sizes: memfd and tmpfs refuse them or keep holes; a fifo's buffer is charged while open\n");
}

static int pipe_fds[400][2];

static void limited(void) {
  memset(chunk, 'x', sizeof chunk);
  printf("under mem=:\n");  // stdout's buffer is allocated before the first measure
  long start = free_bytes();
  printf("free: %ld KiB\n", start / KiB);
  long m1 = memfd_round(1);
  long after1 = free_bytes();
  long m2 = memfd_round(2);
  printf("memfd: %ld KiB, then %ld KiB before ENOSPC; free %ld -> %ld KiB\n", m1 / KiB, m2 / KiB, start / KiB,
         after1 / KiB);
  CHECK(m2 >= m1 - MiB && m2 <= m1 + MiB, "the second memfd took %ld KiB, the first %ld", m2 / KiB, m1 / KiB);
  CHECK(start - after1 < 256 * KiB && after1 - start < 256 * KiB, "closed: %ld KiB free, %ld before",
        after1 / KiB, start / KiB);

  int n1 = 0, n2 = 0;
  long p1 = pipe_round(1, pipe_fds, 400, &n1);
  long after2 = free_bytes();
  long p2 = pipe_round(2, pipe_fds, 400, &n2);
  printf("pipes: %d holding %ld KiB, then %d holding %ld KiB; free %ld -> %ld KiB\n", n1, p1 / KiB, n2, p2 / KiB,
         start / KiB, after2 / KiB);
  if (host_refused)
    printf("SKIP pipe limits: the host refused a 1 MiB pipe before mem= did (its pipe-user-pages-soft)\n");
  else
    CHECK(n2 >= n1 - 1 && n2 <= n1 + 1 && p2 >= p1 - MiB && p2 <= p1 + MiB, "the second round: %d pipes, the first %d",
          n2, n1);
  CHECK(start - after2 < 256 * KiB && after2 - start < 256 * KiB, "closed: %ld KiB free, %ld before",
        after2 / KiB, start / KiB);

  absurd_sizes();
  mapping_keeps_charge(start);
  mapped_writes_stay_charged(start);
  passed_keeps_charge(start);

  // Many small rounds: nothing stays charged.
  for (int i = 0; i < 300; i++) {
    int fd = new_memfd("soak");
    REQUIRE(pwrite(fd, chunk, MiB, (off_t)i * MiB) == MiB, "soak pwrite: %s", strerror(errno));
    int p[2];
    REQUIRE(pipe(p) == 0, "soak pipe: %s", strerror(errno));
    fcntl(p[1], F_SETPIPE_SZ, MiB);  // the host may refuse (see pipe_round)
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
    int again = open(path, O_RDONLY | O_NONBLOCK);
    REQUIRE(again >= 0, "soak reopen: %s", strerror(errno));
    close(p[0]);
    close(p[1]);
    close(again);
    close(fd);
  }
  long end = free_bytes();
  printf("300 rounds of memfd, pipe and reopened pipe: free %ld -> %ld KiB\n", start / KiB, end / KiB);
  CHECK(start - end < 256 * KiB && end - start < 256 * KiB, "after the rounds: %ld KiB free, %ld before", end / KiB,
        start / KiB);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "mem_charge";
  if (argc > 1 && strcmp(argv[1], "limited") == 0) limited();
  else {
    sizes_are_free();
    pipe_sizes();
  }
  return guest_finish();
}
