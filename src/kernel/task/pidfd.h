// pidfds (pidfd.cpp): the hooks the process lifecycle calls.
#pragma once
#include "kernel/task/task.h"

namespace flatux {

struct PidFd;

// The process has become a zombie: its pidfds read as ready (tasks_lock held).
void pidfd_process_exited(Process& p);
// The process is being reaped: its pidfds name no one from now on (tasks_lock held).
void pidfd_process_released(Process& p);
// The pid a pidfd was opened on, or 0 when `f` is not a pidfd.
int pidfd_pid(File& f);

}  // namespace flatux
