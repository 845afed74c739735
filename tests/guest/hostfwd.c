// Port forwarding (hostfwd=tcp::HOST-:GUEST, a boot parameter): the guest
// sees its own port everywhere. A server bound to GUEST shows GUEST in
// getsockname (its own and an accepted connection's), a client connecting
// to GUEST on a loopback address reaches it and sees GUEST as its peer's
// port, and the host port HOST is taken (EADDRINUSE).
//
// Usage: hostfwd GUEST_PORT HOST_PORT, booted as init with the forward.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest_check.h"

static int port_of(int fd, int peer) {
  struct sockaddr_in sa;
  socklen_t n = sizeof sa;
  int r = peer ? getpeername(fd, (struct sockaddr*)&sa, &n) : getsockname(fd, (struct sockaddr*)&sa, &n);
  return r == 0 ? ntohs(sa.sin_port) : -1;
}

static struct sockaddr_in addr(uint32_t ip, int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = {htonl(ip)}};
  return sa;
}

int main(int argc, char** argv) {
  guest_name = "hostfwd";
  REQUIRE(argc == 3, "usage: hostfwd GUEST_PORT HOST_PORT");
  int guest = atoi(argv[1]), host = atoi(argv[2]);
  int server = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  REQUIRE(server >= 0);
  setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in any = addr(INADDR_ANY, guest);
  CHECK_OK(bind(server, (struct sockaddr*)&any, sizeof any));
  CHECK(port_of(server, 0) == guest, "the server's own port: %d", port_of(server, 0));
  CHECK_OK(listen(server, 4));

  int client = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in lo = addr(INADDR_LOOPBACK, guest);
  CHECK_OK(connect(client, (struct sockaddr*)&lo, sizeof lo));
  CHECK(port_of(client, 1) == guest, "the client's peer port: %d", port_of(client, 1));
  // (Without the forward the client may reach another server: no hang.)
  struct pollfd pf = {server, POLLIN, 0};
  REQUIRE(poll(&pf, 1, 10000) == 1, "nothing reached the server");
  int conn = accept(server, NULL, NULL);
  CHECK(conn >= 0 && port_of(conn, 0) == guest, "the accepted connection's own port: %d", port_of(conn, 0));
  CHECK(write(client, "hi", 2) == 2);
  char buf[2];
  CHECK(read(conn, buf, 2) == 2 && buf[0] == 'h');

  int other = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in taken = addr(INADDR_ANY, host);
  CHECK_ERR(bind(other, (struct sockaddr*)&taken, sizeof taken), EADDRINUSE);
  close(other);
  close(conn);
  close(client);
  close(server);
  return guest_finish();
}
