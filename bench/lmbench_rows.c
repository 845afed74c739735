// lmbench-style latency rows, one per sub-command, so that the same static
// binary can be timed natively, under flatux, inside UML and under PRoot and
// the columns compare like with like. The methodology follows lmbench (the
// operations, ping-pong round trips, 64 KiB pipe transfers, a shell that
// only exits); the code is written from scratch.
//
// Usage: lmbench_rows ROW [ITERS [REPS]]
//        lmbench_rows list
//        lmbench_rows idle
// Output: one line, "ROW min_us median_us" (microseconds per operation over
// REPS timed passes of ITERS operations, after one untimed warm-up pass), or
// "ROW skipped <reason>" when the system refuses something the row needs
// (ENOSYS from a young kernel, say). A refusal never crashes the program and
// leaves exit status 0; only a usage error exits non-zero.
//
// "idle" is the probe for the boot-time and idle-memory rows: it prints
// "@@ready" first (the driver times process start to this line), then its
// /proc/self/maps between "@@maps" and "@@end" (under flatux, the guest's own
// regions, which the driver subtracts from the host process's RSS), and then
// blocks reading stdin until EOF. Run as PID 1 (init of a booted image) it
// then syncs and powers the system off, as an init must not exit.
//
// Environment: LMBENCH_SH     shell for fork-sh/vfork-sh (default /bin/sh)
//              LMBENCH_HELLO  program for fork-execve/vfork-execve
//                             (default: lmbench_hello next to this program)
//              LMBENCH_FILE   file for stat and open-close (and beside
//                             which stat-missing/stat-absent probe names)
//                             (default /tmp/lmbench_rows.file, created
//                             empty, with its folders)
//              LMBENCH_UID    stat and open-close run as this user (and
//                             group) once the file is there (needs root)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

// ---------------------------------------------------------------- errors

static char why[512];

static const char* errno_name(int e) {
#ifdef __GLIBC__
  const char* n = strerrorname_np(e);
  if (n) return n;
#endif
  static char buf[24];
  snprintf(buf, sizeof buf, "errno %d", e);
  return buf;
}

// Records "<what>: ENAME (text)" from errno; returns -1 for the caller to
// pass up.
static int fail(const char* what) {
  int e = errno;
  snprintf(why, sizeof why, "%s: %s (%s)", what, errno_name(e), strerror(e));
  return -1;
}

static int fail_err(const char* what, int e) {
  errno = e;
  return fail(what);
}

__attribute__((format(printf, 1, 2))) static int failf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return -1;
}

static int wait_child(pid_t pid, const char* what) {
  int st;
  pid_t got;
  do got = waitpid(pid, &st, 0);
  while (got < 0 && errno == EINTR);
  if (got < 0) return fail("waitpid");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  if (WIFEXITED(st)) return failf("%s: child exited with status %d", what, WEXITSTATUS(st));
  return failf("%s: child killed by signal %d", what, WTERMSIG(st));
}

// ---------------------------------------------------------------- helpers

// `mov $NR,%eax; syscall`, spelled out: the shape libc wrappers have; left
// to itself the compiler may keep the number in another register and move
// it into RAX before each call (a site flatux's rewriting does not take).
#define raw_syscall0(nr)                                                                 \
  ({                                                                                     \
    long ret_;                                                                           \
    __asm__ volatile("mov %1, %%eax\n\tsyscall" : "=a"(ret_) : "i"(nr) : "rcx", "r11", "memory"); \
    ret_;                                                                                \
  })

static int read_full(int fd, void* buf, size_t n) {
  char* p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail("read");
    if (r == 0) return failf("read: peer closed the connection");
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int write_full(int fd, const void* buf, size_t n) {
  const char* p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return fail("write");
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static const char* self_path;  // argv[0]

static const char* env_or(const char* name, const char* dflt) {
  const char* v = getenv(name);
  return v && *v ? v : dflt;
}

// ---------------------------------------------------------------- rows
//
// Each row has an optional setup (untimed, may start a partner process), the
// timed body running ITERS operations, and an optional teardown. All return
// 0 or -1 with `why` filled in.

static int fd_a = -1, fd_b = -1;  // per-row descriptors
static pid_t partner = -1;        // the other end of a ping-pong
static char file_path[PATH_MAX];
static char prog_path[PATH_MAX];

// --- null syscalls. Issued inline: libc may cache getpid or take another
// route per libc, and the rows must measure the kernel entry alone.

static int run_syscall(long iters) {
  for (long i = 0; i < iters; i++) raw_syscall0(SYS_getppid);
  return 0;
}

static int run_getpid(long iters) {
  for (long i = 0; i < iters; i++) raw_syscall0(SYS_getpid);
  return 0;
}

static int setup_syscall(void) {
  long r = raw_syscall0(SYS_getppid);
  if (r < 0) return fail_err("getppid", (int)-r);
  return 0;
}

static int setup_getpid(void) {
  long r = raw_syscall0(SYS_getpid);
  if (r < 0) return fail_err("getpid", (int)-r);
  return 0;
}

// --- getpid under a seccomp filter of 10 instructions (an architecture
// check, four refused calls, allow): what a sandboxed program pays per
// call. The filter stays for the rest of the process: one row per run.

static int setup_getpid_filtered(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 4, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kexec_load, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_init_module, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bpf, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("PR_SET_NO_NEW_PRIVS");
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return fail("seccomp");
  return setup_getpid();
}

// --- 1-byte read and write.

static int setup_read(void) {
  fd_a = open("/dev/zero", O_RDONLY);
  return fd_a < 0 ? fail("open /dev/zero") : 0;
}

static int run_read(long iters) {
  char c;
  for (long i = 0; i < iters; i++)
    if (read(fd_a, &c, 1) != 1) return fail("read /dev/zero");
  return 0;
}

static int setup_write(void) {
  fd_a = open("/dev/null", O_WRONLY);
  return fd_a < 0 ? fail("open /dev/null") : 0;
}

static int run_write(long iters) {
  char c = 0;
  for (long i = 0; i < iters; i++)
    if (write(fd_a, &c, 1) != 1) return fail("write /dev/null");
  return 0;
}

// --- stat and open/close of one small file.

// The rows' user (LMBENCH_UID): an ordinary user's walks check search
// permission on every folder, root's do not.
static int become_user(void) {
  const char* v = getenv("LMBENCH_UID");
  if (!v || !*v) return 0;
  unsigned id = (unsigned)strtoul(v, NULL, 0);
  if (setresgid(id, id, id) != 0 || setresuid(id, id, id) != 0) return fail("LMBENCH_UID: become the user");
  return 0;
}

static int setup_file(void) {
  snprintf(file_path, sizeof file_path, "%s", env_or("LMBENCH_FILE", "/tmp/lmbench_rows.file"));
  struct stat st;
  if (stat(file_path, &st) != 0) {
    char dir[sizeof file_path];
    for (char* s = strchr(strcpy(dir, file_path) + 1, '/'); s; s = strchr(s + 1, '/')) {
      *s = 0;
      if (mkdir(dir, 0755) != 0 && errno != EEXIST) return fail("make the file's folders");
      *s = '/';
    }
    int fd = open(file_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail("create the file to stat");
    close(fd);
  }
  return become_user();
}

static int run_stat(long iters) {
  struct stat st;
  for (long i = 0; i < iters; i++)
    if (stat(file_path, &st) != 0) return fail("stat");
  return 0;
}

static int run_open_close(long iters) {
  for (long i = 0; i < iters; i++) {
    int fd = open(file_path, O_RDONLY);
    if (fd < 0) return fail("open");
    if (close(fd) != 0) return fail("close");
  }
  return 0;
}

// --- SCM_RIGHTS: a descriptor of the file (opened by name) sent over an
// AF_UNIX datagram pair to ourselves, received, and the copy closed, as a
// process pool hands files to its workers.

static int fd_pass_sock[2] = {-1, -1}, fd_pass_file = -1;

static int setup_fd_pass(void) {
  if (setup_file()) return -1;
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fd_pass_sock)) return fail("socketpair(AF_UNIX)");
  fd_pass_file = open(file_path, O_RDONLY | O_CLOEXEC);
  return fd_pass_file < 0 ? fail("open") : 0;
}

static int run_fd_pass(long iters) {
  for (long i = 0; i < iters; i++) {
    union {
      char buf[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } out, in;
    memset(&out, 0, sizeof out);
    char byte = 'f';
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = out.buf, .msg_controllen = sizeof out.buf};
    struct cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd_pass_file, sizeof(int));
    if (sendmsg(fd_pass_sock[0], &m, 0) != 1) return fail("sendmsg");
    struct msghdr r = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = in.buf, .msg_controllen = sizeof in.buf};
    if (recvmsg(fd_pass_sock[1], &r, MSG_CMSG_CLOEXEC) != 1 || !CMSG_FIRSTHDR(&r)) return fail("recvmsg");
    int got;
    memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&r)), sizeof got);
    if (close(got) != 0) return fail("close");
  }
  return 0;
}

static int teardown_fd_pass(void) {
  close(fd_pass_sock[0]);
  close(fd_pass_sock[1]);
  close(fd_pass_file);
  return 0;
}

// --- stat of missing names beside the file, as an import system probes
// its search path: "<folder>/modN/__init__.py" (missing in the middle of
// the path) and "<folder>/modN.py" (missing last), N cycling over 16.

static char missing_paths[16][PATH_MAX];

static int setup_missing(int in_middle) {
  if (setup_file()) return 1;
  char folder[PATH_MAX];
  snprintf(folder, sizeof folder, "%s", file_path);
  char* slash = strrchr(folder, '/');
  if (slash) *slash = 0;
  else snprintf(folder, sizeof folder, ".");
  for (int i = 0; i < 16; i++)
    snprintf(missing_paths[i], PATH_MAX, in_middle ? "%s/lmbench_mod%d/__init__.py" : "%s/lmbench_mod%d.py",
             folder, i);
  return 0;
}
static int setup_missing_middle(void) { return setup_missing(1); }
static int setup_missing_last(void) { return setup_missing(0); }

static int run_stat_missing(long iters) {
  struct stat st;
  for (long i = 0; i < iters; i++)
    if (stat(missing_paths[i & 15], &st) == 0 || errno != ENOENT) return fail("stat of a missing name");
  return 0;
}

// --- select on N descriptors, all of /dev/null, so every one is ready and
// select scans the whole set each call, with a zero timeout.

static int select_n;
static fd_set select_set;
static int select_nfds;

static int setup_select(int n) {
  select_n = n;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 16) {
    rl.rlim_cur = rl.rlim_max < (rlim_t)n + 16 ? rl.rlim_max : (rlim_t)n + 16;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  int base = open("/dev/null", O_RDONLY);
  if (base < 0) return fail("open /dev/null");
  FD_ZERO(&select_set);
  select_nfds = 0;
  for (int i = 0; i < n; i++) {
    int fd = i == 0 ? base : dup(base);
    if (fd < 0) return fail("dup");
    if (fd >= FD_SETSIZE) return failf("descriptor %d beyond FD_SETSIZE", fd);
    FD_SET(fd, &select_set);
    if (fd + 1 > select_nfds) select_nfds = fd + 1;
  }
  return 0;
}

static int setup_select10(void) { return setup_select(10); }
static int setup_select100(void) { return setup_select(100); }
static int setup_select1000(void) { return setup_select(1000); }

static int run_select(long iters) {
  for (long i = 0; i < iters; i++) {
    fd_set rd = select_set;
    struct timeval tv = {0, 0};
    int r = select(select_nfds, &rd, NULL, NULL, &tv);
    if (r < 0) return fail("select");
    if (r != select_n) return failf("select: %d ready, expected %d", r, select_n);
  }
  return 0;
}

// --- process creation. Each operation creates a child, lets it do its part
// and waits for it, as lmbench's lat_proc does.

static const char* sh_path;

static int setup_sh(void) {
  sh_path = env_or("LMBENCH_SH", "/bin/sh");
  if (access(sh_path, X_OK) != 0) return fail(sh_path);
  return 0;
}

static int setup_hello(void) {
  const char* p = getenv("LMBENCH_HELLO");
  if (p && *p) {
    snprintf(prog_path, sizeof prog_path, "%s", p);
  } else {
    const char* slash = strrchr(self_path, '/');
    int dir = slash ? (int)(slash - self_path) : 1;
    snprintf(prog_path, sizeof prog_path, "%.*s/lmbench_hello", dir, slash ? self_path : ".");
  }
  if (access(prog_path, X_OK) != 0) return fail(prog_path);
  return 0;
}

static int run_fork_exit(long iters) {
  for (long i = 0; i < iters; i++) {
    pid_t pid = fork();
    if (pid < 0) return fail("fork");
    if (pid == 0) _exit(0);
    if (wait_child(pid, "fork+exit")) return -1;
  }
  return 0;
}

// The child of a failed exec exits 127; the parent reports the status (the
// errno of an exec that cannot work is caught by access() in setup).
static int spawn(int use_vfork, const char* path, char* const argv[], const char* what) {
  pid_t pid = use_vfork ? vfork() : fork();
  if (pid < 0) return fail(use_vfork ? "vfork" : "fork");
  if (pid == 0) {
    execve(path, argv, environ);
    _exit(127);
  }
  return wait_child(pid, what);
}

static int run_sh(long iters, int use_vfork) {
  char* argv[] = {"sh", "-c", "exit", NULL};
  for (long i = 0; i < iters; i++)
    if (spawn(use_vfork, sh_path, argv, "sh -c exit")) return -1;
  return 0;
}

static int run_fork_sh(long iters) { return run_sh(iters, 0); }
static int run_vfork_sh(long iters) { return run_sh(iters, 1); }

static int run_execve(long iters, int use_vfork) {
  char* argv[] = {"lmbench_hello", NULL};
  for (long i = 0; i < iters; i++)
    if (spawn(use_vfork, prog_path, argv, "execve")) return -1;
  return 0;
}

static int run_fork_execve(long iters) { return run_execve(iters, 0); }
static int run_vfork_execve(long iters) { return run_execve(iters, 1); }

// --- ping-pong latency: one byte there and back per operation (a round
// trip, as lmbench reports it) between this process and a partner process.
//
// The partner is this program again, started by vfork+execve with the
// descriptors it serves on its command line (fork+execve where there is no
// vfork), not a plain fork: a no-MMU kernel has no fork, and the steady
// state being timed is the same either way.

static int echo_loop(int in, int out) {
  char c;
  for (;;) {
    ssize_t r = read(in, &c, 1);
    if (r == 0) return 0;
    if (r < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (write(out, &c, 1) != 1) return 1;
  }
}

// Pipe bandwidth's partner: 64 KiB chunks without pause until the reader
// closes (EPIPE; SIGPIPE is ignored, inherited from the parent).
#define BW_CHUNK (64 * 1024)
static char bw_buf[BW_CHUNK];

static int write_loop(int out) {
  memset(bw_buf, 'b', sizeof bw_buf);
  for (;;)
    if (write(out, bw_buf, sizeof bw_buf) < 0 && errno != EINTR) return 0;
}

// Starts "lmbench_rows <mode> <fd>...": the partner closes the descriptors
// after "--", which are the parent's ends.
static int start_partner(const char* mode, const int* serve, int nserve, const int* ours,
                         int nours) {
  char nums[8][16];
  char* argv[12];
  int n = 0;
  argv[n++] = "lmbench_rows";
  argv[n++] = (char*)mode;
  for (int i = 0; i < nserve; i++) {
    snprintf(nums[i], sizeof nums[i], "%d", serve[i]);
    argv[n++] = nums[i];
  }
  argv[n++] = "--";
  for (int i = 0; i < nours; i++) {
    snprintf(nums[nserve + i], sizeof nums[0], "%d", ours[i]);
    argv[n++] = nums[nserve + i];
  }
  argv[n] = NULL;
  fflush(stdout);
  // A vfork child shares our memory until it execs, so it can leave the
  // errno of a failed exec here for the parent to report.
  static volatile int exec_errno;
  exec_errno = 0;
  pid_t pid = vfork();
  if (pid < 0 && errno == ENOSYS) pid = fork();
  if (pid < 0) return fail("vfork and fork");
  if (pid == 0) {
    execve(self_path, argv, environ);
    exec_errno = errno;
    _exit(127);
  }
  if (exec_errno) {
    waitpid(pid, NULL, 0);
    return fail_err("execve of the partner", exec_errno);
  }
  partner = pid;
  return 0;
}

static int signal_partner(void);

static int partner_main(int argc, char** argv) {
  int fds[4], n = 0, i = 2;
  for (; i < argc && strcmp(argv[i], "--") != 0 && n < 4; i++) fds[n++] = atoi(argv[i]);
  for (i++; i < argc; i++) close(atoi(argv[i]));
  if (strcmp(argv[1], "partner-echo") == 0 && n == 2) return echo_loop(fds[0], fds[1]);
  if (strcmp(argv[1], "partner-write") == 0 && n == 1) return write_loop(fds[0]);
  if (strcmp(argv[1], "partner-signal") == 0 && n == 0) return signal_partner();
  return 2;
}

static int setup_pipe_lat(void) {
  int there[2], back[2];
  if (pipe(there) || pipe(back)) return fail("pipe");
  int serve[] = {there[0], back[1]}, ours[] = {there[1], back[0]};
  if (start_partner("partner-echo", serve, 2, ours, 2)) return -1;
  close(there[0]);
  close(back[1]);
  fd_a = there[1];
  fd_b = back[0];
  return 0;
}

static int setup_unix_lat(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return fail("socketpair(AF_UNIX)");
  int serve[] = {sv[1], sv[1]}, ours[] = {sv[0]};
  if (start_partner("partner-echo", serve, 2, ours, 1)) return -1;
  close(sv[1]);
  fd_a = fd_b = sv[0];
  return 0;
}

// TCP over loopback: a connection to ourselves, accepted, the accepted end
// handed to the partner; Nagle off on both ends, as lmbench's lat_tcp.
static int setup_tcp_lat(void) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) return fail("socket(AF_INET)");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (bind(l, (struct sockaddr*)&a, sizeof a) || listen(l, 1) || getsockname(l, (struct sockaddr*)&a, &alen))
    return fail("bind/listen on 127.0.0.1");
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (struct sockaddr*)&a, sizeof a)) return fail("connect to 127.0.0.1");
  int s = accept(l, NULL, NULL);
  if (s < 0) return fail("accept");
  close(l);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int serve[] = {s, s}, ours[] = {c};
  if (start_partner("partner-echo", serve, 2, ours, 1)) return -1;
  close(s);
  fd_a = fd_b = c;
  return 0;
}

static int run_ping_pong(long iters) {
  char c = 'x';
  for (long i = 0; i < iters; i++) {
    if (write_full(fd_a, &c, 1)) return -1;
    if (read_full(fd_b, &c, 1)) return -1;
  }
  return 0;
}

// Closing our ends makes the partner read EOF and exit.
static int teardown_partner(void) {
  if (fd_a >= 0) close(fd_a);
  if (fd_b >= 0 && fd_b != fd_a) close(fd_b);
  fd_a = fd_b = -1;
  if (partner > 0) {
    pid_t p = partner;
    partner = -1;
    return wait_child(p, "partner");
  }
  return 0;
}

// --- pipe bandwidth: the partner writes 64 KiB chunks without pause; one
// operation is reading one chunk's worth. The driver turns the time into
// MiB/s.

static int setup_pipe_bw(void) {
  int p[2];
  if (pipe(p)) return fail("pipe");
  int serve[] = {p[1]}, ours[] = {p[0]};
  if (start_partner("partner-write", serve, 1, ours, 1)) return -1;
  close(p[1]);
  fd_a = p[0];
  return 0;
}

static int setup_unix_bw(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return fail("socketpair(AF_UNIX)");
  int serve[] = {sv[1]}, ours[] = {sv[0]};
  if (start_partner("partner-write", serve, 1, ours, 1)) return -1;
  close(sv[1]);
  fd_a = sv[0];
  return 0;
}

static int run_pipe_bw(long iters) {
  for (long i = 0; i < iters; i++)
    if (read_full(fd_a, bw_buf, sizeof bw_buf)) return -1;
  return 0;
}

static int teardown_pipe_bw(void) {
  close(fd_a);
  fd_a = -1;
  pid_t p = partner;
  partner = -1;
  int st;
  while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 127) return failf("partner: execve %s failed", self_path);
  return 0;
}

// --- signals: delivery cost. sig-self is lmbench's lat_sig "catch": a
// signal sent to oneself, its handler run and returned from. sig-pingpong
// is a round trip between two processes: SIGUSR1 there, SIGUSR2 back, each
// side waiting in sigsuspend with the signal otherwise blocked.

static volatile sig_atomic_t sig_seen;
static void on_sig(int s) {
  (void)s;
  sig_seen++;
}

static int catch_signal(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sig;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL) ? fail("sigaction") : 0;
}

static int setup_sig_self(void) { return catch_signal(SIGUSR1); }

static int run_sig_self(long iters) {
  pid_t me = getpid();
  for (long i = 0; i < iters; i++)
    if (kill(me, SIGUSR1)) return fail("kill");
  return 0;
}

static sigset_t sig_wait_mask;  // what sigsuspend waits with: all but the answer blocked

static int block_usr_signals(int answer) {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGUSR2);
  if (sigprocmask(SIG_BLOCK, &block, &sig_wait_mask)) return fail("sigprocmask");
  sigdelset(&sig_wait_mask, answer);
  return catch_signal(answer);
}

static int setup_sig_pingpong(void) {
  if (block_usr_signals(SIGUSR2)) return -1;
  if (start_partner("partner-signal", NULL, 0, NULL, 0)) return -1;
  sigsuspend(&sig_wait_mask);  // the partner is ready
  return 0;
}

static int run_sig_pingpong(long iters) {
  for (long i = 0; i < iters; i++) {
    if (kill(partner, SIGUSR1)) return fail("kill");
    sigsuspend(&sig_wait_mask);
  }
  return 0;
}

static int signal_partner(void) {
  if (block_usr_signals(SIGUSR1)) return 1;
  pid_t parent = getppid();
  for (;;) {
    if (kill(parent, SIGUSR2)) return 1;
    sigsuspend(&sig_wait_mask);
  }
}

static int teardown_sig_pingpong(void) {
  pid_t p = partner;
  partner = -1;
  kill(p, SIGKILL);
  int st;
  while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
  }
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGUSR1);
  sigaddset(&unblock, SIGUSR2);
  sigprocmask(SIG_UNBLOCK, &unblock, NULL);
  return 0;
}

// --- thread create + join.

static void* thread_body(void* arg) { return arg; }

static int run_thread(long iters) {
  for (long i = 0; i < iters; i++) {
    pthread_t t;
    int e = pthread_create(&t, NULL, thread_body, NULL);
    if (e) return fail_err("pthread_create", e);
    e = pthread_join(t, NULL);
    if (e) return fail_err("pthread_join", e);
  }
  return 0;
}

// --- mmap + munmap of 1 MiB of anonymous memory, written every 16 KiB
// (lmbench's stride) so the mapping is really populated, not just reserved.

#define MMAP_SIZE (1024 * 1024)

static int run_mmap(long iters) {
  for (long i = 0; i < iters; i++) {
    char* p = mmap(NULL, MMAP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fail("mmap");
    for (size_t off = 0; off < MMAP_SIZE; off += 16 * 1024) ((volatile char*)p)[off] = 1;
    if (munmap(p, MMAP_SIZE)) return fail("munmap");
  }
  return 0;
}

// ---------------------------------------------------------------- table

struct row {
  const char* name;
  long iters;  // default operations per pass (sized for native speed)
  int (*setup)(void);
  int (*run)(long iters);
  int (*teardown)(void);
};

static const struct row rows[] = {
    {"select-10", 20000, setup_select10, run_select, NULL},
    {"select-100", 5000, setup_select100, run_select, NULL},
    {"select-1000", 500, setup_select1000, run_select, NULL},
    {"syscall", 100000, setup_syscall, run_syscall, NULL},
    {"read", 100000, setup_read, run_read, NULL},
    {"write", 100000, setup_write, run_write, NULL},
    {"stat", 50000, setup_file, run_stat, NULL},
    {"open-close", 20000, setup_file, run_open_close, NULL},
    {"stat-missing", 50000, setup_missing_middle, run_stat_missing, NULL},
    {"stat-absent", 50000, setup_missing_last, run_stat_missing, NULL},
    {"fork-exit", 300, NULL, run_fork_exit, NULL},
    {"fork-sh", 100, setup_sh, run_fork_sh, NULL},
    {"vfork-sh", 100, setup_sh, run_vfork_sh, NULL},
    {"fork-execve", 200, setup_hello, run_fork_execve, NULL},
    {"vfork-execve", 200, setup_hello, run_vfork_execve, NULL},
    {"getpid", 100000, setup_getpid, run_getpid, NULL},
    {"getpid-seccomp", 100000, setup_getpid_filtered, run_getpid, NULL},
    {"pipe-lat", 10000, setup_pipe_lat, run_ping_pong, teardown_partner},
    {"pipe-bw", 2000, setup_pipe_bw, run_pipe_bw, teardown_pipe_bw},
    {"unix-lat", 10000, setup_unix_lat, run_ping_pong, teardown_partner},
    {"unix-bw", 2000, setup_unix_bw, run_pipe_bw, teardown_pipe_bw},
    {"fd-pass", 20000, setup_fd_pass, run_fd_pass, teardown_fd_pass},
    {"tcp-lat", 10000, setup_tcp_lat, run_ping_pong, teardown_partner},
    {"sig-self", 50000, setup_sig_self, run_sig_self, NULL},
    {"sig-pingpong", 10000, setup_sig_pingpong, run_sig_pingpong, teardown_sig_pingpong},
    {"thread", 2000, NULL, run_thread, NULL},
    {"mmap", 300, NULL, run_mmap, NULL},
};

// ---------------------------------------------------------------- timing

// CLOCK_MONOTONIC through the vDSO where there is one (flatux lets the vDSO
// run untrapped), so reading the clock stays out of what is measured.
static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int measure(const struct row* r, long iters, int reps) {
  if (r->setup && r->setup()) goto skipped;
  double us[1000];
  for (int pass = -1; pass < reps; pass++) {  // pass -1 warms up, uncounted
    double t0 = now_us();
    int rc = r->run(iters);
    double t1 = now_us();
    if (rc) {
      if (r->teardown) r->teardown();
      goto skipped;
    }
    if (pass >= 0) us[pass] = (t1 - t0) / (double)iters;
  }
  if (r->teardown && r->teardown()) goto skipped;
  qsort(us, (size_t)reps, sizeof us[0], cmp_double);
  double median = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
  printf("%s %.4f %.4f\n", r->name, us[0], median);
  return 0;
skipped:
  // One line, whatever the message held.
  for (char* p = why; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  printf("%s skipped %s\n", r->name, why[0] ? why : "unknown error");
  return 0;
}

// ---------------------------------------------------------------- idle

static int idle_main(void) {
  // write(2), not stdio: the first line must leave at once, and its timing
  // must not include stdio's set-up of a buffer.
  static const char ready[] = "@@ready\n";
  if (write(1, ready, sizeof ready - 1) != (ssize_t)sizeof ready - 1) return 1;
  printf("@@maps\n");
  FILE* f = fopen("/proc/self/maps", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) fputs(line, stdout);
    fclose(f);
  }
  printf("@@end\n");
  fflush(stdout);
  char c;
  for (;;) {
    ssize_t r = read(0, &c, 1);
    if (r == 0 || (r < 0 && errno != EINTR)) break;
  }
  if (getpid() == 1) {
    sync();
    reboot(RB_POWER_OFF);
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: lmbench_rows ROW [ITERS [REPS<=1000]] | lmbench_rows list | lmbench_rows idle\n"
          "rows:");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) fprintf(stderr, " %s", rows[i].name);
  fprintf(stderr, "\n");
}

int main(int argc, char** argv) {
  // The partner re-executes this program; without a path in argv[0] the
  // kernel's name for it is the next best.
  static char exe[PATH_MAX];
  self_path = argv[0] ? argv[0] : "lmbench_rows";
  if (!strchr(self_path, '/')) {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = 0;
      self_path = exe;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  // A partner that died must show as an error from write, not kill us.
  signal(SIGPIPE, SIG_IGN);
  if (argc >= 2 && strncmp(argv[1], "partner-", 8) == 0) return partner_main(argc, argv);
  if (argc < 2 || argc > 4) {
    usage();
    return 2;
  }
  if (strcmp(argv[1], "idle") == 0) return idle_main();
  if (strcmp(argv[1], "list") == 0) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
      printf("%s %ld\n", rows[i].name, rows[i].iters);
    return 0;
  }
  const struct row* r = NULL;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (strcmp(argv[1], rows[i].name) == 0) r = &rows[i];
  if (!r) {
    usage();
    return 2;
  }
  long iters = argc > 2 ? strtol(argv[2], NULL, 0) : r->iters;
  int reps = argc > 3 ? (int)strtol(argv[3], NULL, 0) : 5;
  if (iters < 1 || reps < 1 || reps > 1000) {
    usage();
    return 2;
  }
  return measure(r, iters, reps);
}
