// Creating processes and tasks, and finding them.
#pragma once
#include "kernel/kernel.h"

namespace flatux {

// A new process `pid` (from alloc_pid_locked), child of `parent` (nullptr
// for the first one); its mm/files/fs/sighand are left for the caller to
// fill. The caller holds tasks_lock.
Process* process_create_locked(Kernel& k, Process* parent, int pid);
// Undoes task_create_locked for a task whose thread never started (and its
// process, if it was the only task). The caller holds tasks_lock.
void discard_unstarted_task_locked(Task& t);
// A new task in p with its kernel stack (tid == pid for the first one),
// whose thread will run in host process hp; added to the kernel's table.
// The caller holds tasks_lock.
Task* task_create_locked(Kernel& k, Process& p, int tid, HostProc* hp);
int alloc_pid_locked(Kernel& k);

Process* find_process_locked(Kernel& k, int pid);

// A copy of a process's root, cwd and umask (clone without CLONE_FS,
// unshare(CLONE_FS)); nullptr when out of memory.
FsContext* copy_fs_context(Kernel& k, FsContext& from);

// Whether t is its process's first live thread: walking k.tasks, this
// visits every process once, also one whose leader has exited while other
// threads run on (its tid no longer names a live task). tasks_lock held.
inline bool first_thread_of_process(const Task& t) { return t.proc->threads == &t; }
Task* find_task_locked(Kernel& k, int tid);

// A signal the host sent to flatux itself (^C on the terminal, kill from
// the host): it goes to the first process's process group; in a container
// (KernelConfig::container_init) to the first process alone.
void forward_host_signal(Kernel& k, int sig);

// Who the first process is when the launcher says so (an OCI bundle's
// process.user, capabilities, rlimits...); by default it is root with every
// capability and the kernel's default limits, as Linux's init.
struct InitIdentity {
  uint32_t uid = 0, gid = 0;
  int ngroups = 0;
  uint32_t groups[Creds::kMaxGroups]{};
  uint32_t umask = 022;
  bool no_new_privs = false;
  int oom_score_adj = 0;
  bool set_caps = false;  // the five sets below replace root's
  uint64_t cap_bounding = kAllCaps, cap_effective = kAllCaps, cap_permitted = kAllCaps;
  uint64_t cap_inheritable = 0, cap_ambient = 0;
  struct Rlimit {
    int resource;
    uint64_t soft, hard;
  };
  int nrlimits = 0;
  Rlimit rlimits[kNumRlimits]{};
};

// Loads `path` into a new first process and starts its thread. Its
// descriptors 0-2 are `console` when given, else the host's stdio streams;
// its credentials and limits are `id`'s when given (applied before the
// program is looked up, so its permission checks are that user's).
// On failure nothing is left behind; returns -errno and, for ENOEXEC, sets *why.
long spawn_init(Kernel& k, const char* path, const char* const* argv, const char* const* envp,
                const char** why, File* console = nullptr, const InitIdentity* id = nullptr,
                bool console_ctty = false);

// A process the launcher starts: the first one (spawn_init's), or one
// entered from outside while the guests run (an OCI runtime's exec),
// which no guest is the parent of and whose end entered_take_exit tells.
struct SpawnSpec {
  const char* path = nullptr;
  const char* const* argv = nullptr;
  const char* const* envp = nullptr;
  File* console = nullptr;              // 0-2 are this file
  bool console_ctty = false;            // and the console is its controlling terminal
  const int* stdio_host_fds = nullptr;  // else 0-2 over these host descriptors (taken over; -1: closed)
  const InitIdentity* identity = nullptr;
  const char* cwd = nullptr;            // else the kernel's start folder
  bool entered = false;
  // Run as the new process, before its program is looked up: a container's
  // setup (its masked paths, sysctls). A negative return ends the spawn.
  long (*setup)(Task& t, void* arg) = nullptr;
  void* setup_arg = nullptr;
};
// Returns 0 and its pid in *pid, or -errno (EAGAIN: too many entered
// processes at once) and, for ENOEXEC, *why.
long spawn_process(Kernel& k, const SpawnSpec& s, int* pid, const char** why);

// An entered process that has ended since the last call: true with its
// pid and wait status.
bool entered_take_exit(Kernel& k, int* pid, int* wait_status);

}  // namespace flatux
