// format_call: one strace-style line per syscall. Arguments are rendered by
// the per-syscall description table below; syscalls it does not list show
// their raw arguments in hex, as strace does for syscalls it cannot decode.
#include <asm/unistd_64.h>

#include "kernel/strace/internal.h"
#include "kernel/strace/strace.h"

namespace flatux::strace {
namespace {

enum Arg : uint8_t {
  ARG_END = 0,
  // Plain numbers.
  ARG_INT,    // int, signed decimal
  ARG_UINT,   // unsigned int, decimal
  ARG_LONG,   // long / off_t, signed decimal
  ARG_ULONG,  // size_t, decimal
  ARG_HEX,    // unsigned long shown as %#lx
  ARG_PTR,    // pointer: NULL or hex
  ARG_FD,
  ARG_DIRFD,  // AT_FDCWD or a descriptor
  ARG_SIGNAL,
  ARG_MODE,   // octal permission bits
  // Guest strings and buffers.
  ARG_PATH,
  ARG_STR,          // short string, truncated like strace -s 32
  ARG_BUF_IN,       // bytes, length is the next argument (write)
  ARG_BUF_OUT,      // bytes, length is the return value (read)
  ARG_RANDOM_OUT,   // as ARG_BUF_OUT, in \x hex (getrandom)
  ARG_STR_OUT,      // string written by the call, length is the return value (readlink)
  ARG_PATH_OUT,     // NUL-terminated path written by the call (getcwd)
  ARG_ARGV,
  ARG_ENVP,
  ARG_IOVEC_IN,     // iovec array, count is the next argument
  ARG_IOVEC_OUT,    // iovec array filled up to the return value
  // Flags and enumerations.
  ARG_OPEN_FLAGS,
  ARG_MODE_IF_CREAT,  // open mode, only present with O_CREAT/O_TMPFILE in the previous argument
  ARG_CLOEXEC_FLAGS,  // O_ flags without an access mode (pipe2, dup3)
  ARG_AT_FLAGS,
  ARG_FACCESSAT_FLAGS,
  ARG_STATX_FLAGS,
  ARG_STATX_MASK,
  ARG_ACCESS_MODE,
  ARG_WHENCE,
  ARG_PROT,
  ARG_MAP_FLAGS,
  ARG_MREMAP_FLAGS,
  ARG_MREMAP_ADDR,  // new address, only present with MREMAP_FIXED in the previous argument
  ARG_MADVISE,
  ARG_SIGMASK_HOW,
  ARG_CLOCKID,
  ARG_TIMER_FLAGS,
  ARG_WAIT_OPTIONS,
  ARG_RLIMIT_RESOURCE,
  ARG_GRND_FLAGS,
  ARG_MEMFD_FLAGS,
  ARG_CLOSE_RANGE_FLAGS,
  // Structs.
  ARG_STAT_OUT,
  ARG_STATX_OUT,
  ARG_DIRENTS_OUT,  // getdents buffer, summarised as an entry count
  ARG_TIMESPEC_IN,
  ARG_TIMESPEC_OUT,
  ARG_UTSNAME_OUT,
  ARG_SIGACTION_IN,
  ARG_SIGACTION_OUT,
  ARG_SIGSET_IN,    // size is the argument after next (rt_sigprocmask's sigsetsize)
  ARG_SIGSET_OUT,
  ARG_WSTATUS_OUT,
  ARG_PIPEFDS_OUT,
  ARG_RLIMIT_IN,
  ARG_RLIMIT_OUT,
  ARG_CLONE3_ARGS,  // size is the next argument
  // Decoders that consume this and the following arguments.
  ARG_IOCTL,       // request, then its argument
  ARG_FCNTL,       // command, then its argument
  ARG_ARCH_PRCTL,  // code, then its argument
  ARG_CLONE,       // clone(2)'s five arguments in strace's named order
  ARG_FUTEX,       // futex(2) from the op on; which arguments exist depends on the op
};

enum Ret : uint8_t {
  RET_DEC = 0,
  RET_HEX,    // addresses: mmap, mremap, brk
  RET_OCT,    // umask
  RET_FCNTL,  // F_GETFL & co. decode their result
};

struct Desc {
  int nr;
  Arg args[6];
  Ret ret = RET_DEC;
};

// One row per syscall with a richer rendering than raw hex.
constexpr Desc kDescs[] = {
    // Files and descriptors.
    {__NR_read, {ARG_FD, ARG_BUF_OUT, ARG_ULONG}},
    {__NR_write, {ARG_FD, ARG_BUF_IN, ARG_ULONG}},
    {__NR_pread64, {ARG_FD, ARG_BUF_OUT, ARG_ULONG, ARG_LONG}},
    {__NR_pwrite64, {ARG_FD, ARG_BUF_IN, ARG_ULONG, ARG_LONG}},
    {__NR_readv, {ARG_FD, ARG_IOVEC_OUT, ARG_ULONG}},
    {__NR_writev, {ARG_FD, ARG_IOVEC_IN, ARG_ULONG}},
    {__NR_open, {ARG_PATH, ARG_OPEN_FLAGS, ARG_MODE_IF_CREAT}},
    {__NR_openat, {ARG_DIRFD, ARG_PATH, ARG_OPEN_FLAGS, ARG_MODE_IF_CREAT}},
    {__NR_creat, {ARG_PATH, ARG_MODE}},
    {__NR_close, {ARG_FD}},
    {__NR_close_range, {ARG_UINT, ARG_UINT, ARG_CLOSE_RANGE_FLAGS}},
    {__NR_stat, {ARG_PATH, ARG_STAT_OUT}},
    {__NR_lstat, {ARG_PATH, ARG_STAT_OUT}},
    {__NR_fstat, {ARG_FD, ARG_STAT_OUT}},
    {__NR_newfstatat, {ARG_DIRFD, ARG_PATH, ARG_STAT_OUT, ARG_AT_FLAGS}},
    {__NR_statx, {ARG_DIRFD, ARG_PATH, ARG_STATX_FLAGS, ARG_STATX_MASK, ARG_STATX_OUT}},
    {__NR_access, {ARG_PATH, ARG_ACCESS_MODE}},
    {__NR_faccessat, {ARG_DIRFD, ARG_PATH, ARG_ACCESS_MODE}},
    {__NR_faccessat2, {ARG_DIRFD, ARG_PATH, ARG_ACCESS_MODE, ARG_FACCESSAT_FLAGS}},
    {__NR_getdents, {ARG_FD, ARG_DIRENTS_OUT, ARG_UINT}},
    {__NR_getdents64, {ARG_FD, ARG_DIRENTS_OUT, ARG_UINT}},
    {__NR_lseek, {ARG_FD, ARG_LONG, ARG_WHENCE}},
    {__NR_ioctl, {ARG_FD, ARG_IOCTL}},
    {__NR_fcntl, {ARG_FD, ARG_FCNTL}, RET_FCNTL},
    {__NR_dup, {ARG_FD}},
    {__NR_dup2, {ARG_FD, ARG_FD}},
    {__NR_dup3, {ARG_FD, ARG_FD, ARG_CLOEXEC_FLAGS}},
    {__NR_pipe, {ARG_PIPEFDS_OUT}},
    {__NR_pipe2, {ARG_PIPEFDS_OUT, ARG_CLOEXEC_FLAGS}},
    {__NR_readlink, {ARG_PATH, ARG_STR_OUT, ARG_ULONG}},
    {__NR_readlinkat, {ARG_DIRFD, ARG_PATH, ARG_STR_OUT, ARG_ULONG}},
    {__NR_chdir, {ARG_PATH}},
    {__NR_fchdir, {ARG_FD}},
    {__NR_getcwd, {ARG_PATH_OUT, ARG_ULONG}},
    {__NR_mkdir, {ARG_PATH, ARG_MODE}},
    {__NR_mkdirat, {ARG_DIRFD, ARG_PATH, ARG_MODE}},
    {__NR_rmdir, {ARG_PATH}},
    {__NR_unlink, {ARG_PATH}},
    {__NR_unlinkat, {ARG_DIRFD, ARG_PATH, ARG_AT_FLAGS}},
    {__NR_rename, {ARG_PATH, ARG_PATH}},
    {__NR_renameat, {ARG_DIRFD, ARG_PATH, ARG_DIRFD, ARG_PATH}},
    {__NR_renameat2, {ARG_DIRFD, ARG_PATH, ARG_DIRFD, ARG_PATH, ARG_HEX}},
    {__NR_link, {ARG_PATH, ARG_PATH}},
    {__NR_linkat, {ARG_DIRFD, ARG_PATH, ARG_DIRFD, ARG_PATH, ARG_AT_FLAGS}},
    {__NR_symlink, {ARG_PATH, ARG_PATH}},
    {__NR_symlinkat, {ARG_PATH, ARG_DIRFD, ARG_PATH}},
    {__NR_chmod, {ARG_PATH, ARG_MODE}},
    {__NR_fchmod, {ARG_FD, ARG_MODE}},
    {__NR_fchmodat, {ARG_DIRFD, ARG_PATH, ARG_MODE}},
    {__NR_chown, {ARG_PATH, ARG_INT, ARG_INT}},
    {__NR_lchown, {ARG_PATH, ARG_INT, ARG_INT}},
    {__NR_fchown, {ARG_FD, ARG_INT, ARG_INT}},
    {__NR_fchownat, {ARG_DIRFD, ARG_PATH, ARG_INT, ARG_INT, ARG_AT_FLAGS}},
    {__NR_truncate, {ARG_PATH, ARG_LONG}},
    {__NR_ftruncate, {ARG_FD, ARG_LONG}},
    {__NR_fsync, {ARG_FD}},
    {__NR_fdatasync, {ARG_FD}},
    {__NR_chroot, {ARG_PATH}},
    {__NR_umask, {ARG_MODE}, RET_OCT},
    {__NR_statfs, {ARG_PATH, ARG_PTR}},
    {__NR_fstatfs, {ARG_FD, ARG_PTR}},
    {__NR_utimensat, {ARG_DIRFD, ARG_PATH, ARG_PTR, ARG_AT_FLAGS}},
    {__NR_memfd_create, {ARG_STR, ARG_MEMFD_FLAGS}},
    // Memory.
    {__NR_mmap, {ARG_PTR, ARG_ULONG, ARG_PROT, ARG_MAP_FLAGS, ARG_FD, ARG_HEX}, RET_HEX},
    {__NR_munmap, {ARG_PTR, ARG_ULONG}},
    {__NR_mprotect, {ARG_PTR, ARG_ULONG, ARG_PROT}},
    {__NR_mremap, {ARG_PTR, ARG_ULONG, ARG_ULONG, ARG_MREMAP_FLAGS, ARG_MREMAP_ADDR}, RET_HEX},
    {__NR_brk, {ARG_PTR}, RET_HEX},
    {__NR_madvise, {ARG_PTR, ARG_ULONG, ARG_MADVISE}},
    {__NR_msync, {ARG_PTR, ARG_ULONG, ARG_HEX}},
    {__NR_mlock, {ARG_PTR, ARG_ULONG}},
    {__NR_munlock, {ARG_PTR, ARG_ULONG}},
    {__NR_mlock2, {ARG_PTR, ARG_ULONG, ARG_HEX}},
    {__NR_mlockall, {ARG_HEX}},
    // System V IPC.
    {__NR_shmget, {ARG_HEX, ARG_ULONG, ARG_HEX}},
    {__NR_shmat, {ARG_INT, ARG_PTR, ARG_HEX}, RET_HEX},
    {__NR_shmdt, {ARG_PTR}},
    {__NR_shmctl, {ARG_INT, ARG_INT, ARG_PTR}},
    {__NR_semget, {ARG_HEX, ARG_INT, ARG_HEX}},
    {__NR_semop, {ARG_INT, ARG_PTR, ARG_ULONG}},
    {__NR_semtimedop, {ARG_INT, ARG_PTR, ARG_ULONG, ARG_TIMESPEC_IN}},
    {__NR_semctl, {ARG_INT, ARG_INT, ARG_INT, ARG_HEX}},
    {__NR_msgget, {ARG_HEX, ARG_HEX}},
    {__NR_msgsnd, {ARG_INT, ARG_PTR, ARG_ULONG, ARG_HEX}},
    {__NR_msgrcv, {ARG_INT, ARG_PTR, ARG_ULONG, ARG_LONG, ARG_HEX}},
    {__NR_msgctl, {ARG_INT, ARG_INT, ARG_PTR}},
    // Processes and threads.
    {__NR_execve, {ARG_PATH, ARG_ARGV, ARG_ENVP}},
    {__NR_execveat, {ARG_DIRFD, ARG_PATH, ARG_ARGV, ARG_ENVP, ARG_AT_FLAGS}},
    {__NR_exit, {ARG_INT}},
    {__NR_exit_group, {ARG_INT}},
    {__NR_clone, {ARG_CLONE}},
    {__NR_clone3, {ARG_CLONE3_ARGS, ARG_ULONG}},
    {__NR_wait4, {ARG_INT, ARG_WSTATUS_OUT, ARG_WAIT_OPTIONS, ARG_PTR}},
    {__NR_kill, {ARG_INT, ARG_SIGNAL}},
    {__NR_tkill, {ARG_INT, ARG_SIGNAL}},
    {__NR_tgkill, {ARG_INT, ARG_INT, ARG_SIGNAL}},
    {__NR_arch_prctl, {ARG_ARCH_PRCTL}},
    {__NR_set_tid_address, {ARG_PTR}},
    {__NR_set_robust_list, {ARG_PTR, ARG_ULONG}},
    {__NR_futex, {ARG_PTR, ARG_FUTEX}},
    {__NR_futex_waitv, {ARG_PTR, ARG_UINT, ARG_HEX, ARG_TIMESPEC_IN, ARG_CLOCKID}},
    {__NR_personality, {ARG_HEX}, RET_HEX},
    {__NR_prlimit64, {ARG_INT, ARG_RLIMIT_RESOURCE, ARG_RLIMIT_IN, ARG_RLIMIT_OUT}},
    {__NR_getrlimit, {ARG_RLIMIT_RESOURCE, ARG_RLIMIT_OUT}},
    {__NR_setrlimit, {ARG_RLIMIT_RESOURCE, ARG_RLIMIT_IN}},
    {__NR_setpgid, {ARG_INT, ARG_INT}},
    {__NR_getpgid, {ARG_INT}},
    {__NR_getsid, {ARG_INT}},
    {__NR_setuid, {ARG_UINT}},
    {__NR_setgid, {ARG_UINT}},
    {__NR_uname, {ARG_UTSNAME_OUT}},
    {__NR_getrandom, {ARG_RANDOM_OUT, ARG_ULONG, ARG_GRND_FLAGS}},
    // Signals.
    {__NR_rt_sigaction, {ARG_SIGNAL, ARG_SIGACTION_IN, ARG_SIGACTION_OUT, ARG_ULONG}},
    {__NR_rt_sigprocmask, {ARG_SIGMASK_HOW, ARG_SIGSET_IN, ARG_SIGSET_OUT, ARG_ULONG}},
    {__NR_sigaltstack, {ARG_PTR, ARG_PTR}},
    // Time.
    {__NR_clock_gettime, {ARG_CLOCKID, ARG_TIMESPEC_OUT}},
    {__NR_clock_getres, {ARG_CLOCKID, ARG_TIMESPEC_OUT}},
    {__NR_clock_settime, {ARG_CLOCKID, ARG_TIMESPEC_IN}},
    {__NR_clock_nanosleep, {ARG_CLOCKID, ARG_TIMER_FLAGS, ARG_TIMESPEC_IN, ARG_PTR}},
    {__NR_nanosleep, {ARG_TIMESPEC_IN, ARG_PTR}},
};

const Desc* find_desc(long nr) {
  for (const Desc& d : kDescs)
    if (d.nr == nr) return &d;
  return nullptr;
}

struct Ctx {
  const uint64_t* a;
  long ret;
  bool returned;
  // The call returned and did not fail: out-parameters hold results.
  bool ok;
};

constexpr long kMaxErrno = 4095;
constexpr int64_t kAtFdcwd = -100;
constexpr uint64_t kOCreat = 0100;
constexpr uint64_t kOTmpfileBit = 020000000;  // __O_TMPFILE
constexpr uint64_t kMremapFixed = 2;

bool is_error(long ret) { return ret < 0 && ret >= -kMaxErrno; }

int32_t as_int(uint64_t v) { return int32_t(uint32_t(v)); }

// Arguments that may be absent depending on another argument's value.
bool arg_present(const Ctx& c, int i, Arg kind) {
  switch (kind) {
    case ARG_MODE_IF_CREAT: return i > 0 && (c.a[i - 1] & (kOCreat | kOTmpfileBit));
    case ARG_MREMAP_ADDR: return i > 0 && (c.a[i - 1] & kMremapFixed);
    default: return true;
  }
}

// Bytes the call produced (for out-buffers), or 0 if it produced none.
uint64_t produced(const Ctx& c) { return c.ok && c.ret > 0 ? uint64_t(c.ret) : 0; }

void print_fd(KFmt& f, uint64_t v) { f.dec(as_int(v)); }

void print_dirfd(KFmt& f, uint64_t v) {
  if (as_int(v) == kAtFdcwd) f.str("AT_FDCWD");
  else f.dec(as_int(v));
}

void print_ioctl(KFmt& f, const Ctx& c, int i) {
  uint64_t arg = c.a[i + 1];
  IoctlArg kind = print_ioctl_cmd(f, c.a[i]);
  if (kind == IoctlArg::kNone) return;
  f.str(", ");
  switch (kind) {
    case IoctlArg::kNone: break;
    case IoctlArg::kHex: print_hex(f, arg); break;
    case IoctlArg::kDec: f.dec(as_int(arg)); break;
    case IoctlArg::kPtr: print_ptr(f, arg); break;
    case IoctlArg::kIntIn: print_int_ref(f, arg); break;
    case IoctlArg::kIntOut:
      if (c.ok) print_int_ref(f, arg);
      else print_ptr(f, arg);
      break;
    case IoctlArg::kWinszIn: print_winsize(f, arg); break;
    case IoctlArg::kWinszOut:
      if (c.ok) print_winsize(f, arg);
      else print_ptr(f, arg);
      break;
    case IoctlArg::kFlush: print_tcflsh(f, arg); break;
    case IoctlArg::kXonc: print_tcxonc(f, arg); break;
  }
}

void print_fcntl(KFmt& f, const Ctx& c, int i) {
  uint64_t arg = c.a[i + 1];
  FcntlArg kind = print_fcntl_cmd(f, c.a[i]);
  if (kind == FcntlArg::kNone) return;
  f.str(", ");
  switch (kind) {
    case FcntlArg::kNone: break;
    case FcntlArg::kDec: f.dec(as_int(arg)); break;
    case FcntlArg::kHex: print_hex(f, arg); break;
    case FcntlArg::kPtr: print_ptr(f, arg); break;
    case FcntlArg::kFdFlags: print_fd_flags(f, arg); break;
    case FcntlArg::kOpenFlags: print_open_flags(f, arg); break;
    case FcntlArg::kSignal: print_signal(f, as_int(arg)); break;
    case FcntlArg::kLease: print_lease(f, arg); break;
    case FcntlArg::kNotify: print_dnotify(f, arg); break;
    case FcntlArg::kSeals: print_seals(f, arg); break;
  }
}

void print_arch_prctl(KFmt& f, const Ctx& c, int i) {
  uint64_t arg = c.a[i + 1];
  ArchArg kind = print_arch_prctl_code(f, c.a[i]);
  if (kind == ArchArg::kNone) return;
  f.str(", ");
  switch (kind) {
    case ArchArg::kNone: break;
    case ArchArg::kHex: print_hex(f, arg); break;
    case ArchArg::kDec: f.dec(int64_t(arg)); break;
    case ArchArg::kPtr: print_ptr(f, arg); break;
    case ArchArg::kOutPtr:
      if (c.ok) print_u64_ref_hex(f, arg);
      else print_ptr(f, arg);
      break;
    case ArchArg::kXfeature: print_xfeature(f, arg); break;
  }
}

// clone(flags, stack, parent_tid, child_tid, tls) on x86_64, shown the way
// strace names the fields; the tid/tls fields appear only when a flag uses them.
void print_clone(KFmt& f, const Ctx& c) {
  constexpr uint64_t kSettls = 0x80000, kParentSettid = 0x100000;
  constexpr uint64_t kChildCleartid = 0x200000, kChildSettid = 0x01000000;
  uint64_t flags = c.a[0];
  f.str("child_stack=");
  print_ptr(f, c.a[1]);
  f.str(", flags=");
  print_clone_flags(f, flags);
  if (flags & kParentSettid) {
    f.str(", parent_tid=");
    print_ptr(f, c.a[2]);
  }
  if (flags & kSettls) {
    f.str(", tls=");
    print_hex(f, c.a[4]);
  }
  if (flags & (kChildSettid | kChildCleartid)) {
    f.str(", child_tidptr=");
    print_ptr(f, c.a[3]);
  }
}

// futex(uaddr, op, val, timeout|val2, uaddr2, val3) from the op on.
void print_futex(KFmt& f, const Ctx& c, int i) {
  enum { kWait, kWake, kFd, kRequeue, kCmpRequeue, kWakeOp, kLockPi, kUnlockPi, kTrylockPi,
         kWaitBitset, kWakeBitset, kWaitRequeuePi, kCmpRequeuePi, kLockPi2 };
  constexpr uint32_t kBitsetMatchAny = 0xffffffff;
  const uint64_t* a = c.a + i;  // a[0] op, a[1] val, a[2] timeout/val2, a[3] uaddr2, a[4] val3
  int cmd = print_futex_op(f, a[0]);
  auto val = [&] { f.str(", ").udec(uint32_t(a[1])); };
  auto timeout = [&] { f.str(", "); print_timespec(f, a[2]); };
  auto val2 = [&] { f.str(", ").udec(uint32_t(a[2])); };
  auto uaddr2 = [&] { f.str(", "); print_ptr(f, a[3]); };
  auto val3 = [&] { f.str(", ").udec(uint32_t(a[4])); };
  auto bitset = [&] {
    f.str(", ");
    if (uint32_t(a[4]) == kBitsetMatchAny) f.str("FUTEX_BITSET_MATCH_ANY");
    else print_hex(f, uint32_t(a[4]));
  };
  switch (cmd) {
    case kWait: val(); timeout(); break;
    case kWake: case kFd: val(); break;
    case kRequeue: val(); val2(); uaddr2(); break;
    case kCmpRequeue: case kCmpRequeuePi: val(); val2(); uaddr2(); val3(); break;
    case kWakeOp: val(); val2(); uaddr2(); f.str(", "); print_hex(f, uint32_t(a[4])); break;
    case kLockPi: case kLockPi2: timeout(); break;
    case kUnlockPi: case kTrylockPi: break;
    case kWaitBitset: val(); timeout(); bitset(); break;
    case kWakeBitset: val(); bitset(); break;
    case kWaitRequeuePi: val(); timeout(); uaddr2(); break;
    default:
      val();
      f.str(", ");
      print_hex(f, a[2]);
      uaddr2();
      val3();
      break;
  }
}

void print_arg(KFmt& f, const Ctx& c, int i, Arg kind) {
  uint64_t v = c.a[i];
  uint64_t next = i < 5 ? c.a[i + 1] : 0;
  switch (kind) {
    case ARG_END: break;
    case ARG_INT: f.dec(as_int(v)); break;
    case ARG_UINT: f.udec(uint32_t(v)); break;
    case ARG_LONG: f.dec(int64_t(v)); break;
    case ARG_ULONG: f.udec(v); break;
    case ARG_HEX: print_hex(f, v); break;
    case ARG_PTR: print_ptr(f, v); break;
    case ARG_FD: print_fd(f, v); break;
    case ARG_DIRFD: print_dirfd(f, v); break;
    case ARG_SIGNAL: print_signal(f, as_int(v)); break;
    case ARG_MODE: print_mode_octal(f, uint32_t(v)); break;

    case ARG_PATH: print_guest_path(f, v); break;
    case ARG_STR: print_guest_str(f, v); break;
    case ARG_BUF_IN: print_guest_bytes(f, v, next); break;
    case ARG_BUF_OUT:
    case ARG_STR_OUT:
      if (c.ok) print_guest_bytes(f, v, produced(c));
      else print_ptr(f, v);
      break;
    case ARG_RANDOM_OUT:
      if (c.ok) print_guest_bytes(f, v, produced(c), true);
      else print_ptr(f, v);
      break;
    case ARG_PATH_OUT:
      if (c.ok) print_guest_path(f, v);
      else print_ptr(f, v);
      break;
    case ARG_ARGV: print_guest_argv(f, v); break;
    case ARG_ENVP: print_guest_envp(f, v); break;
    case ARG_IOVEC_IN: print_guest_iovec(f, v, next, ~0ull, true); break;
    case ARG_IOVEC_OUT: print_guest_iovec(f, v, next, produced(c), c.ok); break;

    case ARG_OPEN_FLAGS: print_open_flags(f, v); break;
    case ARG_MODE_IF_CREAT: print_mode_octal(f, uint32_t(v)); break;
    case ARG_CLOEXEC_FLAGS: print_open_flags_no_acc(f, v); break;
    case ARG_AT_FLAGS: print_at_flags(f, v); break;
    case ARG_FACCESSAT_FLAGS: print_faccessat_flags(f, v); break;
    case ARG_STATX_FLAGS: print_statx_at_flags(f, v); break;
    case ARG_STATX_MASK: print_statx_mask(f, v); break;
    case ARG_ACCESS_MODE: print_access_mode(f, v); break;
    case ARG_WHENCE: print_whence(f, v); break;
    case ARG_PROT: print_prot(f, v); break;
    case ARG_MAP_FLAGS: print_map_flags(f, v); break;
    case ARG_MREMAP_FLAGS: print_mremap_flags(f, v); break;
    case ARG_MREMAP_ADDR: print_ptr(f, v); break;
    case ARG_MADVISE: print_madvise(f, v); break;
    case ARG_SIGMASK_HOW: print_sigprocmask_how(f, v); break;
    case ARG_CLOCKID: print_clockid(f, v); break;
    case ARG_TIMER_FLAGS: print_timer_flags(f, v); break;
    case ARG_WAIT_OPTIONS: print_wait_options(f, v); break;
    case ARG_RLIMIT_RESOURCE: print_rlimit_resource(f, v); break;
    case ARG_GRND_FLAGS: print_grnd_flags(f, v); break;
    case ARG_MEMFD_FLAGS: print_memfd_flags(f, v); break;
    case ARG_CLOSE_RANGE_FLAGS: print_close_range_flags(f, v); break;

    case ARG_STAT_OUT:
      if (c.ok) print_stat(f, v);
      else print_ptr(f, v);
      break;
    case ARG_STATX_OUT:
      if (c.ok) print_statx(f, v);
      else print_ptr(f, v);
      break;
    case ARG_DIRENTS_OUT:
      if (c.ok) print_dirents(f, v, produced(c));
      else print_ptr(f, v);
      break;
    case ARG_TIMESPEC_IN: print_timespec(f, v); break;
    case ARG_TIMESPEC_OUT:
      if (c.ok) print_timespec(f, v);
      else print_ptr(f, v);
      break;
    case ARG_UTSNAME_OUT:
      if (c.ok) print_utsname(f, v);
      else print_ptr(f, v);
      break;
    case ARG_SIGACTION_IN: print_sigaction(f, v); break;
    case ARG_SIGACTION_OUT:
      if (c.ok) print_sigaction(f, v);
      else print_ptr(f, v);
      break;
    case ARG_SIGSET_IN: print_sigset(f, v, i < 4 ? c.a[i + 2] : 8); break;
    case ARG_SIGSET_OUT:
      if (c.ok) print_sigset(f, v, next);
      else print_ptr(f, v);
      break;
    case ARG_WSTATUS_OUT:
      if (c.ok && c.ret > 0) print_wait_status(f, v);
      else print_ptr(f, v);
      break;
    case ARG_PIPEFDS_OUT:
      if (c.ok) print_pipefds(f, v);
      else print_ptr(f, v);
      break;
    case ARG_RLIMIT_IN: print_rlimit(f, v); break;
    case ARG_RLIMIT_OUT:
      if (c.ok) print_rlimit(f, v);
      else print_ptr(f, v);
      break;
    case ARG_CLONE3_ARGS: print_clone3_args(f, v, next); break;

    case ARG_IOCTL: print_ioctl(f, c, i); break;
    case ARG_FCNTL: print_fcntl(f, c, i); break;
    case ARG_ARCH_PRCTL: print_arch_prctl(f, c, i); break;
    case ARG_CLONE: print_clone(f, c); break;
    case ARG_FUTEX: print_futex(f, c, i); break;
  }
}

void print_fcntl_result(KFmt& f, const Ctx& c) {
  constexpr uint64_t kGetFd = 1, kGetFl = 3, kGetSig = 11, kGetLease = 1025, kGetSeals = 1034;
  uint64_t r = uint64_t(c.ret);
  switch (c.a[1] & 0xffffffffu) {
    case kGetFl:
      print_hex(f, r);
      f.str(" (flags ");
      print_open_flags(f, r);
      f.ch(')');
      return;
    case kGetFd:
      print_hex(f, r);
      if (r) {
        f.str(" (flags ");
        print_fd_flags(f, r);
        f.ch(')');
      }
      return;
    case kGetSeals:
      print_hex(f, r);
      if (r) {
        f.str(" (seals ");
        print_seals(f, r);
        f.ch(')');
      }
      return;
    case kGetLease:
      print_hex(f, r);
      f.str(" (");
      print_lease(f, r);
      f.ch(')');
      return;
    case kGetSig:
      f.dec(c.ret);
      if (r) {
        f.str(" (");
        print_signal(f, c.ret);
        f.ch(')');
      }
      return;
    default: f.dec(c.ret); return;
  }
}

void print_result(KFmt& f, const Ctx& c, Ret kind) {
  f.str(" = ");
  if (!c.returned) {
    f.ch('?');
    return;
  }
  if (is_error(c.ret)) {
    long err = -c.ret;
    const char* name = errno_name(err);
    const char* text = errno_text(err);
    f.str(is_restart_errno(err) ? "? " : "-1 ");
    if (name) f.str(name);
    else f.str("ERRNO_").dec(err);
    f.str(" (");
    if (text) f.str(text);
    else f.str("Unknown error ").dec(err);
    f.ch(')');
    return;
  }
  switch (kind) {
    case RET_DEC: f.dec(c.ret); break;
    case RET_HEX: print_hex(f, uint64_t(c.ret)); break;
    case RET_OCT: print_mode_octal(f, uint64_t(c.ret)); break;
    case RET_FCNTL: print_fcntl_result(f, c); break;
  }
}

}  // namespace

size_t format_call(char* buf, size_t cap, int pid, long nr, const uint64_t args[6], long ret,
                   bool returned) {
  if (cap == 0) return 0;
  if (cap == 1) {
    buf[0] = '\n';
    return 1;
  }
  KFmt f(buf, cap);
  Ctx c{args, ret, returned, returned && !is_error(ret)};

  f.str("[pid ").dec(pid).str("] ");
  const char* name = syscall_name(nr);
  if (!name) {
    // strace's spelling for numbers it has no name for.
    f.str("syscall_").hex(uint64_t(nr)).ch('(');
    for (int i = 0; i < 6; i++) {
      if (i) f.str(", ");
      print_hex(f, args[i]);
    }
    f.ch(')');
    print_result(f, c, RET_DEC);
  } else {
    f.str(name).ch('(');
    const Desc* d = find_desc(nr);
    if (d) {
      bool first = true;
      for (int i = 0; i < 6 && d->args[i] != ARG_END; i++) {
        if (!arg_present(c, i, d->args[i])) continue;
        if (!first) f.str(", ");
        first = false;
        print_arg(f, c, i, d->args[i]);
      }
    } else {
      int n = syscall_nargs(nr);
      if (n < 0) n = 6;
      for (int i = 0; i < n; i++) {
        if (i) f.str(", ");
        print_hex(f, args[i]);
      }
    }
    f.ch(')');
    print_result(f, c, d ? d->ret : RET_DEC);
  }

  // Always newline-terminated: a line cut short by `cap` gives up its last
  // character for the newline. The buffer stays NUL-terminated as well.
  size_t len = f.size();
  if (len == cap - 1) len--;
  buf[len++] = '\n';
  buf[len] = '\0';
  return len;
}

}  // namespace flatux::strace
