// Cgroups of the run's own: its tasks and its memory (run_cgroup.cpp says why).
#pragma once
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace flatux::launcher {

struct RunCgroup {
  struct Dir {
    int parent = -1;   // O_PATH descriptor of the launcher's cgroup there (the
                       // run's own mounts may hide the path); -1: none
    std::string name;  // the run's cgroup in it
  };
  Dir dirs[2];         // one per hierarchy (cgroup v1 has one per controller)
  int ndirs = 0;
  bool pids = false;   // pids.max set
  bool memory = false; // a memory limit set
};

// Makes children of this process's cgroups (cgroup v2 where its
// controllers are on, else v1's pids and memory hierarchies) with
// pids.max = `max_tasks` and, when `max_memory` is not 0, that memory
// limit. Needs the right to make cgroups there (root, or a delegated
// subtree). True when at least one limit is in place.
// With `engine_path` (a container engine's cgroupsPath, absolute in the
// hierarchy: "/libpod_parent/libpod-ID"), the cgroup is made there, its
// parents as needed, instead of below the launcher's own.
bool run_cgroup_create(long max_tasks, uint64_t max_memory, RunCgroup* cg, std::string* why,
                       const std::string& engine_path = "");

// Moves process `pid` into them.
bool run_cgroup_enter(const RunCgroup& cg, pid_t pid, std::string* why);

// Removes them once nothing is in them, and closes the descriptors.
void run_cgroup_remove(RunCgroup& cg);

// In a process that must not keep the cgroups within reach: closes the
// descriptors only.
void run_cgroup_forget(RunCgroup& cg);

}  // namespace flatux::launcher
