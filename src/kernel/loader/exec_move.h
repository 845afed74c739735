// execve of an image that does not fit in the caller's host process (an
// ET_EXEC whose link address range is taken there: gcc's cc1 beside gcc,
// both at 0x400000) loads it into a fresh host process instead, and the
// task moves there.
//
// The caller's thread makes the host process (kernel/task/hostproc.h: a copy of
// its own, which drops every guest mapping) and a second thread for the
// task there, on a new kernel stack, which loads the image into the empty
// Mm while the caller waits. A failed load leaves the caller as it was. On
// success the caller does the rest of execve in the old host process
// (other threads, the old image, the vfork parent), then hands the task
// over and its thread ends; the new thread enters the image.
#pragma once
#include "kernel/loader/exec.h"

namespace flatux {

struct ExecMove;

// Loads `path` into `mm` (empty, owned by the caller) in a fresh host
// process. 0 with *out set, or -errno (res->why as exec_load sets it).
long exec_move_load(Task& t, Mm& mm, const char* path, const char* const* argv,
                    const char* const* envp, ExecResult* res, ExecMove** out);

// For a task that has not run yet (a process the launcher starts): it
// starts in the new host process with the registers in the ExecResult,
// which the new thread frees. Returns at once.
void exec_move_start(Task& t, ExecMove* m);

// After the rest of execve: the task continues in the new host process
// with the registers in the ExecResult, which the new thread frees.
[[noreturn]] void exec_move_commit(Task& t, ExecMove* m);

}  // namespace flatux
