// Another process's memory, as process_vm_readv/writev and /proc/PID/mem
// reach it: the target named by pid and by what tells it from a later
// process of that pid, found again under tasks_lock for each piece moved.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

struct Kernel;
struct Process;

struct ProcessRef {
  int pid = 0;
  const Process* proc = nullptr;
  uint64_t start_ns = 0;
};

// The live process `pid` with memory of its own: 0, or -ESRCH (tasks_lock held).
long process_ref_locked(Kernel& k, int pid, ProcessRef* out);
// Moves up to n bytes between buf and the target's memory at `remote`:
// what was moved (less where the target's memory ends), or -ESRCH (gone),
// -EFAULT (none of it is the target's), -EPERM (a write into another host
// process's private memory, which the host boundary gives no way to make).
long process_mem_move(Kernel& k, const ProcessRef& target, uintptr_t remote, char* buf, size_t n, bool write);

}  // namespace flatux
