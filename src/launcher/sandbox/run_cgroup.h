// Cgroups of the run's own: its tasks and its memory (run_cgroup.cpp says why).
#pragma once
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace flatux::launcher {

// What a container engine asks of the run's cgroup besides the bounds the
// sandbox sets (linux.resources.cpu and memory's extras): written where
// the host has the controller; -1 / "" for not asked.
struct CgroupSettings {
  int64_t cpu_shares = -1, cpu_quota = -1, cpu_period = -1, rt_runtime = -1, rt_period = -1;
  std::string cpus, mems;
  int64_t memory_reservation = -1, swappiness = -1;
  bool any() const {
    return cpu_shares >= 0 || cpu_quota != -1 || cpu_period >= 0 || rt_runtime >= 0 || rt_period >= 0 ||
           !cpus.empty() || !mems.empty() || memory_reservation >= 0 || swappiness >= 0;
  }
};

struct RunCgroup {
  struct Dir {
    int parent = -1;   // O_PATH descriptor of the launcher's cgroup there (the
                       // run's own mounts may hide the path); -1: none
    std::string name;  // the run's cgroup in it
  };
  Dir dirs[6];         // one per hierarchy (cgroup v1 has one per controller)
  int ndirs = 0;
  bool pids = false;   // pids.max set
  bool memory = false; // a memory limit set
  bool engine = false; // at a container engine's cgroupsPath
};

// Makes children of this process's cgroups (cgroup v2 where its
// controllers are on, else v1's pids and memory hierarchies) with
// pids.max = `max_tasks` and, when `max_memory` is not 0, that memory
// limit. Needs the right to make cgroups there (root, or a delegated
// subtree). True when at least one limit is in place.
// With `engine_path` (a container engine's cgroupsPath, absolute in the
// hierarchy: "/libpod_parent/libpod-ID"), the cgroup is made there, its
// parents as needed, instead of below the launcher's own.
// There, `settings` go in too, and the run gets a cgroup in v1's cpu,
// cpuacct and cpuset hierarchies as well (the engine reads its usage).
bool run_cgroup_create(long max_tasks, uint64_t max_memory, RunCgroup* cg, std::string* why,
                       const std::string& engine_path = "", const CgroupSettings& settings = {});

// Moves process `pid` into them.
bool run_cgroup_enter(const RunCgroup& cg, pid_t pid, std::string* why);

// Moves process `pid` back to the cgroups they were made in (their
// parents), so they can be removed.
void run_cgroup_leave(const RunCgroup& cg, pid_t pid);

// Removes them once nothing is in them, and closes the descriptors.
void run_cgroup_remove(RunCgroup& cg);

// In a process that must not keep the cgroups within reach: closes the
// descriptors only.
void run_cgroup_forget(RunCgroup& cg);

}  // namespace flatux::launcher
