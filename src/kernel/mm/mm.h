// Guest memory management in the no-MMU model: the host kernel chooses
// addresses in the one shared address space, and each process records the
// ranges it owns (RegionList) so it can only ever change its own memory.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernel/task/task.h"

struct sysinfo;

namespace flatux {

constexpr uintptr_t kPageSize = 4096;
inline uintptr_t page_down(uintptr_t v) { return v & ~(kPageSize - 1); }
inline uintptr_t page_up(uintptr_t v) { return (v + kPageSize - 1) & ~(kPageSize - 1); }

// Size of the address range reserved (not committed) for each process's brk.
constexpr size_t kBrkReserve = 1ull << 30;

// Maps memory for the process; `hint` is only a preference unless `fixed`
// (then the range must be the process's own or free). Returns the address
// or -errno.
// `attrs` says what /proc/PID/maps shows of it (shared, its file).
long mm_map(Mm& mm, uintptr_t hint, size_t len, int prot, int host_flags, int host_fd,
            uint64_t off, RegionKind kind, bool fixed, const RegionAttrs& attrs = {});
long mm_unmap(Mm& mm, uintptr_t addr, size_t len);
// vm.max_map_count: would a change adding `extra` regions (splits) go
// over it? (mm.lock held)
bool mm_too_many_maps(const Mm& mm, int extra);
// Makes the Mm draw its mappings from `pool` (its host process's, or none),
// moving its charge there.
void mm_set_map_pool(Mm& mm, HostPool* pool);
// How many regions splitting at start and end would add.
int mm_splits_for(const Mm& mm, uintptr_t start, uintptr_t end);
// Reserves the brk range, preferably right after `after`.
long mm_setup_brk(Mm& mm, uintptr_t after);
// Main stack: reserved size, and the guard that always stays inaccessible.
constexpr size_t kStackReserve = 64ull << 20;
constexpr size_t kStackGuard = 64ull << 10;
// Reserves the main stack with `limit` bytes (RLIMIT_STACK) usable.
long mm_setup_stack(Mm& mm, uint64_t limit);
// Applies a new RLIMIT_STACK: the usable part grows or shrinks (never
// below `sp`, the part in use).
void mm_set_stack_limit(Mm& mm, uint64_t limit, uintptr_t sp);
// PR_SET_VMA_ANON_NAME: names the anonymous memory in [addr, addr + len)
// "[anon:NAME]" (nullptr: unnamed). -ENOMEM where part of it is not
// mapped, -EBADF where part is not anonymous (a file's, shared memory).
long mm_name_anon(Mm& mm, uintptr_t addr, size_t len, const char* name);
// Releases every region of the process back to the host.
void mm_release(Mm& mm);
// fork(): a new Mm owning the same ranges as `parent` (its lock held),
// charged for its private writable memory; nullptr when that does not fit
// under mem= or memory is short. The host process the child runs in holds
// the copy of those ranges (kernel/task/hostproc.h).
Mm* mm_fork(Heap* heap, Mm& parent);
// Frees an Mm whose ranges are not mapped in the calling host process (a
// fork that did not happen): nothing is unmapped.
void mm_forget(Heap* heap, Mm* mm);

// mem= accounting, like Linux's strict overcommit (Committed_AS): an Mm is
// charged for its writable memory and its readable anonymous memory, what
// the host may have to back; read-only file mappings are shared page cache
// and free. Stacks count with their whole usable size (RLIMIT_STACK), as
// there is no MMU to grow them on demand.
//
// Would `extra` more bytes fit under the limit? (mm.lock held)
bool mm_charge_fits(Mm& mm, uint64_t extra);
// Recomputes the Mm's charge after its regions changed (mm.lock held).
void mm_recharge(Mm& mm);
// RLIMIT_AS and RLIMIT_DATA, as Linux's may_expand_vm: would `more` bytes
// of new mappings, `more_data` of them private and writable, stay within
// the limits? mm_set_rlimits takes the owner's limits. (mm.lock held)
bool mm_may_expand(const Mm& mm, uint64_t more, uint64_t more_data);
void mm_set_rlimits(Mm& mm, const uint64_t (*rlimits)[2]);
inline bool mm_is_data(int prot, bool shared, RegionKind kind) {
  return (prot & 2 /*PROT_WRITE*/) && !shared && kind != kRegionStack;
}
// Kernel-held memory outside any Mm (System V shared memory segments):
// charged when it fits under mem= (false: ENOMEM), given back later.
bool mem_charge(MemAccount& acct, uint64_t bytes);
void mem_uncharge(MemAccount& acct, uint64_t bytes);
// With a mem= limit, sysinfo's RAM figures describe that machine.
void mem_limit_sysinfo(const MemAccount& acct, struct sysinfo* si);
// Is a mapping with this protection and kind charged?
inline bool mm_chargeable(int prot, RegionKind kind) {
  if (kind == kRegionShm) return false;  // the segment is charged, once
  return (prot & 2 /*PROT_WRITE*/) || (prot != 0 && kind == kRegionAnon);
}

}  // namespace flatux
