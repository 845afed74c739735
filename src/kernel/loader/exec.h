// Loading a program image into a process: ELF (static-pie, with an
// interpreter, or ET_EXEC at its link address) and #! scripts.
#pragma once
#include <cstdint>
#include <sys/ucontext.h>

#include "kernel/task/task.h"

namespace flatux {

struct ExecResult {
  greg_t regs[NGREG];     // the registers the new image starts with
  char exe[kPathMax];     // canonical guest path of the executable (for /proc/PID/exe)
  char comm[16];
  const char* why;        // for ENOEXEC: what is wrong with the file
  Creds creds;            // the credentials the new image runs with
  bool secure = false;    // it runs with more privilege than its caller (AT_SECURE)
};

// ExecResult::why when an ET_EXEC image's link address range is taken in
// the caller's host process (execve then loads it in a fresh one).
extern const char kExecRangeBusy[];

// Loads `path` with argv/envp (NULL-terminated arrays of kernel strings)
// into `mm`, which must be empty. On failure returns -errno; mappings made
// so far stay in `mm` for the caller to release.
long exec_load(Task& t, Mm& mm, const char* path, const char* const* argv,
               const char* const* envp, ExecResult* out);

}  // namespace flatux
