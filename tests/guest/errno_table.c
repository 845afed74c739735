// Errno conformance: one table of (syscall, arguments, expected result),
// run natively and under flatux. Grows with every errno fix: add a row.
//
// Arguments are raw syscall arguments; a few placeholders (FD_*, PATH_*,
// ARG_*) stand for objects made before the table runs (a scratch file, a
// socket, an O_PATH descriptor...). A row runs as the caller, as root only
// (skipped otherwise), or as an ordinary user (uid/gid 65534, switched with
// setresuid keeping 0 saved; needs root to set up, skipped otherwise).
//
// Usage: errno_table SCRATCH_DIR
#include "guest_check.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef STATX__RESERVED
#define STATX__RESERVED 0x80000000U
#endif
#ifndef AT_STATX_FORCE_SYNC
#define AT_STATX_FORCE_SYNC 0x2000
#define AT_STATX_DONT_SYNC 0x4000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef SYS_personality
#define SYS_personality 135
#endif
#ifndef MREMAP_FIXED
#define MREMAP_MAYMOVE 1
#define MREMAP_FIXED 2
#endif
#ifndef MCAST_JOIN_GROUP
#define MCAST_JOIN_GROUP 42
#endif

// Placeholders: resolved to the objects made by setup().
enum {
  P_BASE = -0x10000,
  FD_FILE = P_BASE,  // a regular file, O_RDWR
  FD_RDONLY,         // the same file, O_RDONLY
  FD_OPATH,          // the same file, O_PATH
  FD_DIR,            // the scratch folder, O_RDONLY
  FD_PIPE_R,
  FD_PIPE_W,
  FD_INET,           // AF_INET stream socket
  FD_UDP,            // AF_INET datagram socket
  FD_UNIX,           // AF_UNIX stream socket
  FD_NEW_INET,       // a fresh AF_INET stream socket for this row only
  PATH_FILE,         // the file's path
  PATH_NEW,          // a name that does not exist yet (removed after each row)
  PATH_PROC_FD,      // "/proc/self/fd/<FD_FILE>"
  PATH_CLOSED_FILE,  // a file inside a folder the ordinary user cannot search
  PATH_OPEN_DIR,     // a mode-0777 folder
  PATH_OPEN_NEW,     // a new name inside it (removed after each row)
  PATH_X,            // "x", a relative name
  PATH_EMPTY,        // ""
  ARG_BUF,           // a 4 KiB scratch buffer
  ARG_RLIM_ABOVE_NR_OPEN,  // struct rlimit {nr_open + 64, nr_open + 64}
  ARG_SOCKADDR_UN,   // a sockaddr_un naming PATH_NEW
  ARG_SOCKADDR_IN_ANY,     // AF_INET, 127.0.0.1:0
  ARG_SOCKADDR_UNSPEC_ANY, // AF_UNSPEC, INADDR_ANY: inet_bind's compatibility case
  ARG_SOCKADDR_UNSPEC_LO,  // AF_UNSPEC, 127.0.0.1
  ARG_GROUP_REQ,     // a struct group_req for 239.1.2.3
  ARG_WAITV_STALE,   // one futex_waitv whose expected value is wrong
  ARG_WAITV_BADFLAGS,
  ARG_WAITV_UNALIGNED,
  ARG_TIMESPEC_ZERO,
  ARG_KERNEL_HEAP,   // an address in flatux's kernel heap (unmapped natively)
  ARG_WAITV_KERNEL,  // a futex_waitv on that address
  ARG_MAP,           // a 2-page private anonymous mapping (replaced after each row)
  ARG_MAP_END,       // the page after it, unmapped
  ARG_OWNER_BADTYPE, // struct f_owner_ex {7, 0}
  ARG_BUF_ZERO,      // a zeroed buffer (a struct timex with modes 0)
  ARG_TIMEX_OFFSET,  // a struct timex that would set the offset
  ARG_TIMEVAL_BAD,   // a struct timeval with tv_usec 1000000
  ARG_TIMEVAL_NOW,   // the time now, as a timeval
  ARG_TIMESPEC_NOW,  // and as a timespec
  P_END,
};

enum Who { ANY, ROOT, USER };
#define OK_ANY (-12345)  // with err 0: any non-negative result

struct Row {
  const char* group;
  const char* what;
  long nr;
  long args[6];
  int err;   // the errno wanted; 0: success
  long ret;  // with err 0: the result wanted (OK_ANY: any >= 0)
  enum Who who;
  int close_result;  // the result is a descriptor to close
};

// clang-format off
static const struct Row rows[] = {
  // --- I/O -----------------------------------------------------------------
  {"io", "write(file, NULL, 0)", SYS_write, {FD_FILE, 0, 0}, 0, 0, ANY, 0},
  {"io", "pwrite64(file, NULL, 0, 0)", SYS_pwrite64, {FD_FILE, 0, 0, 0}, 0, 0, ANY, 0},
  {"io", "read(file, NULL, 0)", SYS_read, {FD_FILE, 0, 0}, 0, 0, ANY, 0},
  {"io", "write(pipe, NULL, 0)", SYS_write, {FD_PIPE_W, 0, 0}, 0, 0, ANY, 0},
  {"io", "write(file, NULL, 1)", SYS_write, {FD_FILE, 0, 1}, EFAULT, 0, ANY, 0},
  {"io", "write(O_PATH fd, buf, 1)", SYS_write, {FD_OPATH, ARG_BUF, 1}, EBADF, 0, ANY, 0},
  // --- limits --------------------------------------------------------------
  {"limits", "setrlimit(NOFILE above fs.nr_open)", SYS_setrlimit, {RLIMIT_NOFILE, ARG_RLIM_ABOVE_NR_OPEN}, EPERM, 0, ANY, 0},
  {"limits", "prlimit64(NOFILE above fs.nr_open)", SYS_prlimit64, {0, RLIMIT_NOFILE, ARG_RLIM_ABOVE_NR_OPEN, 0}, EPERM, 0, ANY, 0},
  // --- stat ----------------------------------------------------------------
  {"stat", "statx(mask STATX__RESERVED)", SYS_statx, {AT_FDCWD, PATH_FILE, 0, STATX__RESERVED, ARG_BUF}, EINVAL, 0, ANY, 0},
  {"stat", "statx(FORCE_SYNC|DONT_SYNC)", SYS_statx, {AT_FDCWD, PATH_FILE, AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC, 0x7ff, ARG_BUF}, EINVAL, 0, ANY, 0},
  {"stat", "statx(unknown flag)", SYS_statx, {AT_FDCWD, PATH_FILE, 0x10000000, 0x7ff, ARG_BUF}, EINVAL, 0, ANY, 0},
  {"stat", "statx(bad dirfd, relative)", SYS_statx, {999, PATH_X, 0, 0x7ff, ARG_BUF}, EBADF, 0, ANY, 0},
  {"stat", "statx(\"\", no AT_EMPTY_PATH)", SYS_statx, {AT_FDCWD, PATH_EMPTY, 0, 0x7ff, ARG_BUF}, ENOENT, 0, ANY, 0},
  {"stat", "statx(buf NULL)", SYS_statx, {AT_FDCWD, PATH_FILE, 0, 0x7ff, 0}, EFAULT, 0, ANY, 0},
  // --- names ---------------------------------------------------------------
  {"names", "linkat(/proc/self/fd/N, new, AT_SYMLINK_FOLLOW)", SYS_linkat, {AT_FDCWD, PATH_PROC_FD, AT_FDCWD, PATH_NEW, AT_SYMLINK_FOLLOW}, 0, 0, ANY, 0},
  {"names", "linkat(/proc/self/fd/N, new) (the link itself)", SYS_linkat, {AT_FDCWD, PATH_PROC_FD, AT_FDCWD, PATH_NEW, 0}, EXDEV, 0, ANY, 0},
  // --- memory --------------------------------------------------------------
  {"memory", "mmap(bad fd)", SYS_mmap, {0, 4096, PROT_READ, MAP_SHARED, 999, 0}, EBADF, 0, ANY, 0},
  {"memory", "mmap(bad fd, length 0)", SYS_mmap, {0, 0, PROT_READ, MAP_SHARED, 999, 0}, EBADF, 0, ANY, 0},
  {"memory", "mmap(O_PATH fd)", SYS_mmap, {0, 4096, PROT_READ, MAP_PRIVATE, FD_OPATH, 0}, EBADF, 0, ANY, 0},
  {"memory", "mmap(MAP_SHARED_VALIDATE|MAP_SYNC, file)", SYS_mmap, {0, 4096, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, FD_FILE, 0}, EOPNOTSUPP, 0, ANY, 0},
  {"memory", "mmap(MAP_SHARED_VALIDATE|unknown, file)", SYS_mmap, {0, 4096, PROT_READ, MAP_SHARED_VALIDATE | 0x800000, FD_FILE, 0}, EOPNOTSUPP, 0, ANY, 0},
  {"memory", "mmap(offset not page aligned, bad fd)", SYS_mmap, {0, 4096, PROT_READ, MAP_SHARED, 999, 1}, EINVAL, 0, ANY, 0},
  // --- sockets -------------------------------------------------------------
  {"sockets", "socket(INET, STREAM, IPPROTO_UDP)", SYS_socket, {AF_INET, SOCK_STREAM, IPPROTO_UDP}, EPROTONOSUPPORT, 0, ANY, 0},
  {"sockets", "socket(INET, DGRAM, IPPROTO_TCP)", SYS_socket, {AF_INET, SOCK_DGRAM, IPPROTO_TCP}, EPROTONOSUPPORT, 0, ANY, 0},
  {"sockets", "socket(UNIX, STREAM, IPPROTO_TCP)", SYS_socket, {AF_UNIX, SOCK_STREAM, IPPROTO_TCP}, EPROTONOSUPPORT, 0, ANY, 0},
  {"sockets", "socket(INET, RAW, 0)", SYS_socket, {AF_INET, SOCK_RAW, 0}, EPROTONOSUPPORT, 0, ANY, 0},
  {"sockets", "socket(INET, RAW, ICMP) as a user", SYS_socket, {AF_INET, SOCK_RAW, IPPROTO_ICMP}, EPERM, 0, USER, 0},
  {"sockets", "socket(INET, SEQPACKET, 0)", SYS_socket, {AF_INET, SOCK_SEQPACKET, 0}, ESOCKTNOSUPPORT, 0, ANY, 0},
  {"sockets", "socket(0, STREAM, 0)", SYS_socket, {0, SOCK_STREAM, 0}, EAFNOSUPPORT, 0, ANY, 0},
  {"sockets", "socket(INET, 75, 0)", SYS_socket, {AF_INET, 75, 0}, EINVAL, 0, ANY, 0},
  {"sockets", "socket(UNIX, RAW, 0) (a datagram socket)", SYS_socket, {AF_UNIX, SOCK_RAW, 0}, 0, OK_ANY, ANY, 1},
  {"sockets", "socketpair(INET, STREAM, 0)", SYS_socketpair, {AF_INET, SOCK_STREAM, 0, ARG_BUF}, EOPNOTSUPP, 0, ANY, 0},
  {"sockets", "socketpair(INET, STREAM, IPPROTO_UDP)", SYS_socketpair, {AF_INET, SOCK_STREAM, IPPROTO_UDP, ARG_BUF}, EPROTONOSUPPORT, 0, ANY, 0},
  {"sockets", "socketpair(UNIX, STREAM, IPPROTO_TCP)", SYS_socketpair, {AF_UNIX, SOCK_STREAM, IPPROTO_TCP, ARG_BUF}, EPROTONOSUPPORT, 0, ANY, 0},
  {"sockets", "bind(INET, sockaddr_un)", SYS_bind, {FD_NEW_INET, ARG_SOCKADDR_UN, sizeof(struct sockaddr_un)}, EAFNOSUPPORT, 0, ANY, 0},
  {"sockets", "bind(INET, 3-byte address)", SYS_bind, {FD_NEW_INET, ARG_SOCKADDR_IN_ANY, 3}, EINVAL, 0, ANY, 0},
  {"sockets", "bind(UNIX, sockaddr_in)", SYS_bind, {FD_UNIX, ARG_SOCKADDR_IN_ANY, sizeof(struct sockaddr_in)}, EINVAL, 0, ANY, 0},
  {"sockets", "bind(INET, AF_UNSPEC INADDR_ANY)", SYS_bind, {FD_NEW_INET, ARG_SOCKADDR_UNSPEC_ANY, sizeof(struct sockaddr_in)}, 0, 0, ANY, 0},
  {"sockets", "bind(INET, AF_UNSPEC 127.0.0.1)", SYS_bind, {FD_NEW_INET, ARG_SOCKADDR_UNSPEC_LO, sizeof(struct sockaddr_in)}, EAFNOSUPPORT, 0, ANY, 0},
  {"sockets", "accept(O_PATH fd)", SYS_accept, {FD_OPATH, 0, 0}, EBADF, 0, ANY, 0},
  {"sockets", "accept(regular file)", SYS_accept, {FD_FILE, 0, 0}, ENOTSOCK, 0, ANY, 0},
  {"sockets", "listen(O_PATH fd)", SYS_listen, {FD_OPATH, 1}, EBADF, 0, ANY, 0},
  {"sockets", "getsockopt(O_PATH fd)", SYS_getsockopt, {FD_OPATH, SOL_SOCKET, SO_TYPE, ARG_BUF, ARG_BUF}, EBADF, 0, ANY, 0},
  {"sockets", "setsockopt(MCAST_JOIN_GROUP, short)", SYS_setsockopt, {FD_UDP, IPPROTO_IP, MCAST_JOIN_GROUP, ARG_GROUP_REQ, 4}, EINVAL, 0, ANY, 0},
  // --- credentials (as an ordinary user) ----------------------------------
  {"creds", "open(O_NOATIME) of another's file", SYS_open, {PATH_FILE, O_RDONLY | O_NOATIME}, EPERM, 0, USER, 0},
  {"creds", "open(O_RDONLY|O_TRUNC) of another's file", SYS_open, {PATH_FILE, O_RDONLY | O_TRUNC}, EACCES, 0, USER, 0},
  {"creds", "chmod through an unsearchable folder", SYS_chmod, {PATH_CLOSED_FILE, 0777}, EACCES, 0, USER, 0},
  {"creds", "chown through an unsearchable folder", SYS_chown, {PATH_CLOSED_FILE, 65534, 65534}, EACCES, 0, USER, 0},
  {"creds", "truncate through an unsearchable folder", SYS_truncate, {PATH_CLOSED_FILE, 0}, EACCES, 0, USER, 0},
  {"creds", "chmod of another's file", SYS_chmod, {PATH_FILE, 0777}, EPERM, 0, USER, 0},
  {"creds", "fchmod of another's file", SYS_fchmod, {FD_RDONLY, 0777}, EPERM, 0, USER, 0},
  {"creds", "creat in a mode-0777 folder", SYS_creat, {PATH_OPEN_NEW, 0600}, 0, OK_ANY, USER, 1},
  {"creds", "mkdir in a mode-0777 folder", SYS_mkdir, {PATH_OPEN_NEW, 0700}, 0, 0, USER, 0},
  {"creds", "creat in root's 0755 folder", SYS_creat, {PATH_NEW, 0600}, EACCES, 0, USER, 0},
  {"creds", "fcntl(F_SETFL, O_NOATIME) on another's file", SYS_fcntl, {FD_RDONLY, F_SETFL, O_NOATIME}, EPERM, 0, USER, 0},
  // --- fcntl ---------------------------------------------------------------
  {"fcntl", "F_GETPIPE_SZ of a regular file", SYS_fcntl, {FD_FILE, F_GETPIPE_SZ}, EBADF, 0, ANY, 0},
  {"fcntl", "F_SETPIPE_SZ(0) of a pipe", SYS_fcntl, {FD_PIPE_W, F_SETPIPE_SZ, 0}, 0, 4096, ANY, 0},
  {"fcntl", "F_SETPIPE_SZ(2^31 + 1)", SYS_fcntl, {FD_PIPE_W, F_SETPIPE_SZ, (1L << 31) + 1}, EINVAL, 0, ANY, 0},
  {"fcntl", "F_SETPIPE_SZ above pipe-max-size as a user", SYS_fcntl, {FD_PIPE_W, F_SETPIPE_SZ, 1L << 30}, EPERM, 0, USER, 0},
  {"fcntl", "F_SETLEASE(F_RDLCK) on an O_RDWR descriptor", SYS_fcntl, {FD_FILE, F_SETLEASE, F_RDLCK}, EAGAIN, 0, ANY, 0},
  {"fcntl", "F_SETLEASE(7)", SYS_fcntl, {FD_RDONLY, F_SETLEASE, 7}, EINVAL, 0, ANY, 0},
  {"fcntl", "F_SETLEASE on a pipe", SYS_fcntl, {FD_PIPE_R, F_SETLEASE, F_RDLCK}, EINVAL, 0, ANY, 0},
  {"fcntl", "F_SETLEASE on O_PATH", SYS_fcntl, {FD_OPATH, F_SETLEASE, F_RDLCK}, EBADF, 0, ANY, 0},
  {"fcntl", "F_SETLEASE(F_UNLCK) without a lease", SYS_fcntl, {FD_RDONLY, F_SETLEASE, F_UNLCK}, EAGAIN, 0, ANY, 0},
  {"fcntl", "F_SETLEASE on another's file", SYS_fcntl, {FD_RDONLY, F_SETLEASE, F_RDLCK}, EACCES, 0, USER, 0},
  {"fcntl", "F_GETLEASE", SYS_fcntl, {FD_RDONLY, F_GETLEASE}, 0, F_UNLCK, ANY, 0},
  {"fcntl", "F_SETOWN_EX(type 7)", SYS_fcntl, {FD_FILE, F_SETOWN_EX, ARG_OWNER_BADTYPE}, EINVAL, 0, ANY, 0},
  {"fcntl", "F_GETOWN_EX(bad pointer)", SYS_fcntl, {FD_FILE, F_GETOWN_EX, 8}, EFAULT, 0, ANY, 0},
  {"fcntl", "F_SETSIG(65)", SYS_fcntl, {FD_FILE, F_SETSIG, 65}, EINVAL, 0, ANY, 0},
  {"fcntl", "F_SETOWN(no such pid)", SYS_fcntl, {FD_FILE, F_SETOWN, 999999}, ESRCH, 0, ANY, 0},
  // --- System V IPC --------------------------------------------------------
  {"ipc", "shmget(size 0)", SYS_shmget, {IPC_PRIVATE, 0, IPC_CREAT | 0600}, EINVAL, 0, ANY, 0},
  {"ipc", "shmget(no such key)", SYS_shmget, {0x7e57e57e, 4096, 0600}, ENOENT, 0, ANY, 0},
  {"ipc", "shmctl(-1, IPC_STAT)", SYS_shmctl, {-1, IPC_STAT, ARG_BUF}, EINVAL, 0, ANY, 0},
  {"ipc", "shmctl(0, 99)", SYS_shmctl, {0, 99, ARG_BUF}, EINVAL, 0, ANY, 0},
  {"ipc", "shmdt(not attached)", SYS_shmdt, {ARG_BUF}, EINVAL, 0, ANY, 0},
  {"ipc", "shmat(-1)", SYS_shmat, {-1, 0, 0}, EINVAL, 0, ANY, 0},
  {"ipc", "semget(nsems -1)", SYS_semget, {IPC_PRIVATE, -1, 0600}, EINVAL, 0, ANY, 0},
  {"ipc", "semget(nsems 32001)", SYS_semget, {IPC_PRIVATE, 32001, IPC_CREAT | 0600}, EINVAL, 0, ANY, 0},
  {"ipc", "semop(-1)", SYS_semop, {-1, ARG_BUF, 1}, EINVAL, 0, ANY, 0},
  {"ipc", "semop(nsops 501)", SYS_semop, {0, ARG_BUF, 501}, E2BIG, 0, ANY, 0},
  {"ipc", "semctl(-1, GETVAL)", SYS_semctl, {-1, 0, GETVAL, 0}, EINVAL, 0, ANY, 0},
  {"ipc", "msgsnd(-1)", SYS_msgsnd, {-1, ARG_BUF, 1, 0}, EINVAL, 0, ANY, 0},
  {"ipc", "msgrcv(MSG_COPY without IPC_NOWAIT)", SYS_msgrcv, {0, ARG_BUF, 16, 0, 040000}, EINVAL, 0, ANY, 0},
  {"ipc", "msgctl(-1, IPC_STAT)", SYS_msgctl, {-1, IPC_STAT, ARG_BUF}, EINVAL, 0, ANY, 0},
  // --- memory --------------------------------------------------------------
  {"memory", "mremap(MREMAP_FIXED without MAYMOVE)", SYS_mremap, {ARG_MAP, 4096, 4096, MREMAP_FIXED, ARG_MAP_END}, EINVAL, 0, ANY, 0},
  {"memory", "mremap(MREMAP_DONTUNMAP, sizes differ)", SYS_mremap, {ARG_MAP, 4096, 8192, MREMAP_MAYMOVE | 4, 0}, EINVAL, 0, ANY, 0},
  {"memory", "mremap(FIXED, overlapping)", SYS_mremap, {ARG_MAP, 8192, 8192, MREMAP_MAYMOVE | MREMAP_FIXED, ARG_MAP}, EINVAL, 0, ANY, 0},
  {"memory", "mremap(unmapped)", SYS_mremap, {ARG_MAP_END, 4096, 4096, 0, 0}, EFAULT, 0, ANY, 0},
  {"memory", "mlock(partly unmapped)", SYS_mlock, {ARG_MAP, 3 * 4096}, ENOMEM, 0, ANY, 0},
  {"memory", "mlock2(flags 2)", SYS_mlock2, {ARG_MAP, 4096, 2}, EINVAL, 0, ANY, 0},
  {"memory", "mlockall(0)", SYS_mlockall, {0}, EINVAL, 0, ANY, 0},
  {"memory", "mlockall(MCL_ONFAULT)", SYS_mlockall, {4}, EINVAL, 0, ANY, 0},
  // --- hostile arguments ---------------------------------------------------
  {"hostile", "futex_waitv on the kernel heap", SYS_futex_waitv, {ARG_WAITV_KERNEL, 1, 0, 0, 0}, EFAULT, 0, ANY, 0},
  {"hostile", "write(file, kernel heap, 8)", SYS_write, {FD_FILE, ARG_KERNEL_HEAP, 8}, EFAULT, 0, ANY, 0},
  {"hostile", "mlock(kernel heap)", SYS_mlock, {ARG_KERNEL_HEAP, 4096}, ENOMEM, 0, ANY, 0},
  // --- time: the clock is asked about, not set ---------------------------
  {"time", "adjtimex(modes 0)", SYS_adjtimex, {ARG_BUF_ZERO}, 0, OK_ANY, ANY, 0},
  {"time", "adjtimex(ADJ_OFFSET) as a user", SYS_adjtimex, {ARG_TIMEX_OFFSET}, EPERM, 0, USER, 0},
  {"time", "clock_adjtime(MONOTONIC)", SYS_clock_adjtime, {CLOCK_MONOTONIC, ARG_BUF_ZERO}, EOPNOTSUPP, 0, ANY, 0},
  {"time", "clock_adjtime(100)", SYS_clock_adjtime, {100, ARG_BUF_ZERO}, EINVAL, 0, ANY, 0},
  {"time", "settimeofday(usec 1000000)", SYS_settimeofday, {ARG_TIMEVAL_BAD, 0}, EINVAL, 0, ANY, 0},
  {"time", "settimeofday(now) as a user", SYS_settimeofday, {ARG_TIMEVAL_NOW, 0}, EPERM, 0, USER, 0},
  {"time", "settimeofday(NULL, NULL) as a user", SYS_settimeofday, {0, 0}, EPERM, 0, USER, 0},
  {"time", "clock_settime(MONOTONIC)", SYS_clock_settime, {CLOCK_MONOTONIC, ARG_TIMESPEC_ZERO}, EINVAL, 0, ANY, 0},
  {"time", "clock_settime(REALTIME) as a user", SYS_clock_settime, {CLOCK_REALTIME, ARG_TIMESPEC_NOW}, EPERM, 0, USER, 0},
  // --- processes -----------------------------------------------------------
  {"process", "personality(query)", SYS_personality, {0xffffffff}, 0, 0, ANY, 0},
  {"process", "futex_waitv(NULL, 1)", SYS_futex_waitv, {0, 1, 0, 0, 0}, EINVAL, 0, ANY, 0},
  {"process", "futex_waitv(flags 1)", SYS_futex_waitv, {ARG_WAITV_STALE, 1, 1, 0, 0}, EINVAL, 0, ANY, 0},
  {"process", "futex_waitv(nr 0)", SYS_futex_waitv, {ARG_WAITV_STALE, 0, 0, 0, 0}, EINVAL, 0, ANY, 0},
  {"process", "futex_waitv(nr 129)", SYS_futex_waitv, {ARG_WAITV_STALE, 129, 0, 0, 0}, EINVAL, 0, ANY, 0},
  {"process", "futex_waitv(value changed)", SYS_futex_waitv, {ARG_WAITV_STALE, 1, 0, 0, 0}, EAGAIN, 0, ANY, 0},
  {"process", "futex_waitv(waiter flags 0)", SYS_futex_waitv, {ARG_WAITV_BADFLAGS, 1, 0, 0, 0}, EINVAL, 0, ANY, 0},
  {"process", "futex_waitv(unaligned word)", SYS_futex_waitv, {ARG_WAITV_UNALIGNED, 1, 0, 0, 0}, EINVAL, 0, ANY, 0},
  {"process", "futex_waitv(timeout, bad clock)", SYS_futex_waitv, {ARG_WAITV_STALE, 1, 0, ARG_TIMESPEC_ZERO, CLOCK_BOOTTIME}, EINVAL, 0, ANY, 0},
};
// clang-format on

static char dir[4096];
static char path_file[4200], path_new[4200], path_proc_fd[64], path_closed_file[4200];
static char path_open_dir[4200], path_open_new[4200];
static long fds[P_END - P_BASE];
static char buf[4096] __attribute__((aligned(16)));
static struct rlimit rlim_above;
static struct sockaddr_un sun_new;
static struct sockaddr_in sin_any, sin_unspec_any, sin_unspec_lo;
static struct group_req greq;
static uint32_t futex_word = 1;
static struct futex_waitv waitv_stale, waitv_badflags, waitv_unaligned;
static struct timespec ts_zero;
static struct futex_waitv waitv_kernel;
static struct f_owner_ex owner_badtype = {7, 0};
static char* map_area;
static struct timex timex_zero, timex_offset;
static struct timeval tv_bad, tv_now;
static struct timespec ts_now;

// flatux's kernel heap lives here (no mapping natively).
static const uintptr_t kKernelHeap = 0x7e0000000000ull;

static const char* at(char* out, const char* name) {
  snprintf(out, 4200, "%s/%s", dir, name);
  return out;
}

static long read_long(const char* path) {
  FILE* f = fopen(path, "r");
  long v = -1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

static void setup(void) {
  fds[FD_FILE - P_BASE] = open(at(path_file, "file"), O_RDWR | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fds[FD_FILE - P_BASE] >= 0, "scratch file: %s", strerror(errno));
  REQUIRE(write(fds[FD_FILE - P_BASE], "0123456789", 10) == 10);
  fds[FD_RDONLY - P_BASE] = open(path_file, O_RDONLY);
  fds[FD_OPATH - P_BASE] = open(path_file, O_PATH);
  fds[FD_DIR - P_BASE] = open(dir, O_RDONLY | O_DIRECTORY);
  int p[2];
  REQUIRE(pipe(p) == 0);
  fds[FD_PIPE_R - P_BASE] = p[0];
  fds[FD_PIPE_W - P_BASE] = p[1];
  fds[FD_INET - P_BASE] = socket(AF_INET, SOCK_STREAM, 0);
  fds[FD_UDP - P_BASE] = socket(AF_INET, SOCK_DGRAM, 0);
  fds[FD_UNIX - P_BASE] = socket(AF_UNIX, SOCK_STREAM, 0);
  for (int i = FD_FILE; i <= FD_UNIX; i++) REQUIRE(fds[i - P_BASE] >= 0, "placeholder %d", i - P_BASE);
  at(path_new, "new");
  snprintf(path_proc_fd, sizeof path_proc_fd, "/proc/self/fd/%ld", fds[FD_FILE - P_BASE]);
  // A folder the ordinary user may not search, holding a file.
  char closed[4200];
  REQUIRE(mkdir(at(closed, "closed"), 0700) == 0);
  int cf = open(at(path_closed_file, "closed/f"), O_WRONLY | O_CREAT, 0666);
  REQUIRE(cf >= 0);
  close(cf);
  REQUIRE(mkdir(at(path_open_dir, "open"), 0777) == 0 && chmod(path_open_dir, 0777) == 0);
  at(path_open_new, "open/new");
  long nr_open = read_long("/proc/sys/fs/nr_open");
  REQUIRE(nr_open > 0, "/proc/sys/fs/nr_open");
  rlim_above.rlim_cur = rlim_above.rlim_max = (rlim_t)nr_open + 64;
  sun_new.sun_family = AF_UNIX;
  snprintf(sun_new.sun_path, sizeof sun_new.sun_path, "%s", "errno-table-sock");
  sin_any.sin_family = AF_INET;
  sin_any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin_unspec_any.sin_family = AF_UNSPEC;
  sin_unspec_any.sin_addr.s_addr = htonl(INADDR_ANY);
  sin_unspec_lo.sin_family = AF_UNSPEC;
  sin_unspec_lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct sockaddr_in* g = (struct sockaddr_in*)&greq.gr_group;
  g->sin_family = AF_INET;
  g->sin_addr.s_addr = htonl(0xef010203);
  waitv_stale = (struct futex_waitv){.val = 0, .uaddr = (uintptr_t)&futex_word, .flags = FUTEX_32};
  waitv_badflags = (struct futex_waitv){.val = 1, .uaddr = (uintptr_t)&futex_word, .flags = 0};
  waitv_unaligned = (struct futex_waitv){.val = 1, .uaddr = (uintptr_t)&futex_word + 1, .flags = FUTEX_32};
  waitv_kernel = (struct futex_waitv){.val = 0, .uaddr = kKernelHeap, .flags = FUTEX_32};
  timex_offset.modes = ADJ_OFFSET;
  tv_bad.tv_usec = 1000000;
}

static long resolve(long v, long* fresh) {
  if (v < P_BASE || v >= P_END) return v;
  switch (v) {
    case FD_NEW_INET: return *fresh = socket(AF_INET, SOCK_STREAM, 0);
    case PATH_FILE: return (long)path_file;
    case PATH_NEW: return (long)path_new;
    case PATH_PROC_FD: return (long)path_proc_fd;
    case PATH_CLOSED_FILE: return (long)path_closed_file;
    case PATH_OPEN_DIR: return (long)path_open_dir;
    case PATH_OPEN_NEW: return (long)path_open_new;
    case PATH_X: return (long)"x";
    case PATH_EMPTY: return (long)"";
    case ARG_BUF: return (long)buf;
    case ARG_RLIM_ABOVE_NR_OPEN: return (long)&rlim_above;
    case ARG_SOCKADDR_UN: return (long)&sun_new;
    case ARG_SOCKADDR_IN_ANY: return (long)&sin_any;
    case ARG_SOCKADDR_UNSPEC_ANY: return (long)&sin_unspec_any;
    case ARG_SOCKADDR_UNSPEC_LO: return (long)&sin_unspec_lo;
    case ARG_GROUP_REQ: return (long)&greq;
    case ARG_WAITV_STALE: return (long)&waitv_stale;
    case ARG_WAITV_BADFLAGS: return (long)&waitv_badflags;
    case ARG_WAITV_UNALIGNED: return (long)&waitv_unaligned;
    case ARG_TIMESPEC_ZERO: return (long)&ts_zero;
    case ARG_KERNEL_HEAP: return (long)kKernelHeap;
    case ARG_WAITV_KERNEL: return (long)&waitv_kernel;
    case ARG_MAP: return (long)map_area;
    case ARG_MAP_END: return (long)(map_area + 2 * 4096);
    case ARG_OWNER_BADTYPE: return (long)&owner_badtype;
    case ARG_BUF_ZERO: memset(&timex_zero, 0, sizeof timex_zero); return (long)&timex_zero;
    case ARG_TIMEX_OFFSET: return (long)&timex_offset;
    case ARG_TIMEVAL_BAD: return (long)&tv_bad;
    case ARG_TIMEVAL_NOW: gettimeofday(&tv_now, NULL); return (long)&tv_now;
    case ARG_TIMESPEC_NOW: clock_gettime(CLOCK_REALTIME, &ts_now); return (long)&ts_now;
    default: return fds[v - P_BASE];
  }
}

static int as_user(int on) {
  if (on) return syscall(SYS_setresgid, -1, 65534, -1) == 0 && syscall(SYS_setresuid, -1, 65534, -1) == 0;
  return syscall(SYS_setresuid, -1, 0, -1) == 0 && syscall(SYS_setresgid, -1, 0, -1) == 0;
}

// A fresh 2-page mapping for each row, with the page after it free.
static void remap_area(void) {
  if (map_area) munmap(map_area, 3 * 4096);
  map_area = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(map_area != MAP_FAILED);
  REQUIRE(munmap(map_area + 2 * 4096, 4096) == 0);
}

static void run_row(const struct Row* r) {
  long a[6], fresh = -1;
  remap_area();
  for (int i = 0; i < 6; i++) a[i] = resolve(r->args[i], &fresh);
  if (r->who == USER) REQUIRE(as_user(1), "setresuid(65534): %s", strerror(errno));
  errno = 0;
  long got = syscall(r->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
  int e = errno;
  if (r->who == USER) REQUIRE(as_user(0), "back to root: %s", strerror(errno));
  int pass = r->err ? (got == -1 && e == r->err) : (got >= 0 && (r->ret == OK_ANY || got == r->ret));
  if (pass) {
    printf("  %-8s %-56s -> %s\n", r->group, r->what, r->err ? strerror(r->err) : "ok");
  } else if (r->err) {
    guest_fail(__FILE__, __LINE__, NULL, "[%s] %s: got %ld (%s), want %s", r->group, r->what, got,
               got == -1 ? strerror(e) : "success", strerror(r->err));
  } else {
    guest_fail(__FILE__, __LINE__, NULL, "[%s] %s: got %ld (%s), want %ld", r->group, r->what, got,
               got == -1 ? strerror(e) : "success", r->ret);
  }
  if (got >= 0 && r->close_result) close((int)got);
  if (fresh >= 0) close((int)fresh);
  unlink(path_new);
  unlink(path_open_new);
  rmdir(path_open_new);
}

int main(int argc, char** argv) {
  guest_name = "errno_table";
  REQUIRE(argc == 2, "usage: errno_table SCRATCH_DIR");
  REQUIRE(realpath(argv[1], dir) != NULL);
  REQUIRE(chmod(dir, 0755) == 0);
  REQUIRE(chdir(dir) == 0);
  umask(022);
  setup();
  int root = geteuid() == 0, skipped = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (rows[i].who != ANY && !root) {
      skipped++;
      continue;
    }
    run_row(&rows[i]);
  }
  if (skipped) printf("%d row(s) need root and were skipped\n", skipped);
  unlink(path_closed_file);
  rmdir(at(path_new, "closed"));
  rmdir(path_open_dir);
  unlink(path_file);
  return guest_finish();
}
