// A hostile guest that owns the kernel. It finds a `syscall; ret` in host
// text through the kernel heap (gadget.h), proves the gadget reaches the
// host (the host's getpid, which attack.py compares with flatux's pid),
// then asks the host kernel directly for everything flatux's command line
// did not grant: host files outside the root, host processes, mounts, BPF,
// capabilities, the host network with --net=none. Each must be refused.
//
// In `heap` mode it first rewrites the kernel's own state: its credentials
// to root, --net=none off, and the root filesystem moved to the host's "/".
// The kernel is corrupted at will (that is possible by design); the host
// must still refuse.
//
// Everything comes from the environment (a booted init gets NAME=VALUE
// words of the kernel command line the same way):
//   ATTACK_MODE        gadget | heap
//   ATTACK_MARKER      host file outside the root holding a secret
//   ATTACK_VICTIM      host file outside the root that must not change
//   ATTACK_OUTSIDE     host folder outside the root (nothing may appear in it)
//   ATTACK_JAIL        host path of the guest's root folder
//   ATTACK_VICTIM_PID  a host process that must not be signalled or traced
//   ATTACK_UNIX        host AF_UNIX listener outside the root
//   ATTACK_ABSTRACT    host abstract AF_UNIX listener name (without the NUL)
//   ATTACK_TCP_PORT, ATTACK_UDP_PORT  host listeners on 127.0.0.1
//   ATTACK_NET_NONE    1 when flatux runs with --net=none
//   ATTACK_LAYOUT      heap mode: offsets printed by heap_layout
//   ATTACK_HOSTFS_AT   heap mode: where to mount hostfs when the root is not
//   ATTACK_POWEROFF    1: power off at the end (a booted init)
//   ATTACK_FORK        1: attack from a fork()ed child, a host process of its own
//   ATTACK_RO_IMAGE    host path of an image flatux was given read-only (ubd1r=)
//   ATTACK_STDIN_FILE  1: flatux's standard input is a host file outside the root
//
// Output: "GADGET host_pid=N host_ppid=M", then one line per probe: "denied NAME: ..."
// or "ESCAPED NAME: ...". Exit 0 when every probe was refused, 1 when one
// was not, 2 when no gadget was found (the test proves nothing then).
#include "gadget.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_userfaultfd
#define SYS_userfaultfd 323
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

static int escapes, probes;

static const char* env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

static const char* err_name(long r) {
  return r < 0 ? strerror((int)-r) : "success";
}

// Which refusals count: the sandbox answers EPERM (seccomp) or EACCES
// (Landlock); a path that does not exist in the host process's own mount
// namespace is ENOENT; a read-only mount of it there, EROFS; a host
// process outside the run's pid namespace, ESRCH; an abstract name outside
// its network namespace, ECONNREFUSED; an address of the host's network
// from an empty network namespace, ENETUNREACH.
enum { kPerm = 1, kAcces = 2, kNoent = 4, kRofs = 8, kSrch = 16, kConnRefused = 32, kUnreach = 64, kAgain = 128,
       kNomem = 256 };

static int refused(long r, int how) {
  return (r == -EPERM && (how & kPerm)) || (r == -EACCES && (how & kAcces)) ||
         (r == -ENOENT && (how & kNoent)) || (r == -EROFS && (how & kRofs)) || (r == -ESRCH && (how & kSrch)) ||
         (r == -ECONNREFUSED && (how & kConnRefused)) ||
         (r == -ENETUNREACH && (how & kUnreach)) || (r == -EAGAIN && (how & kAgain)) ||
         (r == -ENOMEM && (how & kNomem));
}

__attribute__((format(printf, 4, 5))) static int verdict(const char* name, long r, int how,
                                                          const char* fmt, ...) {
  probes++;
  char detail[256] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
  }
  int ok = refused(r, how);
  if (!ok) escapes++;
  printf("%s %s: %s%s%s\n", ok ? "denied" : "ESCAPED", name, err_name(r), *detail ? "; " : "",
         detail);
  fflush(stdout);
  return ok;
}

static void gclose(long fd) {
  if (fd >= 0) gadget_sys(SYS_close, fd);
}

static void path_in(char* out, size_t n, const char* dir, const char* name) {
  snprintf(out, n, "%s/%s", dir, name);
}

// ---- host files outside the root -------------------------------------------

// A probe that opened something (`fd`) escaped only if it can read it too.
static void read_or_refused(const char* name, long fd, int how) {
  if (fd < 0) {
    verdict(name, fd, how, NULL);
    return;
  }
  char buf[64];
  long n = gadget_sys(SYS_read, fd, buf, sizeof buf);
  gclose(fd);
  verdict(name, n < 0 ? n : 0, how, "read %ld bytes", n);
}

static void probe_files(void) {
  const char* marker = env("ATTACK_MARKER");
  const char* victim = env("ATTACK_VICTIM");
  const char* outside = env("ATTACK_OUTSIDE");
  char p[4096], q[4096];
  int how = kPerm | kAcces | kNoent;

  long fd = gadget_sys(SYS_openat, AT_FDCWD, marker, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[128] = "";
    long n = gadget_sys(SYS_read, fd, buf, sizeof buf - 1);
    gclose(fd);
    verdict("open-read", fd, how, "read %ld bytes: %.40s", n, buf);
  } else {
    verdict("open-read", fd, how, NULL);
  }

  long opath = gadget_sys(SYS_openat, AT_FDCWD, marker, O_PATH | O_CLOEXEC);
  if (opath >= 0) {
    snprintf(p, sizeof p, "/proc/self/fd/%ld", opath);
    long again = gadget_sys(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
    gclose(again);
    verdict("o_path-reopen", again, how, NULL);
    long r = gadget_sys(SYS_fchmodat2, opath, "", 0777, AT_EMPTY_PATH);
    verdict("o_path-fchmodat2", r, how, NULL);
    r = gadget_sys(SYS_fchownat, opath, "", 1, 1, AT_EMPTY_PATH);
    verdict("o_path-fchownat", r, how, NULL);
    gclose(opath);
  } else {
    verdict("o_path-open", opath, how, NULL);
  }

  fd = gadget_sys(SYS_openat, AT_FDCWD, victim, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd >= 0) gadget_sys(SYS_write, fd, "ESCAPED\n", 8);
  gclose(fd);
  verdict("open-write", fd, how, NULL);

  path_in(p, sizeof p, outside, "created");
  fd = gadget_sys(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  gclose(fd);
  verdict("create", fd, how, NULL);

  verdict("truncate", gadget_sys(SYS_truncate, victim, 0), how, NULL);
  verdict("chmod", gadget_sys(SYS_fchmodat, AT_FDCWD, victim, 0777), how, NULL);
  verdict("chown", gadget_sys(SYS_fchownat, AT_FDCWD, victim, 1, 1, 0), how, NULL);
  struct timespec epoch[2] = {{0, 0}, {0, 0}};
  verdict("utimensat", gadget_sys(SYS_utimensat, AT_FDCWD, victim, epoch, 0), how, NULL);
  verdict("setxattr", gadget_sys(SYS_setxattr, victim, "user.flatux_attack", "x", 1, 0), how, NULL);
  path_in(p, sizeof p, outside, "renamed");
  verdict("rename", gadget_sys(SYS_renameat2, AT_FDCWD, victim, AT_FDCWD, p, 0), how, NULL);
  path_in(p, sizeof p, outside, "hardlink");
  verdict("link", gadget_sys(SYS_linkat, AT_FDCWD, victim, AT_FDCWD, p, 0), how, NULL);
  path_in(p, sizeof p, outside, "symlink");
  verdict("symlink", gadget_sys(SYS_symlinkat, "target", AT_FDCWD, p), how, NULL);
  path_in(p, sizeof p, outside, "dir");
  verdict("mkdir", gadget_sys(SYS_mkdirat, AT_FDCWD, p, 0755), how, NULL);
  path_in(p, sizeof p, outside, "fifo");
  verdict("mknod-fifo", gadget_sys(SYS_mknodat, AT_FDCWD, p, S_IFIFO | 0600, 0), how, NULL);
  verdict("unlink", gadget_sys(SYS_unlinkat, AT_FDCWD, victim, 0), how, NULL);

  // An image granted read-only: readable, never writable.
  const char* image = env("ATTACK_RO_IMAGE");
  if (*image) {
    int ro = kPerm | kAcces | kRofs;
    fd = gadget_sys(SYS_openat, AT_FDCWD, image, O_RDWR | O_CLOEXEC);
    if (fd >= 0) gadget_sys(SYS_pwrite64, fd, "ESCAPED\n", 8, 0);
    gclose(fd);
    verdict("ro-image-open-write", fd, ro, NULL);
    verdict("ro-image-truncate", gadget_sys(SYS_truncate, image, 0), ro, NULL);
    verdict("ro-image-chmod", gadget_sys(SYS_fchmodat, AT_FDCWD, image, 0777), ro, NULL);
  }

  // Another process's view of the host's root.
  snprintf(q, sizeof q, "/proc/%s/root%s", env("ATTACK_VICTIM_PID"), marker);
  fd = gadget_sys(SYS_openat, AT_FDCWD, q, O_RDONLY | O_CLOEXEC);
  gclose(fd);
  verdict("proc-pid-root", fd, how, NULL);

  // flatux's standard input is a host file outside the root, handed over
  // to be read: its magic link must not reopen it for writing.
  if (atoi(env("ATTACK_STDIN_FILE"))) {
    fd = gadget_sys(SYS_openat, AT_FDCWD, "/proc/self/fd/0", O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd >= 0) gadget_sys(SYS_write, fd, "ESCAPED\n", 8);
    gclose(fd);
    verdict("stdin-reopen-write", fd, how, NULL);
  }

  // What the host's /proc tells of other processes and of the host itself
  // without any ptrace check: their command lines (passwords are passed
  // that way), the host network's sockets, the kernel's settings.
  const char* host_proc[] = {"cmdline", "status", "environ", NULL};
  for (int i = 0; host_proc[i]; i++) {
    snprintf(q, sizeof q, "/proc/%s/%s", env("ATTACK_VICTIM_PID"), host_proc[i]);
    fd = gadget_sys(SYS_openat, AT_FDCWD, q, O_RDONLY | O_CLOEXEC);
    char name[32];
    snprintf(name, sizeof name, "proc-pid-%s", host_proc[i]);
    read_or_refused(name, fd, how);
  }
  read_or_refused("proc-1-cmdline", gadget_sys(SYS_openat, AT_FDCWD, "/proc/1/cmdline", O_RDONLY | O_CLOEXEC), how);
  read_or_refused("proc-net-unix", gadget_sys(SYS_openat, AT_FDCWD, "/proc/net/unix", O_RDONLY | O_CLOEXEC), how);
  read_or_refused("proc-sys", gadget_sys(SYS_openat, AT_FDCWD, "/proc/sys/kernel/hostname", O_RDONLY | O_CLOEXEC),
                  how);
}

// ---- the host network and host sockets -------------------------------------

static void probe_unix(void) {
  long s = gadget_sys(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    verdict("unix-socket", s, kPerm | kAcces, NULL);
    return;
  }
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", env("ATTACK_UNIX"));
  long r = gadget_sys(SYS_connect, s, &a, sizeof a);
  verdict("unix-path-connect", r, kPerm | kAcces | kNoent, "%s", a.sun_path);
  gclose(s);

  s = gadget_sys(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  const char* name = env("ATTACK_ABSTRACT");
  size_t len = strlen(name);
  memcpy(a.sun_path + 1, name, len);
  r = gadget_sys(SYS_connect, s, &a, offsetof(struct sockaddr_un, sun_path) + 1 + len);
  verdict("unix-abstract-connect", r, kPerm | kAcces | kNoent | kConnRefused, NULL);
  gclose(s);
}

static void probe_inet(void) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)atoi(env("ATTACK_TCP_PORT")));
  long s = gadget_sys(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s >= 0) {
    long r = gadget_sys(SYS_connect, s, &a, sizeof a);
    verdict("tcp-connect", r, kPerm | kAcces | kUnreach, "127.0.0.1:%s", env("ATTACK_TCP_PORT"));
    gclose(s);
  } else {
    verdict("tcp-socket", s, kPerm | kAcces, NULL);
  }
  a.sin_port = htons((uint16_t)atoi(env("ATTACK_UDP_PORT")));
  s = gadget_sys(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s >= 0) {
    long r = gadget_sys(SYS_sendto, s, "ESCAPED", 7, 0, &a, sizeof a);
    verdict("udp-sendto", r, kPerm | kAcces | kUnreach, NULL);
    gclose(s);
  } else {
    verdict("udp-socket", s, kPerm | kAcces, NULL);
  }
}

// ---- host processes --------------------------------------------------------

static void probe_processes(void) {
  long victim = atol(env("ATTACK_VICTIM_PID"));
  int how = kPerm | kAcces | kSrch;
  verdict("kill", gadget_sys(SYS_kill, victim, SIGTERM), how, "pid %ld", victim);
  verdict("tgkill", gadget_sys(SYS_tgkill, victim, victim, SIGTERM), how, NULL);
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = SIGTERM;
  si.si_code = SI_QUEUE;
  verdict("rt_sigqueueinfo", gadget_sys(SYS_rt_sigqueueinfo, victim, SIGTERM, &si), how, NULL);
  long pfd = gadget_sys(SYS_pidfd_open, victim, 0);
  if (pfd >= 0) {
    verdict("pidfd_send_signal", gadget_sys(SYS_pidfd_send_signal, pfd, SIGTERM, NULL, 0), how, NULL);
    gclose(pfd);
  } else {
    verdict("pidfd_open", pfd, how, NULL);
  }
  verdict("kill-init-probe", gadget_sys(SYS_kill, 1, 0), how, NULL);

  long r = gadget_sys(SYS_ptrace, PTRACE_SEIZE, victim, 0, 0);
  if (r == 0) gadget_sys(SYS_ptrace, PTRACE_DETACH, victim, 0, 0);
  verdict("ptrace-seize", r, how, NULL);
  char local = 0;
  struct iovec lv = {&local, 1}, rv = {(void*)0x1000, 1};
  // A permitted call reaches the address and says EFAULT.
  verdict("process_vm_readv", gadget_sys(SYS_process_vm_readv, victim, &lv, 1, &rv, 1, 0), how, NULL);
  // Scheduling calls: no layer but the pid namespace scopes them (a host
  // process of the same user holding no capability flatux lacks can be
  // reniced downwards or pinned; the victim here is root's, which the
  // user namespace keeps out of reach too). Each is set to what it is, so
  // nothing changes.
  long prio = gadget_sys(SYS_getpriority, PRIO_PROCESS, victim);
  long set = prio >= 0 ? gadget_sys(SYS_setpriority, PRIO_PROCESS, victim, 20 - prio) : prio;
  verdict("setpriority-host", set, how, "getpriority %s", prio >= 0 ? "allowed" : err_name(prio));
  unsigned long mask[16];
  long n = gadget_sys(SYS_sched_getaffinity, victim, sizeof mask, mask);
  set = n > 0 ? gadget_sys(SYS_sched_setaffinity, victim, n, mask) : n;
  verdict("sched_setaffinity-host", set, how, NULL);
  char p[64];
  snprintf(p, sizeof p, "/proc/%ld/mem", victim);
  long fd = gadget_sys(SYS_openat, AT_FDCWD, p, O_RDWR | O_CLOEXEC);
  gclose(fd);
  verdict("proc-pid-mem", fd, how | kNoent, NULL);
}

// ---- set-id bits and foreign owners in the grant itself ---------------------

// The sealed table of open_how entries the filter takes for openat2
// (src/host/open_how_table.h): where it lies and its "." path.
#define OPEN_HOW_TABLE 0x7dfffff00000ull
#define OPEN_HOW_TABLE_SIZE (5 * 4096)
#define OPEN_HOW_SEALED_DOT (OPEN_HOW_TABLE + OPEN_HOW_TABLE_SIZE - 32)

// Rewriting the table, or putting other memory in its place, would make an
// openat2 that creates pass: every way must fail, and the first entry must
// still be what it was.
static void probe_open_how_table(const char* path, const void* how, size_t size) {
  uintptr_t t = OPEN_HOW_TABLE;
  uint64_t before[4];
  memcpy(before, (const void*)t, sizeof before);
  int how_refused = kPerm | kAcces;
  verdict("open-how-table-mprotect", gadget_sys(SYS_mprotect, t, 4096, PROT_READ | PROT_WRITE), how_refused, NULL);
  verdict("open-how-table-munmap", gadget_sys(SYS_munmap, t, 4096), how_refused, NULL);
  long m = gadget_sys(SYS_mmap, t, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  verdict("open-how-table-mmap-over", m == (long)t ? 0 : m, how_refused, NULL);
  long r = gadget_sys(SYS_mremap, t, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, t + 4096 * 64);
  verdict("open-how-table-mremap", r, how_refused, NULL);
  // Dropping the pages of a shared mapping only drops this view of them
  // (the check below reads them again); punching them out must fail.
  gadget_sys(SYS_madvise, t, 4096, MADV_DONTNEED);
  verdict("open-how-table-madvise-remove", gadget_sys(SYS_madvise, t, 4096, MADV_REMOVE), how_refused, NULL);
  long memfd = gadget_sys(SYS_openat, AT_FDCWD, "/proc/self/mem", O_RDWR | O_CLOEXEC);
  long w = memfd;
  if (memfd >= 0) {
    w = gadget_sys(SYS_pwrite64, memfd, how, size, t);
    if (w == -EFAULT || w == -EIO) w = -EPERM;  // the host would not write a shared read-only page
    gclose(memfd);
  }
  verdict("open-how-table-proc-mem", w, how_refused | kNoent, NULL);
  // Pointing openat2 at a copy, or inside an entry, is refused too.
  long fd = gadget_sys(SYS_openat2, AT_FDCWD, path, t + 8, 24);
  gclose(fd);
  verdict("open-how-table-inside-an-entry", fd, kPerm, NULL);
  uint64_t after[4];
  memcpy(after, (const void*)t, sizeof after);
  verdict("open-how-table-unchanged", memcmp(before, after, sizeof before) == 0 ? -EPERM : 0, kPerm, NULL);
}

// The jail's private mount is nosuid, but the host's own mount of the same
// files is not: a set-uid file planted in the grant is one on the host.
// attack.py also looks at every file of the jail afterwards.
static void probe_plant(void) {
  const char* jail = env("ATTACK_JAIL");
  char p[4096];
  int how = kPerm | kAcces | kRofs;
  path_in(p, sizeof p, jail, "planted-open");
  long fd = gadget_sys(SYS_openat, AT_FDCWD, p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 04755);
  gclose(fd);
  verdict("plant-open-setuid", fd, how, NULL);
  path_in(p, sizeof p, jail, "planted-chmod");
  fd = gadget_sys(SYS_openat, AT_FDCWD, p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0755);
  if (fd >= 0) {
    verdict("plant-fchmod-setuid", gadget_sys(SYS_fchmod, fd, 04755), how, NULL);
    verdict("plant-fchmod-setgid", gadget_sys(SYS_fchmod, fd, 02755), how, NULL);
    // S_ISGID passes only through the sealed "." (folders): from a file's
    // descriptor that is ENOTDIR, never a set-group-ID file.
    long r = gadget_sys(SYS_fchmodat, fd, (long)OPEN_HOW_SEALED_DOT, 02755);
    verdict("plant-fchmodat-setgid-through-the-sealed-dot", r == -ENOTDIR ? -EPERM : r, how,
            r == -ENOTDIR ? "ENOTDIR: it names folders only" : NULL);
    // Known open: a foreign owner (the kernel gives guest users' FIFOs
    // and links their owner on the host). Said, not counted; undone.
    printf("info fchown to a foreign owner in the grant: %s\n", err_name(gadget_sys(SYS_fchown, fd, 4242, 4242)));
    gadget_sys(SYS_fchown, fd, gadget_sys(SYS_geteuid), gadget_sys(SYS_getegid));
    gclose(fd);
  } else {
    printf("info creating %s: %s\n", p, err_name(fd));
  }
  path_in(p, sizeof p, jail, "inside");
  verdict("plant-fchmodat-setuid", gadget_sys(SYS_fchmodat, AT_FDCWD, p, 04755), how, NULL);
  verdict("plant-fchmodat-setgid", gadget_sys(SYS_fchmodat, AT_FDCWD, p, 02755), how, NULL);
  path_in(p, sizeof p, jail, "planted-dir");
  verdict("plant-mkdir-setuid", gadget_sys(SYS_mkdirat, AT_FDCWD, p, 04755), how, NULL);
  path_in(p, sizeof p, jail, "planted-dev");
  verdict("plant-mknod-device", gadget_sys(SYS_mknodat, AT_FDCWD, p, S_IFCHR | 0666, makedev(1, 3)), how, NULL);
  // openat2 passes its mode in memory: the filter takes only pointers to
  // entries of a sealed table, none of which creates.
  struct {
    uint64_t flags, mode, resolve;
  } how2 = {O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 04755, 0};
  path_in(p, sizeof p, jail, "planted-openat2");
  fd = gadget_sys(SYS_openat2, AT_FDCWD, p, &how2, sizeof how2);
  gclose(fd);
  verdict("plant-openat2-setuid", fd, how, NULL);
  probe_open_how_table(p, &how2, sizeof how2);
}

// ---- the whole host granted read-only (--ro with the root /) ----------------

// Everything is readable; nothing of a host file may change, metadata
// included (Landlock covers none of chmod, chown, utimes, xattrs: the
// read-only private mounts must).
static void probe_whole_host_ro(void) {
  const char* victim = env("ATTACK_VICTIM");
  int how = kPerm | kAcces | kRofs;
  verdict("ro-chmod-setuid", gadget_sys(SYS_fchmodat, AT_FDCWD, victim, 04755), how, NULL);
  verdict("ro-chown", gadget_sys(SYS_fchownat, AT_FDCWD, victim, 1, 1, 0), how, NULL);
  struct timespec epoch[2] = {{0, 0}, {0, 0}};
  verdict("ro-utimensat", gadget_sys(SYS_utimensat, AT_FDCWD, victim, epoch, 0), how, NULL);
  verdict("ro-setxattr", gadget_sys(SYS_setxattr, victim, "user.flatux_attack", "x", 1, 0), how, NULL);
  long fd = gadget_sys(SYS_openat, AT_FDCWD, victim, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd >= 0) gadget_sys(SYS_write, fd, "ESCAPED\n", 8);
  gclose(fd);
  verdict("ro-open-write", fd, how, NULL);
  long opath = gadget_sys(SYS_openat, AT_FDCWD, victim, O_RDONLY | O_CLOEXEC);
  if (opath >= 0) {
    verdict("ro-fchmod", gadget_sys(SYS_fchmod, opath, 04777), how, NULL);
    verdict("ro-fchown", gadget_sys(SYS_fchown, opath, 1, 1), how, NULL);
    gclose(opath);
  } else {
    printf("info opening %s to read: %s\n", victim, err_name(opath));
  }
}

// ---- host processes that outlive the run ------------------------------------

// The one shape of host process the filter takes (src/host/entry.h's
// kCloneHostProcess): a plain clone(SIGCHLD) first, for builds that took it.
#define KERNEL_PROCESS_CLONE (CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_PIDFD | SIGCHLD)

// The host process that made the last raw clone (its child's parent).
static long cloner_pid;

// A raw clone; *shared: the child shares flatux's descriptor table, so it
// must not close anything while flatux runs.
static long raw_host_process(int* shared) {
  *shared = 0;
  cloner_pid = gadget_sys(SYS_getpid);
  long child = gadget_sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (child != -EPERM) return child;
  static int pidfd;
  *shared = 1;
  return gadget_sys(SYS_clone, KERNEL_PROCESS_CLONE, 0, &pidfd, 0, 0);
}

// In a child sharing flatux's descriptors: waits for flatux's process
// (its parent) to end before it lets go of them. 0: it cannot tell when
// (a forked guest's host process may not be named), so it must keep them.
static int wait_for_parent(void) {
  // The parent as it was at the clone: asked after it ended, getppid
  // names the reaper, whose end would never come (a loaded machine runs
  // the child late).
  long pidfd = gadget_sys(SYS_pidfd_open, cloner_pid, 0);
  if (pidfd == -ESRCH) return 1;  // gone already
  if (pidfd < 0) return 0;
  struct pollfd p = {(int)pidfd, POLLIN, 0};
  return gadget_sys(SYS_ppoll, &p, 1, NULL, NULL, 8) == 1;
}

static void close_all_fds(int shared) {
  if (shared && !wait_for_parent()) return;
  for (int fd = 0; fd < 4096; fd++) gadget_sys(SYS_close, fd);
}

// A raw clone: a host process flatux does not track. It sleeps 20 s and
// says so in its command line (a copy of flatux's); attack.py looks for it
// once flatux has exited. Said, not judged here: the host side judges.
static void probe_outlive(void) {
  int shared;
  long child = raw_host_process(&shared);
  if (child == 0) {
    // No descriptor of flatux's kept open: the harness reads its output
    // to the end before it looks.
    close_all_fds(shared);
    struct timespec second = {1, 0};
    for (int i = 0; i < 20; i++) gadget_sys(SYS_nanosleep, &second, NULL);
    gadget_sys(SYS_exit_group, 0);
  }
  printf("info raw clone%s: %s (host pid %ld, must end with the run)\n", shared ? " (flatux's own shape)" : "",
         err_name(child < 0 ? child : 0), child);
}

// Host processes past any bound: raw clones that stay alive until the run
// ends, up to ATTACK_CLONE_FLOOD of them; the host must refuse one first
// (EAGAIN: the run's RLIMIT_NPROC).
static void probe_clone_flood(void) {
  long want = atol(env("ATTACK_CLONE_FLOOD")), made = 0, r = 0;
  int shared = 0;
  for (; made < want; made++) {
    r = raw_host_process(&shared);
    if (r < 0) break;
    if (r == 0) {
      close_all_fds(shared);
      struct timespec minute = {60, 0};
      for (;;) gadget_sys(SYS_nanosleep, &minute, NULL);
    }
  }
  verdict("clone-flood", made < want ? r : 0, kAgain | kPerm, "%ld host processes made of %ld", made, want);
}

// Only flatux's own shapes of clone pass: a plain fork, a vfork, a sibling.
static void probe_clone_shape(const char* name, long flags) {
  static int pidfd;
  long r = gadget_sys(SYS_clone, flags, 0, &pidfd, 0, 0);
  if (r == 0) gadget_sys(SYS_exit_group, 0);  // a child made after all: gone at once
  verdict(name, r, kPerm, NULL);
}

static void probe_clone_shapes(void) {
  probe_clone_shape("clone-plain-fork", SIGCHLD);
  probe_clone_shape("clone-vfork", CLONE_VM | CLONE_VFORK | SIGCHLD);
  probe_clone_shape("clone-sibling", KERNEL_PROCESS_CLONE | CLONE_PARENT);
}

// Host memory past --mem: ATTACK_MEM_HOG MiB of raw host anonymous memory,
// populated. The run's memory cgroup must refuse it (the host kills
// within the run: attack.py then sees flatux killed) or leave it short.
static void probe_mem_hog(void) {
  long mib = atol(env("ATTACK_MEM_HOG"));
  size_t len = (size_t)mib << 20;
  long p = gadget_sys(SYS_mmap, 0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p < 0 && p > -4096) {
    verdict("mem-hog", p, kPerm | kAgain | kNomem, NULL);
    return;
  }
  static unsigned char vec[(4096ul << 20) / 4096];
  long resident = 0;
  if (len <= sizeof vec * 4096 && gadget_sys(SYS_mincore, p, len, vec) == 0)
    for (size_t i = 0; i < len / 4096; i++) resident += vec[i] & 1;
  verdict("mem-hog", resident * 4096 >= (long)len ? 0 : -ENOMEM, kPerm | kAgain | kNomem, "%ld of %ld MiB resident",
          resident >> 8, mib);
}

// ---- the host's abstract names and netlink under --net=none ------------------

// Listens on an abstract name the host side (attack.py) keeps trying to
// connect to while the run lasts: under --net=none no host process may
// reach it.
static void probe_abstract_listen(void) {
  long s = gadget_sys(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  const char* name = env("ATTACK_LISTEN");
  size_t len = strlen(name);
  memcpy(a.sun_path + 1, name, len);
  long r = s < 0 ? s : gadget_sys(SYS_bind, s, &a, offsetof(struct sockaddr_un, sun_path) + 1 + len);
  if (r == 0) r = gadget_sys(SYS_listen, s, 8);
  if (r == 0) {
    printf("LISTENING %s\n", name);
    fflush(stdout);
    struct timespec tick = {0, 50 * 1000 * 1000};
    r = -ECONNREFUSED;  // nobody came
    for (int i = 0; i < 60 && r == -ECONNREFUSED; i++) {
      long c = gadget_sys(SYS_accept4, s, NULL, NULL, SOCK_CLOEXEC);
      if (c >= 0) {
        gclose(c);
        r = 0;
      } else {
        gadget_sys(SYS_nanosleep, &tick, NULL);
      }
    }
  }
  gclose(s);
  verdict("abstract-listen-reached", r, kPerm | kAcces | kConnRefused, "@%s", name);
}

// Sends one netlink request and counts the replies `match` accepts (-errno
// on a refused call).
static long netlink_dump(int family, void* req, size_t len, int (*match)(struct nlmsghdr*)) {
  long s = gadget_sys(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, family);
  if (s < 0) return s;
  struct sockaddr_nl to;
  memset(&to, 0, sizeof to);
  to.nl_family = AF_NETLINK;
  long r = gadget_sys(SYS_sendto, s, req, len, 0, &to, sizeof to);
  long found = 0;
  static char buf[32768];
  while (r >= 0) {
    r = gadget_sys(SYS_recvfrom, s, buf, sizeof buf, 0, NULL, NULL);
    if (r <= 0) break;
    int done = 0;
    for (struct nlmsghdr* h = (struct nlmsghdr*)buf; NLMSG_OK(h, (unsigned)r); h = NLMSG_NEXT(h, r)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) done = 1;
      else found += match(h);
    }
    if (done) break;
  }
  gclose(s);
  return r < 0 ? r : found;
}

// An address of the host's own (not the loopback's, whose scope is host).
static int host_address(struct nlmsghdr* h) {
  struct ifaddrmsg* ifa = NLMSG_DATA(h);
  return h->nlmsg_type == RTM_NEWADDR && ifa->ifa_scope != RT_SCOPE_HOST;
}

static int host_listener(struct nlmsghdr* h) {
  struct inet_diag_msg* m = NLMSG_DATA(h);
  return h->nlmsg_type == SOCK_DIAG_BY_FAMILY && ntohs(m->id.idiag_sport) == atoi(env("ATTACK_TCP_PORT"));
}

// A dump request's header, for a request of `len` bytes in all.
static void dump_header(struct nlmsghdr* h, size_t len, int type) {
  memset(h, 0, len);
  h->nlmsg_len = (uint32_t)len;
  h->nlmsg_type = (uint16_t)type;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
}

static void probe_netlink(void) {
  struct {
    struct nlmsghdr h;
    struct ifaddrmsg m;
  } addr;
  dump_header(&addr.h, sizeof addr, RTM_GETADDR);
  long n = netlink_dump(NETLINK_ROUTE, &addr, sizeof addr, host_address);
  verdict("netlink-host-addresses", n > 0 ? 0 : n == 0 ? -ENOENT : n, kPerm | kAcces | kNoent,
          "%ld address(es) besides the loopback's", n);
  struct {
    struct nlmsghdr h;
    struct inet_diag_req_v2 r;
  } diag;
  dump_header(&diag.h, sizeof diag, SOCK_DIAG_BY_FAMILY);
  diag.r.sdiag_family = AF_INET;
  diag.r.sdiag_protocol = IPPROTO_TCP;
  diag.r.idiag_states = 1u << 10;  // TCP_LISTEN
  n = netlink_dump(NETLINK_SOCK_DIAG, &diag, sizeof diag, host_listener);
  verdict("netlink-diag-host-listener", n > 0 ? 0 : n == 0 ? -ENOENT : n, kPerm | kAcces | kNoent,
          "port %s seen %ld time(s)", env("ATTACK_TCP_PORT"), n);
}

// ---- mounts, BPF, the host kernel's privileged interfaces ----------------------

static void probe_privileged(void) {
  int how = kPerm | kAcces;
  char p[4096];
  path_in(p, sizeof p, env("ATTACK_OUTSIDE"), "mnt");
  long r = gadget_sys(SYS_mount, "none", p, "tmpfs", 0, NULL);
  if (r == 0) gadget_sys(SYS_umount2, p, MNT_DETACH);
  verdict("mount", r, how | kNoent, NULL);
  r = gadget_sys(SYS_fsopen, "tmpfs", 0);
  gclose(r);
  verdict("fsopen", r, how, NULL);
  r = gadget_sys(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */);
  gclose(r);
  verdict("open_tree", r, how, NULL);
  verdict("unshare-mount", gadget_sys(SYS_unshare, CLONE_NEWNS), how, NULL);
  verdict("chroot", gadget_sys(SYS_chroot, "/"), how, NULL);
  verdict("pivot_root", gadget_sys(SYS_pivot_root, "/", "/"), how, NULL);

  struct sock_filter insns[] = {{0x06, 0, 0, 0}};  // BPF_RET | BPF_K, 0
  (void)insns;
  struct bpf_insn prog[2];
  memset(prog, 0, sizeof prog);
  prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K;  // r0 = 0
  prog[1].code = BPF_JMP | BPF_EXIT;
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  attr.insn_cnt = 2;
  attr.insns = (uint64_t)(uintptr_t)prog;
  attr.license = (uint64_t)(uintptr_t) "GPL";
  r = gadget_sys(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
  gclose(r);
  verdict("bpf-prog-load", r, how, NULL);

  struct perf_event_attr pe;
  memset(&pe, 0, sizeof pe);
  pe.type = PERF_TYPE_SOFTWARE;
  pe.size = sizeof pe;
  pe.config = PERF_COUNT_SW_CPU_CLOCK;
  pe.disabled = 1;
  pe.exclude_kernel = 1;
  r = gadget_sys(SYS_perf_event_open, &pe, 0, -1, -1, 0);
  gclose(r);
  verdict("perf_event_open", r, how, NULL);
  unsigned char params[120];
  memset(params, 0, sizeof params);
  r = gadget_sys(SYS_io_uring_setup, 4, params);
  gclose(r);
  verdict("io_uring_setup", r, how, NULL);
  r = gadget_sys(SYS_userfaultfd, O_CLOEXEC);
  gclose(r);
  verdict("userfaultfd", r, how, NULL);
  verdict("add_key", gadget_sys(SYS_add_key, "user", "flatux-attack", "x", 1, -2 /* KEY_SPEC_PROCESS_KEYRING */),
          how, NULL);
  // Each with arguments that fail harmlessly once the call is permitted.
  verdict("init_module", gadget_sys(SYS_init_module, NULL, 0, ""), how, NULL);
  verdict("finit_module", gadget_sys(SYS_finit_module, -1, "", 0), how, NULL);
  verdict("open_by_handle_at", gadget_sys(SYS_open_by_handle_at, AT_FDCWD, NULL, O_RDONLY), how, NULL);
  verdict("execve", gadget_sys(SYS_execve, "/nonexistent-flatux-attack", NULL, NULL), how, NULL);
  verdict("ioctl-tiocsti", gadget_sys(SYS_ioctl, 2, 0x5412 /* TIOCSTI */, "x"), how, NULL);
  verdict("iopl", gadget_sys(SYS_iopl, 3), how, NULL);
}

static void probe_capabilities(void) {
  int how = kPerm | kAcces;
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  memset(d, 0, sizeof d);
  long r = gadget_sys(SYS_capget, &h, d);
  printf("info capget: %ld effective %08x%08x\n", r, d[1].effective, d[0].effective);
  for (int i = 0; i < 2; i++) d[i].effective = d[i].permitted = d[i].inheritable = ~0u;
  verdict("capset-raise", gadget_sys(SYS_capset, &h, d), how, NULL);
  verdict("unshare-user", gadget_sys(SYS_unshare, CLONE_NEWUSER), how, NULL);
  verdict("ambient-raise", gadget_sys(SYS_prctl, 47 /* PR_CAP_AMBIENT */, 2 /* RAISE */, 21, 0, 0), how,
          NULL);
  r = gadget_sys(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (r == 0) gadget_sys(SYS_munmap, 0, 4096);
  verdict("mmap-page-zero", r, how, NULL);
  r = gadget_sys(SYS_socket, 17 /* AF_PACKET */, SOCK_RAW | SOCK_CLOEXEC, 0);
  gclose(r);
  verdict("packet-socket", r, how, NULL);
  // The host's own name, so a permitted call changes nothing.
  struct utsname u;
  if (gadget_sys(SYS_uname, &u) == 0)
    verdict("sethostname", gadget_sys(SYS_sethostname, u.nodename, strlen(u.nodename)), how, "%s", u.nodename);
  else
    printf("info sethostname: skipped, the host's uname was refused\n");
  verdict("setgroups", gadget_sys(SYS_setgroups, 0, NULL), how, NULL);
  // Last: if permitted it changes this thread's host identity.
  verdict("setresuid", gadget_sys(SYS_setresuid, -1, 12345, -1), how, NULL);
}

// ---- rewriting the kernel heap -------------------------------------------------

struct Layout {
  long k_cfg, cfg_root, cfg_net_none, k_init, p_creds, p_pid, p_children, p_sibling, h_heap, h_root_fd,
      h_root_is_slash, h_root_len, h_root, c_caps;
};

static int parse_layout(struct Layout* l) {
  const char* s = env("ATTACK_LAYOUT");
  struct { const char* key; long* out; } keys[] = {
      {"k_cfg", &l->k_cfg},         {"cfg_root", &l->cfg_root},         {"cfg_net_none", &l->cfg_net_none},
      {"k_init", &l->k_init},       {"p_creds", &l->p_creds},           {"p_pid", &l->p_pid},
      {"p_children", &l->p_children}, {"p_sibling", &l->p_sibling},   {"h_heap", &l->h_heap},
      {"h_root_fd", &l->h_root_fd}, {"h_root_is_slash", &l->h_root_is_slash},
      {"h_root_len", &l->h_root_len}, {"h_root", &l->h_root},       {"c_caps", &l->c_caps},
  };
  int found = 0;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const char* at = strstr(s, keys[i].key);
    size_t n = strlen(keys[i].key);
    while (at && at[n] != ':') at = strstr(at + 1, keys[i].key);
    if (!at) continue;
    *keys[i].out = atol(at + n + 1);
    found++;
  }
  return found == (int)(sizeof keys / sizeof keys[0]);
}

// The kernel object: its first field points back at the heap, and the
// heap's header (at the heap's base) holds a pointer to it.
static uintptr_t find_kernel(void) {
  const uint64_t* h = (const uint64_t*)KERNEL_HEAP_BASE;
  for (int i = 0; i < 64; i++)
    if (in_kernel_heap(h[i]) && h[i] != KERNEL_HEAP_BASE && *(const uint64_t*)h[i] == KERNEL_HEAP_BASE)
      return h[i];
  return 0;
}

// A hostfs instance whose root string is `root`: its heap pointer comes
// first and its length field matches. Pages that cannot be read (guard
// pages of kernel stacks) are stepped over.
static uintptr_t find_hostfs(const struct Layout* l, const char* root) {
  static unsigned char window[2 * 4096];
  size_t n = strlen(root) + 1;
  if (n > 4096) return 0;
  for (uintptr_t page = KERNEL_HEAP_BASE; page < KERNEL_HEAP_BASE + HEAP_SCAN_BYTES; page += 4096) {
    if (!read_page(page, window)) continue;
    if (!read_page(page + 4096, window + 4096)) memset(window + 4096, 0, 4096);
    for (size_t off = 0; off < 4096; off += 8) {
      if (memcmp(window + off, root, n) != 0) continue;
      uintptr_t h = page + off - (uintptr_t)l->h_root;
      if (h < KERNEL_HEAP_BASE) continue;
      uint64_t heap_field = 0, len_field = 0;
      unsigned char head[4096];
      if (!read_page(h & ~0xfffull, head)) continue;
      if ((h & 0xfff) + (uintptr_t)l->h_root_len + 8 > 4096) continue;
      memcpy(&heap_field, head + (h & 0xfff) + l->h_heap, 8);
      memcpy(&len_field, head + (h & 0xfff) + l->h_root_len, 8);
      if (heap_field == KERNEL_HEAP_BASE && len_field == n - 1) return h;
    }
  }
  return 0;
}

// This process's kernel record: from the first process down its children.
static uintptr_t find_process(const struct Layout* l, uintptr_t p, int pid, int depth) {
  if (!p || depth > 64) return 0;
  if (*(const int*)(p + l->p_pid) == pid) return p;
  for (uintptr_t c = *(const uint64_t*)(p + l->p_children); c; c = *(const uint64_t*)(c + l->p_sibling)) {
    uintptr_t found = find_process(l, c, pid, depth + 1);
    if (found) return found;
  }
  return 0;
}

static int rewrite_heap(void) {
  struct Layout l;
  if (!parse_layout(&l)) {
    printf("heap: bad ATTACK_LAYOUT\n");
    return 0;
  }
  uintptr_t k = find_kernel();
  if (!k) {
    printf("heap: kernel object not found\n");
    return 0;
  }
  printf("heap: kernel object at %#lx\n", (unsigned long)k);
  const char* jail = env("ATTACK_JAIL");
  const char* at = env("ATTACK_HOSTFS_AT");
  char mounted[4096] = "";
  uintptr_t h = find_hostfs(&l, jail);
  if (!h && *at) {
    // A booted kernel whose root is an image: mount the granted folder.
    if (mount("none", at, "hostfs", 0, jail) != 0) printf("heap: mount hostfs: %s\n", strerror(errno));
    snprintf(mounted, sizeof mounted, "%s", at);
    h = find_hostfs(&l, jail);
  }
  if (!h) {
    printf("heap: hostfs of %s not found\n", jail);
    return 0;
  }

  // Be an ordinary user first, then make the kernel believe otherwise.
  if (setresuid(1000, 1000, 1000) != 0) printf("heap: setresuid: %s\n", strerror(errno));
  uintptr_t me = find_process(&l, *(const uint64_t*)(k + l.k_init), (int)getpid(), 0);
  if (!me) {
    printf("heap: this process's record not found\n");
    return 0;
  }
  uint32_t* creds = (uint32_t*)(me + l.p_creds);
  for (int i = 0; i < 8; i++) creds[i] = 0;  // uid euid suid fsuid gid egid sgid fsgid
  uint64_t* caps = (uint64_t*)(me + l.p_creds + l.c_caps);
  for (int i = 0; i < 3; i++) caps[i] = ~0ull;  // permitted, effective, bounding: every capability
  printf("heap: credentials rewritten, getuid() = %d geteuid() = %d\n", (int)getuid(), (int)geteuid());
  if (getuid() != 0) return 0;

  *(volatile unsigned char*)(k + l.k_cfg + l.cfg_net_none) = 0;
  strcpy((char*)(k + l.k_cfg + l.cfg_root), "/");
  printf("heap: --net=none turned off, kernel root set to /\n");

  long slash = gadget_sys(SYS_openat, AT_FDCWD, "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (slash < 0) {
    printf("heap: host O_PATH of /: %s\n", err_name(slash));
    return 0;
  }
  *(int*)(h + l.h_root_fd) = (int)slash;
  *(unsigned char*)(h + l.h_root_is_slash) = 1;
  *(size_t*)(h + l.h_root_len) = 1;
  strcpy((char*)(h + l.h_root), "/");
  // Proof the root moved: the jail's own file by its host path.
  char p[8192 + 16];
  snprintf(p, sizeof p, "%s%s/inside", mounted, jail);
  struct stat st;
  int moved = stat(p, &st) == 0;
  printf("heap: hostfs root moved to the host's /: %s (%s)\n", moved ? "yes" : "no", p);
  if (!moved) return 0;

  // Ordinary system calls now ask the corrupted kernel for host paths.
  int how = kPerm | kAcces | kNoent;
  snprintf(p, sizeof p, "%s%s", mounted, env("ATTACK_MARKER"));
  int fd = open(p, O_RDONLY);
  verdict("heap-open-read", fd >= 0 ? fd : -errno, how, "%s", p);
  if (fd >= 0) close(fd);
  snprintf(p, sizeof p, "%s%s", mounted, env("ATTACK_VICTIM"));
  fd = open(p, O_WRONLY | O_APPEND);
  if (fd >= 0 && write(fd, "ESCAPED\n", 8) < 0) printf("heap: write: %s\n", strerror(errno));
  verdict("heap-open-write", fd >= 0 ? fd : -errno, how, NULL);
  if (fd >= 0) close(fd);
  verdict("heap-chmod", chmod(p, 0777) == 0 ? 0 : -errno, how, NULL);
  if (!strcmp(env("ATTACK_NET_NONE"), "1")) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    long r = s < 0 ? -errno : 0;
    if (s >= 0) {
      struct sockaddr_in a;
      memset(&a, 0, sizeof a);
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons((uint16_t)atoi(env("ATTACK_TCP_PORT")));
      r = connect(s, (struct sockaddr*)&a, sizeof a) == 0 ? 0 : -errno;
      close(s);
    }
    verdict("heap-tcp-connect", r, kPerm | kAcces, NULL);
  }
  return 1;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  // Without its setting the probes would aim at pid 0 (this process group)
  // and at empty paths: refuse.
  if (atol(env("ATTACK_VICTIM_PID")) <= 1 || !*env("ATTACK_MARKER") || !*env("ATTACK_OUTSIDE") ||
      !*env("ATTACK_VICTIM")) {
    fprintf(stderr, "attacker: run me through attack.py (ATTACK_* settings missing)\n");
    return 2;
  }
  if (!strcmp(env("ATTACK_FORK"), "1")) {
    // A forked guest is a host process of its own: attack from there.
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
      printf("fork: %s\n", strerror(errno));
      return 2;
    }
    if (child > 0) {
      int st = 0;
      waitpid(child, &st, 0);
      int status = WIFEXITED(st) ? WEXITSTATUS(st) : 2;
      if (!strcmp(env("ATTACK_POWEROFF"), "1")) {
        printf("ATTACK_STATUS=%d\n", status);
        fflush(stdout);
        sync();
        reboot(RB_POWER_OFF);
      }
      return status;
    }
    unsetenv("ATTACK_POWEROFF");
  }
  long host_pid = 0;
  int candidates, tried;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  uintptr_t g = find_gadget(&host_pid, &candidates, &tried);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  int status = 2;
  if (!g) {
    printf("no gadget found (%d heap pointers, %d sequences tried, %.1f ms)\n", candidates, tried, ms);
    goto out;
  }
  printf("GADGET host_pid=%ld host_ppid=%ld at %#lx (guest pid %d; %d heap pointers, %d sequences tried, %.1f ms)\n",
         host_pid, gadget_sys(SYS_getppid), (unsigned long)g, (int)getpid(), candidates, tried, ms);
  if (!strcmp(env("ATTACK_MODE"), "heap") && !rewrite_heap()) {
    printf("heap rewrite failed\n");
    goto out;
  }
  if (!strcmp(env("ATTACK_WHOLE_HOST_RO"), "1")) {
    probe_whole_host_ro();
    printf("%d probes, %d escaped\n", probes, escapes);
    status = escapes ? 1 : 0;
    goto out;
  }
  probe_files();
  probe_plant();
  probe_unix();
  if (!strcmp(env("ATTACK_NET_NONE"), "1")) {
    probe_inet();
    probe_abstract_listen();
    probe_netlink();
  }
  probe_processes();
  probe_clone_shapes();
  probe_outlive();
  if (atol(env("ATTACK_CLONE_FLOOD")) > 0) probe_clone_flood();
  if (atol(env("ATTACK_MEM_HOG")) > 0) probe_mem_hog();
  probe_privileged();
  probe_capabilities();
  printf("%d probes, %d escaped\n", probes, escapes);
  status = escapes ? 1 : 0;
out:
  fflush(stdout);
  if (!strcmp(env("ATTACK_POWEROFF"), "1")) {
    printf("ATTACK_STATUS=%d\n", status);
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
  }
  return status;
}
