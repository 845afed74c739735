#include "kernel/strace/strace.h"

#include <gtest/gtest.h>

#include <asm/unistd_64.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/entry/entry.h"
#include "kernel/strace/internal.h"

using namespace flatux::strace;

namespace {

// Guest memory is ordinary process memory here, so arguments are pointers to
// locals. Unmapped-page cases need the usercopy fault handler installed.
class StraceFormat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(flatux::install_host_handlers(), 0); }
};

uint64_t P(const void* p) { return reinterpret_cast<uintptr_t>(p); }

std::string hex(const void* p) {
  char b[32];
  snprintf(b, sizeof b, "%#lx", (unsigned long)P(p));
  return b;
}

std::string fmt(long nr, std::initializer_list<uint64_t> a, long ret, bool returned = true, int pid = 7) {
  uint64_t args[6] = {};
  size_t i = 0;
  for (uint64_t v : a) args[i++] = v;
  char buf[8192];
  size_t n = format_call(buf, sizeof buf, pid, nr, args, ret, returned);
  EXPECT_LT(n, sizeof buf);
  EXPECT_EQ(buf[n], '\0');
  return std::string(buf, n);
}

constexpr uint64_t kAtFdcwd = uint64_t(-100);

}  // namespace

TEST(StraceNames, SyscallNames) {
  EXPECT_STREQ(syscall_name(0), "read");
  EXPECT_STREQ(syscall_name(__NR_openat), "openat");
  EXPECT_STREQ(syscall_name(__NR_exit_group), "exit_group");
  EXPECT_STREQ(syscall_name(334), "rseq");
  EXPECT_STREQ(syscall_name(435), "clone3");
  EXPECT_STREQ(syscall_name(439), "faccessat2");
  EXPECT_STREQ(syscall_name(451), "cachestat");
  EXPECT_STREQ(syscall_name(462), "mseal");
  EXPECT_EQ(syscall_name(335), nullptr);  // never assigned on x86_64
  EXPECT_EQ(syscall_name(423), nullptr);
  EXPECT_EQ(syscall_name(1000), nullptr);
  EXPECT_EQ(syscall_name(-1), nullptr);
  EXPECT_EQ(syscall_name(512), nullptr);  // x32 numbers are not x86_64 syscalls
}

TEST(StraceNames, EveryHeaderSyscallIsNamed) {
#define CHECK_NR(name) EXPECT_STREQ(syscall_name(__NR_##name), #name)
  CHECK_NR(write);
  CHECK_NR(mmap);
  CHECK_NR(rt_sigreturn);
  CHECK_NR(_sysctl);
  CHECK_NR(newfstatat);
  CHECK_NR(pidfd_send_signal);
  CHECK_NR(futex_waitv);
#undef CHECK_NR
  int named = 0;
  for (long nr = 0; nr < 1024; nr++) {
    if (!syscall_name(nr)) {
      EXPECT_EQ(syscall_nargs(nr), -1) << nr;
      continue;
    }
    named++;
    // Every named syscall knows how many arguments to show.
    EXPECT_GE(syscall_nargs(nr), 0) << syscall_name(nr);
    EXPECT_LE(syscall_nargs(nr), 6) << syscall_name(nr);
  }
  EXPECT_GE(named, 379);
  EXPECT_EQ(syscall_nargs(__NR_mmap), 6);
  EXPECT_EQ(syscall_nargs(__NR_getpid), 0);
}

TEST(StraceNames, Errnos) {
  EXPECT_STREQ(errno_name(ENOENT), "ENOENT");
  EXPECT_STREQ(errno_text(ENOENT), "No such file or directory");
  EXPECT_STREQ(errno_name(EPERM), "EPERM");
  EXPECT_STREQ(errno_text(EAGAIN), "Resource temporarily unavailable");
  EXPECT_STREQ(errno_name(133), "EHWPOISON");
  EXPECT_STREQ(errno_text(133), "Memory page has hardware error");
  // Agrees with the host C library for every assigned value.
  for (int e = 1; e <= 133; e++) {
    if (errno_name(e) == nullptr) continue;
    EXPECT_STREQ(errno_text(e), strerror(e)) << e;
  }
  EXPECT_EQ(errno_name(41), nullptr);
  EXPECT_EQ(errno_name(58), nullptr);
  EXPECT_EQ(errno_name(0), nullptr);
  EXPECT_EQ(errno_name(134), nullptr);
  EXPECT_STREQ(errno_name(512), "ERESTARTSYS");
  EXPECT_STREQ(errno_name(513), "ERESTARTNOINTR");
  EXPECT_STREQ(errno_name(514), "ERESTARTNOHAND");
  EXPECT_STREQ(errno_name(516), "ERESTART_RESTARTBLOCK");
  EXPECT_STREQ(errno_text(512), "To be restarted if SA_RESTART is set");
}

TEST_F(StraceFormat, OpenatSuccess) {
  EXPECT_EQ(fmt(__NR_openat, {kAtFdcwd, P("/etc/passwd"), 02000000}, 3),
            "[pid 7] openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY|O_CLOEXEC) = 3\n");
}

TEST_F(StraceFormat, OpenatFailure) {
  EXPECT_EQ(fmt(__NR_openat, {kAtFdcwd, P("/nope"), 0}, -ENOENT),
            "[pid 7] openat(AT_FDCWD, \"/nope\", O_RDONLY) = -1 ENOENT (No such file or directory)\n");
}

TEST_F(StraceFormat, OpenModeOnlyWithCreat) {
  EXPECT_EQ(fmt(__NR_openat, {3, P("out"), 01 | 0100 | 01000, 0644}, 4),
            "[pid 7] openat(3, \"out\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 4\n");
  EXPECT_EQ(fmt(__NR_open, {P("x"), 02 | 0100, 0}, 4),
            "[pid 7] open(\"x\", O_RDWR|O_CREAT, 000) = 4\n");
  EXPECT_EQ(fmt(__NR_open, {P("/tmp"), 02 | 0200 | 020200000, 0600}, 4),
            "[pid 7] open(\"/tmp\", O_RDWR|O_EXCL|O_TMPFILE, 0600) = 4\n");
  // A mode register left over without O_CREAT is not shown.
  EXPECT_EQ(fmt(__NR_openat, {kAtFdcwd, P("."), 04000 | 02000000 | 0200000, 0644}, 3),
            "[pid 7] openat(AT_FDCWD, \".\", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3\n");
  EXPECT_EQ(fmt(__NR_open, {P("/tmp"), 0x80000003u}, -EISDIR),
            "[pid 7] open(\"/tmp\", O_ACCMODE|0x80000000) = -1 EISDIR (Is a directory)\n");
}

TEST_F(StraceFormat, NullAndBadPaths) {
  EXPECT_EQ(fmt(__NR_open, {0, 0}, -EFAULT),
            "[pid 7] open(NULL, O_RDONLY) = -1 EFAULT (Bad address)\n");
  EXPECT_EQ(fmt(__NR_open, {8, 0}, -EFAULT),
            "[pid 7] open(0x8, O_RDONLY) = -1 EFAULT (Bad address)\n");
  // A path that runs into an unmapped page prints as its address.
  char* page = static_cast<char*>(
      mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(page, MAP_FAILED);
  munmap(page + 4096, 4096);
  memset(page, 'b', 4096);
  const char* tail = page + 4090;
  EXPECT_EQ(fmt(__NR_chdir, {P(tail)}, -EFAULT),
            "[pid 7] chdir(" + hex(tail) + ") = -1 EFAULT (Bad address)\n");
  EXPECT_EQ(fmt(__NR_write, {1, P(tail), 10}, 10), "[pid 7] write(1, " + hex(tail) + ", 10) = 10\n");
  EXPECT_EQ(fmt(__NR_write, {1, P(tail), 6}, 6), "[pid 7] write(1, \"bbbbbb\", 6) = 6\n");
  munmap(page, 4096);
}

TEST_F(StraceFormat, LongPathIsShownWhole) {
  std::string path = "/" + std::string(299, 'a');
  EXPECT_EQ(fmt(__NR_unlink, {P(path.c_str())}, -ENAMETOOLONG),
            "[pid 7] unlink(\"" + path + "\") = -1 ENAMETOOLONG (File name too long)\n");
}

TEST_F(StraceFormat, WriteEscapesAndTruncates) {
  EXPECT_EQ(fmt(__NR_write, {1, P("hello\n"), 6}, 6), "[pid 7] write(1, \"hello\\n\", 6) = 6\n");
  // Octal escapes use three digits only when an octal digit follows.
  const char data[] = "he\"l\\lo\t\n\001\0017\177\377 end";
  static_assert(sizeof data == 19);
  EXPECT_EQ(fmt(__NR_write, {1, P(data), sizeof data}, sizeof data),
            "[pid 7] write(1, \"he\\\"l\\\\lo\\t\\n\\1\\0017\\177\\377 end\\0\", 19) = 19\n");
  EXPECT_EQ(fmt(__NR_write, {1, P("\r\v\f\033[0m\0001"), 9}, 9),
            "[pid 7] write(1, \"\\r\\v\\f\\33[0m\\0001\", 9) = 9\n");
  const char* forty = "0123456789012345678901234567890123456789";
  EXPECT_EQ(fmt(__NR_write, {1, P(forty), 40}, 40),
            "[pid 7] write(1, \"01234567890123456789012345678901\"..., 40) = 40\n");
  EXPECT_EQ(fmt(__NR_write, {1, P(forty), 32}, 32),
            "[pid 7] write(1, \"01234567890123456789012345678901\", 32) = 32\n");
  EXPECT_EQ(fmt(__NR_write, {1, 0, 0}, 0), "[pid 7] write(1, NULL, 0) = 0\n");
  EXPECT_EQ(fmt(__NR_write, {uint64_t(-1), P("x"), 1}, -EBADF),
            "[pid 7] write(-1, \"x\", 1) = -1 EBADF (Bad file descriptor)\n");
}

TEST_F(StraceFormat, ReadShowsWhatWasRead) {
  char buf[64] = "root:x:0:0:root:/root:/bin/bash\ndaemon";
  EXPECT_EQ(fmt(__NR_read, {3, P(buf), 64}, 5), "[pid 7] read(3, \"root:\", 64) = 5\n");
  EXPECT_EQ(fmt(__NR_read, {3, P(buf), 64}, 38),
            "[pid 7] read(3, \"root:x:0:0:root:/root:/bin/bash\\n\"..., 64) = 38\n");
  EXPECT_EQ(fmt(__NR_read, {3, P(buf), 64}, 0), "[pid 7] read(3, \"\", 64) = 0\n");
  EXPECT_EQ(fmt(__NR_read, {3, P(buf), 64}, -EAGAIN),
            "[pid 7] read(3, " + hex(buf) + ", 64) = -1 EAGAIN (Resource temporarily unavailable)\n");
  EXPECT_EQ(fmt(__NR_pread64, {3, P(buf), 64, 5}, 4), "[pid 7] pread64(3, \"root\", 64, 5) = 4\n");
}

TEST_F(StraceFormat, NonReturning) {
  EXPECT_EQ(fmt(__NR_exit_group, {0}, 0, false), "[pid 7] exit_group(0) = ?\n");
  EXPECT_EQ(fmt(__NR_exit, {uint64_t(-5)}, 0, false), "[pid 7] exit(-5) = ?\n");
  // Out-parameters of a call that never returned are not results.
  char buf[8] = "abc";
  EXPECT_EQ(fmt(__NR_read, {0, P(buf), 8}, 3, false), "[pid 7] read(0, " + hex(buf) + ", 8) = ?\n");
}

TEST_F(StraceFormat, RestartAndUnknownErrors) {
  EXPECT_EQ(fmt(__NR_read, {0, 0x1000, 8}, -512),
            "[pid 7] read(0, 0x1000, 8) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)\n");
  EXPECT_EQ(fmt(__NR_close, {3}, -600), "[pid 7] close(3) = -1 ERRNO_600 (Unknown error 600)\n");
  EXPECT_EQ(fmt(__NR_close, {3}, -41), "[pid 7] close(3) = -1 ERRNO_41 (Unknown error 41)\n");
}

TEST_F(StraceFormat, UnknownAndUndecodedSyscalls) {
  EXPECT_EQ(fmt(1000, {1, 2, 3}, -ENOSYS),
            "[pid 7] syscall_0x3e8(0x1, 0x2, 0x3, 0, 0, 0) = -1 ENOSYS (Function not implemented)\n");
  // Known but without a description: its real argument count, in hex.
  EXPECT_EQ(fmt(__NR_socket, {2, 1, 0, 99, 99, 99}, 3), "[pid 7] socket(0x2, 0x1, 0) = 3\n");
  EXPECT_EQ(fmt(__NR_getpid, {9, 9}, 42), "[pid 7] getpid() = 42\n");
  EXPECT_EQ(fmt(__NR_rseq, {0x7f0000001000, 0x20, 0, 0x53053053}, 0),
            "[pid 7] rseq(0x7f0000001000, 0x20, 0, 0x53053053) = 0\n");
}

TEST_F(StraceFormat, Memory) {
  EXPECT_EQ(fmt(__NR_mmap, {0, 8192, 3, 0x22, uint64_t(-1), 0}, 0x7f38492c8000),
            "[pid 7] mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f38492c8000\n");
  EXPECT_EQ(fmt(__NR_mmap, {0x7f3849296000, 110592, 5, 0x812, 3, 0x7000}, 0x7f3849296000),
            "[pid 7] mmap(0x7f3849296000, 110592, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE, 3, 0x7000) = 0x7f3849296000\n");
  EXPECT_EQ(fmt(__NR_mmap, {0, 4096, 0x100, 3 | 0x40000 | (30u << 26), uint64_t(-1), 0}, -EINVAL),
            "[pid 7] mmap(NULL, 4096, 0x100 /* PROT_??? */, MAP_SHARED_VALIDATE|MAP_HUGETLB|30<<MAP_HUGE_SHIFT, -1, 0) = -1 EINVAL (Invalid argument)\n");
  EXPECT_EQ(fmt(__NR_mprotect, {0x7f0000000000, 4096, 0}, 0),
            "[pid 7] mprotect(0x7f0000000000, 4096, PROT_NONE) = 0\n");
  EXPECT_EQ(fmt(__NR_munmap, {0x7f0000000000, 4096}, 0), "[pid 7] munmap(0x7f0000000000, 4096) = 0\n");
  EXPECT_EQ(fmt(__NR_brk, {0}, 0x55b106dbe000), "[pid 7] brk(NULL) = 0x55b106dbe000\n");
  EXPECT_EQ(fmt(__NR_mremap, {0x7f0000000000, 8192, 4096, 1}, 0x7f0000000000),
            "[pid 7] mremap(0x7f0000000000, 8192, 4096, MREMAP_MAYMOVE) = 0x7f0000000000\n");
  EXPECT_EQ(fmt(__NR_mremap, {0x7f0000000000, 4096, 8192, 3, 0x20000}, -EINVAL),
            "[pid 7] mremap(0x7f0000000000, 4096, 8192, MREMAP_MAYMOVE|MREMAP_FIXED, 0x20000) = -1 EINVAL (Invalid argument)\n");
}

TEST_F(StraceFormat, Stat) {
  // struct stat, x86_64: st_mode at 24, st_rdev at 40, st_size at 48.
  alignas(8) unsigned char st[144] = {};
  uint32_t mode = 0100644;
  int64_t size = 1221;
  memcpy(st + 24, &mode, 4);
  memcpy(st + 48, &size, 8);
  EXPECT_EQ(fmt(__NR_fstat, {3, P(st)}, 0),
            "[pid 7] fstat(3, {st_mode=S_IFREG|0644, st_size=1221, ...}) = 0\n");
  EXPECT_EQ(fmt(__NR_newfstatat, {3, P(""), P(st), 0x1000}, 0),
            "[pid 7] newfstatat(3, \"\", {st_mode=S_IFREG|0644, st_size=1221, ...}, AT_EMPTY_PATH) = 0\n");
  mode = 020666;
  uint64_t rdev = (1 << 8) | 3;
  memcpy(st + 24, &mode, 4);
  memcpy(st + 40, &rdev, 8);
  EXPECT_EQ(fmt(__NR_stat, {P("/dev/null"), P(st)}, 0),
            "[pid 7] stat(\"/dev/null\", {st_mode=S_IFCHR|0666, st_rdev=makedev(0x1, 0x3), ...}) = 0\n");
  mode = 041777;
  memcpy(st + 24, &mode, 4);
  EXPECT_EQ(fmt(__NR_lstat, {P("/tmp"), P(st)}, 0),
            "[pid 7] lstat(\"/tmp\", {st_mode=S_IFDIR|S_ISVTX|0777, st_size=1221, ...}) = 0\n");
  EXPECT_EQ(fmt(__NR_stat, {P("/nope"), P(st)}, -ENOENT),
            "[pid 7] stat(\"/nope\", " + hex(st) + ") = -1 ENOENT (No such file or directory)\n");
}

TEST_F(StraceFormat, AccessLseekDirents) {
  EXPECT_EQ(fmt(__NR_access, {P("/etc/ld.so.preload"), 4}, -ENOENT),
            "[pid 7] access(\"/etc/ld.so.preload\", R_OK) = -1 ENOENT (No such file or directory)\n");
  EXPECT_EQ(fmt(__NR_faccessat, {kAtFdcwd, P("/"), 0}, 0), "[pid 7] faccessat(AT_FDCWD, \"/\", F_OK) = 0\n");
  EXPECT_EQ(fmt(__NR_access, {P("/"), 0x10}, -EINVAL),
            "[pid 7] access(\"/\", 0x10 /* ?_OK */) = -1 EINVAL (Invalid argument)\n");
  EXPECT_EQ(fmt(__NR_lseek, {3, uint64_t(-1), 1}, 9), "[pid 7] lseek(3, -1, SEEK_CUR) = 9\n");
  EXPECT_EQ(fmt(__NR_lseek, {3, 0, 7}, -EINVAL),
            "[pid 7] lseek(3, 0, 0x7 /* SEEK_??? */) = -1 EINVAL (Invalid argument)\n");
  // Two records of 24 bytes each; d_reclen lives at offset 16.
  alignas(8) unsigned char d[48] = {};
  d[16] = 24;
  d[24 + 16] = 24;
  EXPECT_EQ(fmt(__NR_getdents64, {3, P(d), 512}, 48),
            "[pid 7] getdents64(3, " + hex(d) + " /* 2 entries */, 512) = 48\n");
}

TEST_F(StraceFormat, Exec) {
  const char* argv[] = {"ls", "-l", "0123456789012345678901234567890123456789", nullptr};
  const char* envp[] = {"A=1", "B=2", nullptr};
  EXPECT_EQ(fmt(__NR_execve, {P("/bin/ls"), P(argv), P(envp)}, 0),
            "[pid 7] execve(\"/bin/ls\", [\"ls\", \"-l\", \"01234567890123456789012345678901\"...], " +
                hex(envp) + " /* 2 vars */) = 0\n");
  EXPECT_EQ(fmt(__NR_execve, {P("/x"), 0, 0}, -EFAULT),
            "[pid 7] execve(\"/x\", NULL, NULL) = -1 EFAULT (Bad address)\n");
}

TEST_F(StraceFormat, Signals) {
  struct {
    uint64_t handler, flags, restorer, mask;
  } sa = {1, 0x04000000 | 0x10000000 | 4, 0x7f0000001000, (1ull << 1) | (1ull << 14)};
  EXPECT_EQ(fmt(__NR_rt_sigaction, {2, P(&sa), 0, 8}, 0),
            "[pid 7] rt_sigaction(SIGINT, {sa_handler=SIG_IGN, sa_mask=[INT TERM], "
            "sa_flags=SA_RESTORER|SA_RESTART|SA_SIGINFO, sa_restorer=0x7f0000001000}, NULL, 8) = 0\n");
  uint64_t all = ~0ull, none = 0;
  EXPECT_EQ(fmt(__NR_rt_sigprocmask, {0, P(&all), 0, 8}, 0),
            "[pid 7] rt_sigprocmask(SIG_BLOCK, ~[], NULL, 8) = 0\n");
  uint64_t most = ~((1ull << 31) | (1ull << 32));
  EXPECT_EQ(fmt(__NR_rt_sigprocmask, {2, P(&none), P(&most), 8}, 0),
            "[pid 7] rt_sigprocmask(SIG_SETMASK, [], ~[RTMIN RT_1], 8) = 0\n");
  EXPECT_EQ(fmt(__NR_kill, {1234, 9}, 0), "[pid 7] kill(1234, SIGKILL) = 0\n");
  EXPECT_EQ(fmt(__NR_tgkill, {1, 2, 35}, -ESRCH),
            "[pid 7] tgkill(1, 2, SIGRT_3) = -1 ESRCH (No such process)\n");
  EXPECT_EQ(fmt(__NR_kill, {uint64_t(-1), 999}, -EINVAL),
            "[pid 7] kill(-1, 999) = -1 EINVAL (Invalid argument)\n");
}

TEST_F(StraceFormat, ProcessCalls) {
  EXPECT_EQ(fmt(__NR_clone, {0x01200011, 0, 0, 0x7f0000000a10, 0}, 4368),
            "[pid 7] clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, "
            "child_tidptr=0x7f0000000a10) = 4368\n");
  EXPECT_EQ(fmt(__NR_vfork, {}, 12), "[pid 7] vfork() = 12\n");
  int status = 3 << 8;
  EXPECT_EQ(fmt(__NR_wait4, {uint64_t(-1), P(&status), 0, 0}, 12),
            "[pid 7] wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 3}], 0, NULL) = 12\n");
  status = 9;
  EXPECT_EQ(fmt(__NR_wait4, {12, P(&status), 1 | 0x40000000, 0}, 12),
            "[pid 7] wait4(12, [{WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL}], WNOHANG|__WALL, NULL) = 12\n");
  EXPECT_EQ(fmt(__NR_arch_prctl, {0x1002, 0x7f3849010800}, 0),
            "[pid 7] arch_prctl(ARCH_SET_FS, 0x7f3849010800) = 0\n");
  EXPECT_EQ(fmt(__NR_set_tid_address, {0x7f3849010ad0}, 4190),
            "[pid 7] set_tid_address(0x7f3849010ad0) = 4190\n");
  uint64_t rl[2] = {8192 * 1024, ~0ull};
  EXPECT_EQ(fmt(__NR_prlimit64, {0, 3, 0, P(rl)}, 0),
            "[pid 7] prlimit64(0, RLIMIT_STACK, NULL, {rlim_cur=8192*1024, rlim_max=RLIM64_INFINITY}) = 0\n");
}

TEST_F(StraceFormat, DescriptorCalls) {
  EXPECT_EQ(fmt(__NR_close, {3}, 0), "[pid 7] close(3) = 0\n");
  EXPECT_EQ(fmt(__NR_dup3, {3, 10, 02000000}, 10), "[pid 7] dup3(3, 10, O_CLOEXEC) = 10\n");
  int fds[2] = {3, 4};
  EXPECT_EQ(fmt(__NR_pipe2, {P(fds), 02000000 | 04000}, 0),
            "[pid 7] pipe2([3, 4], O_NONBLOCK|O_CLOEXEC) = 0\n");
  EXPECT_EQ(fmt(__NR_fcntl, {3, 3}, 0x8002), "[pid 7] fcntl(3, F_GETFL) = 0x8002 (flags O_RDWR|O_LARGEFILE)\n");
  EXPECT_EQ(fmt(__NR_fcntl, {3, 2, 1}, 0), "[pid 7] fcntl(3, F_SETFD, FD_CLOEXEC) = 0\n");
  EXPECT_EQ(fmt(__NR_fcntl, {3, 1030, 10}, 11), "[pid 7] fcntl(3, F_DUPFD_CLOEXEC, 10) = 11\n");
  EXPECT_EQ(fmt(__NR_ioctl, {1, 0x5401, 0x7ffc0000}, -ENOTTY),
            "[pid 7] ioctl(1, TCGETS, 0x7ffc0000) = -1 ENOTTY (Inappropriate ioctl for device)\n");
  unsigned short ws[4] = {24, 80, 0, 0};
  EXPECT_EQ(fmt(__NR_ioctl, {1, 0x5413, P(ws)}, 0),
            "[pid 7] ioctl(1, TIOCGWINSZ, {ws_row=24, ws_col=80, ws_xpixel=0, ws_ypixel=0}) = 0\n");
  EXPECT_EQ(fmt(__NR_ioctl, {1, 0x1234, 5}, -ENOTTY),
            "[pid 7] ioctl(1, _IOC(_IOC_NONE, 0x12, 0x34, 0), 0x5) = -1 ENOTTY (Inappropriate ioctl for device)\n");
  char cwd[] = "/tmp";
  EXPECT_EQ(fmt(__NR_getcwd, {P(cwd), 4096}, 5), "[pid 7] getcwd(\"/tmp\", 4096) = 5\n");
  char link[] = "/usr/bin/lsXXXX";
  EXPECT_EQ(fmt(__NR_readlink, {P("/proc/self/exe"), P(link), 100}, 11),
            "[pid 7] readlink(\"/proc/self/exe\", \"/usr/bin/ls\", 100) = 11\n");
}

TEST_F(StraceFormat, TimeAndSystem) {
  int64_t ts[2] = {508, 618783585};
  EXPECT_EQ(fmt(__NR_clock_gettime, {1, P(ts)}, 0),
            "[pid 7] clock_gettime(CLOCK_MONOTONIC, {tv_sec=508, tv_nsec=618783585}) = 0\n");
  EXPECT_EQ(fmt(__NR_clock_gettime, {100, 0}, -EINVAL),
            "[pid 7] clock_gettime(0x64 /* CLOCK_??? */, NULL) = -1 EINVAL (Invalid argument)\n");
  char uts[390] = {};
  strcpy(uts, "Linux");
  strcpy(uts + 65, "flatux");
  EXPECT_EQ(fmt(__NR_uname, {P(uts)}, 0), "[pid 7] uname({sysname=\"Linux\", nodename=\"flatux\", ...}) = 0\n");
  unsigned char rnd[4] = {0x12, 0x34, 0x00, 0xff};
  EXPECT_EQ(fmt(__NR_getrandom, {P(rnd), 4, 1}, 4),
            "[pid 7] getrandom(\"\\x12\\x34\\x00\\xff\", 4, GRND_NONBLOCK) = 4\n");
}

TEST_F(StraceFormat, TruncatesToCapacityWithNewline) {
  uint64_t args[6] = {kAtFdcwd, P("/etc/passwd"), 0};
  char buf[16];
  size_t n = format_call(buf, sizeof buf, 7, __NR_openat, args, 3, true);
  EXPECT_EQ(n, sizeof buf - 1);
  EXPECT_EQ(std::string(buf, n), "[pid 7] openat\n");
  EXPECT_EQ(buf[n], '\0');
  char one[1];
  EXPECT_EQ(format_call(one, 1, 7, __NR_openat, args, 3, true), 1u);
  EXPECT_EQ(one[0], '\n');
  EXPECT_EQ(format_call(one, 0, 7, __NR_openat, args, 3, true), 0u);
}
