// Raw host system calls. Kernel code never calls libc wrappers: they set
// errno, which lives in host TLS, and while the kernel runs FS holds the
// guest's TLS. Every call returns the host kernel's result: >= 0, or -errno.
#pragma once
#include <cstdint>

namespace flatux::host {

inline long syscall6(long nr, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0,
                     long a5 = 0, long a6 = 0) {
  long ret;
  register long r10 asm("r10") = a4;
  register long r8 asm("r8") = a5;
  register long r9 asm("r9") = a6;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
}

template <typename... Args>
inline long sys(long nr, Args... args) {
  return syscall6(nr, (long)args...);
}

}  // namespace flatux::host
