// strace-format rendering of guest system calls (flatux run --strace).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux::strace {

// "read", "openat", ...; nullptr for a number Linux x86_64 does not define.
const char* syscall_name(long nr);
// "ENOENT", ...; nullptr if unknown.
const char* errno_name(long err);
// strerror-style text: "No such file or directory"; nullptr if unknown.
const char* errno_text(long err);

// Renders one line, newline included, into buf:
//   [pid 7] openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 3
//   [pid 7] openat(AT_FDCWD, "/nope", O_RDONLY) = -1 ENOENT (No such file or directory)
//   [pid 7] exit_group(0) = ?                        (returned == false)
// Guest memory (paths, buffers, structs) is read with the fault-tolerant
// copy routines; an unreadable pointer prints as its hex address.
// Returns the number of bytes written (truncated to cap, always newline-ended).
size_t format_call(char* buf, size_t cap, int pid, long nr, const uint64_t args[6],
                   long ret, bool returned);

}  // namespace flatux::strace
