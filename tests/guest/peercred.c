// Peer credentials between processes over AF_UNIX path sockets: the
// accepted socket's SO_PEERCRED names the process that called connect()
// (with its ids at that moment), the client's names the listener, and
// SCM_CREDENTIALS received from a child carry the child's pid. Two children
// connect at once, started with posix_spawn; each says its pid in the data,
// so each accepted socket can be matched to its child. As root, the
// children first become nobody, so their ids differ from the parent's. A
// datagram from a forked child carries its credentials unasked; a client
// gone before the accept is still the accepted socket's peer.
//   peercred SCRATCH_DIR
#include "guest_check.h"

#include <fcntl.h>
#include <grp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static const uid_t kNobody = 65534;

static struct sockaddr_un path_addr(const char* dir, const char* name) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", dir, name);
  return a;
}

static int got_cred(struct msghdr* m, struct ucred* out) {
  for (struct cmsghdr* c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
      memcpy(out, CMSG_DATA(c), sizeof *out);
      return 1;
    }
  return 0;
}

// The child: connects, checks the listener's credentials, sends its pid
// with SCM_CREDENTIALS and waits for the parent's "k" before it exits.
static int child_main(const char* dir, int type, int drop) {
  if (drop && (setgroups(0, NULL) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
               setresuid(kNobody, kNobody, kNobody) != 0))
    return 101;
  struct sockaddr_un a = path_addr(dir, "srv.sock");
  int s = socket(AF_UNIX, type, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a) != 0) return 102;
  struct ucred cr;
  socklen_t len = sizeof cr;
  if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return 103;
  uid_t listener_uid = drop ? 0 : getuid();  // the parent's
  if (cr.pid != getppid() || cr.uid != listener_uid) return 104;
  char msg[32];
  int n = snprintf(msg, sizeof msg, "%d", (int)getpid());
  struct ucred me = {getpid(), getuid(), getgid()};
  char ctl[CMSG_SPACE(sizeof me)];
  memset(ctl, 0, sizeof ctl);
  struct iovec iov = {msg, (size_t)n + 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_CREDENTIALS;
  c->cmsg_len = CMSG_LEN(sizeof me);
  memcpy(CMSG_DATA(c), &me, sizeof me);
  if (sendmsg(s, &m, 0) != n + 1) return 105;
  char k;
  if (read(s, &k, 1) != 1 || k != 'k') return 106;
  close(s);
  return 0;
}

static void in_process(const char* dir) {
  printf("connect and accept in one process:\n");
  struct sockaddr_un a = path_addr(dir, "self.sock");
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(l >= 0 && bind(l, (struct sockaddr*)&a, sizeof a) == 0 && listen(l, 4) == 0,
          "listener: %s", strerror(errno));
  int c = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(connect(c, (struct sockaddr*)&a, sizeof a) == 0, "connect: %s", strerror(errno));
  int s = accept(l, NULL, NULL);
  REQUIRE(s >= 0, "accept: %s", strerror(errno));
  struct ucred cr;
  socklen_t len = sizeof cr;
  CHECK(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid == getpid() &&
            cr.uid == getuid() && cr.gid == getgid(),
        "accepted: %d/%d/%d", (int)cr.pid, (int)cr.uid, (int)cr.gid);
  CHECK(getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid == getpid(),
        "client: %d", (int)cr.pid);
  close(s);
  close(c);
  close(l);
  unlink(a.sun_path);
}

static void two_children(const char* self, const char* dir, int type, const char* type_name) {
  printf("two children connecting (%s):\n", type_name);
  int drop = getuid() == 0;
  struct sockaddr_un a = path_addr(dir, "srv.sock");
  int l = socket(AF_UNIX, type, 0);
  REQUIRE(l >= 0 && bind(l, (struct sockaddr*)&a, sizeof a) == 0 && listen(l, 4) == 0,
          "listener: %s", strerror(errno));
  CHECK_OK(chmod(a.sun_path, 0777));  // reachable by nobody
  int on = 1;
  CHECK_OK(setsockopt(l, SOL_SOCKET, SO_PASSCRED, &on, sizeof on));  // inherited by accepted sockets
  pid_t kids[2];
  char type_arg[16];
  snprintf(type_arg, sizeof type_arg, "%d", type);
  char* argv[] = {(char*)self, "child", (char*)dir, type_arg, drop ? "drop" : "keep", NULL};
  for (int i = 0; i < 2; i++)
    REQUIRE(posix_spawn(&kids[i], self, NULL, NULL, argv, environ) == 0, "posix_spawn");
  int seen = 0;
  for (int i = 0; i < 2; i++) {
    int s = accept(l, NULL, NULL);
    REQUIRE(s >= 0, "accept: %s", strerror(errno));
    char msg[32] = "";
    struct ucred sent = {0, 0, 0};
    char ctl[CMSG_SPACE(sizeof sent)];
    struct iovec iov = {msg, sizeof msg - 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    CHECK(recvmsg(s, &m, 0) > 0, "recvmsg: %s", strerror(errno));
    pid_t who = (pid_t)atoi(msg);
    int k = who == kids[0] ? 0 : who == kids[1] ? 1 : -1;
    CHECK(k >= 0 && !(seen & (1 << k)), "message from child %d", (int)who);
    if (k >= 0) seen |= 1 << k;
    CHECK(got_cred(&m, &sent) && sent.pid == who, "SCM_CREDENTIALS pid %d, want %d", (int)sent.pid, (int)who);
    struct ucred cr;
    socklen_t len = sizeof cr;
    uid_t want_uid = drop ? kNobody : getuid();
    gid_t want_gid = drop ? kNobody : getgid();
    CHECK(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.pid == who &&
              cr.uid == want_uid && cr.gid == want_gid,
          "SO_PEERCRED %d/%d/%d, want %d/%d/%d", (int)cr.pid, (int)cr.uid, (int)cr.gid, (int)who,
          (int)want_uid, (int)want_gid);
    CHECK(write(s, "k", 1) == 1, "reply");
    close(s);
  }
  for (int i = 0; i < 2; i++) {
    int status = 0;
    CHECK(waitpid(kids[i], &status, 0) == kids[i], "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status 0x%x", (int)kids[i], status);
  }
  close(l);
  unlink(a.sun_path);
}

static char self_buf[4096];
static const char* self_path(const char* argv0) {
  if (strchr(argv0, '/') && realpath(argv0, self_buf)) return self_buf;
  ssize_t n = readlink("/proc/self/exe", self_buf, sizeof self_buf - 1);
  if (n > 0) {
    self_buf[n] = 0;
    return self_buf;
  }
  return argv0;
}

// A datagram to a receiver with SO_PASSCRED carries the sender's pid and
// real ids though the sender attached nothing (a forked child, which
// waits until the parent has read it).
static void datagram_from_child(const char* dir) {
  struct sockaddr_un a = path_addr(dir, "dgram.sock");
  int r = socket(AF_UNIX, SOCK_DGRAM, 0), on = 1, done[2];
  REQUIRE(r >= 0 && bind(r, (struct sockaddr*)&a, sizeof a) == 0 && pipe(done) == 0);
  CHECK_OK(setsockopt(r, SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
  CHECK_OK(chmod(a.sun_path, 0666));  // a sender that dropped root may write to it
  struct timeval tv = {10, 0};
  CHECK_OK(setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
  int root = geteuid() == 0;
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (root && (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0)) _exit(101);
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (s < 0 || sendto(s, "hi", 2, 0, (struct sockaddr*)&a, sizeof a) != 2) _exit(102);
    char c;
    (void)!read(done[0], &c, 1);
    _exit(0);
  }
  char buf[8], ctl[CMSG_SPACE(sizeof(struct ucred))];
  struct iovec iov = {buf, sizeof buf};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct ucred cr = {0, 0, 0};
  CHECK(recvmsg(r, &m, 0) == 2 && got_cred(&m, &cr), "a datagram with credentials");
  uid_t want = root ? kNobody : getuid();
  CHECK(cr.pid == pid && cr.uid == want && cr.gid == (root ? kNobody : getgid()),
        "the sender's pid %d and ids %u/%u: got %d %u/%u", (int)pid, (unsigned)want, (unsigned)want, (int)cr.pid,
        (unsigned)cr.uid, (unsigned)cr.gid);
  (void)!write(done[1], "k", 1);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the sender: status %#x", st);
  close(r);
  close(done[0]);
  close(done[1]);
}

// Clients that connected, wrote and exited before the accept: the
// accepted sockets still name them (Linux records the credentials at
// connect), also for an acceptor that is another process.
static int accept_two(int l, pid_t a, pid_t b) {
  pid_t seen[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    int c = accept(l, NULL, NULL);
    struct ucred cr = {0, 0, 0};
    socklen_t len = sizeof cr;
    if (c < 0 || getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return 101;
    printf("  accepted a departed client: pid %d uid %u\n", (int)cr.pid, (unsigned)cr.uid);
    seen[i] = cr.pid;
    close(c);
  }
  fflush(stdout);
  return ((seen[0] == a && seen[1] == b) || (seen[0] == b && seen[1] == a)) ? 0 : 102;
}

static void closed_before_accept(const char* dir) {
  struct sockaddr_un a = path_addr(dir, "late.sock");
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(l >= 0 && bind(l, (struct sockaddr*)&a, sizeof a) == 0 && listen(l, 4) == 0);
  pid_t client[2];
  for (int i = 0; i < 2; i++) {
    client[i] = fork();
    REQUIRE(client[i] >= 0);
    if (client[i] == 0) {
      int s = socket(AF_UNIX, SOCK_STREAM, 0);
      if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a) != 0 || write(s, "x", 1) != 1) _exit(101);
      _exit(0);
    }
    int st;
    REQUIRE(waitpid(client[i], &st, 0) == client[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0, "client: %#x", st);
  }
  fflush(stdout);
  pid_t acceptor = fork();
  REQUIRE(acceptor >= 0);
  if (acceptor == 0) _exit(accept_two(l, client[0], client[1]));
  int st;
  CHECK(waitpid(acceptor, &st, 0) == acceptor && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the accepted sockets name the departed clients %d and %d (status %#x)", (int)client[0], (int)client[1], st);
  close(l);
}

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "child") == 0)
    return child_main(argv[2], atoi(argv[3]), strcmp(argv[4], "drop") == 0);
  guest_name = "peercred";
  REQUIRE(argc == 2, "usage: peercred SCRATCH_DIR");
  CHECK_OK(chmod(argv[1], 0711));  // children that dropped root still reach the socket
  const char* self = self_path(argv[0]);
  in_process(argv[1]);
  two_children(self, argv[1], SOCK_STREAM, "SOCK_STREAM");
  two_children(self, argv[1], SOCK_SEQPACKET, "SOCK_SEQPACKET");
  datagram_from_child(argv[1]);
  closed_before_accept(argv[1]);
  return guest_finish();
}
