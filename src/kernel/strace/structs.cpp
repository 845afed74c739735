// Summaries of the structs guests pass to common syscalls, in strace's
// abbreviated (non -v) style. Layouts are the x86_64 kernel ABI ones.
#include "kernel/mm/usercopy.h"
#include "kernel/strace/internal.h"

namespace flatux::strace {
namespace {

const void* guest(uint64_t addr) { return reinterpret_cast<const void*>(uintptr_t(addr)); }

// Reads a whole struct; on failure prints what strace prints for an
// unfetchable pointer (NULL or the address) and returns false.
template <typename T>
bool fetch(KFmt& f, uint64_t addr, T& out) {
  if (addr == 0) {
    f.str("NULL");
    return false;
  }
  if (copy_from_user(&out, guest(addr), sizeof out) != 0) {
    f.hex(addr);
    return false;
  }
  return true;
}

struct KernelStat {  // struct stat, x86_64
  uint64_t dev, ino, nlink;
  uint32_t mode, uid, gid, pad0;
  uint64_t rdev;
  int64_t size, blksize, blocks;
  // Timestamps follow; the summary does not show them.
};

struct KernelStatxHead {  // leading fields of struct statx
  uint32_t mask, blksize;
  uint64_t attributes;
  uint32_t nlink, uid, gid;
  uint16_t mode, pad0;
  uint64_t ino, size, blocks;
};

struct KernelTimespec {
  int64_t sec, nsec;
};

struct KernelSigaction {  // the rt_sigaction ABI, not glibc's struct
  uint64_t handler, flags, restorer, mask;
};
constexpr uint64_t kSaRestorer = 0x04000000;

struct KernelRlimit {
  uint64_t cur, max;
};

struct KernelWinsize {
  uint16_t row, col, xpixel, ypixel;
};

struct KernelCloneArgs {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
      set_tid_size, cgroup;
};
constexpr uint64_t kClonePidfd = 0x1000;
constexpr uint64_t kCloneSettls = 0x80000;
constexpr uint64_t kCloneParentSettid = 0x100000;
constexpr uint64_t kCloneChildCleartid = 0x200000;
constexpr uint64_t kCloneChildSettid = 0x01000000;
constexpr uint64_t kCloneIntoCgroup = 0x200000000ull;

constexpr size_t kUtsLen = 65;

void print_dev(KFmt& f, uint64_t dev) {
  // glibc's major()/minor() split of the 64-bit encoding.
  uint64_t major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfffull);
  uint64_t minor = (dev & 0xff) | ((dev >> 12) & ~0xffull);
  f.str("makedev(");
  print_hex(f, major);
  f.str(", ");
  print_hex(f, minor);
  f.ch(')');
}

void print_rlim_value(KFmt& f, uint64_t v) {
  // strace spells infinity the rlimit64 way for getrlimit/setrlimit too.
  if (v == ~0ull) f.str("RLIM64_INFINITY");
  else if (v > 0 && v % 1024 == 0) f.udec(v / 1024).str("*1024");
  else f.udec(v);
}

// A NUL-padded fixed-size field; stops at the first NUL.
void print_fixed_str(KFmt& f, const char* s, size_t cap) {
  size_t n = 0;
  while (n < cap && s[n]) n++;
  print_quoted(f, s, n, false);
}

}  // namespace

void print_stat(KFmt& f, uint64_t addr) {
  KernelStat st;
  if (!fetch(f, addr, st)) return;
  f.str("{st_mode=");
  print_file_mode(f, st.mode);
  uint32_t type = st.mode & 0170000;
  if (type == 0020000 || type == 0060000) {  // character / block device
    f.str(", st_rdev=");
    print_dev(f, st.rdev);
  } else {
    f.str(", st_size=").dec(st.size);
  }
  f.str(", ...}");
}

void print_statx(KFmt& f, uint64_t addr) {
  KernelStatxHead sx;
  if (!fetch(f, addr, sx)) return;
  f.str("{stx_mask=");
  print_statx_mask(f, sx.mask);
  f.str(", stx_attributes=");
  print_statx_attrs(f, sx.attributes);
  f.str(", stx_mode=");
  print_file_mode(f, sx.mode);
  f.str(", stx_size=").udec(sx.size).str(", ...}");
}

void print_timespec(KFmt& f, uint64_t addr) {
  KernelTimespec ts;
  if (!fetch(f, addr, ts)) return;
  f.str("{tv_sec=").dec(ts.sec).str(", tv_nsec=").dec(ts.nsec).ch('}');
}

void print_utsname(KFmt& f, uint64_t addr) {
  char uts[2 * kUtsLen];  // sysname, nodename
  if (!fetch(f, addr, uts)) return;
  f.str("{sysname=");
  print_fixed_str(f, uts, kUtsLen);
  f.str(", nodename=");
  print_fixed_str(f, uts + kUtsLen, kUtsLen);
  f.str(", ...}");
}

void print_sigaction(KFmt& f, uint64_t addr) {
  KernelSigaction sa;
  if (!fetch(f, addr, sa)) return;
  f.str("{sa_handler=");
  if (sa.handler == 0) f.str("SIG_DFL");
  else if (sa.handler == 1) f.str("SIG_IGN");
  else f.hex(sa.handler);
  f.str(", sa_mask=");
  print_sigset_value(f, sa.mask);
  f.str(", sa_flags=");
  print_sa_flags(f, sa.flags);
  if (sa.flags & kSaRestorer) {
    f.str(", sa_restorer=");
    print_ptr(f, sa.restorer);
  }
  f.ch('}');
}

void print_sigset(KFmt& f, uint64_t addr, uint64_t size) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  uint64_t set = 0;
  if (size == 0 || size > sizeof set || copy_from_user(&set, guest(addr), size_t(size)) != 0) {
    f.hex(addr);
    return;
  }
  print_sigset_value(f, set);
}

void print_rlimit(KFmt& f, uint64_t addr) {
  KernelRlimit rl;
  if (!fetch(f, addr, rl)) return;
  f.str("{rlim_cur=");
  print_rlim_value(f, rl.cur);
  f.str(", rlim_max=");
  print_rlim_value(f, rl.max);
  f.ch('}');
}

void print_wait_status(KFmt& f, uint64_t addr) {
  uint32_t s;
  if (!fetch(f, addr, s)) return;
  f.str("[{");
  if ((s & 0xff) == 0x7f) {
    f.str("WIFSTOPPED(s) && WSTOPSIG(s) == ");
    print_signal(f, (s >> 8) & 0xff);
  } else if ((s & 0xffff) == 0xffff) {
    f.str("WIFCONTINUED(s)");
  } else if ((s & 0x7f) == 0) {
    f.str("WIFEXITED(s) && WEXITSTATUS(s) == ").udec((s >> 8) & 0xff);
  } else {
    f.str("WIFSIGNALED(s) && WTERMSIG(s) == ");
    print_signal(f, s & 0x7f);
    if (s & 0x80) f.str(" && WCOREDUMP(s)");
  }
  f.ch('}');
  // ptrace event bits live above the classic 16-bit status.
  if (s & ~0xffffu) f.str(" | ").hex(s & ~0xffffu);
  f.ch(']');
}

void print_pipefds(KFmt& f, uint64_t addr) {
  int32_t fds[2];
  if (!fetch(f, addr, fds)) return;
  f.ch('[').dec(fds[0]).str(", ").dec(fds[1]).ch(']');
}

void print_int_ref(KFmt& f, uint64_t addr) {
  int32_t v;
  if (!fetch(f, addr, v)) return;
  f.ch('[').dec(v).ch(']');
}

void print_u64_ref_hex(KFmt& f, uint64_t addr) {
  uint64_t v;
  if (!fetch(f, addr, v)) return;
  f.ch('[');
  print_hex(f, v);
  f.ch(']');
}

void print_winsize(KFmt& f, uint64_t addr) {
  KernelWinsize ws;
  if (!fetch(f, addr, ws)) return;
  f.str("{ws_row=").udec(ws.row).str(", ws_col=").udec(ws.col);
  f.str(", ws_xpixel=").udec(ws.xpixel).str(", ws_ypixel=").udec(ws.ypixel).ch('}');
}

void print_clone3_args(KFmt& f, uint64_t addr, uint64_t size) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  // Older, shorter layouts are valid; fields they lack read as zero.
  KernelCloneArgs ca{};
  size_t n = size < sizeof ca ? size_t(size) : sizeof ca;
  if (n < 8 || copy_from_user(&ca, guest(addr), n) != 0) {
    f.hex(addr);
    return;
  }
  f.str("{flags=");
  print_clone3_flags(f, ca.flags);
  if (ca.flags & kClonePidfd) f.str(", pidfd=").hex(ca.pidfd);
  if (ca.flags & (kCloneChildSettid | kCloneChildCleartid)) {
    f.str(", child_tid=");
    print_ptr(f, ca.child_tid);
  }
  if (ca.flags & kCloneParentSettid) {
    f.str(", parent_tid=");
    print_ptr(f, ca.parent_tid);
  }
  f.str(", exit_signal=");
  print_signal(f, int64_t(ca.exit_signal));
  f.str(", stack=");
  print_ptr(f, ca.stack);
  f.str(", stack_size=");
  print_hex(f, ca.stack_size);
  if (ca.flags & kCloneSettls) {
    f.str(", tls=");
    print_hex(f, ca.tls);
  }
  if (ca.set_tid || ca.set_tid_size) {
    f.str(", set_tid=");
    print_ptr(f, ca.set_tid);
    f.str(", set_tid_size=").udec(ca.set_tid_size);
  }
  if ((ca.flags & kCloneIntoCgroup) || ca.cgroup) f.str(", cgroup=").udec(ca.cgroup);
  f.ch('}');
}

void print_dirents(KFmt& f, uint64_t addr, uint64_t len) {
  if (addr == 0) {
    f.str("NULL");
    return;
  }
  // d_reclen sits at offset 16 in both linux_dirent and linux_dirent64.
  uint64_t count = 0;
  for (uint64_t off = 0; off + 18 <= len; count++) {
    uint16_t reclen;
    if (get_user(reclen, guest(addr + off + 16)) != 0 || reclen == 0) break;
    off += reclen;
  }
  f.hex(addr).str(" /* ").udec(count).str(count == 1 ? " entry */" : " entries */");
}

}  // namespace flatux::strace
