// The only open_how structures the kernel's openat2 calls may use.
//
// openat2(2) takes its flags and creation mode in memory, where a seccomp
// filter cannot look; a guest that calls the host through a `syscall; ret`
// of the kernel's text could make a set-id file with it. So every openat2
// the kernel makes points into one table at a fixed address, made before
// the filter and then sealed (memfd write seals, a read-only shared
// mapping, mseal): nobody can write it, unmap it, remap it or change its
// protection, and /proc/self/mem cannot force a write into a shared
// mapping. The filter allows openat2 only with a pointer to one of its
// entries, and no entry creates anything: creation goes through openat,
// whose mode the filter checks (hostfs).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

constexpr uintptr_t kOpenHowTable = 0x7dfffff00000ull;  // just below the kernel heap
constexpr size_t kOpenHowEntry = 32;                      // an open_how (24 bytes) and padding
constexpr size_t kOpenHowSize = 5 * 4096;                 // the mapping

// The path "." in the same sealed mapping. A chmod through it
// (fchmodat(fd, kSealedDot, mode)) can only reach a folder, as "." names
// nothing else: the filter lets S_ISGID (a folder's group inheritance)
// through there and nowhere else.
constexpr uintptr_t kSealedDot = kOpenHowTable + kOpenHowSize - kOpenHowEntry;
inline const char* sealed_dot() { return reinterpret_cast<const char*>(kSealedDot); }

// Entries: every opening the table can express (open_how_flags_for says
// which), then the O_PATH lookups, then the mount's.
constexpr uint32_t kOpenHowEntries = 512 + 4 + 1;
static_assert(kOpenHowEntries * kOpenHowEntry <= kSealedDot - kOpenHowTable);

enum class OpenHowState : uint8_t {
  kAbsent,    // not made: openat2 cannot be called
  kUnsealed,  // made, but the host has no mseal: the filter's check is only as good as the mapping
  kSealed,
};

// Makes the table (once per address space; later calls say what the first
// made). Runs before the filter and the kernel.
OpenHowState open_how_table_make();
// What the table at kOpenHowTable is now.
OpenHowState open_how_table_state();

namespace host {

// How a hostfs lookup resolves: beneath its folder, following no link at
// all, or (a mount's source folder) following ordinary links beneath it.
enum class Beneath : uint8_t { kNoLinks, kMount };

// openat2(dir, rel) with `flags` as open(2) takes them, minus creation
// (O_CREAT and O_TMPFILE go through openat, where the filter sees the
// mode: -EINVAL here). Flags the table leaves out (O_NOATIME, O_DIRECT)
// are set on the descriptor after the open; O_ASYNC, which open
// ignores, is dropped; O_CLOEXEC and O_NOCTTY are always on. The host's
// result: a descriptor or -errno.
long openat2_listed(int dir, const char* rel, uint64_t flags, Beneath how = Beneath::kNoLinks);

}  // namespace host

// For tests: the entry openat2_listed uses for `flags`, or nullptr.
const void* open_how_entry_for(uint64_t flags, host::Beneath how);

}  // namespace flatux
