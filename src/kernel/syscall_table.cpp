#include <array>
#include <sys/syscall.h>

#include "kernel/syscalls.h"

namespace flatux {
namespace {

constexpr std::array<SyscallFn, kMaxSyscall> build_table() {
  std::array<SyscallFn, kMaxSyscall> t{};
#define SYSCALL(nr, fn) t[nr] = fn;
#include "kernel/syscall_list.h"
#undef SYSCALL
  return t;
}

constexpr std::array<SyscallFn, kMaxSyscall> kTable = build_table();

}  // namespace

SyscallFn syscall_lookup(uint64_t nr) { return nr < kMaxSyscall ? kTable[nr] : nullptr; }

}  // namespace flatux
