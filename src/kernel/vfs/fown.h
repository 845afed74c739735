// fcntl's file owners: F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX,
// F_SETSIG, F_GETSIG, and the signal sent to a file's owner (Linux's
// send_sigio), which a lease break uses.
#pragma once
#include "kernel/task/task.h"

namespace flatux {

struct File;

// One of the six commands above on f (arg as fcntl(2) takes it).
long fcntl_owner(Task& t, File& f, int cmd, uint64_t arg);

// Makes the calling process f's owner (F_SETLEASE does).
void fown_set_caller(Task& t, File& f);

// Signals f's owner: its F_SETSIG signal with si_code `reason` (POLL_*),
// si_band `band` and si_fd `fd`, or SIGIO (SI_KERNEL) when none was set.
void send_sigio(Task& t, File& f, int fd, int reason, long band);

}  // namespace flatux
