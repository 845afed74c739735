// A pids cgroup of the run's own (run_cgroup.cpp says why).
#pragma once
#include <string>
#include <sys/types.h>

namespace flatux::launcher {

struct RunCgroup {
  int parent = -1;   // O_PATH descriptor of the launcher's pids cgroup (the
                     // run's own mounts may hide the path); -1: none
  std::string name;  // the run's cgroup in it
};

// Makes a child of this process's pids cgroup (cgroup v2 where its pids
// controller is on, else v1's pids hierarchy) with pids.max = `max`.
// Needs the right to make cgroups there (root, or a delegated subtree).
bool run_cgroup_create(long max, RunCgroup* cg, std::string* why);

// Moves process `pid` into it.
bool run_cgroup_enter(const RunCgroup& cg, pid_t pid, std::string* why);

// Removes it once nothing is in it, and closes the descriptor.
void run_cgroup_remove(RunCgroup& cg);

// In a process that must not keep the cgroup within reach: closes the
// descriptor only.
void run_cgroup_forget(RunCgroup& cg);

}  // namespace flatux::launcher
