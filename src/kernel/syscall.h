// The syscall table and its dispatcher.
#pragma once
#include <cstdint>

namespace flatux {

struct Task;

using SyscallArgs = const uint64_t (&)[6];
using SyscallFn = long (*)(Task&, SyscallArgs);

struct SyscallEntry {
  SyscallFn fn;
};

constexpr int kMaxSyscall = 512;

// Serves one trapped guest system call; returns the value for RAX.
long syscall_entry(Task& t, uint64_t nr, SyscallArgs a);

// Table lookup: nullptr for numbers flatux does not implement.
SyscallFn syscall_lookup(uint64_t nr);

// Writes the --strace line for a call that will not return (exit).
void strace_noreturn(Task& t, uint64_t nr, SyscallArgs a);
// Writes the --strace line for a call that returns elsewhere (a successful
// execve, while its arguments are still readable).
void strace_result(Task& t, uint64_t nr, SyscallArgs a, long ret);

}  // namespace flatux
