// Descriptor tables: RLIMIT_NOFILE gives EMFILE, dup/dup2/dup3/fcntl share
// one open file description (offset and status flags), close-on-exec flags
// are per descriptor, and pipes report their capacity and queued bytes.
#include "guest_check.h"

#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

static void nofile_limit(void) {
  printf("RLIMIT_NOFILE:\n");
  struct rlimit saved, rl;
  CHECK_OK(getrlimit(RLIMIT_NOFILE, &saved));
  rl = saved;
  rl.rlim_cur = 16;
  CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
  int already = 0;  // whatever the caller left open counts too
  for (int i = 0; i < 16; i++) already += fcntl(i, F_GETFD) >= 0;
  int opened = 0, fd, last_err = 0, first = -1;
  while ((fd = open("/dev/null", O_RDONLY)) >= 0) {
    if (first < 0) first = fd;
    opened++;
  }
  last_err = errno;
  CHECK(last_err == EMFILE, "open past the limit: errno %d, want EMFILE", last_err);
  CHECK(opened == 16 - already, "%d descriptors fit under a limit of 16 with %d open", opened, already);
  CHECK_ERR(dup2(0, 16), EBADF);
  CHECK_ERR(fcntl(0, F_DUPFD, 16), EINVAL);
  for (int i = first; i < 16; i++) close(i);
  CHECK_OK(setrlimit(RLIMIT_NOFILE, &saved));
  printf("  %d opened, then EMFILE; dup2 past the limit EBADF, F_DUPFD EINVAL\n", opened);
}

static void shared_description(void) {
  printf("dup shares the open file description:\n");
  int p[2];
  CHECK_OK(pipe(p));
  int d = dup(p[0]);
  REQUIRE(d >= 0, "dup");
  CHECK_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
  CHECK((fcntl(d, F_GETFL) & O_NONBLOCK) != 0, "O_NONBLOCK set through one fd shows on the dup");
  char c;
  CHECK_ERR(read(d, &c, 1), EAGAIN);
  CHECK_OK(fcntl(d, F_SETFD, FD_CLOEXEC));
  CHECK(fcntl(d, F_GETFD) == FD_CLOEXEC, "FD_CLOEXEC set on the dup");
  CHECK(fcntl(p[0], F_GETFD) == 0, "...but not on the original");
  int d3 = dup3(p[1], 40, O_CLOEXEC);
  CHECK(d3 == 40, "dup3 to 40 gave %d", d3);
  CHECK(fcntl(40, F_GETFD) == FD_CLOEXEC, "dup3 O_CLOEXEC");
  CHECK_ERR(dup3(40, 40, 0), EINVAL);
  CHECK(dup2(40, 40) == 40, "dup2 onto itself is a no-op");
  CHECK(write(40, "xyz", 3) == 3, "write through the dup3 copy");
  int queued = -1;
  CHECK_OK(ioctl(p[0], FIONREAD, &queued));
  CHECK(queued == 3, "FIONREAD %d", queued);
  CHECK(fcntl(p[0], F_GETPIPE_SZ) >= 4096, "F_GETPIPE_SZ");
  CHECK(fcntl(p[0], F_SETPIPE_SZ, 1 << 16) >= (1 << 16), "F_SETPIPE_SZ");
  int nul = open("/dev/null", O_RDONLY);
  CHECK_ERR(fcntl(nul, F_GETPIPE_SZ), EBADF);
  close(nul);
  close(p[0]); close(p[1]); close(d); close(40);
  CHECK_ERR(close(40), EBADF);
  printf("  flags, FIONREAD and pipe sizes behave as on Linux\n");
}

int main(void) {
  guest_name = "fds";
  setvbuf(stdout, NULL, _IOLBF, 0);
  nofile_limit();
  shared_description();
  return guest_finish();
}
