#include "host/seccomp.h"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/syscall.h>
#include <unistd.h>

using namespace flatux;

// A filter with an empty allow list turns the first syscall into SIGSYS;
// run in a death-test child so the test process keeps its own syscalls.
TEST(SeccompDeathTest, SyscallOutsideAllowedTextTraps) {
  EXPECT_EXIT(
      {
        install_syscall_filter(nullptr, 0);
        syscall(SYS_getpid);
      },
      ::testing::KilledBySignal(SIGSYS), "");
}

TextRange around(const void* code) {
  uintptr_t p = (uintptr_t)code;
  return {p - (64u << 20), p + (64u << 20)};
}

void filter_allowing_this_binary_and_libc_then_exit() {
  const TextRange allowed[] = {around((void*)&filter_allowing_this_binary_and_libc_then_exit),
                               around((void*)&getpid)};
  if (install_syscall_filter(allowed, 2) != 0) _exit(2);
  _exit(getpid() > 0 ? 7 : 3);
}

TEST(SeccompDeathTest, SyscallInsideAllowedTextPasses) {
  EXPECT_EXIT(filter_allowing_this_binary_and_libc_then_exit(), ::testing::ExitedWithCode(7), "");
}
