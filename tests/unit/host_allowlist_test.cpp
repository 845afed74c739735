#include "host/seccomp.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace flatux;

namespace {

TextRange around(const void* code) {
  uintptr_t p = (uintptr_t)code;
  return {p - (64u << 20), p + (64u << 20)};
}

// Runs `probe` in a child under the filter, this binary and libc counting
// as the kernel's code (so the allowlist judges their calls); the child's
// exit status is the probe's result (0: as expected).
int under_allowlist(bool net_none, int (*probe)()) {
  pid_t pid = fork();
  if (pid == 0) {
    const TextRange kernel[] = {around((void*)&under_allowlist), around((void*)&syscall)};
    HostAllowlistOptions o{.net_none = net_none, .own_pid = (uint32_t)getpid()};
    int n = 0;
    if (install_syscall_filter(kernel, 2, &o, &n) != 0 || n < 50) _exit(100);
    _exit(probe());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

// 0 when the raw call failed with `want`.
int refused_with(long r, int want) { return r == -1 && errno == want ? 0 : 1; }

}  // namespace

TEST(HostAllowlist, KernelCallsStillWork) {
  EXPECT_EQ(under_allowlist(false, [] {
              int fds[2];
              if (pipe2(fds, O_CLOEXEC) != 0 || write(fds[1], "x", 1) != 1) return 1;
              char c;
              if (read(fds[0], &c, 1) != 1 || c != 'x') return 2;
              int s = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
              if (s < 0) return 3;
              close(s);
              int pair[2];
              if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 4;
              if (fcntl(fds[0], F_GETFL) < 0 || fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0) return 5;
              int avail = 0;
              if (ioctl(pair[0], FIONREAD, &avail) != 0) return 6;
              return 0;
            }),
            0);
}

TEST(HostAllowlist, RefusesWhatTheKernelNeverCalls) {
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_ptrace, 0, 0, 0, 0), EPERM); }), 0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_mount, "x", "/", "tmpfs", 0, 0), EPERM); }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_bpf, 0, nullptr, 0), EPERM); }), 0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_kill, getppid(), 0), EPERM); }), 0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_execve, "/bin/true", nullptr, nullptr), EPERM); }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_setuid, 0), EPERM); }), 0);
  // x32 numbers are never the kernel's.
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(0x40000000 | SYS_getpid), EPERM); }), 0);
}

TEST(HostAllowlist, ChecksArguments) {
  // No namespaces from clone; clone3 is "not there" so callers fall back.
  EXPECT_EQ(under_allowlist(false, [] {
              return refused_with(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
            }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_clone3, nullptr, 0), ENOSYS); }), 0);
  // A child sharing nothing but descriptors is a shape the kernel uses.
  EXPECT_EQ(under_allowlist(false, [] {
              long pid = syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
              if (pid == 0) _exit(0);
              int st;
              return pid > 0 && waitpid((pid_t)pid, &st, 0) == pid ? 0 : 1;
            }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_socket, AF_PACKET, SOCK_RAW, 0), EPERM); }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 9), EPERM); }),
            0);
  EXPECT_EQ(under_allowlist(false, [] {
              int s = (int)syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
              return s >= 0 ? 0 : 1;
            }),
            0);
  EXPECT_EQ(under_allowlist(true, [] { return refused_with(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0), EPERM); }),
            0);
  EXPECT_EQ(under_allowlist(true, [] { return refused_with(syscall(SYS_socket, AF_INET6, SOCK_DGRAM, 0), EPERM); }),
            0);
  EXPECT_EQ(under_allowlist(false, [] {
              int pair[2];
              return refused_with(syscall(SYS_socketpair, AF_PACKET, SOCK_RAW, 0, pair), EPERM);
            }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_ioctl, 0, TIOCSTI, "x"), EPERM); }), 0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_fcntl, 0, F_SETOWN, getppid()), EPERM); }),
            0);
  // pidfd_open of this process only; prctl for a subreaper only.
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_pidfd_open, getppid(), 0), EPERM); }), 0);
  EXPECT_EQ(under_allowlist(false, [] {
              long fd = syscall(SYS_pidfd_open, getpid(), 0);
              return fd >= 0 ? 0 : 1;
            }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0), EPERM); }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return syscall(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : 1; }), 0);
}
