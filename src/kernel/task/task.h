// Tasks (host threads running guest code) and processes.
#pragma once
#include <atomic>
#include <cstdint>
#include <ucontext.h>

#include "kernel/heap.h"
#include "kernel/mm/regions.h"
#include "kernel/vfs/file.h"

namespace flatux {

struct Kernel;
struct Process;

constexpr int kPathMax = 4096;
constexpr int kNSig = 64;

struct GuestSigaction {
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};

struct Mm {
  explicit Mm(Heap* h) : regions(h) {}
  KMutex lock;
  RegionList regions;
  uintptr_t brk_start = 0, brk_cur = 0, brk_mapped = 0, brk_limit = 0;
};

struct FsContext {
  char cwd[kPathMax] = "/";
  uint32_t umask = 022;
};

struct Creds {
  uint32_t uid = 0, euid = 0, suid = 0, fsuid = 0;
  uint32_t gid = 0, egid = 0, sgid = 0, fsgid = 0;
};

struct Process {
  Kernel* kernel;
  int pid, ppid, pgid, sid;
  Mm* mm;
  FdTable* files;
  FsContext* fs;
  GuestSigaction sigactions[kNSig]{};
  Creds creds;
  char exe[kPathMax] = "";
  char comm[16] = "";
  uint64_t rlimits[16][2]{};
  std::atomic<int> nthreads{0};
};

struct Task {
  Kernel* kernel;
  Process* proc;
  int tid;
  void* kstack;               // base of the kernel stack (see host/kstack.h)
  ucontext_t* regs = nullptr; // the guest's registers during a trap
  uint64_t guest_fs = 0;
  uint64_t clear_child_tid = 0;
  uint64_t robust_list = 0, robust_len = 0;
  uint64_t sigmask = 0;       // the guest's (virtual) blocked set
  uint64_t sigpending = 0;    // raised while blocked, acted on when unblocked
  uint64_t altstack_sp = 0, altstack_size = 0;
  int altstack_flags = 2;     // SS_DISABLE
  std::atomic<uint32_t> host_tid{0};  // cleared by the host when the thread dies
  greg_t entry_regs[NGREG]{};         // registers the thread starts guest code with
};

}  // namespace flatux
