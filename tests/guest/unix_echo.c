// AF_UNIX sockets with names: a stream echo server with 16 concurrent
// client threads on a path in a scratch folder, datagrams between two
// bound paths (recvfrom names the sender so it can be answered), names
// relative to the working directory, abstract names and autobind.
//
// usage: unix_echo DIR   (an existing folder to create sockets in)
#include "guest_check.h"

#include <pthread.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CLIENTS 16
#define ROUNDS 50

static char server_path[108];

static socklen_t make_addr(struct sockaddr_un* a, const char* path) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  strncpy(a->sun_path, path, sizeof a->sun_path - 1);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

// Names that differ between runs: sockets may outlive a run that cannot
// unlink them.
static void unique(char* out, size_t n, const char* dir, const char* what) {
  unsigned r = 0;
  if (getrandom(&r, sizeof r, 0) != sizeof r) r = (unsigned)getpid();
  snprintf(out, n, "%s%s%s-%08x.sock", dir, dir[0] ? "/" : "", what, r);
}

static int write_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void* serve_one(void* arg) {
  int c = (int)(long)arg;
  char buf[512];
  ssize_t r;
  while ((r = read(c, buf, sizeof buf)) > 0)
    if (write_all(c, buf, (size_t)r) < 0) break;
  close(c);
  return NULL;
}

static void* server(void* arg) {
  int ls = (int)(long)arg;
  pthread_t th[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    int c = accept(ls, NULL, NULL);
    if (c < 0) {
      CHECK(0, "accept: %s", strerror(errno));
      return NULL;
    }
    pthread_create(&th[i], NULL, serve_one, (void*)(long)c);
  }
  for (int i = 0; i < CLIENTS; i++) pthread_join(th[i], NULL);
  return NULL;
}

static void* client(void* arg) {
  long id = (long)arg;
  struct sockaddr_un a;
  socklen_t len = make_addr(&a, server_path);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&a, len) < 0) {
    CHECK(0, "client %ld connect: %s", id, strerror(errno));
    return (void*)0;
  }
  struct sockaddr_un peer;
  socklen_t plen = sizeof peer;
  CHECK(getpeername(s, (struct sockaddr*)&peer, &plen) == 0 && strcmp(peer.sun_path, server_path) == 0,
        "client %ld: getpeername gives '%s'", id, peer.sun_path);
  long good = 0;
  for (int r = 0; r < ROUNDS; r++) {
    char msg[64], back[64];
    int n = snprintf(msg, sizeof msg, "client %ld round %d", id, r);
    if (write_all(s, msg, (size_t)n) < 0) break;
    int got = 0;
    while (got < n) {
      ssize_t k = read(s, back + got, (size_t)(n - got));
      if (k <= 0) break;
      got += (int)k;
    }
    if (got == n && memcmp(msg, back, (size_t)n) == 0) good++;
  }
  close(s);
  return (void*)good;
}

static void echo_server(const char* dir) {
  printf("stream echo server, %d concurrent clients:\n", CLIENTS);
  unique(server_path, sizeof server_path, dir, "echo");
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(ls >= 0, "socket: %s", strerror(errno));
  struct sockaddr_un a;
  socklen_t len = make_addr(&a, server_path);
  REQUIRE(bind(ls, (struct sockaddr*)&a, len) == 0, "bind %s: %s", server_path, strerror(errno));
  struct stat st;
  CHECK(stat(server_path, &st) == 0 && S_ISSOCK(st.st_mode), "the name is a socket in the folder");
  CHECK_ERR(bind(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr*)&a, len), EADDRINUSE);
  struct sockaddr_un got;
  socklen_t glen = sizeof got;
  CHECK(getsockname(ls, (struct sockaddr*)&got, &glen) == 0 && glen == len &&
            strcmp(got.sun_path, server_path) == 0,
        "getsockname: '%s' (%u bytes)", got.sun_path, (unsigned)glen);
  // Not listening yet: refused.
  int early = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK_ERR(connect(early, (struct sockaddr*)&a, len), ECONNREFUSED);
  close(early);
  REQUIRE(listen(ls, CLIENTS) == 0, "listen: %s", strerror(errno));
  pthread_t srv, cl[CLIENTS];
  pthread_create(&srv, NULL, server, (void*)(long)ls);
  for (long i = 0; i < CLIENTS; i++) pthread_create(&cl[i], NULL, client, (void*)i);
  long total = 0;
  for (int i = 0; i < CLIENTS; i++) {
    void* r;
    pthread_join(cl[i], &r);
    total += (long)r;
  }
  pthread_join(srv, NULL);
  CHECK(total == CLIENTS * ROUNDS, "%ld of %d echoes came back", total, CLIENTS * ROUNDS);
  printf("  %ld of %d echoes came back\n", total, CLIENTS * ROUNDS);
  close(ls);
  unlink(server_path);  // may be unsupported; names are unique anyway
}

static void datagrams(const char* dir) {
  printf("datagrams between bound paths:\n");
  char pa[108], pb[108];
  unique(pa, sizeof pa, dir, "dga");
  unique(pb, sizeof pb, dir, "dgb");
  int a = socket(AF_UNIX, SOCK_DGRAM, 0), b = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un aa, ab, from;
  socklen_t la = make_addr(&aa, pa), lb = make_addr(&ab, pb);
  REQUIRE(bind(a, (struct sockaddr*)&aa, la) == 0 && bind(b, (struct sockaddr*)&ab, lb) == 0,
          "bind: %s", strerror(errno));
  CHECK(sendto(a, "ping", 4, 0, (struct sockaddr*)&ab, lb) == 4, "sendto: %s", strerror(errno));
  char buf[16];
  socklen_t fl = sizeof from;
  CHECK(recvfrom(b, buf, sizeof buf, 0, (struct sockaddr*)&from, &fl) == 4, "recvfrom");
  CHECK(fl == la && strcmp(from.sun_path, pa) == 0, "sender named '%s'", from.sun_path);
  // Answer to where it came from.
  CHECK(sendto(b, "pong", 4, 0, (struct sockaddr*)&from, fl) == 4, "reply: %s", strerror(errno));
  CHECK(recv(a, buf, sizeof buf, 0) == 4 && memcmp(buf, "pong", 4) == 0, "reply arrives");
  // A short address buffer: truncated copy, full length reported.
  CHECK(sendto(a, "x", 1, 0, (struct sockaddr*)&ab, lb) == 1, "sendto");
  fl = 4;
  memset(&from, 0x7f, sizeof from);
  CHECK(recvfrom(b, buf, sizeof buf, 0, (struct sockaddr*)&from, &fl) == 1 && fl == la &&
            from.sun_path[2] == 0x7f,
        "truncated address, length %u", (unsigned)fl);
  char missing[140];
  snprintf(missing, sizeof missing, "%s/no-such-dir/x.sock", dir);
  struct sockaddr_un am;
  socklen_t lm = make_addr(&am, missing);
  if (strlen(missing) < sizeof am.sun_path)
    CHECK_ERR(sendto(a, "x", 1, 0, (struct sockaddr*)&am, lm), ENOENT);
  close(a);
  close(b);
  unlink(pa);
  unlink(pb);
}

static void relative_names(const char* dir) {
  printf("a name relative to the working directory:\n");
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != NULL, "getcwd: %s", strerror(errno));
  REQUIRE(chdir(dir) == 0, "chdir %s: %s", dir, strerror(errno));
  char rel[108], abs[300];
  unique(rel, sizeof rel, "", "rel");
  snprintf(abs, sizeof abs, "%s/%s", dir, rel);
  int s = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un a;
  socklen_t len = make_addr(&a, rel);
  CHECK(bind(s, (struct sockaddr*)&a, len) == 0, "bind %s: %s", rel, strerror(errno));
  struct sockaddr_un got;
  socklen_t glen = sizeof got;
  CHECK(getsockname(s, (struct sockaddr*)&got, &glen) == 0 && strcmp(got.sun_path, rel) == 0,
        "getsockname keeps the relative spelling: '%s'", got.sun_path);
  REQUIRE(chdir(cwd) == 0, "chdir back: %s", strerror(errno));
  // Reached by its absolute name from elsewhere.
  int c = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un b;
  socklen_t blen = make_addr(&b, abs);
  if (strlen(abs) < sizeof b.sun_path) {
    CHECK(sendto(c, "r", 1, 0, (struct sockaddr*)&b, blen) == 1, "sendto %s: %s", abs, strerror(errno));
    char ch = 0;
    CHECK(recv(s, &ch, 1, 0) == 1 && ch == 'r', "arrives");
  }
  close(c);
  close(s);
  unlink(abs);
}

static void abstract_names(void) {
  printf("abstract names and autobind:\n");
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  char name[32];
  unsigned r = 0;
  getrandom(&r, sizeof r, 0);
  int n = snprintf(name, sizeof name, "flatux-test-%08x", r);
  memcpy(a.sun_path + 1, name, (size_t)n);
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(bind(ls, (struct sockaddr*)&a, len) == 0 && listen(ls, 1) == 0, "bind: %s", strerror(errno));
  struct sockaddr_un got;
  socklen_t glen = sizeof got;
  CHECK(getsockname(ls, (struct sockaddr*)&got, &glen) == 0 && glen == len &&
            memcmp(got.sun_path, a.sun_path, (size_t)n + 1) == 0,
        "getsockname gives the name back (%u bytes)", (unsigned)glen);
  int c = socket(AF_UNIX, SOCK_STREAM, 0);
  CHECK(connect(c, (struct sockaddr*)&a, len) == 0, "connect: %s", strerror(errno));
  glen = sizeof got;
  CHECK(getpeername(c, (struct sockaddr*)&got, &glen) == 0 && glen == len &&
            memcmp(got.sun_path, a.sun_path, (size_t)n + 1) == 0,
        "getpeername gives the name back");
  int s = accept(ls, NULL, NULL);
  CHECK(s >= 0 && write(c, "A", 1) == 1, "accept/write");
  char ch = 0;
  CHECK(read(s, &ch, 1) == 1 && ch == 'A', "abstract connection carries data");
  close(s);
  close(c);
  close(ls);

  // An address with only the family autobinds to a fresh abstract name.
  int d = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un fam = {.sun_family = AF_UNIX};
  CHECK(bind(d, (struct sockaddr*)&fam, sizeof(sa_family_t)) == 0, "autobind: %s", strerror(errno));
  glen = sizeof got;
  CHECK(getsockname(d, (struct sockaddr*)&got, &glen) == 0 && got.sun_path[0] == 0 &&
            glen == offsetof(struct sockaddr_un, sun_path) + 6,
        "autobound name: %u bytes", (unsigned)glen);
  // Reachable by that name.
  int e = socket(AF_UNIX, SOCK_DGRAM, 0);
  CHECK(sendto(e, "q", 1, 0, (struct sockaddr*)&got, glen) == 1, "send to autobound: %s", strerror(errno));
  CHECK(recv(d, &ch, 1, 0) == 1 && ch == 'q', "arrives");
  close(d);
  close(e);
}

int main(int argc, char** argv) {
  guest_name = "unix_echo";
  REQUIRE(argc == 2, "usage: unix_echo DIR");
  echo_server(argv[1]);
  datagrams(argv[1]);
  relative_names(argv[1]);
  abstract_names();
  return guest_finish();
}
