// Value and flag names for x86_64 Linux, written out from the uapi headers
// (values are literals so the table does not depend on how new the build
// host's headers are). Ordering follows what strace prints, which is not
// always numeric: e.g. O_CLOEXEC comes before O_DIRECTORY.
#include "kernel/strace/internal.h"

namespace flatux::strace {

const char* xlookup(const Xlat& x, uint64_t v) {
  for (size_t i = 0; i < x.count; i++)
    if (x.items[i].val == v) return x.items[i].name;
  return nullptr;
}

void print_xval(KFmt& f, const Xlat& x, uint64_t v) {
  if (const char* n = xlookup(x, v)) {
    f.str(n);
    return;
  }
  f.hex(v);
  f.str(" /* ").str(x.unknown).str(" */");
}

namespace {

// Prints the named bits of v, each preceded by '|' unless it is the first
// thing printed; returns the bits no entry named.
uint64_t print_named_bits(KFmt& f, const Xlat& x, uint64_t v, bool& first) {
  for (size_t i = 0; i < x.count; i++) {
    uint64_t b = x.items[i].val;
    if (b != 0 && (v & b) == b) {
      if (!first) f.ch('|');
      f.str(x.items[i].name);
      first = false;
      v &= ~b;
    }
  }
  return v;
}

}  // namespace

void print_flags(KFmt& f, const Xlat& x, uint64_t v) {
  if (v == 0) {
    f.ch('0');
    return;
  }
  bool first = true;
  uint64_t rest = print_named_bits(f, x, v, first);
  if (first) {
    f.hex(rest);
    f.str(" /* ").str(x.unknown).str(" */");
  } else if (rest) {
    f.ch('|').hex(rest);
  }
}

void print_flags_tail(KFmt& f, const Xlat& x, uint64_t v) {
  bool first = false;
  uint64_t rest = print_named_bits(f, x, v, first);
  if (rest) f.ch('|').hex(rest);
}

void print_mode_octal(KFmt& f, uint64_t mode) {
  f.ch('0');
  if (mode < 8) f.ch('0');
  if (mode == 0) {
    f.ch('0');
    return;
  }
  char tmp[24];
  int n = 0;
  while (mode) {
    tmp[n++] = char('0' + (mode & 7));
    mode >>= 3;
  }
  while (n) f.ch(tmp[--n]);
}

// ---- open(2) and friends ---------------------------------------------------

namespace {

constexpr XVal kOpenAccess[] = {
    {0, "O_RDONLY"}, {1, "O_WRONLY"}, {2, "O_RDWR"}, {3, "O_ACCMODE"},
};

constexpr XVal kOpenFlagItems[] = {
    {0100, "O_CREAT"},
    {0200, "O_EXCL"},
    {0400, "O_NOCTTY"},
    {01000, "O_TRUNC"},
    {02000, "O_APPEND"},
    {04000, "O_NONBLOCK"},
    {04010000, "O_SYNC"},  // __O_SYNC|O_DSYNC
    {010000, "O_DSYNC"},
    {04000000, "__O_SYNC"},
    {040000, "O_DIRECT"},
    {0100000, "O_LARGEFILE"},
    {0400000, "O_NOFOLLOW"},
    {01000000, "O_NOATIME"},
    {02000000, "O_CLOEXEC"},
    {010000000, "O_PATH"},
    {020200000, "O_TMPFILE"},  // __O_TMPFILE|O_DIRECTORY
    {0200000, "O_DIRECTORY"},
    {020000, "FASYNC"},
};
constexpr Xlat kOpenFlags = make_xlat(kOpenFlagItems, "O_???");

constexpr XVal kFdFlagItems[] = {{1, "FD_CLOEXEC"}};
constexpr Xlat kFdFlags = make_xlat(kFdFlagItems, "FD_???");

constexpr XVal kAtFlagItems[] = {
    {0x100, "AT_SYMLINK_NOFOLLOW"}, {0x200, "AT_REMOVEDIR"},  {0x400, "AT_SYMLINK_FOLLOW"},
    {0x800, "AT_NO_AUTOMOUNT"},     {0x1000, "AT_EMPTY_PATH"}, {0x8000, "AT_RECURSIVE"},
};
constexpr Xlat kAtFlags = make_xlat(kAtFlagItems, "AT_???");

constexpr XVal kFaccessatFlagItems[] = {
    {0x100, "AT_SYMLINK_NOFOLLOW"}, {0x200, "AT_EACCESS"}, {0x1000, "AT_EMPTY_PATH"},
};
constexpr Xlat kFaccessatFlags = make_xlat(kFaccessatFlagItems, "AT_???");

constexpr XVal kStatxSyncItems[] = {
    {0x2000, "AT_STATX_FORCE_SYNC"}, {0x4000, "AT_STATX_DONT_SYNC"},
};
constexpr Xlat kStatxSync = make_xlat(kStatxSyncItems, "AT_???");

constexpr XVal kStatxMaskItems[] = {
    {0xfff, "STATX_ALL"},          {0x7ff, "STATX_BASIC_STATS"},
    {0x1, "STATX_TYPE"},           {0x2, "STATX_MODE"},
    {0x4, "STATX_NLINK"},          {0x8, "STATX_UID"},
    {0x10, "STATX_GID"},           {0x20, "STATX_ATIME"},
    {0x40, "STATX_MTIME"},         {0x80, "STATX_CTIME"},
    {0x100, "STATX_INO"},          {0x200, "STATX_SIZE"},
    {0x400, "STATX_BLOCKS"},       {0x800, "STATX_BTIME"},
    {0x1000, "STATX_MNT_ID"},      {0x2000, "STATX_DIOALIGN"},
    {0x4000, "STATX_MNT_ID_UNIQUE"}, {0x8000, "STATX_SUBVOL"},
    {0x10000, "STATX_WRITE_ATOMIC"}, {0x20000, "STATX_DIO_READ_ALIGN"},
};
constexpr Xlat kStatxMask = make_xlat(kStatxMaskItems, "STATX_???");

constexpr XVal kStatxAttrItems[] = {
    {0x4, "STATX_ATTR_COMPRESSED"},  {0x10, "STATX_ATTR_IMMUTABLE"},
    {0x20, "STATX_ATTR_APPEND"},     {0x40, "STATX_ATTR_NODUMP"},
    {0x800, "STATX_ATTR_ENCRYPTED"}, {0x1000, "STATX_ATTR_AUTOMOUNT"},
    {0x2000, "STATX_ATTR_MOUNT_ROOT"}, {0x100000, "STATX_ATTR_VERITY"},
    {0x200000, "STATX_ATTR_DAX"},
};
constexpr Xlat kStatxAttrs = make_xlat(kStatxAttrItems, "STATX_ATTR_???");

constexpr XVal kAccessItems[] = {{4, "R_OK"}, {2, "W_OK"}, {1, "X_OK"}};
constexpr Xlat kAccess = make_xlat(kAccessItems, "?_OK");

constexpr XVal kWhenceItems[] = {
    {0, "SEEK_SET"}, {1, "SEEK_CUR"}, {2, "SEEK_END"}, {3, "SEEK_DATA"}, {4, "SEEK_HOLE"},
};
constexpr Xlat kWhence = make_xlat(kWhenceItems, "SEEK_???");

}  // namespace

void print_open_flags(KFmt& f, uint64_t v) {
  v &= 0xffffffffu;  // an int in the kernel ABI
  f.str(kOpenAccess[v & 3].name);
  print_flags_tail(f, kOpenFlags, v & ~uint64_t(3));
}

void print_open_flags_no_acc(KFmt& f, uint64_t v) { print_flags(f, kOpenFlags, v & 0xffffffffu); }
void print_fd_flags(KFmt& f, uint64_t v) { print_flags(f, kFdFlags, v); }
void print_at_flags(KFmt& f, uint64_t v) { print_flags(f, kAtFlags, v & 0xffffffffu); }
void print_faccessat_flags(KFmt& f, uint64_t v) { print_flags(f, kFaccessatFlags, v & 0xffffffffu); }

void print_statx_at_flags(KFmt& f, uint64_t v) {
  v &= 0xffffffffu;
  uint64_t sync = v & 0x6000;
  if (sync == 0) f.str("AT_STATX_SYNC_AS_STAT");
  else print_flags(f, kStatxSync, sync);
  print_flags_tail(f, kAtFlags, v & ~uint64_t(0x6000));
}

void print_statx_mask(KFmt& f, uint64_t v) { print_flags(f, kStatxMask, v & 0xffffffffu); }
void print_statx_attrs(KFmt& f, uint64_t v) { print_flags(f, kStatxAttrs, v); }

void print_access_mode(KFmt& f, uint64_t v) {
  v &= 0xffffffffu;
  if (v == 0) f.str("F_OK");
  else print_flags(f, kAccess, v);
}

void print_whence(KFmt& f, uint64_t v) { print_xval(f, kWhence, v & 0xffffffffu); }

namespace {
constexpr XVal kFileTypeItems[] = {
    {0140000, "S_IFSOCK"}, {0120000, "S_IFLNK"}, {0100000, "S_IFREG"}, {0060000, "S_IFBLK"},
    {0040000, "S_IFDIR"},  {0020000, "S_IFCHR"}, {0010000, "S_IFIFO"},
};
constexpr Xlat kFileTypes = make_xlat(kFileTypeItems, "S_IF???");
}  // namespace

void print_file_mode(KFmt& f, uint64_t mode) {
  if (uint64_t type = mode & 0170000) {
    const char* name = xlookup(kFileTypes, type);
    if (!name) {
      print_mode_octal(f, mode);
      return;
    }
    f.str(name).ch('|');
  }
  if (mode & 04000) f.str("S_ISUID|");
  if (mode & 02000) f.str("S_ISGID|");
  if (mode & 01000) f.str("S_ISVTX|");
  print_mode_octal(f, mode & 0777);
}

// ---- memory ----------------------------------------------------------------

namespace {

constexpr XVal kProtItems[] = {
    {0x1, "PROT_READ"}, {0x2, "PROT_WRITE"}, {0x4, "PROT_EXEC"}, {0x8, "PROT_SEM"},
    {0x01000000, "PROT_GROWSDOWN"}, {0x02000000, "PROT_GROWSUP"},
};
constexpr Xlat kProt = make_xlat(kProtItems, "PROT_???");

constexpr XVal kMapTypeItems[] = {
    {0, "MAP_FILE"}, {1, "MAP_SHARED"}, {2, "MAP_PRIVATE"}, {3, "MAP_SHARED_VALIDATE"},
};
constexpr Xlat kMapType = make_xlat(kMapTypeItems, "MAP_???");

constexpr XVal kMapFlagItems[] = {
    {0x10, "MAP_FIXED"},       {0x20, "MAP_ANONYMOUS"},   {0x40, "MAP_32BIT"},
    {0x4000, "MAP_NORESERVE"}, {0x8000, "MAP_POPULATE"},  {0x10000, "MAP_NONBLOCK"},
    {0x100, "MAP_GROWSDOWN"},  {0x800, "MAP_DENYWRITE"},  {0x1000, "MAP_EXECUTABLE"},
    {0x2000, "MAP_LOCKED"},    {0x20000, "MAP_STACK"},    {0x40000, "MAP_HUGETLB"},
    {0x80000, "MAP_SYNC"},     {0x100000, "MAP_FIXED_NOREPLACE"},
};
constexpr Xlat kMapFlags = make_xlat(kMapFlagItems, "MAP_???");
constexpr int kMapHugeShift = 26;
constexpr uint64_t kMapHugeMask = 0x3full << kMapHugeShift;

constexpr XVal kMremapItems[] = {
    {1, "MREMAP_MAYMOVE"}, {2, "MREMAP_FIXED"}, {4, "MREMAP_DONTUNMAP"},
};
constexpr Xlat kMremap = make_xlat(kMremapItems, "MREMAP_???");

constexpr XVal kMadviseItems[] = {
    {0, "MADV_NORMAL"},         {1, "MADV_RANDOM"},          {2, "MADV_SEQUENTIAL"},
    {3, "MADV_WILLNEED"},       {4, "MADV_DONTNEED"},        {8, "MADV_FREE"},
    {9, "MADV_REMOVE"},         {10, "MADV_DONTFORK"},       {11, "MADV_DOFORK"},
    {12, "MADV_MERGEABLE"},     {13, "MADV_UNMERGEABLE"},    {14, "MADV_HUGEPAGE"},
    {15, "MADV_NOHUGEPAGE"},    {16, "MADV_DONTDUMP"},       {17, "MADV_DODUMP"},
    {18, "MADV_WIPEONFORK"},    {19, "MADV_KEEPONFORK"},     {20, "MADV_COLD"},
    {21, "MADV_PAGEOUT"},       {22, "MADV_POPULATE_READ"},  {23, "MADV_POPULATE_WRITE"},
    {24, "MADV_DONTNEED_LOCKED"}, {25, "MADV_COLLAPSE"},     {100, "MADV_HWPOISON"},
    {101, "MADV_SOFT_OFFLINE"},
};
constexpr Xlat kMadvise = make_xlat(kMadviseItems, "MADV_???");

constexpr XVal kGrndItems[] = {{1, "GRND_NONBLOCK"}, {2, "GRND_RANDOM"}, {4, "GRND_INSECURE"}};
constexpr Xlat kGrnd = make_xlat(kGrndItems, "GRND_???");

constexpr XVal kMemfdItems[] = {
    {1, "MFD_CLOEXEC"}, {2, "MFD_ALLOW_SEALING"}, {4, "MFD_HUGETLB"},
    {8, "MFD_NOEXEC_SEAL"}, {0x10, "MFD_EXEC"},
};
constexpr Xlat kMemfd = make_xlat(kMemfdItems, "MFD_???");

constexpr XVal kCloseRangeItems[] = {{2, "CLOSE_RANGE_UNSHARE"}, {4, "CLOSE_RANGE_CLOEXEC"}};
constexpr Xlat kCloseRange = make_xlat(kCloseRangeItems, "CLOSE_RANGE_???");

}  // namespace

void print_prot(KFmt& f, uint64_t v) {
  if (v == 0) f.str("PROT_NONE");
  else print_flags(f, kProt, v);
}

void print_map_flags(KFmt& f, uint64_t v) {
  print_xval(f, kMapType, v & 0xf);
  uint64_t huge = (v & kMapHugeMask) >> kMapHugeShift;
  print_flags_tail(f, kMapFlags, v & ~0xfull & ~kMapHugeMask);
  if (huge) f.ch('|').udec(huge).str("<<MAP_HUGE_SHIFT");
}

void print_mremap_flags(KFmt& f, uint64_t v) { print_flags(f, kMremap, v); }
void print_madvise(KFmt& f, uint64_t v) { print_xval(f, kMadvise, v & 0xffffffffu); }
void print_grnd_flags(KFmt& f, uint64_t v) { print_flags(f, kGrnd, v & 0xffffffffu); }
void print_memfd_flags(KFmt& f, uint64_t v) { print_flags(f, kMemfd, v & 0xffffffffu); }
void print_close_range_flags(KFmt& f, uint64_t v) { print_flags(f, kCloseRange, v & 0xffffffffu); }

// ---- signals and processes -------------------------------------------------

namespace {

constexpr const char* kSignalNames[32] = {
    nullptr,   "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP", "SIGABRT",
    "SIGBUS",  "SIGFPE",  "SIGKILL",   "SIGUSR1", "SIGSEGV",   "SIGUSR2", "SIGPIPE",
    "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",
    "SIGTTIN", "SIGTTOU", "SIGURG",    "SIGXCPU", "SIGXFSZ",   "SIGVTALRM", "SIGPROF",
    "SIGWINCH", "SIGIO",  "SIGPWR",    "SIGSYS",
};
constexpr int kSigRtMin = 32;
constexpr int kSigRtMax = 64;

constexpr XVal kSaFlagItems[] = {
    {0x04000000, "SA_RESTORER"},  {0x08000000, "SA_ONSTACK"}, {0x10000000, "SA_RESTART"},
    {0x20000000, "SA_INTERRUPT"}, {0x40000000, "SA_NODEFER"}, {0x80000000, "SA_RESETHAND"},
    {0x4, "SA_SIGINFO"},          {0x1, "SA_NOCLDSTOP"},      {0x2, "SA_NOCLDWAIT"},
    {0x400, "SA_UNSUPPORTED"},    {0x800, "SA_EXPOSE_TAGBITS"},
};
constexpr Xlat kSaFlags = make_xlat(kSaFlagItems, "SA_???");

constexpr XVal kWaitItems[] = {
    {0x1, "WNOHANG"},       {0x4, "WEXITED"},         {0x2, "WSTOPPED"},
    {0x8, "WCONTINUED"},    {0x01000000, "WNOWAIT"},  {0x80000000, "__WCLONE"},
    {0x40000000, "__WALL"}, {0x20000000, "__WNOTHREAD"},
};
constexpr Xlat kWait = make_xlat(kWaitItems, "W???");

constexpr XVal kSigHowItems[] = {{0, "SIG_BLOCK"}, {1, "SIG_UNBLOCK"}, {2, "SIG_SETMASK"}};
constexpr Xlat kSigHow = make_xlat(kSigHowItems, "SIG_???");

constexpr XVal kCloneItems[] = {
    {0x00000100, "CLONE_VM"},          {0x00000200, "CLONE_FS"},
    {0x00000400, "CLONE_FILES"},       {0x00000800, "CLONE_SIGHAND"},
    {0x00001000, "CLONE_PIDFD"},       {0x00002000, "CLONE_PTRACE"},
    {0x00004000, "CLONE_VFORK"},       {0x00008000, "CLONE_PARENT"},
    {0x00010000, "CLONE_THREAD"},      {0x00020000, "CLONE_NEWNS"},
    {0x00040000, "CLONE_SYSVSEM"},     {0x00080000, "CLONE_SETTLS"},
    {0x00100000, "CLONE_PARENT_SETTID"}, {0x00200000, "CLONE_CHILD_CLEARTID"},
    {0x00800000, "CLONE_UNTRACED"},    {0x01000000, "CLONE_CHILD_SETTID"},
    {0x02000000, "CLONE_NEWCGROUP"},   {0x04000000, "CLONE_NEWUTS"},
    {0x08000000, "CLONE_NEWIPC"},      {0x10000000, "CLONE_NEWUSER"},
    {0x20000000, "CLONE_NEWPID"},      {0x40000000, "CLONE_NEWNET"},
    {0x80000000, "CLONE_IO"},
    // Only reachable through clone3: clone(2) keeps the exit signal in the
    // low byte, where CLONE_NEWTIME lives.
    {0x00000080, "CLONE_NEWTIME"},     {0x100000000ull, "CLONE_CLEAR_SIGHAND"},
    {0x200000000ull, "CLONE_INTO_CGROUP"},
};
// clone(2) knows the entries up to CLONE_IO; the clone3-only ones follow it.
constexpr size_t kCloneLegacyItems = 23;
static_assert(kCloneItems[kCloneLegacyItems - 1].val == 0x80000000);
constexpr Xlat kCloneFlags = Xlat{kCloneItems, kCloneLegacyItems, "CLONE_???"};
constexpr Xlat kClone3Flags = make_xlat(kCloneItems, "CLONE_???");

constexpr XVal kClockItems[] = {
    {0, "CLOCK_REALTIME"},        {1, "CLOCK_MONOTONIC"},       {2, "CLOCK_PROCESS_CPUTIME_ID"},
    {3, "CLOCK_THREAD_CPUTIME_ID"}, {4, "CLOCK_MONOTONIC_RAW"}, {5, "CLOCK_REALTIME_COARSE"},
    {6, "CLOCK_MONOTONIC_COARSE"}, {7, "CLOCK_BOOTTIME"},       {8, "CLOCK_REALTIME_ALARM"},
    {9, "CLOCK_BOOTTIME_ALARM"},  {10, "CLOCK_SGI_CYCLE"},      {11, "CLOCK_TAI"},
};
constexpr Xlat kClock = make_xlat(kClockItems, "CLOCK_???");

constexpr XVal kTimerFlagItems[] = {{1, "TIMER_ABSTIME"}};
constexpr Xlat kTimerFlags = make_xlat(kTimerFlagItems, "TIMER_???");

constexpr XVal kRlimitItems[] = {
    {0, "RLIMIT_CPU"},     {1, "RLIMIT_FSIZE"},    {2, "RLIMIT_DATA"},       {3, "RLIMIT_STACK"},
    {4, "RLIMIT_CORE"},    {5, "RLIMIT_RSS"},      {6, "RLIMIT_NPROC"},      {7, "RLIMIT_NOFILE"},
    {8, "RLIMIT_MEMLOCK"}, {9, "RLIMIT_AS"},       {10, "RLIMIT_LOCKS"},     {11, "RLIMIT_SIGPENDING"},
    {12, "RLIMIT_MSGQUEUE"}, {13, "RLIMIT_NICE"},  {14, "RLIMIT_RTPRIO"},    {15, "RLIMIT_RTTIME"},
};
constexpr Xlat kRlimit = make_xlat(kRlimitItems, "RLIMIT_???");

}  // namespace

void print_signal(KFmt& f, int64_t sig) {
  if (sig > 0 && sig < kSigRtMin) f.str(kSignalNames[sig]);
  else if (sig == kSigRtMin) f.str("SIGRTMIN");
  else if (sig > kSigRtMin && sig <= kSigRtMax) f.str("SIGRT_").udec(uint64_t(sig - kSigRtMin));
  else f.dec(sig);
}

void print_signal_abbrev(KFmt& f, int sig) {
  if (sig > 0 && sig < kSigRtMin) f.str(kSignalNames[sig] + 3);
  else if (sig == kSigRtMin) f.str("RTMIN");
  else if (sig > kSigRtMin && sig <= kSigRtMax) f.str("RT_").udec(uint64_t(sig - kSigRtMin));
  else f.dec(sig);
}

void print_sigset_value(KFmt& f, uint64_t set) {
  // Like strace, name the few signals left out of a mostly-full set.
  int n = 0;  // not __builtin_popcountll: without -mpopcnt that is a libgcc call
  for (uint64_t s = set; s; s &= s - 1) n++;
  if (n > 32) {
    f.ch('~');
    set = ~set;
  }
  f.ch('[');
  bool first = true;
  for (int sig = 1; sig <= 64; sig++) {
    if (!(set & (1ull << (sig - 1)))) continue;
    if (!first) f.ch(' ');
    first = false;
    print_signal_abbrev(f, sig);
  }
  f.ch(']');
}

void print_sa_flags(KFmt& f, uint64_t v) { print_flags(f, kSaFlags, v); }
void print_wait_options(KFmt& f, uint64_t v) { print_flags(f, kWait, v & 0xffffffffu); }
void print_sigprocmask_how(KFmt& f, uint64_t v) { print_xval(f, kSigHow, v & 0xffffffffu); }
void print_clockid(KFmt& f, uint64_t v) { print_xval(f, kClock, v & 0xffffffffu); }
void print_timer_flags(KFmt& f, uint64_t v) { print_flags(f, kTimerFlags, v & 0xffffffffu); }
void print_rlimit_resource(KFmt& f, uint64_t v) { print_xval(f, kRlimit, v & 0xffffffffu); }

void print_clone_flags(KFmt& f, uint64_t v) {
  uint64_t sig = v & 0xff;
  uint64_t rest = v & ~0xffull;
  if (rest) print_flags(f, kCloneFlags, rest);
  if (sig) {
    if (rest) f.ch('|');
    print_signal(f, int64_t(sig));
  }
  if (!rest && !sig) f.ch('0');
}

void print_clone3_flags(KFmt& f, uint64_t v) { print_flags(f, kClone3Flags, v); }

// ---- arch_prctl, fcntl, ioctl, futex ----------------------------------------

namespace {

struct ArchCode {
  uint64_t code;
  const char* name;
  ArchArg arg;
};
constexpr ArchCode kArchCodes[] = {
    {0x1001, "ARCH_SET_GS", ArchArg::kHex},
    {0x1002, "ARCH_SET_FS", ArchArg::kHex},
    {0x1003, "ARCH_GET_FS", ArchArg::kOutPtr},
    {0x1004, "ARCH_GET_GS", ArchArg::kOutPtr},
    {0x1011, "ARCH_GET_CPUID", ArchArg::kNone},
    {0x1012, "ARCH_SET_CPUID", ArchArg::kHex},
    {0x1021, "ARCH_GET_XCOMP_SUPP", ArchArg::kPtr},
    {0x1022, "ARCH_GET_XCOMP_PERM", ArchArg::kPtr},
    {0x1023, "ARCH_REQ_XCOMP_PERM", ArchArg::kXfeature},
    {0x1024, "ARCH_GET_XCOMP_GUEST_PERM", ArchArg::kPtr},
    {0x1025, "ARCH_REQ_XCOMP_GUEST_PERM", ArchArg::kXfeature},
    {0x2001, "ARCH_MAP_VDSO_X32", ArchArg::kHex},
    {0x2002, "ARCH_MAP_VDSO_32", ArchArg::kHex},
    {0x2003, "ARCH_MAP_VDSO_64", ArchArg::kHex},
    {0x4001, "ARCH_GET_UNTAG_MASK", ArchArg::kPtr},
    {0x4002, "ARCH_ENABLE_TAGGED_ADDR", ArchArg::kDec},
    {0x4003, "ARCH_GET_MAX_TAG_BITS", ArchArg::kPtr},
    {0x4004, "ARCH_FORCE_TAGGED_SVA", ArchArg::kHex},
    {0x5001, "ARCH_SHSTK_ENABLE", ArchArg::kHex},
    {0x5002, "ARCH_SHSTK_DISABLE", ArchArg::kHex},
    {0x5003, "ARCH_SHSTK_LOCK", ArchArg::kHex},
    {0x5004, "ARCH_SHSTK_UNLOCK", ArchArg::kHex},
    {0x5005, "ARCH_SHSTK_STATUS", ArchArg::kPtr},
};

// XSAVE state components, numbered as in the x86 XCR0 bit layout.
constexpr const char* kXfeatures[] = {
    "XFEATURE_FP",         "XFEATURE_SSE",        "XFEATURE_YMM",
    "XFEATURE_BNDREGS",    "XFEATURE_BNDCSR",     "XFEATURE_OPMASK",
    "XFEATURE_ZMM_Hi256",  "XFEATURE_Hi16_ZMM",   "XFEATURE_PT_UNIMPLEMENTED_SO_FAR",
    "XFEATURE_PKRU",       "XFEATURE_PASID",      "XFEATURE_CET_USER",
    "XFEATURE_CET_KERNEL_UNUSED", "XFEATURE_RSRVD_COMP_13", "XFEATURE_RSRVD_COMP_14",
    "XFEATURE_LBR",        "XFEATURE_RSRVD_COMP_16", "XFEATURE_XTILE_CFG",
    "XFEATURE_XTILE_DATA",
};

struct FcntlCmd {
  uint64_t cmd;
  const char* name;
  FcntlArg arg;
};
constexpr FcntlCmd kFcntlCmds[] = {
    {0, "F_DUPFD", FcntlArg::kDec},
    {1, "F_GETFD", FcntlArg::kNone},
    {2, "F_SETFD", FcntlArg::kFdFlags},
    {3, "F_GETFL", FcntlArg::kNone},
    {4, "F_SETFL", FcntlArg::kOpenFlags},
    {5, "F_GETLK", FcntlArg::kPtr},
    {6, "F_SETLK", FcntlArg::kPtr},
    {7, "F_SETLKW", FcntlArg::kPtr},
    {8, "F_SETOWN", FcntlArg::kDec},
    {9, "F_GETOWN", FcntlArg::kNone},
    {10, "F_SETSIG", FcntlArg::kSignal},
    {11, "F_GETSIG", FcntlArg::kNone},
    {15, "F_SETOWN_EX", FcntlArg::kPtr},
    {16, "F_GETOWN_EX", FcntlArg::kPtr},
    {17, "F_GETOWNER_UIDS", FcntlArg::kPtr},
    {36, "F_OFD_GETLK", FcntlArg::kPtr},
    {37, "F_OFD_SETLK", FcntlArg::kPtr},
    {38, "F_OFD_SETLKW", FcntlArg::kPtr},
    {1024, "F_SETLEASE", FcntlArg::kLease},
    {1025, "F_GETLEASE", FcntlArg::kNone},
    {1026, "F_NOTIFY", FcntlArg::kNotify},
    {1030, "F_DUPFD_CLOEXEC", FcntlArg::kDec},
    {1031, "F_SETPIPE_SZ", FcntlArg::kDec},
    {1032, "F_GETPIPE_SZ", FcntlArg::kNone},
    {1033, "F_ADD_SEALS", FcntlArg::kSeals},
    {1034, "F_GET_SEALS", FcntlArg::kNone},
    {1035, "F_GET_RW_HINT", FcntlArg::kPtr},
    {1036, "F_SET_RW_HINT", FcntlArg::kPtr},
    {1037, "F_GET_FILE_RW_HINT", FcntlArg::kPtr},
    {1038, "F_SET_FILE_RW_HINT", FcntlArg::kPtr},
};

constexpr XVal kSealItems[] = {
    {1, "F_SEAL_SEAL"}, {2, "F_SEAL_SHRINK"}, {4, "F_SEAL_GROW"},
    {8, "F_SEAL_WRITE"}, {0x10, "F_SEAL_FUTURE_WRITE"}, {0x20, "F_SEAL_EXEC"},
};
constexpr Xlat kSeals = make_xlat(kSealItems, "F_SEAL_???");

constexpr XVal kDnotifyItems[] = {
    {1, "DN_ACCESS"}, {2, "DN_MODIFY"}, {4, "DN_CREATE"}, {8, "DN_DELETE"},
    {0x10, "DN_RENAME"}, {0x20, "DN_ATTRIB"}, {0x80000000, "DN_MULTISHOT"},
};
constexpr Xlat kDnotify = make_xlat(kDnotifyItems, "DN_???");

constexpr XVal kLeaseItems[] = {{0, "F_RDLCK"}, {1, "F_WRLCK"}, {2, "F_UNLCK"}};
constexpr Xlat kLease = make_xlat(kLeaseItems, "F_???");

struct IoctlCmd {
  uint64_t cmd;
  const char* name;
  IoctlArg arg;
};
// Terminal and generic file requests, the ones ordinary programs make.
constexpr IoctlCmd kIoctlCmds[] = {
    {0x5401, "TCGETS", IoctlArg::kPtr},        {0x5402, "TCSETS", IoctlArg::kPtr},
    {0x5403, "TCSETSW", IoctlArg::kPtr},       {0x5404, "TCSETSF", IoctlArg::kPtr},
    {0x5405, "TCGETA", IoctlArg::kPtr},        {0x5406, "TCSETA", IoctlArg::kPtr},
    {0x5407, "TCSETAW", IoctlArg::kPtr},       {0x5408, "TCSETAF", IoctlArg::kPtr},
    {0x5409, "TCSBRK", IoctlArg::kDec},        {0x540a, "TCXONC", IoctlArg::kXonc},
    {0x540b, "TCFLSH", IoctlArg::kFlush},      {0x540c, "TIOCEXCL", IoctlArg::kNone},
    {0x540d, "TIOCNXCL", IoctlArg::kNone},     {0x540e, "TIOCSCTTY", IoctlArg::kDec},
    {0x540f, "TIOCGPGRP", IoctlArg::kIntOut},  {0x5410, "TIOCSPGRP", IoctlArg::kIntIn},
    {0x5411, "TIOCOUTQ", IoctlArg::kIntOut},   {0x5412, "TIOCSTI", IoctlArg::kPtr},
    {0x5413, "TIOCGWINSZ", IoctlArg::kWinszOut}, {0x5414, "TIOCSWINSZ", IoctlArg::kWinszIn},
    {0x5415, "TIOCMGET", IoctlArg::kPtr},      {0x5416, "TIOCMBIS", IoctlArg::kPtr},
    {0x5417, "TIOCMBIC", IoctlArg::kPtr},      {0x5418, "TIOCMSET", IoctlArg::kPtr},
    {0x5419, "TIOCGSOFTCAR", IoctlArg::kPtr},  {0x541a, "TIOCSSOFTCAR", IoctlArg::kPtr},
    {0x541b, "FIONREAD", IoctlArg::kIntOut},   {0x541c, "TIOCLINUX", IoctlArg::kHex},
    {0x541d, "TIOCCONS", IoctlArg::kNone},     {0x541e, "TIOCGSERIAL", IoctlArg::kHex},
    {0x541f, "TIOCSSERIAL", IoctlArg::kHex},   {0x5420, "TIOCPKT", IoctlArg::kIntIn},
    {0x5421, "FIONBIO", IoctlArg::kIntIn},     {0x5422, "TIOCNOTTY", IoctlArg::kNone},
    {0x5423, "TIOCSETD", IoctlArg::kIntIn},    {0x5424, "TIOCGETD", IoctlArg::kIntOut},
    {0x5425, "TCSBRKP", IoctlArg::kDec},       {0x5427, "TIOCSBRK", IoctlArg::kNone},
    {0x5428, "TIOCCBRK", IoctlArg::kNone},     {0x5429, "TIOCGSID", IoctlArg::kIntOut},
    {0x80045430, "TIOCGPTN", IoctlArg::kIntOut}, {0x40045431, "TIOCSPTLCK", IoctlArg::kIntIn},
    {0x80045432, "TIOCGDEV", IoctlArg::kPtr},  {0x40045436, "TIOCSIG", IoctlArg::kDec},
    {0x5437, "TIOCVHANGUP", IoctlArg::kNone},  {0x80045438, "TIOCGPKT", IoctlArg::kIntOut},
    {0x80045439, "TIOCGPTLCK", IoctlArg::kIntOut}, {0x80045440, "TIOCGEXCL", IoctlArg::kIntOut},
    {0x5441, "TIOCGPTPEER", IoctlArg::kHex},   {0x5450, "FIONCLEX", IoctlArg::kNone},
    {0x5451, "FIOCLEX", IoctlArg::kNone},      {0x5452, "FIOASYNC", IoctlArg::kIntIn},
    {0x5456, "TIOCGLCKTRMIOS", IoctlArg::kPtr}, {0x5457, "TIOCSLCKTRMIOS", IoctlArg::kPtr},
    {0x545c, "TIOCMIWAIT", IoctlArg::kHex},    {0x545d, "TIOCGICOUNT", IoctlArg::kHex},
    {0x5460, "FIOQSIZE", IoctlArg::kPtr},
    {0x80086601, "FS_IOC_GETFLAGS", IoctlArg::kPtr}, {0x40086602, "FS_IOC_SETFLAGS", IoctlArg::kPtr},
    {0x8901, "FIOSETOWN", IoctlArg::kIntIn},   {0x8903, "FIOGETOWN", IoctlArg::kIntOut},
};

constexpr XVal kFlushItems[] = {{0, "TCIFLUSH"}, {1, "TCOFLUSH"}, {2, "TCIOFLUSH"}};
constexpr Xlat kFlush = make_xlat(kFlushItems, "TC???");
constexpr XVal kXoncItems[] = {{0, "TCOOFF"}, {1, "TCOON"}, {2, "TCIOFF"}, {3, "TCION"}};
constexpr Xlat kXonc = make_xlat(kXoncItems, "TC???");

constexpr const char* kFutexCmds[] = {
    "FUTEX_WAIT",       "FUTEX_WAKE",          "FUTEX_FD",         "FUTEX_REQUEUE",
    "FUTEX_CMP_REQUEUE", "FUTEX_WAKE_OP",      "FUTEX_LOCK_PI",    "FUTEX_UNLOCK_PI",
    "FUTEX_TRYLOCK_PI", "FUTEX_WAIT_BITSET",   "FUTEX_WAKE_BITSET", "FUTEX_WAIT_REQUEUE_PI",
    "FUTEX_CMP_REQUEUE_PI", "FUTEX_LOCK_PI2",
};
constexpr uint64_t kFutexPrivate = 128;
constexpr uint64_t kFutexClockRealtime = 256;

}  // namespace

ArchArg print_arch_prctl_code(KFmt& f, uint64_t code) {
  code &= 0xffffffffu;
  for (const ArchCode& c : kArchCodes) {
    if (c.code == code) {
      f.str(c.name);
      return c.arg;
    }
  }
  f.hex(code).str(" /* ARCH_??? */");
  return ArchArg::kHex;
}

void print_xfeature(KFmt& f, uint64_t v) {
  f.udec(v);
  if (v < sizeof(kXfeatures) / sizeof(kXfeatures[0])) f.str(" /* ").str(kXfeatures[v]).str(" */");
}

FcntlArg print_fcntl_cmd(KFmt& f, uint64_t cmd) {
  cmd &= 0xffffffffu;
  for (const FcntlCmd& c : kFcntlCmds) {
    if (c.cmd == cmd) {
      f.str(c.name);
      return c.arg;
    }
  }
  f.hex(cmd).str(" /* F_??? */");
  return FcntlArg::kHex;
}

void print_seals(KFmt& f, uint64_t v) { print_flags(f, kSeals, v & 0xffffffffu); }
void print_dnotify(KFmt& f, uint64_t v) { print_flags(f, kDnotify, v & 0xffffffffu); }
void print_lease(KFmt& f, uint64_t v) { print_xval(f, kLease, v & 0xffffffffu); }
void print_tcflsh(KFmt& f, uint64_t v) { print_xval(f, kFlush, v & 0xffffffffu); }
void print_tcxonc(KFmt& f, uint64_t v) { print_xval(f, kXonc, v & 0xffffffffu); }

IoctlArg print_ioctl_cmd(KFmt& f, uint64_t cmd) {
  cmd &= 0xffffffffu;
  for (const IoctlCmd& c : kIoctlCmds) {
    if (c.cmd == cmd) {
      f.str(c.name);
      return c.arg;
    }
  }
  // Unnamed: spell out the _IOC(dir, type, nr, size) encoding.
  constexpr const char* kDirs[] = {"_IOC_NONE", "_IOC_WRITE", "_IOC_READ", "_IOC_READ|_IOC_WRITE"};
  f.str("_IOC(").str(kDirs[(cmd >> 30) & 3]).str(", ");
  print_hex(f, (cmd >> 8) & 0xff);
  f.str(", ");
  print_hex(f, cmd & 0xff);
  f.str(", ");
  print_hex(f, (cmd >> 16) & 0x3fff);
  f.ch(')');
  return IoctlArg::kHex;
}

int print_futex_op(KFmt& f, uint64_t op) {
  op &= 0xffffffffu;
  uint64_t cmd = op & ~(kFutexPrivate | kFutexClockRealtime);
  if (cmd >= sizeof(kFutexCmds) / sizeof(kFutexCmds[0])) {
    f.hex(op).str(" /* FUTEX_??? */");
    return -1;
  }
  f.str(kFutexCmds[cmd]);
  if (op & kFutexPrivate) f.str("_PRIVATE");
  if (op & kFutexClockRealtime) f.str("|FUTEX_CLOCK_REALTIME");
  return int(cmd);
}

}  // namespace flatux::strace
