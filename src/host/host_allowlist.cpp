#include "host/host_allowlist.h"

#include <asm/ioctls.h>
#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <sys/stat.h>
#include <linux/errno.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/netlink.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "host/bpf.h"
#include "host/entry.h"
#include "host/open_how_table.h"

namespace flatux {
namespace {

// How a call's arguments are checked before it is allowed.
enum class Check : uint8_t {
  kNone,          // allowed as it is
  kCloneFlags,    // the shapes the kernel makes, and no other
  kSocket,        // families the kernel serves guests with (see socket_check)
  kIoctl,         // the commands the kernel forwards
  kFcntl,         // no signal ownership, leases or notifications
  kPrctl,         // a child subreaper (forked host processes), no_new_privs
  kOwnPid,        // the first argument is the first host process's pid
  kPrioProcess,   // get/setpriority of one thread (PRIO_PROCESS), never a whole user's
  kMembarrier,    // this process's own barriers only (no system-wide RCU waits)
  kEnosys,        // refused as "no such call", so a caller falls back
  // No set-id bit on a host file (unless owners pass through,
  // --hostfs-owners=host): no mode argument carries S_ISUID or S_ISGID;
  // mknod's makes no device either. The one exception is S_ISGID through
  // fchmodat(at) of the sealed path "." (kSealedDot), which can only
  // reach a folder, where set-group-ID is how Linux hands a group on.
  // (Owners are not checked: the kernel gives FIFOs, sockets and links a
  // guest user makes that user as their host owner, since they carry no
  // record of their own.)
  kCreateMode2,
  kCreateMode3,
  kOpenHow,  // openat2: an entry of the sealed table (open_how_table.h), which creates nothing
  kChmodMode1,
  kChmodMode2,
  kMkdirMode,
  kMknodMode,
};

struct Allowed {
  int nr;
  Check check;
};

// Every host call made after start. Adding a host call to the kernel means
// adding it here; the attack tests and the suite find what is missing.
constexpr Allowed kAllowed[] = {
    // I/O on descriptors the kernel holds
    {SYS_read, Check::kNone}, {SYS_write, Check::kNone}, {SYS_pread64, Check::kNone},
    {SYS_pwrite64, Check::kNone}, {SYS_readv, Check::kNone}, {SYS_writev, Check::kNone},
    {SYS_preadv, Check::kNone}, {SYS_pwritev, Check::kNone}, {SYS_preadv2, Check::kNone},
    {SYS_pwritev2, Check::kNone}, {SYS_lseek, Check::kNone}, {SYS_close, Check::kNone},
    {SYS_fcntl, Check::kFcntl}, {SYS_ioctl, Check::kIoctl}, {SYS_fsync, Check::kNone},
    {SYS_fdatasync, Check::kNone}, {SYS_ftruncate, Check::kNone}, {SYS_truncate, Check::kNone}, {SYS_fallocate, Check::kNone},
    {SYS_fadvise64, Check::kNone}, {SYS_readahead, Check::kNone}, {SYS_getdents64, Check::kNone},
    {SYS_sendfile, Check::kNone}, {SYS_splice, Check::kNone}, {SYS_tee, Check::kNone},
    {SYS_copy_file_range, Check::kNone}, {SYS_pipe2, Check::kNone}, {SYS_memfd_create, Check::kNone},
    {SYS_eventfd2, Check::kNone}, {SYS_timerfd_create, Check::kNone}, {SYS_timerfd_settime, Check::kNone},
    {SYS_timerfd_gettime, Check::kNone}, {SYS_epoll_create1, Check::kNone}, {SYS_epoll_ctl, Check::kNone},
    {SYS_epoll_pwait, Check::kNone}, {SYS_poll, Check::kNone}, {SYS_ppoll, Check::kNone},
    // Host watches behind guest inotify watches on hostfs (vfs/inotify.cpp).
    {SYS_inotify_init1, Check::kNone}, {SYS_inotify_add_watch, Check::kNone}, {SYS_inotify_rm_watch, Check::kNone},
    // Paths: where they lead is the host's confinement's to decide
    // (Landlock, the private mount namespace); these only name files.
    {SYS_open, Check::kCreateMode2}, {SYS_openat, Check::kCreateMode3}, {SYS_openat2, Check::kOpenHow},
    {SYS_fstat, Check::kNone}, {SYS_newfstatat, Check::kNone}, {SYS_statx, Check::kNone}, {SYS_fstatfs, Check::kNone},
    {SYS_readlinkat, Check::kNone}, {SYS_faccessat2, Check::kNone}, {SYS_mkdirat, Check::kMkdirMode},
    {SYS_mknodat, Check::kMknodMode}, {SYS_unlinkat, Check::kNone}, {SYS_symlinkat, Check::kNone},
    {SYS_linkat, Check::kNone}, {SYS_renameat2, Check::kNone}, {SYS_fchmod, Check::kChmodMode1},
    {SYS_fchmodat, Check::kChmodMode2}, {452 /* fchmodat2 */, Check::kChmodMode2}, {SYS_fchown, Check::kNone},
    {SYS_fchownat, Check::kNone}, {SYS_utimensat, Check::kNone},
    {SYS_getxattr, Check::kNone}, {SYS_setxattr, Check::kNone}, {SYS_listxattr, Check::kNone},
    {SYS_removexattr, Check::kNone},
    // Sockets
    {SYS_socket, Check::kSocket}, {SYS_socketpair, Check::kSocket}, {SYS_bind, Check::kNone},
    {SYS_listen, Check::kNone}, {SYS_accept4, Check::kNone}, {SYS_connect, Check::kNone},
    {SYS_shutdown, Check::kNone}, {SYS_getsockname, Check::kNone}, {SYS_getpeername, Check::kNone},
    {SYS_getsockopt, Check::kNone}, {SYS_setsockopt, Check::kNone}, {SYS_sendto, Check::kNone},
    {SYS_recvfrom, Check::kNone}, {SYS_sendmsg, Check::kNone}, {SYS_recvmsg, Check::kNone},
    // Memory
    {SYS_mmap, Check::kNone}, {SYS_munmap, Check::kNone}, {SYS_mprotect, Check::kNone},
    {SYS_mremap, Check::kNone}, {SYS_madvise, Check::kNone}, {SYS_msync, Check::kNone},
    {SYS_brk, Check::kNone}, {SYS_mlock2, Check::kNone}, {SYS_munlock, Check::kNone},
    // Threads, signals, time (the kernel's own tasks and its launcher)
    {SYS_clone, Check::kCloneFlags}, {SYS_clone3, Check::kEnosys}, {SYS_exit, Check::kNone},
    {SYS_exit_group, Check::kNone}, {SYS_wait4, Check::kNone}, {SYS_waitid, Check::kNone},
    {SYS_futex, Check::kNone}, {SYS_futex_waitv, Check::kNone}, {SYS_tgkill, Check::kNone},
    {SYS_rt_sigaction, Check::kNone}, {SYS_set_tid_address, Check::kNone}, {SYS_prctl, Check::kPrctl},
    // Forked guests are host processes of their own: watched through
    // pidfds (CLONE_PIDFD's, and the first process's), killed through them,
    // their memory read for /proc/PID/cmdline (Landlock keeps that to this
    // process's own descendants, as it does signals).
    {SYS_pidfd_open, Check::kOwnPid}, {SYS_pidfd_send_signal, Check::kNone},
    {SYS_process_vm_readv, Check::kNone},
    // A guest thread's scheduling is its host thread's (sys/sys_sched.cpp:
    // the kernel names only its own threads; a real-time policy needs
    // CAP_SYS_NICE over the host, which confinement leaves out).
    // Priorities of one thread only.
    {SYS_sched_getscheduler, Check::kNone}, {SYS_sched_setscheduler, Check::kNone},
    {SYS_sched_getparam, Check::kNone}, {SYS_sched_setparam, Check::kNone},
    {SYS_sched_rr_get_interval, Check::kNone}, {SYS_getpriority, Check::kPrioProcess},
    {SYS_setpriority, Check::kPrioProcess},
    // Rewritten syscall sites: every CPU must see the new code
    // (host/code_patch.cpp); this process's own barriers only.
    {SYS_membarrier, Check::kMembarrier},
    {SYS_rt_sigprocmask, Check::kNone}, {SYS_rt_sigreturn, Check::kNone}, {SYS_sigaltstack, Check::kNone},
    {SYS_restart_syscall, Check::kNone}, {SYS_arch_prctl, Check::kNone}, {SYS_sched_yield, Check::kNone},
    {SYS_sched_getaffinity, Check::kNone}, {SYS_sched_setaffinity, Check::kNone},
    {SYS_getcpu, Check::kNone}, {SYS_clock_gettime, Check::kNone}, {SYS_clock_getres, Check::kNone},
    {SYS_clock_nanosleep, Check::kNone}, {SYS_nanosleep, Check::kNone}, {SYS_gettimeofday, Check::kNone},
    {SYS_time, Check::kNone}, {SYS_getrandom, Check::kNone}, {SYS_sysinfo, Check::kNone},
    {SYS_adjtimex, Check::kNone},  // the clock's state; setting it needs CAP_SYS_TIME over the host
    {SYS_mincore, Check::kNone},  // whether the kernel heap is there, for an oops off a kernel stack
    // Who we are (answers only)
    {SYS_getpid, Check::kNone}, {SYS_gettid, Check::kNone}, {SYS_getppid, Check::kNone},
    {SYS_getuid, Check::kNone}, {SYS_geteuid, Check::kNone}, {SYS_getgid, Check::kNone},
    {SYS_getegid, Check::kNone},
};
constexpr int kNumAllowed = sizeof kAllowed / sizeof kAllowed[0];

// Merges that both add a call must not list it twice (the search would
// find either entry, and their checks may differ).
constexpr bool each_call_once() {
  for (int i = 0; i < kNumAllowed; i++)
    for (int j = i + 1; j < kNumAllowed; j++)
      if (kAllowed[i].nr == kAllowed[j].nr) return false;
  return true;
}
static_assert(each_call_once(), "a host call is listed twice");

// Exactly the kernel's own shapes (host/entry.h): no namespaces, no
// tracing, no vfork, no sibling (CLONE_PARENT), no thread sharing less
// than everything. (The legacy call ignores the upper 32 bits.)
constexpr uint32_t kCloneShapes[] = {(uint32_t)kCloneKernelThread, (uint32_t)kCloneTaskThread,
                                     (uint32_t)kCloneMovedThread, (uint32_t)kCloneHostProcess};

// Terminal and socket queries the kernel forwards (hostfs/file.cpp,
// net/sock_ioctl.cpp, tty/console.cpp, the launcher's terminal).
constexpr uint32_t kIoctls[] = {
    TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, TIOCSWINSZ, FIONREAD, FIONBIO, TIOCOUTQ,
    SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFDSTADDR, SIOCGIFBRDADDR, SIOCGIFNETMASK,
    SIOCGIFMETRIC, SIOCGIFMTU, SIOCGIFHWADDR, SIOCGIFINDEX, SIOCGIFNAME, SIOCGIFTXQLEN, SIOCGIFMAP,
    SIOCGIFPFLAGS, SIOCATMARK, SIOCOUTQNSD,
};

constexpr uint32_t kFcntls[] = {
    F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_SETLK, F_SETLKW,
    F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_ADD_SEALS, F_GET_SEALS, F_GETPIPE_SZ, F_SETPIPE_SZ,
};

constexpr uint32_t kPrctls[] = {PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS};

constexpr uint32_t kPrioProcessOnly[] = {PRIO_PROCESS};

constexpr uint32_t kMembarriers[] = {
    MEMBARRIER_CMD_QUERY, MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
    MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE,
};

constexpr uint32_t kRetAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kRetDeny = SECCOMP_RET_ERRNO | EPERM;
constexpr uint32_t kRetEnosys = SECCOMP_RET_ERRNO | ENOSYS;

// Allows when the low word of argument `arg` is one of `values`.
template <size_t N>
void emit_one_of(BpfProg& p, int arg, const uint32_t (&values)[N]) {
  p.load(seccomp_arg_lo(arg));
  int tests[N];
  for (size_t i = 0; i < N; i++) tests[i] = p.emit(BPF_JMP | BPF_JEQ | BPF_K, values[i]);
  p.ret(kRetDeny);
  int allow = p.ret(kRetAllow);
  for (size_t i = 0; i < N; i++) {
    p.patch(tests[i], allow, true);
    p.f[tests[i]].jf = 0;
  }
}

// socket and socketpair (family, type, protocol): AF_UNIX; AF_INET and
// AF_INET6 unless --net=none; AF_NETLINK for route queries and socket
// diagnostics only. (The kernel asks the host for a pair in any family it
// serves, so that the host says why there is none.) No other family is
// reachable at all, so none of their protocol modules can be loaded.
void emit_socket(BpfProg& p, bool net_none) {
  p.load(seccomp_arg_lo(0));
  int is_unix = p.emit(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX);
  int is_inet = p.emit(BPF_JMP | BPF_JEQ | BPF_K, AF_INET);
  int is_inet6 = p.emit(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6);
  int is_netlink = p.emit(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK);
  int deny = p.ret(kRetDeny);
  int netlink = p.load(seccomp_arg_lo(2));
  int route = p.emit(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_ROUTE);
  int diag = p.emit(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_SOCK_DIAG);
  p.ret(kRetDeny);
  int allow = p.ret(kRetAllow);
  p.patch(is_unix, allow, true);
  p.patch(is_inet, net_none ? deny : allow, true);
  p.patch(is_inet6, net_none ? deny : allow, true);
  p.patch(is_netlink, netlink, true);
  p.patch(route, allow, true);
  p.patch(diag, allow, true);
}

// Denies when the low word of argument `arg` has any bit of `bits`; with
// `no_devices`, also when its file type is a character or block device.
void emit_mode(BpfProg& p, int arg, uint32_t bits, bool no_devices) {
  p.load(seccomp_arg_lo(arg));
  int setid = p.emit(BPF_JMP | BPF_JSET | BPF_K, bits);
  int chr = -1, blk = -1;
  if (no_devices) {
    p.emit(BPF_ALU | BPF_AND | BPF_K, S_IFMT);
    chr = p.emit(BPF_JMP | BPF_JEQ | BPF_K, S_IFCHR);
    blk = p.emit(BPF_JMP | BPF_JEQ | BPF_K, S_IFBLK);
  }
  p.ret(kRetAllow);
  int deny = p.ret(kRetDeny);
  p.patch(setid, deny, true);
  if (no_devices) {
    p.patch(chr, deny, true);
    p.patch(blk, deny, true);
  }
}

// fchmodat and fchmodat2 (dir, path, mode): no S_ISUID; S_ISGID only when
// the path is the sealed "." (so a folder).
void emit_folder_chmod(BpfProg& p) {
  p.load(seccomp_arg_lo(2));
  int setuid = p.emit(BPF_JMP | BPF_JSET | BPF_K, S_ISUID, 0, 0);
  int setgid = p.emit(BPF_JMP | BPF_JSET | BPF_K, S_ISGID, 0, 0);
  int allow = p.ret(kRetAllow);
  int dot_hi = p.load(seccomp_arg_lo(1) + 4);
  int hi = p.emit(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(kSealedDot >> 32), 0, 0);
  p.load(seccomp_arg_lo(1));
  int lo = p.emit(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)kSealedDot, 0, 0);
  p.ret(kRetAllow);
  int deny = p.ret(kRetDeny);
  p.patch(setuid, deny, true);
  p.patch(setgid, dot_hi, true);
  p.patch(hi, deny, false);
  p.patch(lo, deny, false);
  (void)allow;
}

// openat2(dir, path, how, size): `how` is one of the table's entries (its
// address, never an address inside one), `size` an open_how's.
void emit_open_how(BpfProg& p) {
  constexpr uint32_t kLo = (uint32_t)kOpenHowTable, kEnd = kLo + kOpenHowEntries * kOpenHowEntry;
  static_assert((kOpenHowTable & 0xffffffffull) + kOpenHowEntries * kOpenHowEntry < (1ull << 32));
  int tests[5];
  p.load(seccomp_arg_lo(2) + 4);
  tests[0] = p.emit(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(kOpenHowTable >> 32), 0, 0);
  p.load(seccomp_arg_lo(2));
  tests[1] = p.emit(BPF_JMP | BPF_JGE | BPF_K, kLo, 0, 0);
  int past = p.emit(BPF_JMP | BPF_JGE | BPF_K, kEnd, 0, 0);
  p.emit(BPF_ALU | BPF_AND | BPF_K, kOpenHowEntry - 1);
  tests[2] = p.emit(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0);
  p.load(seccomp_arg_lo(3));
  tests[3] = p.emit(BPF_JMP | BPF_JEQ | BPF_K, 24, 0, 0);
  p.load(seccomp_arg_lo(3) + 4);
  tests[4] = p.emit(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0);
  p.ret(kRetAllow);
  int deny = p.ret(kRetDeny);
  for (int i = 0; i < 5; i++) p.patch(tests[i], deny, false);
  p.patch(past, deny, true);
}

void emit_check(BpfProg& p, Check c, const HostAllowlistOptions& o) {
  switch (c) {
    case Check::kNone: p.ret(kRetAllow); return;
    case Check::kEnosys: p.ret(kRetEnosys); return;
    case Check::kCloneFlags: emit_one_of(p, 0, kCloneShapes); return;
    case Check::kSocket: emit_socket(p, o.net_none); return;
    case Check::kOpenHow: emit_open_how(p); return;
    case Check::kIoctl: emit_one_of(p, 1, kIoctls); return;
    case Check::kFcntl: emit_one_of(p, 1, kFcntls); return;
    case Check::kPrctl: emit_one_of(p, 0, kPrctls); return;
    case Check::kPrioProcess: emit_one_of(p, 0, kPrioProcessOnly); return;
    case Check::kMembarrier: emit_one_of(p, 0, kMembarriers); return;
    case Check::kCreateMode2:
    case Check::kCreateMode3:
    case Check::kChmodMode1:
    case Check::kChmodMode2:
    case Check::kMkdirMode:
    case Check::kMknodMode:
      if (o.host_owners) {
        p.ret(kRetAllow);
        return;
      }
      if (c == Check::kCreateMode2 || c == Check::kCreateMode3)
        emit_mode(p, c == Check::kCreateMode2 ? 2 : 3, S_ISUID | S_ISGID, false);
      else if (c == Check::kChmodMode1 || c == Check::kMkdirMode)
        emit_mode(p, c == Check::kChmodMode1 ? 1 : 2, S_ISUID | S_ISGID, false);
      else if (c == Check::kChmodMode2)
        emit_folder_chmod(p);
      else emit_mode(p, 2, S_ISUID | S_ISGID, true);
      return;
    case Check::kOwnPid: {
      p.load(seccomp_arg_lo(0));
      p.emit(BPF_JMP | BPF_JEQ | BPF_K, o.own_pid, 1, 0);
      p.ret(kRetDeny);
      p.ret(kRetAllow);
      return;
    }
  }
}

// A binary search over sorted[lo, hi) on the syscall number (in A); each
// leaf holds its entry's check. Jumps too far for a conditional jump go
// through an unconditional one.
bool emit_tree(BpfProg& p, const Allowed* sorted, int lo, int hi, const HostAllowlistOptions& o) {
  if (hi - lo <= 3) {
    for (int i = lo; i < hi; i++) {
      int test = p.emit(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)sorted[i].nr);
      emit_check(p, sorted[i].check, o);
      if (!p.patch(test, p.n, false)) return false;  // false: the next test
    }
    p.ret(kRetDeny);
    return true;
  }
  int mid = lo + (hi - lo) / 2;
  int split = p.emit(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)sorted[mid].nr, 0, 1);
  int far = p.emit(BPF_JMP | BPF_JA, 0);  // to the upper half
  if (!emit_tree(p, sorted, lo, mid, o)) return false;
  p.f[far].k = (uint32_t)(p.n - far - 1);
  (void)split;
  return emit_tree(p, sorted, mid, hi, o);
}

}  // namespace

bool emit_host_allowlist(BpfProg& p, const HostAllowlistOptions& o, int* ncalls) {
  Allowed sorted[kNumAllowed];
  for (int i = 0; i < kNumAllowed; i++) sorted[i] = kAllowed[i];
  for (int i = 1; i < kNumAllowed; i++)  // insertion sort: a small constant table
    for (int j = i; j > 0 && sorted[j - 1].nr > sorted[j].nr; j--) {
      Allowed t = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = t;
    }
  p.load(kSeccompNr);
  p.emit(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);  // __X32_SYSCALL_BIT: never the kernel's
  p.ret(kRetDeny);
  if (!emit_tree(p, sorted, 0, kNumAllowed, o) || p.overflow) return false;
  if (ncalls) *ncalls = kNumAllowed;
  return true;
}

}  // namespace flatux
