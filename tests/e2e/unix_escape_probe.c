// Run by unix_escape.py as /prog inside a folder root: AF_UNIX names must
// stay inside the guest's root and abstract names inside this kernel.
//
// usage: /prog HOST_ABSTRACT GUEST_ABSTRACT
//   HOST_ABSTRACT   an abstract name a host program listens on
//   GUEST_ABSTRACT  an abstract name this probe binds and holds until stdin closes
// The root holds /link-abs (-> the host socket's absolute path),
// /link-rel (-> ../outside.sock), /link-dgram (-> a host datagram socket's
// absolute path), /up (-> ..).
#include "guest_check.h"

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static socklen_t path_addr(struct sockaddr_un* a, const char* p) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  strncpy(a->sun_path, p, sizeof a->sun_path - 1);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(p) + 1);
}

static socklen_t abstract_addr(struct sockaddr_un* a, const char* name) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  memcpy(a->sun_path + 1, name, strlen(name));
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

static void must_not_reach(const char* path) {
  struct sockaddr_un a;
  socklen_t len = path_addr(&a, path);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  int r = connect(s, (struct sockaddr*)&a, len);
  int e = errno;
  CHECK(r == -1 && (e == ENOENT || e == ECONNREFUSED), "connect %s: %d %s", path, r, strerror(e));
  printf("  connect %-20s -> %s\n", path, r == 0 ? "CONNECTED" : strerror(e));
  close(s);
  int d = socket(AF_UNIX, SOCK_DGRAM, 0);
  r = (int)sendto(d, "x", 1, 0, (struct sockaddr*)&a, len);
  CHECK(r == -1, "sendto %s reached something", path);
  close(d);
}

int main(int argc, char** argv) {
  guest_name = "unix_escape_probe";
  REQUIRE(argc == 3, "usage: /prog HOST_ABSTRACT GUEST_ABSTRACT");
  printf("paths:\n");
  must_not_reach("/link-abs");
  must_not_reach("/link-rel");
  must_not_reach("/link-dgram");
  must_not_reach("/../outside.sock");
  must_not_reach("/up/outside.sock");

  struct sockaddr_un a;
  socklen_t len = path_addr(&a, "/up/made.sock");
  int b = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK(bind(b, (struct sockaddr*)&a, len) == 0, "bind /up/made.sock: %s", strerror(errno));
  len = path_addr(&a, "/..");
  CHECK_ERR(bind(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr*)&a, len), EADDRINUSE);

  printf("abstract names:\n");
  len = abstract_addr(&a, argv[1]);
  int c = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK_ERR(connect(c, (struct sockaddr*)&a, len), ECONNREFUSED);
  len = abstract_addr(&a, argv[2]);
  int g = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK(bind(g, (struct sockaddr*)&a, len) == 0 && listen(g, 1) == 0, "bind abstract: %s", strerror(errno));
  // The host looks for the name now.
  printf("ready\n");
  fflush(stdout);
  char ch;
  while (read(0, &ch, 1) > 0) {}
  return guest_finish();
}
