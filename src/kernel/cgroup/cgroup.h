// Control groups, version 2: one hierarchy of the kernel's own processes,
// shown by cgroupfs (mount -t cgroup2) and /proc/PID/cgroup.
//
// Every process is in exactly one cgroup (a fork's child in its parent's,
// the first process in the root); writing a pid to cgroup.procs moves it.
// cgroup.freeze parks its processes' threads; cpu.stat adds up their CPU
// time. Controllers so far: memory (cgroup/memcg.h: what the processes
// hold in memory; past memory.max the OOM killer) and pids (pids.max
// refuses a fork or clone past it with EAGAIN, as Linux's pids
// controller). The tree, memberships and counters are all under the
// kernel's tasks_lock, which fork and exit hold anyway.
#pragma once
#include <cstdint>
#include <string_view>

#include "kernel/cgroup/memcg.h"

namespace flatux {

struct Kernel;
struct Process;
class Heap;
class SynthText;

constexpr uint32_t kCgroupPids = 1;             // controller bits
constexpr uint32_t kCgroupMemory = 2;
constexpr uint32_t kCgroupAllControllers = kCgroupPids | kCgroupMemory;
constexpr int64_t kCgroupMax = INT64_MAX;       // "max"

struct Cgroup {
  char name[256];
  uint64_t id;                      // its inode number in cgroupfs
  Cgroup* parent = nullptr;
  Cgroup* children = nullptr;       // linked through `sibling`
  Cgroup* sibling = nullptr;
  uint32_t subtree_control = 0;     // controllers its children get
  int nprocs = 0;                   // live processes in it (not below)
  int64_t populated_below = 0;      // live processes in it and below
  int refs = 1;                     // the tree's, and each process's (zombies too)
  bool removed = false;             // rmdir'd: freed with its last reference
  int ndescendants = 0;
  int64_t max_descendants = kCgroupMax, max_depth = kCgroupMax;
  bool freeze = false;              // cgroup.freeze: it and everything below is frozen
  // cpu.stat: CPU time of processes that ended in it or below (the live
  // ones' is read from their threads).
  uint64_t cpu_gone_ns = 0, cpu_gone_user_ns = 0;
  // pids
  int64_t pids_current = 0;         // tasks in it and below
  int64_t pids_max = kCgroupMax;
  // The root of a container's kernel stands for the container's own cgroup
  // (as a cgroup namespace's root does natively): it shows and enforces
  // the limits of a cgroup that is not the root (cgroup_delegate_root).
  bool delegated_root = false;
  int64_t pids_events_max = 0;      // forks refused here
  MemCounter mem;                   // memory (cgroup/memcg.h)
};

struct CgroupTree {
  Cgroup root;
  uint64_t next_id = 2;
  int count = 1;                    // cgroups alive in the tree
  bool memcg_watching = false;      // the memory watch is on (cgroup/memcg.h)
};

CgroupTree* cgroup_tree_create(Heap* heap);

// An OCI container's limits on the root cgroup (0: none), which then
// shows memory.max, pids.max and the other files of a cgroup that is not
// the root; the kernel's mem= accounting reports memory_max as the total.
void cgroup_delegate_root(Kernel& k, int64_t memory_max, int64_t pids_max);

// Under tasks_lock: the membership hooks of fork and exit.
// A new process joins its parent's cgroup (the root without a parent).
void cgroup_process_created_locked(Kernel& k, Process& p, Process* parent);
// Its last thread exited: it leaves the counts (a zombie populates nothing).
void cgroup_process_exited_locked(Kernel& k, Process& p);
// Reaped: its reference goes.
void cgroup_process_released_locked(Kernel& k, Process& p);
// A task (thread) of p: -EAGAIN when a pids.max from p's cgroup up would
// be passed (counted in pids.events there); then the charge, and its undo.
long cgroup_can_add_task_locked(Process& p);
void cgroup_task_added_locked(Process& p);
void cgroup_task_removed_locked(Process& p);

// The cgroup with inode number `id` (an open cgroupfs file names it so: a
// rmdir cannot leave it a dangling pointer), or nullptr.
Cgroup* cgroup_by_id_locked(Kernel& k, uint64_t id);
// The cgroup at `path` (relative to the root, "" for it), or nullptr.
Cgroup* cgroup_find_locked(Kernel& k, std::string_view path);
// A child named `name` of `parent`: -EEXIST, -EAGAIN (max.descendants or
// max.depth), -ENOMEM, -EINVAL (a name cgroupfs keeps for its files).
long cgroup_mkdir_locked(Kernel& k, Cgroup& parent, std::string_view name);
// -EBUSY while it has children or live processes.
long cgroup_rmdir_locked(Kernel& k, Cgroup& cg);
// Moves process `pid` (0: the caller's) into cg: -ESRCH, -EBUSY (cg hands
// controllers on to children: no process may live in it, but in the root).
long cgroup_move_locked(Kernel& k, Process& caller, Cgroup& cg, int pid);
// "+pids -pids": -EINVAL for an unknown controller or one the cgroup does
// not have, -EBUSY for enabling in a non-root cgroup with processes or
// disabling one a child still hands on.
long cgroup_set_subtree_control_locked(Cgroup& cg, std::string_view spec);
// Controllers cg itself has (its parent's subtree_control; all for the root).
uint32_t cgroup_controllers(const Cgroup& cg);
// cgroup.freeze: every process in cg and below is frozen (its threads park
// in the freezer as soon as they enter the kernel or are kicked there) or
// thawed, unless an ancestor still freezes it.
void cgroup_set_freeze_locked(Kernel& k, Cgroup& cg, bool on);
// cgroup.events "frozen": cg is frozen and every thread in it and below is
// parked.
bool cgroup_frozen_locked(Kernel& k, const Cgroup& cg);
// cpu.stat: CPU time of every process in cg and below, live or ended
// (a process moved in brings all of its own).
void cgroup_cpu_ns_locked(Kernel& k, const Cgroup& cg, uint64_t* all, uint64_t* user);
// SIGKILL to every process in cg and below; the number sent.
int cgroup_kill_locked(Kernel& k, Cgroup& cg, Process& caller);
int cgroup_depth(const Cgroup& cg);
// Is c top or below it?
bool cgroup_contains(const Cgroup& top, const Cgroup* c);
// The cgroup after c in a walk of the tree from the root, depth first
// (nullptr at the end). Iterative: a guest may make the tree as deep as it
// likes, and a recursion that deep would run off the kernel stack.
Cgroup* cgroup_next_locked(Cgroup* c, Cgroup* top);

// "/a/b" for the cgroup, "/" for the root.
void cgroup_path(const Cgroup& cg, SynthText& out);
void cgroup_show_controllers(uint32_t bits, SynthText& out);
// /proc/PID/cgroup and /proc/cgroups.
void cgroup_proc_pid(Kernel& k, Process& p, SynthText& out);
void cgroup_proc_cgroups(Kernel& k, SynthText& out);

}  // namespace flatux
