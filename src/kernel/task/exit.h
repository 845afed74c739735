// Ending threads and processes, stopping and continuing.
#pragma once
#include "kernel/task/task.h"

namespace flatux {

// Ends the calling task's thread; the last thread out ends the process
// with its group exit status (or `status` when it is the only thread).
[[noreturn]] void exit_thread(Task& t);
// exit(2): status as a wait status.
[[noreturn]] void do_exit(Task& t, int wait_status);
// exit_group(2) or a fatal signal: every thread of the process ends.
[[noreturn]] void do_group_exit(Task& t, int wait_status);

// A stop signal's default action: the whole process stops.
void do_group_stop(Task& t, int sig);
// Parks a thread of a stopped process until SIGCONT or SIGKILL.
void do_stop_wait(Task& t);
// Parks a thread of a frozen process (cgroup.freeze) until it is thawed;
// true when it leaves because a SIGKILL is pending (to be delivered).
bool do_freeze_wait(Task& t);
// SIGCONT resumed process p (siglock held): tell the parent.
void continue_process(Process& p);

// Frees zombies' and dead tasks' memory once their host threads are gone.
void reap_dead_tasks(Kernel& k);
// Wakes the parent sleeping in vfork() for t: t exec'd or is exiting
// (tasks_lock held).
void release_vfork_waiter(Task& t);
// Ends t's vfork() wait, if any, because t is being killed.
void interrupt_vfork_wait(Task& t);
// t left its vfork() wait early: its child must not wake it any more
// (tasks_lock held).
void forget_vfork_child_locked(Task& t);
// Drops one reference to a descriptor table or an FsContext (freed with
// the last); null is nothing.
void drop_files(FdTable* f, Heap* h);
void drop_fs(FsContext* fs, Heap* h);
// Drops the process's mm, files and fs (its last thread has gone).
void discard_process_resources(Process& p);
// Removes a reaped zombie from its parent and frees it (tasks_lock held).
void release_zombie(Process& p);

}  // namespace flatux
