// seccomp for guests: strict mode and classic BPF filters, as Linux's.
//
// A task's filters form a chain from its newest filter back to the first
// (each holds a reference to the one before it), shared by the threads
// and children that inherited it: clone and fork pass it on, execve keeps
// it. Every guest syscall of a task with a filter runs the whole chain in
// syscall_entry, trapped or from a rewritten site alike; the verdict with
// the highest precedence wins. A task without one pays one load.
//
// What flatux leaves out: user notification (SECCOMP_RET_USER_NOTIF and
// SECCOMP_FILTER_FLAG_NEW_LISTENER, as a kernel before 5.0: the action is
// reported unavailable, and a filter returning it gets ENOSYS as with no
// listener) and tracing (no ptrace: SECCOMP_RET_TRACE gets ENOSYS, as
// Linux with no tracer attached). SECCOMP_RET_LOG allows without a log.
#pragma once
#include <atomic>
#include <cstdint>
#include <linux/filter.h>

#include "kernel/syscall.h"

namespace flatux {

struct Task;
class Heap;

struct SeccompFilter {
  std::atomic<int> refs{1};
  SeccompFilter* prev = nullptr;
  Heap* heap = nullptr;
  uint32_t len = 0;
  bool log = false;        // SECCOMP_FILTER_FLAG_LOG
  sock_filter insns[1];    // allocated to len
};

// Runs the task's filters (or strict mode's list) on a syscall about to be
// served. True when the call goes ahead; false when it does not, with
// *ret the value RAX gets (an errno, or for SECCOMP_RET_TRAP the number
// itself, with SIGSYS forced). Kill actions do not return.
// (Only for a task whose Task::seccomp_mode is set.)
bool seccomp_permits(Task& t, uint64_t nr, SyscallArgs a, long* ret);

// A new task (clone, fork) gets its creator's mode and filters
// (tasks_lock held).
void seccomp_inherit(Task& child, const Task& parent);
// The task is being freed.
void seccomp_release(Task& t);

// seccomp(2) and prctl's PR_SET_SECCOMP / PR_GET_SECCOMP.
long seccomp_set_mode(Task& t, unsigned op, unsigned flags, uint64_t uargs);
long seccomp_get_mode(Task& t);
// /proc/PID/status: "Seccomp:\tN\nSeccomp_filters:\tN\n".
int seccomp_filter_count(const Task& t);

}  // namespace flatux
