// rseq registrations of guest tasks with the host kernel (sys_rseq.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernel/task/task.h"

namespace flatux {

// Unregisters t's rseq area from its host thread (execve).
void rseq_drop(Task& t);

// The calling task is about to unmap or write-protect [start, start+len):
// if its rseq area lies there, the registration goes and the guest gets
// SIGSEGV (Linux's outcome), before the host would find the area gone.
void rseq_range_going(Task& t, uintptr_t start, size_t len);

}  // namespace flatux
