// Shared pieces of the strace renderer: value/flag tables, guest-memory
// printers and struct decoders. Everything prints into a KFmt and never
// fails: unreadable guest memory degrades to the pointer's hex value, the way
// strace prints an address it could not fetch.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernel/lib/kfmt.h"

namespace flatux::strace {

// One past the highest syscall number syscall_name() knows.
constexpr size_t kSyscallCount = 468;
// strace's default -s: bytes of a string or buffer shown before "...".
constexpr size_t kMaxStrLen = 32;
// Paths are shown whole (strace ignores -s for them), up to PATH_MAX.
constexpr size_t kPathMax = 4096;
// Array elements (argv, iovecs) shown before ", ...".
constexpr size_t kMaxElems = 32;

// Number of arguments the syscall takes, or -1 for an unknown number.
int syscall_nargs(long nr);
// ERESTARTSYS-style codes: the call was interrupted and will be restarted or
// turned into EINTR, so strace shows "= ? ERESTARTSYS (...)" rather than -1.
bool is_restart_errno(long err);

// ---- value and flag tables (flags.cpp) -------------------------------------

struct XVal {
  uint64_t val;
  const char* name;
};

struct Xlat {
  const XVal* items;
  size_t count;
  // Shown after an unnamed value: "0x64 /* CLOCK_??? */".
  const char* unknown;
};

template <size_t N>
constexpr Xlat make_xlat(const XVal (&items)[N], const char* unknown) {
  return Xlat{items, N, unknown};
}

const char* xlookup(const Xlat& x, uint64_t v);
// Name, or "0x.. /* X_??? */".
void print_xval(KFmt& f, const Xlat& x, uint64_t v);
// strace's flag syntax: "A|B|0x80" (unnamed remainder in hex), "0" for no
// bits, "0x80 /* X_??? */" when no bit has a name. Entries are matched in
// table order and consume their bits, so a multi-bit name listed first
// (O_SYNC, STATX_ALL) wins over its parts.
void print_flags(KFmt& f, const Xlat& x, uint64_t v);
// As print_flags, but appends to an already-started "A|B" sequence: prints
// nothing for v == 0 and a leading '|' otherwise.
void print_flags_tail(KFmt& f, const Xlat& x, uint64_t v);

// %#lx as strace prints it: "0" for zero, "0x1f" otherwise.
inline void print_hex(KFmt& f, uint64_t v) {
  if (v == 0) f.ch('0');
  else f.hex(v);
}
// A guest pointer: NULL or its hex address.
inline void print_ptr(KFmt& f, uint64_t v) {
  if (v == 0) f.str("NULL");
  else f.hex(v);
}
// %#03o: "000", "007", "0644".
void print_mode_octal(KFmt& f, uint64_t mode);

void print_open_flags(KFmt& f, uint64_t v);         // O_RDONLY|O_CLOEXEC
void print_open_flags_no_acc(KFmt& f, uint64_t v);  // pipe2/dup3: O_CLOEXEC
void print_fd_flags(KFmt& f, uint64_t v);           // FD_CLOEXEC
void print_at_flags(KFmt& f, uint64_t v);           // AT_SYMLINK_NOFOLLOW...
void print_faccessat_flags(KFmt& f, uint64_t v);    // AT_EACCESS...
void print_statx_at_flags(KFmt& f, uint64_t v);     // AT_STATX_SYNC_AS_STAT|...
void print_statx_mask(KFmt& f, uint64_t v);
void print_statx_attrs(KFmt& f, uint64_t v);
void print_access_mode(KFmt& f, uint64_t v);  // F_OK, R_OK|W_OK
void print_whence(KFmt& f, uint64_t v);
void print_prot(KFmt& f, uint64_t v);
void print_map_flags(KFmt& f, uint64_t v);
void print_mremap_flags(KFmt& f, uint64_t v);
void print_madvise(KFmt& f, uint64_t v);
void print_grnd_flags(KFmt& f, uint64_t v);
void print_memfd_flags(KFmt& f, uint64_t v);
void print_close_range_flags(KFmt& f, uint64_t v);
void print_sa_flags(KFmt& f, uint64_t v);
void print_wait_options(KFmt& f, uint64_t v);
void print_clockid(KFmt& f, uint64_t v);
void print_timer_flags(KFmt& f, uint64_t v);
void print_rlimit_resource(KFmt& f, uint64_t v);
void print_sigprocmask_how(KFmt& f, uint64_t v);
void print_seals(KFmt& f, uint64_t v);
void print_dnotify(KFmt& f, uint64_t v);
void print_lease(KFmt& f, uint64_t v);
// st_mode / stx_mode: "S_IFREG|S_ISUID|0755".
void print_file_mode(KFmt& f, uint64_t mode);

// Signal as an argument: SIGINT, SIGRTMIN, SIGRT_3; other numbers in decimal.
void print_signal(KFmt& f, int64_t sig);
// Signal inside a set: INT, RTMIN, RT_3.
void print_signal_abbrev(KFmt& f, int sig);
// A 64-bit kernel sigset value: [INT TERM], ~[RTMIN RT_1] when mostly full.
void print_sigset_value(KFmt& f, uint64_t set);

// clone(2) flags with the exit signal in the low byte; clone3 flags are a
// plain 64-bit flag word with a few extra names.
void print_clone_flags(KFmt& f, uint64_t v);
void print_clone3_flags(KFmt& f, uint64_t v);

// arch_prctl: the code, and whether/how its second argument is shown.
enum class ArchArg { kNone, kHex, kDec, kPtr, kOutPtr, kXfeature };
ArchArg print_arch_prctl_code(KFmt& f, uint64_t code);
// An XSAVE feature number: "18 /* XFEATURE_XTILE_DATA */".
void print_xfeature(KFmt& f, uint64_t v);

// fcntl: the command, and how its third argument is shown.
enum class FcntlArg { kNone, kDec, kHex, kPtr, kFdFlags, kOpenFlags, kSignal, kLease, kNotify, kSeals };
FcntlArg print_fcntl_cmd(KFmt& f, uint64_t cmd);

// ioctl: the request, and how its third argument is shown.
enum class IoctlArg { kNone, kHex, kDec, kPtr, kIntIn, kIntOut, kWinszIn, kWinszOut, kFlush, kXonc };
IoctlArg print_ioctl_cmd(KFmt& f, uint64_t cmd);
void print_tcflsh(KFmt& f, uint64_t v);
void print_tcxonc(KFmt& f, uint64_t v);

// futex: prints the operation and returns its command (op without the
// PRIVATE and CLOCK_REALTIME bits), or -1 if unknown.
int print_futex_op(KFmt& f, uint64_t op);

// ---- guest memory (strings.cpp) --------------------------------------------

// Streams bytes into a quoted C string with strace's escapes (\n \t \" \\ \v
// \f \r), other non-printables as octal (three digits only when the next
// byte is an octal digit, so the escape stays unambiguous) or, for
// random/binary data, \xNN for every byte.
class Quoter {
 public:
  Quoter(KFmt& f, bool hex) : f_(f), hex_(hex) { f_.ch('"'); }
  void put(uint8_t c) {
    if (have_) emit(prev_, c >= '0' && c <= '7');
    prev_ = c;
    have_ = true;
  }
  void put(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; i++) put(b[i]);
  }
  void finish(bool ellipsis) {
    if (have_) emit(prev_, false);
    have_ = false;
    f_.ch('"');
    if (ellipsis) f_.str("...");
  }

 private:
  void emit(uint8_t c, bool next_is_octal_digit);
  KFmt& f_;
  bool hex_;
  bool have_ = false;
  uint8_t prev_ = 0;
};

// Quotes bytes already in kernel memory.
void print_quoted(KFmt& f, const void* p, size_t n, bool ellipsis, bool hex = false);
// `len` bytes at guest `addr` (first kMaxStrLen, then "...").
void print_guest_bytes(KFmt& f, uint64_t addr, uint64_t len, bool hex = false);
// NUL-terminated guest string, first kMaxStrLen bytes then "...".
void print_guest_str(KFmt& f, uint64_t addr);
// NUL-terminated guest path, shown whole up to kPathMax.
void print_guest_path(KFmt& f, uint64_t addr);
// NULL-terminated array of guest strings: ["ls", "-l"].
void print_guest_argv(KFmt& f, uint64_t addr);
// Environment as strace abbreviates it: 0x7ffd... /* 20 vars */.
void print_guest_envp(KFmt& f, uint64_t addr);
// iovec array; `limit` caps the total bytes shown (readv: the return value),
// or is UINT64_MAX to show each buffer by its own length (writev).
// `show_data` false prints only iov_base addresses.
void print_guest_iovec(KFmt& f, uint64_t addr, uint64_t count, uint64_t limit, bool show_data);

// ---- struct decoders (structs.cpp) -------------------------------------------
// Each prints NULL for 0 and the hex address when the struct is unreadable.

void print_stat(KFmt& f, uint64_t addr);
void print_statx(KFmt& f, uint64_t addr);
void print_timespec(KFmt& f, uint64_t addr);
void print_utsname(KFmt& f, uint64_t addr);
void print_sigaction(KFmt& f, uint64_t addr);
void print_sigset(KFmt& f, uint64_t addr, uint64_t size);
// struct rlimit and struct rlimit64 share the x86_64 layout.
void print_rlimit(KFmt& f, uint64_t addr);
void print_wait_status(KFmt& f, uint64_t addr);
void print_pipefds(KFmt& f, uint64_t addr);
void print_int_ref(KFmt& f, uint64_t addr);  // [42]
void print_u64_ref_hex(KFmt& f, uint64_t addr);  // [0x7f...]
void print_winsize(KFmt& f, uint64_t addr);
void print_clone3_args(KFmt& f, uint64_t addr, uint64_t size);
// getdents/getdents64 buffer after success: 0x55... /* 18 entries */.
void print_dirents(KFmt& f, uint64_t addr, uint64_t len);

}  // namespace flatux::strace
