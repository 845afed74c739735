// Host processes: the host address spaces guest processes live in.
//
// Every guest process starts in the first host process (the launcher's),
// where vfork children and threads stay. fork() puts the child in a new
// host process made by a host clone without CLONE_VM, so its memory is a
// copy-on-write copy of its parent's. All host processes share the kernel
// heap (MAP_SHARED at a fixed address, so every kernel pointer means the
// same everywhere) and one host descriptor table (CLONE_FILES). What is
// per host process, and how each thing is handled, is listed in
// docs/ARCHITECTURE.md ("Host processes").
#pragma once
#include <atomic>
#include <cstdint>

#include "kernel/lib/sync.h"
#include "kernel/mm/resident.h"

namespace flatux {

struct Kernel;
struct Task;
struct Mm;
struct HostPool;

struct HostProc {
  Kernel* kernel = nullptr;
  int pid = 0;                    // host tgid
  std::atomic<int> ntasks{0};     // guest tasks whose host threads live here
  HostPool* maps = nullptr;       // its vm.max_map_count, as guests' Mms share it (kernel/sys/host_share.h)
  std::atomic<uint32_t> keeper_tid{0};
  void* keeper_stack = nullptr;   // kernel heap; the keeper thread's stack
  int pidfd = -1;                 // readable once the host process is gone
  std::atomic<bool> making{true}; // not yet cloned (pidfd is set before this clears)
  bool gone = false;              // (tasks_lock) its threads have all ended
  HostProc* next = nullptr;       // Kernel::hprocs
  // What the keeper starts once the inherited memory is dropped: `first`'s
  // thread (fork), or start_fn(start_arg) (execve into a fresh host
  // process); keep_mm names the guest memory to keep.
  Task* first = nullptr;
  Mm* keep_mm = nullptr;
  long (*start_fn)(void*) = nullptr;
  void* start_arg = nullptr;
  std::atomic<uint32_t> started{0};
  long start_result = 0;
  // A count of resident memory the keeper makes for another host process
  // (task_resident): one request at a time, under measure_lock.
  KMutex measure_lock;
  Mm* measure_mm = nullptr;
  Resident* measure_out = nullptr;
  long measure_result = 0;
  std::atomic<uint32_t> measure_asked{0}, measure_done{0};
};

// The host pid of the process task t's thread runs in.
int task_host_pid(const Task& t);
// The resident part of mm, the memory of t's process (mm/resident.h):
// from the host's pagemap where the jail shows it, else counted with
// mincore in t's host process: here, by the foreign gate's server (the
// first host process), or by that process's keeper. 0 or -errno.
long task_resident(Task& t, Mm& mm, Resident* out);
// Is `pid` one of this kernel's host processes? (SCM_CREDENTIALS, peers)
bool is_kernel_host_pid(Kernel& k, int pid);

// A record for a host process fork_host_process() will make (tasks_lock
// held); nullptr when out of memory. It is not reaped while `making`: a
// fork that fails before fork_host_process() calls hostproc_abandon.
HostProc* hostproc_new_locked(Kernel& k);
void hostproc_abandon(HostProc* hp);
// Makes the host process for hp, a copy of the calling task's, in which
// the keeper drops what is not hp.keep_mm's and starts what hp names. For
// fork the caller holds its own Mm's lock, so the copy's region list
// matches the memory the host copies. Returns once that start is done: 0
// or -errno (then the host process ends by itself).
long fork_host_process(Task& caller, HostProc& hp);
// A task's host thread is about to end: the last one out of a forked host
// process lets its keeper end the process.
void hostproc_task_left(Kernel& k, HostProc* hp);
// Reaping (tasks_lock held): first mark the host processes that are gone
// (every dead task that lived there can then be freed), then free them.
void hostprocs_mark_gone_locked(Kernel& k);
void hostprocs_free_gone_locked(Kernel& k);
// A kernel stack whose thread is still ending (a task that moved to
// another host process): freed once the host has cleared the returned
// word (point the thread's clear-tid address at it) or hp is gone. Starts
// at `tid`; 0 frees it at the next reap. nullptr when out of memory (the
// stack is then kept).
std::atomic<uint32_t>* retire_kstack_locked(Kernel& k, void* kstack, HostProc* hp, uint32_t tid);

// Ends every host process but the first (power-off, the launcher exiting).
void hostprocs_kill_all(Kernel& k);

}  // namespace flatux
