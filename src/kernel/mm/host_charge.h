// Host memory that a host object holds for the guests, outside any
// mapping: a memfd's pages, a pipe's buffer. It is charged to mem= (the
// same account as mappings, tmpfs pages and System V segments) for as long
// as the host object lives, which is as long as any guest file opened on it
// (or, for a memfd, any mapping of it) does: every such holder takes a
// reference, and the last one gives the charge back.
//
// Charges are found again by the host object's identity (device, inode)
// when a guest gets a new file for the same object another way: reopened
// through /proc/PID/fd, or received over a Unix socket.
#pragma once
#include <atomic>
#include <cstdint>

#include "kernel/lib/sync.h"

namespace flatux {

class Heap;
struct MemAccount;

enum class ChargeKind : uint8_t { kMemfd, kPipe };

struct HostCharge {
  std::atomic<int> refs{1};
  ChargeKind kind;
  Heap* heap;
  MemAccount* acct;
  uint64_t dev = 0, ino = 0;  // the host object's identity
  // A memfd's own descriptor of it, so its pages can be measured whenever
  // a mapping of it goes (closed with the charge).
  int keeper = -1;
  KMutex lock;                // serializes changes of `bytes` and growth
  uint64_t bytes = 0;         // charged now (lock held to change)
  HostCharge* prev = nullptr;  // MemAccount::charges (its lock held)
  HostCharge* next = nullptr;
};

// A new charge of nothing yet for the host object behind `host_fd`,
// registered; nullptr when out of memory.
HostCharge* host_charge_new(Heap* heap, MemAccount& acct, int host_fd, ChargeKind kind);
void host_charge_get(HostCharge* c);
// The last reference gives back what is charged.
void host_charge_put(HostCharge* c);
// Grows the charge by `bytes` if that fits under mem= (lock held).
bool host_charge_grow(HostCharge& c, uint64_t bytes);
// Shrinks it (lock held).
void host_charge_shrink(HostCharge& c, uint64_t bytes);
// Makes the charge what the host object holds now, fitting or not: memory
// already taken is counted (lock held).
void host_charge_set(HostCharge& c, uint64_t bytes);
// Charges what a memfd holds now (its allocated blocks).
void host_charge_measure(HostCharge& c);
// The same, with c.lock held.
void host_charge_measure_locked(HostCharge& c);
// The charge of the host object behind `host_fd`, referenced; nullptr if
// it has none.
HostCharge* host_charge_find(MemAccount& acct, int host_fd);
}  // namespace flatux
