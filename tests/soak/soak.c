// A long-running guest workload for the soak tests (soak.py drives it).
// It repeats one kind of work N times and stops at checkpoints: there it
// prints the kernel's own memory as /proc/meminfo shows it and waits for
// a byte on stdin, so the driver can look at the flatux process from the
// host (RSS, descriptors, mappings) while nothing runs.
//
// usage: soak MODE N [MARK...]
//   MODE  vfork_exec | threads | tcp | unix | mount DIR
//   N     iterations; a checkpoint "warm" comes after the first 1% (at
//         least 10), one at each MARK and one at the end ("end")
//        soak nothing            (what vfork_exec runs: exits 0)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static const char* self;
static long marks[16];
static int nmarks;

static void die(const char* what) {
  fprintf(stderr, "soak: %s: %s\n", what, strerror(errno));
  exit(1);
}

// The kernel heap (Slab) and kernel stacks (KernelStack), in kB; -1 when
// /proc/meminfo has no such line (natively, KernelStack is there; Slab
// too, but it is the host's and says nothing about this program).
static void meminfo(long* slab, long* kstack) {
  *slab = *kstack = -1;
  FILE* f = fopen("/proc/meminfo", "r");
  if (!f) return;
  char line[128];
  while (fgets(line, sizeof line, f)) {
    sscanf(line, "Slab: %ld", slab);
    sscanf(line, "KernelStack: %ld", kstack);
  }
  fclose(f);
}

static void checkpoint(const char* name, long done) {
  long slab, kstack;
  meminfo(&slab, &kstack);
  printf("checkpoint %s %ld slab_kb=%ld kstack_kb=%ld\n", name, done, slab, kstack);
  fflush(stdout);
  char c;
  if (read(0, &c, 1) != 1) die("waiting for the driver");
}

static void maybe_checkpoint(long done, long n) {
  long warm = n / 100 < 10 ? 10 : n / 100;
  if (done == warm) checkpoint("warm", done);
  for (int i = 0; i < nmarks; i++)
    if (done == marks[i]) {
      char name[32];
      snprintf(name, sizeof name, "mark%d", i);
      checkpoint(name, done);
    }
  if (done == n) checkpoint("end", done);
}

static void vfork_exec_once(void) {
  char* const args[] = {(char*)self, "nothing", NULL};
  pid_t pid = vfork();
  if (pid == 0) {
    execve(self, args, environ);
    _exit(127);
  }
  if (pid < 0) die("vfork");
  int status;
  if (waitpid(pid, &status, 0) != pid) die("waitpid");
  if (status != 0) {
    fprintf(stderr, "soak: child status %#x\n", status);
    exit(1);
  }
}

static void* thread_body(void* arg) {
  (void)arg;
  return (void*)(long)getpid();
}

static void thread_once(void) {
  pthread_t t;
  void* r;
  if ((errno = pthread_create(&t, NULL, thread_body, NULL)) != 0) die("pthread_create");
  if ((errno = pthread_join(t, &r)) != 0) die("pthread_join");
  if ((long)r != getpid()) die("thread result");
}

static int listener = -1;
static struct sockaddr_in listen_addr;

static void tcp_setup(void) {
  listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) die("socket");
  memset(&listen_addr, 0, sizeof listen_addr);
  listen_addr.sin_family = AF_INET;
  listen_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof listen_addr;
  if (bind(listener, (struct sockaddr*)&listen_addr, sizeof listen_addr) < 0) die("bind");
  if (listen(listener, 16) < 0) die("listen");
  if (getsockname(listener, (struct sockaddr*)&listen_addr, &len) < 0) die("getsockname");
}

static void tcp_once(void) {
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0) die("socket");
  if (connect(c, (struct sockaddr*)&listen_addr, sizeof listen_addr) < 0) die("connect");
  int a = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (a < 0) die("accept");
  char b = 'x';
  if (write(c, &b, 1) != 1 || read(a, &b, 1) != 1) die("tcp data");
  // The server closes first, so the TIME_WAIT state stays with the host's
  // side of the listener's port range rather than piling up on one port.
  close(a);
  close(c);
}

static int unix_pair[2] = {-1, -1};

// Messages over a stream pair; every 64th carries a descriptor (SCM_RIGHTS)
// that the reader closes.
static void unix_once(long i) {
  char msg[64];
  memset(msg, (int)(i & 0x7f), sizeof msg);
  struct iovec iov = {msg, sizeof msg};
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (i % 64 == 0) {
    memset(&ctl, 0, sizeof ctl);
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof ctl.buf;
    struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &unix_pair[0], sizeof(int));
  }
  if (sendmsg(unix_pair[0], &mh, 0) != (ssize_t)sizeof msg) die("sendmsg");
  char in[64];
  struct iovec riov = {in, sizeof in};
  memset(&ctl, 0, sizeof ctl);
  struct msghdr rh;
  memset(&rh, 0, sizeof rh);
  rh.msg_iov = &riov;
  rh.msg_iovlen = 1;
  rh.msg_control = ctl.buf;
  rh.msg_controllen = sizeof ctl.buf;
  if (recvmsg(unix_pair[1], &rh, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof in) die("recvmsg");
  if (memcmp(in, msg, sizeof in) != 0) die("message contents");
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&rh); c; c = CMSG_NXTHDR(&rh, c)) {
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    close(fd);
  }
}

static const char* mount_dir;

static void mount_once(void) {
  if (mount("soak", mount_dir, "tmpfs", 0, "size=1m") < 0) die("mount tmpfs");
  char path[4096];
  snprintf(path, sizeof path, "%s/file", mount_dir);
  int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, "data", 4) != 4) die("a file on the tmpfs");
  close(fd);
  if (umount(mount_dir) < 0) die("umount");
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "nothing") == 0) return 0;
  if (argc < 3) {
    fprintf(stderr, "usage: soak MODE N [MARK...]\n");
    return 2;
  }
  self = argv[0];
  const char* mode = argv[1];
  int arg = 2;
  if (strcmp(mode, "mount") == 0) mount_dir = argv[arg++];
  long n = atol(argv[arg++]);
  for (; arg < argc && nmarks < 16; arg++) marks[nmarks++] = atol(argv[arg]);
  if (strcmp(mode, "tcp") == 0) tcp_setup();
  if (strcmp(mode, "unix") == 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, unix_pair) < 0)
    die("socketpair");
  if (strcmp(mode, "mount") == 0 && mount("soak", mount_dir, "tmpfs", 0, "size=1m") < 0 &&
      errno == EPERM) {
    printf("soak: mount needs privileges here\n");
    return 77;
  } else if (mount_dir) {
    umount(mount_dir);
  }
  for (long i = 1; i <= n; i++) {
    if (strcmp(mode, "vfork_exec") == 0) vfork_exec_once();
    else if (strcmp(mode, "threads") == 0) thread_once();
    else if (strcmp(mode, "tcp") == 0) tcp_once();
    else if (strcmp(mode, "unix") == 0) unix_once(i);
    else if (strcmp(mode, "mount") == 0) mount_once();
    else {
      fprintf(stderr, "soak: unknown mode %s\n", mode);
      return 2;
    }
    maybe_checkpoint(i, n);
  }
  return 0;
}
