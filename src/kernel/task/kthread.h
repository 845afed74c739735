// The kernel's own threads and identities, with no guest program behind
// them: a host thread on a kernel stack (the timer service, the foreign-
// code gate's server), and a task the kernel acts as when it does I/O on
// nobody's behalf (the loop driver's backing files).
#pragma once

namespace flatux {

struct Kernel;
struct Task;

// Starts a kernel thread in the calling host process, running fn(arg) on a
// kernel stack from the heap (stored in *stack). Its stack header names no
// task: a fault there is the kernel's (an oops), never a guest's.
long start_kernel_thread(Kernel& k, void (*fn)(void*), void* arg, void** stack);

// A task of its own process named `comm`: root's credentials, no files,
// no memory, no thread. The caller keeps it for the kernel's lifetime.
// nullptr when out of memory.
Task* make_kernel_task(Kernel& k, const char* comm);

}  // namespace flatux
