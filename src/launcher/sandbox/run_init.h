// The run's own pid namespace (run_init.cpp says why and how).
#pragma once
#include <string>

#include "launcher/sandbox/run_cgroup.h"

namespace flatux::launcher {

// Called once the process has unshared CLONE_NEWPID (its next child is
// the namespace's init), while it has one thread. Forks the namespace's
// init, which forks the process that goes on to be the kernel: only that
// one returns (true). The launcher's own process stays outside, relays the
// host's signals and ends as the kernel's process ended; it never returns.
// With `cg`, the run's init is moved into that cgroup before anything
// runs below it (*in_cgroup says whether the host allowed it), and the
// launcher removes the cgroup once the run has ended.
// False (with *why) when nothing was forked.
bool become_run_process(RunCgroup* cg, bool* in_cgroup, std::string* why);

// Ends this process as a process with wait status `st` ended: the same
// exit status, or killed by the same signal (without a core file of its
// own). What a launcher does that stands for a guest process on the host.
[[noreturn]] void end_as(int st);

}  // namespace flatux::launcher
