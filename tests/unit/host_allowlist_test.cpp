#include "host/seccomp.h"
#include "host/entry.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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
int under_allowlist(bool net_none, int (*probe)(), bool host_owners = false) {
  pid_t pid = fork();
  if (pid == 0) {
    const TextRange kernel[] = {around((void*)&under_allowlist), around((void*)&syscall)};
    HostAllowlistOptions o{.net_none = net_none,
                           .own_pid = (uint32_t)getpid(),
                           .host_owners = host_owners};
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
  // A host process for a forked guest is a shape the kernel uses; the
  // same without its pidfd, a plain fork or a vfork is not.
  EXPECT_EQ(under_allowlist(false, [] {
              int pidfd = -1;
              long pid = syscall(SYS_clone, kCloneHostProcess, 0, &pidfd, 0, 0);
              if (pid == 0) _exit(0);
              int st;
              return pid > 0 && pidfd >= 0 && waitpid((pid_t)pid, &st, 0) == pid ? 0 : 1;
            }),
            0);
  EXPECT_EQ(under_allowlist(false, [] {
              if (refused_with(syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0), EPERM)) return 1;
              if (refused_with(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0), EPERM)) return 2;
              if (refused_with(syscall(SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0), EPERM)) return 3;
              return refused_with(syscall(SYS_clone, kCloneHostProcess | CLONE_PARENT, 0, 0, 0, 0), EPERM) ? 4 : 0;
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
  // One thread's priority, never every process of the user.
  EXPECT_EQ(under_allowlist(false, [] { return syscall(SYS_getpriority, PRIO_PROCESS, 0) >= 0 ? 0 : 1; }), 0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_setpriority, PRIO_USER, 0, 19), EPERM); }), 0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_getpriority, PRIO_PGRP, 0), EPERM); }), 0);
  // This process's own memory barriers; not the system-wide one.
  EXPECT_EQ(under_allowlist(false, [] {
              return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
                             syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0
                         ? 0
                         : 1;
            }),
            0);
  EXPECT_EQ(under_allowlist(false, [] { return refused_with(syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0), EPERM); }),
            0);
}

// A folder of the test's own for files the probes make (made before the
// filter: mkdtemp's mode is not the point).
const char* scratch() {
  static char dir[] = "/tmp/flatux-allowlist-XXXXXX";
  static bool made = mkdtemp(dir) != nullptr;
  return made ? dir : "/tmp";
}

TEST(HostAllowlist, NoSetIdModeNoDevice) {
  scratch();
  // Making a file: neither set-id bit, whatever the call.
  EXPECT_EQ(under_allowlist(false, [] {
              int d = open(scratch(), O_PATH | O_DIRECTORY | O_CLOEXEC);
              if (refused_with(syscall(SYS_openat, d, "suid", O_CREAT | O_WRONLY | O_CLOEXEC, 04755), EPERM)) return 1;
              if (refused_with(syscall(SYS_openat, d, "sgid", O_CREAT | O_WRONLY | O_CLOEXEC, 02755), EPERM)) return 2;
              if (refused_with(syscall(SYS_mknodat, d, "dev", S_IFCHR | 0666, makedev(1, 3)), EPERM)) return 3;
              if (refused_with(syscall(SYS_mknodat, d, "sfifo", S_IFIFO | 04644, 0), EPERM)) return 4;
              if (refused_with(syscall(SYS_mkdirat, d, "sdir", 04755), EPERM)) return 5;
              if (refused_with(syscall(SYS_mkdirat, d, "gdir", 02775), EPERM)) return 12;  // mkdir ignores it anyway
              // What the kernel makes: plain files, FIFOs, folders.
              long fd = syscall(SYS_openat, d, "plain", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
              if (fd < 0 || syscall(SYS_mknodat, d, "fifo", S_IFIFO | 0600, 0) != 0) return 6;
              if (syscall(SYS_mkdirat, d, "gdir", 01775) != 0) return 7;
              // chmod: no set-id bit (S_ISGID only through the sealed ".":
              // OpenHowTableTest.SetGroupIdOnlyThroughTheSealedDot).
              if (refused_with(syscall(SYS_fchmod, fd, 04755), EPERM)) return 8;
              if (refused_with(syscall(SYS_fchmodat, d, "plain", 04755), EPERM)) return 9;
              if (refused_with(syscall(452 /* fchmodat2 */, d, "plain", 04755, 0), EPERM)) return 10;
              if (refused_with(syscall(SYS_fchmodat, d, "gdir", 02755), EPERM)) return 13;
              if (syscall(SYS_fchmod, fd, 0600) != 0 || syscall(SYS_fchmodat, d, "gdir", 0755) != 0) return 11;
              return 0;
            }),
            0);
  // --hostfs-owners=host: they pass through.
  EXPECT_EQ(under_allowlist(
                false,
                [] {
                  int d = open(scratch(), O_PATH | O_DIRECTORY | O_CLOEXEC);
                  long fd = syscall(SYS_openat, d, "host-suid", O_CREAT | O_WRONLY | O_CLOEXEC, 04755);
                  return fd >= 0 && syscall(SYS_fchmod, fd, 04700) == 0 ? 0 : 1;
                },
                true),
            0);
  std::string rm = std::string("rm -rf ") + scratch();
  EXPECT_EQ(system(rm.c_str()), 0);
}
