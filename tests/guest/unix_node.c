// AF_UNIX sockets bound on a tmpfs (under flatux, a filesystem the kernel
// keeps, as /run is in a booted system): bind makes the socket node, stream
// and datagram sockets reach it by path, the names come back from
// getsockname/getpeername/recvfrom, and the errors are Linux's: a name that
// exists (EADDRINUSE), a socket already bound (EINVAL, nothing made), a
// node whose socket is closed or a file that is no socket (ECONNREFUSED),
// a removed name (ENOENT).
//
// argv[1] is a scratch folder. The run happens in a mount namespace of its
// own where the kernel has them (natively), on a tmpfs mounted on it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define GUEST_MOUNT_SCRATCH
#include "guest_check.h"
#include "guest_at.h"

static socklen_t addr_of(const char* rel, struct sockaddr_un* su) {
  memset(su, 0, sizeof *su);
  su->sun_family = AF_UNIX;
  snprintf(su->sun_path, sizeof su->sun_path, "%s", at("%s", rel));
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(su->sun_path) + 1);
}

static int bound(int type, const char* rel) {
  int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  REQUIRE(s >= 0);
  struct sockaddr_un su;
  socklen_t len = addr_of(rel, &su);
  REQUIRE(bind(s, (struct sockaddr*)&su, len) == 0, "bind %s: %s", rel, strerror(errno));
  return s;
}

static int connect_to(const char* rel, int* err) {
  int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(c >= 0);
  struct sockaddr_un su;
  socklen_t len = addr_of(rel, &su);
  *err = connect(c, (struct sockaddr*)&su, len) == 0 ? 0 : errno;
  return c;
}

static void test_stream(void) {
  mode_t old = umask(022);
  int srv = bound(SOCK_STREAM, "s.sock");
  umask(old);
  REQUIRE(listen(srv, 4) == 0);
  struct stat st;
  CHECK(stat(at("s.sock"), &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0755,
        "the node: mode 0%o", st.st_mode);
  struct sockaddr_un name;
  socklen_t nlen = sizeof name;
  CHECK(getsockname(srv, (struct sockaddr*)&name, &nlen) == 0 && strcmp(name.sun_path, at("s.sock")) == 0 &&
            nlen == offsetof(struct sockaddr_un, sun_path) + strlen(at("s.sock")) + 1,
        "getsockname: '%s' (%u)", name.sun_path, nlen);

  int err;
  int c = connect_to("s.sock", &err);
  CHECK(err == 0, "connect: %s", strerror(err));
  int a = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
  REQUIRE(a >= 0, "accept: %s", strerror(errno));
  CHECK(write(c, "ping", 4) == 4);
  char buf[8] = {0};
  CHECK(read(a, buf, sizeof buf) == 4 && memcmp(buf, "ping", 4) == 0, "data: '%s'", buf);
  nlen = sizeof name;
  CHECK(getpeername(c, (struct sockaddr*)&name, &nlen) == 0 && strcmp(name.sun_path, at("s.sock")) == 0,
        "getpeername: '%s'", name.sun_path);
  struct ucred cred;
  socklen_t clen = sizeof cred;
  CHECK(getsockopt(a, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && cred.pid == getpid(), "SO_PEERCRED pid %d",
        cred.pid);

  // The name exists: EADDRINUSE; a bound socket: EINVAL, and no node made.
  int s2 = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un su;
  socklen_t len = addr_of("s.sock", &su);
  CHECK_ERR(bind(s2, (struct sockaddr*)&su, len), EADDRINUSE);
  close(s2);
  len = addr_of("other.sock", &su);
  CHECK_ERR(bind(srv, (struct sockaddr*)&su, len), EINVAL);
  CHECK(access(at("other.sock"), F_OK) != 0, "a second bind made a node");

  close(a);
  close(c);
  close(srv);
  // The node stays; its socket is gone.
  c = connect_to("s.sock", &err);
  CHECK(err == ECONNREFUSED, "connect to a closed socket's node: %s", strerror(err));
  close(c);
  CHECK(unlink(at("s.sock")) == 0);
  c = connect_to("s.sock", &err);
  CHECK(err == ENOENT, "connect to a removed name: %s", strerror(err));
  close(c);
  int f = open(at("plain"), O_CREAT | O_WRONLY, 0666);
  close(f);
  c = connect_to("plain", &err);
  CHECK(err == ECONNREFUSED, "connect to a plain file: %s", strerror(err));
  close(c);
}

static void test_datagram(void) {
  int r = bound(SOCK_DGRAM, "d.sock");
  int w = bound(SOCK_DGRAM, "w.sock");
  struct sockaddr_un to;
  socklen_t tlen = addr_of("d.sock", &to);
  CHECK(sendto(w, "dgram", 5, 0, (struct sockaddr*)&to, tlen) == 5, "sendto: %s", strerror(errno));
  char buf[8] = {0};
  struct sockaddr_un from;
  socklen_t flen = sizeof from;
  CHECK(recvfrom(r, buf, sizeof buf, 0, (struct sockaddr*)&from, &flen) == 5 && memcmp(buf, "dgram", 5) == 0,
        "recvfrom: '%s'", buf);
  CHECK(strcmp(from.sun_path, at("w.sock")) == 0, "the sender's name: '%s'", from.sun_path);
  close(r);
  close(w);
}

int main(int argc, char** argv) {
  guest_name = "unix_node";
  REQUIRE(argc == 2, "usage: unix_node SCRATCH_DIR");
  guest_mount_scratch(argv[1], dir, "size=1m");

  test_stream();
  test_datagram();

  CHECK_OK(umount(dir));
  return guest_finish();
}
