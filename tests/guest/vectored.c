// readv/writev/preadv/pwritev/preadv2/pwritev2: a vectored write to a
// datagram or seqpacket socket is one message and a vectored read takes one
// message apart; a vectored pipe write arrives whole; the positioned forms
// leave the file position alone (or use it, with offset -1 in the *v2
// forms); and the argument checks of Linux's import_iovec.
#include "guest_check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x2
#endif

static struct iovec three[3] = {{"ab", 2}, {"cde", 3}, {"f", 1}};

static void sockets(int type, const char* what) {
  int s[2];
  REQUIRE(socketpair(AF_UNIX, type, 0, s) == 0, "socketpair %s", what);
  CHECK(writev(s[0], three, 3) == 6, "%s writev", what);
  CHECK(writev(s[0], three, 3) == 6, "%s second writev", what);
  char a[4] = {0}, b[8] = {0};
  struct iovec in[2] = {{a, 3}, {b, sizeof b}};
  CHECK(readv(s[1], in, 2) == 6, "%s readv takes one whole message", what);
  CHECK(memcmp(a, "abc", 3) == 0 && memcmp(b, "def", 3) == 0, "%s scattered: %.3s %.3s", what, a, b);
  char whole[16];
  CHECK(read(s[1], whole, sizeof whole) == 6 && memcmp(whole, "abcdef", 6) == 0,
        "%s the second message is whole", what);
  close(s[0]);
  close(s[1]);
}

static void pipes(void) {
  int p[2];
  REQUIRE(pipe(p) == 0, "pipe");
  CHECK(writev(p[1], three, 3) == 6, "pipe writev");
  char buf[16];
  CHECK(read(p[0], buf, sizeof buf) == 6 && memcmp(buf, "abcdef", 6) == 0, "pipe gets all of it at once");
  CHECK_ERR(preadv(p[0], three, 1, 0), ESPIPE);
  CHECK_ERR(pwritev(p[1], three, 1, 0), ESPIPE);
  close(p[0]);
  close(p[1]);
}

static void files(void) {
  char path[] = "/tmp/vectored.XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0, "mkstemp: %s", strerror(errno));
  unlink(path);
  CHECK(writev(fd, three, 3) == 6, "file writev");
  CHECK(lseek(fd, 0, SEEK_CUR) == 6, "writev moved the position");
  struct iovec up = {"XY", 2};
  CHECK(pwritev(fd, &up, 1, 1) == 2, "pwritev at 1");
  CHECK(lseek(fd, 0, SEEK_CUR) == 6, "pwritev left the position");
  char a[2], b[8];
  struct iovec in[2] = {{a, 2}, {b, sizeof b}};
  CHECK(preadv(fd, in, 2, 0) == 6, "preadv from 0");
  CHECK(memcmp(a, "aX", 2) == 0 && memcmp(b, "Ydef", 4) == 0, "preadv contents");
  CHECK(lseek(fd, 0, SEEK_CUR) == 6, "preadv left the position");
  CHECK(lseek(fd, 2, SEEK_SET) == 2, "seek");
  CHECK(syscall(SYS_preadv2, fd, in, 2, -1L, 0L, 0) == 4, "preadv2 at -1 reads from the position");
  CHECK(lseek(fd, 0, SEEK_CUR) == 6, "preadv2 at -1 moved the position");
  CHECK(syscall(SYS_pwritev2, fd, &up, 1, 0L, 0L, 0) == 2, "pwritev2 at 0");
  CHECK_ERR(syscall(SYS_preadv2, fd, in, 2, 0L, 0L, 0x10000000), EOPNOTSUPP);  // no such flag
  CHECK(syscall(SYS_pwritev2, fd, &up, 1, 0L, 0L, RWF_DSYNC) == 2, "pwritev2 RWF_DSYNC");
  CHECK_ERR(syscall(SYS_preadv, fd, in, 2, -5L, 0L), EINVAL);
  struct iovec neg = {b, (size_t)-1};
  CHECK_ERR(readv(fd, &neg, 1), EINVAL);
  CHECK_ERR(syscall(SYS_readv, fd, in, 1025), EINVAL);  // raw: the count is the point
  struct iovec bad = {(void*)8, 16};
  CHECK_ERR(preadv(fd, &bad, 1, 0), EFAULT);  // data to copy there
  CHECK_ERR(syscall(SYS_readv, fd, 8L, 1), EFAULT);
  CHECK(readv(fd, in, 0) == 0, "no buffers: 0");
  struct iovec empty_null[2] = {{"gh", 2}, {NULL, 0}};  // musl's stdio writes so
  CHECK(writev(fd, empty_null, 2) == 2, "an empty buffer at NULL is fine");
  CHECK_ERR(readv(-1, in, 1), EBADF);
  close(fd);
}

int main(void) {
  guest_name = "vectored";
  sockets(SOCK_DGRAM, "dgram");
  sockets(SOCK_SEQPACKET, "seqpacket");
  pipes();
  files();
  return guest_finish();
}
