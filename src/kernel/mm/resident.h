// Resident memory: which of a process's pages hold memory now. There is no
// MMU of the kernel's own to see a page touched, but guest addresses are
// host addresses, so the host's pagemap of the host process the guest
// lives in knows: a page is resident when present there (or swapped), and
// file-backed or shared when the host says so. VmRSS and its parts
// (/proc/PID/status, statm, stat) and the memory cgroup's memory.current
// are counted so.
#pragma once
#include <cstdint>

namespace flatux {

struct Mm;

// Bytes, as /proc/PID/status's RssAnon, RssFile, RssShmem and VmSwap.
struct Resident {
  uint64_t anon = 0, file = 0, shmem = 0, swap = 0;
  uint64_t rss() const { return anon + file + shmem; }
  // What the memory cgroup charges of it: memory only this process's
  // memory holds (a host file's pages are the host's page cache).
  uint64_t charged() const { return anon + shmem; }
};

// Opens the host's /proc/HOST_PID/pagemap (read-only): a descriptor or -errno.
long host_pagemap_open(int host_pid);
// Counts mm's resident pages from the pagemap of host process `host_pid`
// (the one mm's ranges are mapped in), taking mm.lock. Inaccessible ranges
// (brk and stack reserves) are skipped. 0, or -errno: where the jail shows
// no host /proc (a booted kernel), mm_resident_here is the way.
long mm_resident_pagemap(Mm& mm, int host_pid, Resident* out);
// Counts them with mincore, in the host process they are mapped in (the
// caller's): a page is resident when mincore says so; its kind is its
// mapping's (a file's page is its page cache page, mapped here or not).
long mm_resident_here(Mm& mm, Resident* out);
// Either way, raises mm's high-water mark to what was counted.
void mm_note_resident(Mm& mm, const Resident& r);

}  // namespace flatux
