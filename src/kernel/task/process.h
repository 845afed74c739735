// Creating the first process and ending processes.
#pragma once
#include "kernel/kernel.h"

namespace flatux {

// Creates process + task structures (no host thread yet).
Task* task_create(Kernel& k, Process* proc);
Process* process_create(Kernel& k, int ppid);

// Loads `path` into a new first process and starts its thread.
// On failure returns -errno and, for ENOEXEC, sets *why.
long spawn_init(Kernel& k, const char* path, const char* const* argv, const char* const* envp,
                const char** why);

// Ends the calling task's whole process with a wait status; never returns.
[[noreturn]] void process_exit(Task& t, int wait_status);

}  // namespace flatux
