// The guest side of net_host.py. Each mode prints progress lines on stdout
// and, where the driver wants to look at the flatux process (open host
// descriptors, RSS), stops and waits for a line on stdin.
//
//   tcp-serve COUNT          listen on 127.0.0.1, print "port N", echo COUNT
//                            connections one after another (read to EOF,
//                            write it all back); "checkpoint" after the
//                            first 100 and at the end
//   tcp-client PORT BYTES    send BYTES of a pattern to a host server, read
//                            the echo, compare
//   unix-load CONNS MSGS ROUNDS
//                            CONNS concurrent AF_UNIX stream connections to
//                            an in-guest echo server, MSGS numbered messages
//                            each, every echo checked in order; a
//                            "checkpoint" after round 1 and after the last
//   no-inet                  under --net=none: AF_INET and AF_INET6
//                            sockets are refused with EACCES, AF_UNIX works
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char* what) {
  fprintf(stderr, "net_peer: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void checkpoint(const char* what) {
  printf("checkpoint %s\n", what);
  fflush(stdout);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) exit(3);
}

static int write_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_full(int fd, char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

static int tcp_serve(long count) {
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) die("socket");
  int on = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(ls, (struct sockaddr*)&a, len) || listen(ls, 128)) die("bind/listen");
  getsockname(ls, (struct sockaddr*)&a, &len);
  printf("port %d\n", ntohs(a.sin_port));
  fflush(stdout);
  static char buf[65536];
  for (long i = 0; i < count; i++) {
    int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) die("accept4");
    ssize_t r;
    while ((r = read(c, buf, sizeof buf)) > 0)
      if (write_all(c, buf, (size_t)r)) break;
    close(c);
    if (i == 99) checkpoint("warm");
  }
  checkpoint("done");
  close(ls);
  return 0;
}

static int tcp_client(int port, long bytes) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(s, (struct sockaddr*)&a, sizeof a)) die("connect");
  char* out = malloc((size_t)bytes);
  char* in = malloc((size_t)bytes);
  for (long i = 0; i < bytes; i++) out[i] = (char)(i * 7 + i / 251);
  // A writer thread would be tidier; the host server echoes as it reads,
  // so send in slices and drain between them to avoid a deadlock.
  long sent = 0, got = 0;
  while (got < bytes) {
    if (sent < bytes) {
      long n = bytes - sent > 16384 ? 16384 : bytes - sent;
      if (write_all(s, out + sent, (size_t)n)) die("write");
      sent += n;
      if (sent == bytes) shutdown(s, SHUT_WR);
    }
    ssize_t r = recv(s, in + got, (size_t)(bytes - got), sent < bytes ? MSG_DONTWAIT : 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (r <= 0) die("recv");
    got += r;
  }
  if (memcmp(in, out, (size_t)bytes)) {
    fprintf(stderr, "net_peer: echo differs\n");
    return 1;
  }
  printf("echoed %ld bytes\n", bytes);
  close(s);
  return 0;
}

struct load {
  struct sockaddr_un addr;
  socklen_t len;
  long msgs;
  long bad;
};

static void* echo_conn(void* p) {
  int c = (int)(long)p;
  char buf[4096];
  ssize_t r;
  while ((r = read(c, buf, sizeof buf)) > 0)
    if (write_all(c, buf, (size_t)r)) break;
  close(c);
  return NULL;
}

static void* echo_server(void* p) {
  int ls = (int)(long)p;
  for (;;) {
    int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) return NULL;  // the listener was shut down
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 64 * 1024);
    if (pthread_create(&th, &at, echo_conn, (void*)(long)c)) close(c);
    pthread_attr_destroy(&at);
  }
}

// Fixed-size messages "conn:seq" so every echo can be checked in order.
static void* load_client(void* p) {
  struct load* l = p;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&l->addr, l->len)) {
    l->bad = l->msgs;
    if (s >= 0) close(s);
    return NULL;
  }
  for (long i = 0; i < l->msgs; i++) {
    char out[32], in[32];
    snprintf(out, sizeof out, "%p:%015ld", (void*)l, i);
    out[31] = '\n';
    if (write_all(s, out, sizeof out) || read_full(s, in, sizeof in) || memcmp(in, out, sizeof in)) {
      l->bad = l->msgs - i;
      break;
    }
  }
  close(s);
  return NULL;
}

static int unix_load(int conns, long msgs, int rounds) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "flatux-net-peer-%d", getpid());
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (bind(ls, (struct sockaddr*)&a, len) || listen(ls, conns)) die("bind/listen");
  pthread_t srv;
  pthread_create(&srv, NULL, echo_server, (void*)(long)ls);
  struct load* l = calloc((size_t)conns, sizeof *l);
  pthread_t* th = calloc((size_t)conns, sizeof *th);
  long lost = 0;
  for (int round = 1; round <= rounds; round++) {
    for (int i = 0; i < conns; i++) {
      l[i] = (struct load){a, len, msgs, 0};
      pthread_create(&th[i], NULL, load_client, &l[i]);
    }
    for (int i = 0; i < conns; i++) {
      pthread_join(th[i], NULL);
      lost += l[i].bad;
    }
    printf("round %d: %ld messages lost or out of order\n", round, lost);
    fflush(stdout);
    if (round == 1) checkpoint("warm");
  }
  // Let the per-connection threads finish closing before the last look.
  usleep(200000);
  checkpoint("done");
  shutdown(ls, SHUT_RDWR);
  close(ls);
  return lost ? 1 : 0;
}

static int no_inet(void) {
  int bad = 0;
  int fams[] = {AF_INET, AF_INET6};
  int types[] = {SOCK_STREAM, SOCK_DGRAM};
  for (int f = 0; f < 2; f++)
    for (int k = 0; k < 2; k++) {
      errno = 0;
      int s = socket(fams[f], types[k], 0);
      if (s != -1 || errno != EACCES) {
        fprintf(stderr, "net_peer: socket(%d, %d): %d %s, want EACCES\n", fams[f], types[k], s,
                strerror(errno));
        bad++;
      }
    }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || write(sv[0], "u", 1) != 1) {
    fprintf(stderr, "net_peer: AF_UNIX: %s\n", strerror(errno));
    bad++;
  }
  printf("no-inet: %s\n", bad ? "FAILED" : "AF_INET/AF_INET6 refused, AF_UNIX works");
  return bad ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && !strcmp(argv[1], "no-inet")) return no_inet();
  if (argc == 3 && !strcmp(argv[1], "tcp-serve")) return tcp_serve(atol(argv[2]));
  if (argc == 4 && !strcmp(argv[1], "tcp-client")) return tcp_client(atoi(argv[2]), atol(argv[3]));
  if (argc == 5 && !strcmp(argv[1], "unix-load"))
    return unix_load(atoi(argv[2]), atol(argv[3]), atoi(argv[4]));
  fprintf(stderr, "usage: net_peer no-inet | tcp-serve COUNT | tcp-client PORT BYTES | unix-load CONNS MSGS ROUNDS\n");
  return 2;
}
