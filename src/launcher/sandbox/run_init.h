// The run's own pid namespace (run_init.cpp says why and how).
#pragma once
#include <string>

namespace flatux::launcher {

// Called once the process has unshared CLONE_NEWPID (its next child is
// the namespace's init), while it has one thread. Forks the namespace's
// init, which forks the process that goes on to be the kernel: only that
// one returns (true). The launcher's own process stays outside, relays the
// host's signals and ends as the kernel's process ended; it never returns.
// False (with *why) when nothing was forked.
bool become_run_process(std::string* why);

}  // namespace flatux::launcher
