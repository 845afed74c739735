// Guest pids that no other flatux instance on the host hands out at the
// same time (pid_reserve.cpp).
#pragma once
#include "kernel/kernel.h"

namespace flatux {

struct PidReservations;

// For `flatux run`; a booted system keeps its own numbering (init is 1).
PidReservations* pid_reservations_create(Heap* heap);

// Whether this instance may hand out `pid`: its block of numbers is ours,
// or could be reserved now (tasks_lock held). False when another instance
// holds the block.
bool pid_reserve_locked(Kernel& k, int pid);

// The first pid of the block after `pid`'s (where the search goes on).
int pid_next_block(int pid);

}  // namespace flatux
