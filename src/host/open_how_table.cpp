#include "host/open_how_table.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <linux/memfd.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"

namespace flatux {
namespace {

constexpr long kSysMseal = 462;

constexpr uint64_t kNoLinks = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
constexpr uint64_t kMountResolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
constexpr uint64_t kAlways = O_CLOEXEC | O_NOCTTY;

constexpr uint64_t kTmpfileBit = 020000000;  // O_TMPFILE without O_DIRECTORY
constexpr uint64_t kSyncBit = 04000000;  // __O_SYNC: O_SYNC is it and O_DSYNC
// The bits of an opening's index above the access mode, in order.
constexpr uint64_t kIndexed[] = {O_TRUNC, O_NONBLOCK, O_DSYNC, kSyncBit, O_DIRECTORY, O_NOFOLLOW, O_APPEND};
constexpr uint64_t kLate = O_NOATIME | O_DIRECT;  // rare: F_SETFL sets them
constexpr uint64_t kLargeFile = 0100000;  // the kernel's O_LARGEFILE (glibc's is 0 on x86_64)
constexpr uint64_t kDropped = O_ASYNC | kLargeFile | O_EXCL | kAlways;  // ignored or implied
constexpr uint32_t kOpenings = 1u << (2 + sizeof kIndexed / sizeof kIndexed[0]);
constexpr uint32_t kFirstPath = kOpenings, kMountEntry = kOpenings + 4;
static_assert(kMountEntry + 1 == kOpenHowEntries);

struct Entry {
  uint64_t flags, mode, resolve, pad;
};
static_assert(sizeof(Entry) == kOpenHowEntry);

uint64_t opening_flags(uint32_t index) {
  uint64_t f = index & O_ACCMODE;
  for (uint32_t b = 0; b < sizeof kIndexed / sizeof kIndexed[0]; b++)
    if (index & (4u << b)) f |= kIndexed[b];
  return f | kAlways;
}

Entry entry_at(uint32_t i) {
  if (i < kFirstPath) return {opening_flags(i), 0, kNoLinks, 0};
  if (i < kMountEntry) {
    uint32_t j = i - kFirstPath;
    uint64_t f = O_PATH | O_CLOEXEC | ((j & 1) ? O_DIRECTORY : 0) | ((j & 2) ? O_NOFOLLOW : 0);
    return {f, 0, kNoLinks, 0};
  }
  return {O_PATH | O_DIRECTORY | O_CLOEXEC, 0, kMountResolve, 0};
}

// The entry for `flags`, or -1 when the table has none.
int index_for(uint64_t flags, host::Beneath how) {
  if (flags & (O_CREAT | kTmpfileBit)) return -1;
  if (how == host::Beneath::kMount)
    return (flags & ~(uint64_t)O_CLOEXEC) == (O_PATH | O_DIRECTORY) ? (int)kMountEntry : -1;
  if (flags & O_PATH) {
    if (flags & ~(uint64_t)(O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) return -1;
    return (int)kFirstPath + ((flags & O_DIRECTORY) ? 1 : 0) + ((flags & O_NOFOLLOW) ? 2 : 0);
  }
  uint64_t rest = flags & ~(kLate | kDropped | (uint64_t)O_ACCMODE);
  uint32_t index = (uint32_t)(flags & O_ACCMODE);
  for (uint32_t b = 0; b < sizeof kIndexed / sizeof kIndexed[0]; b++)
    if (rest & kIndexed[b]) {
      index |= 4u << b;
      rest &= ~kIndexed[b];
    }
  return rest ? -1 : (int)index;
}

}  // namespace

// Asked of the host, as the kernel keeps no state outside its heap:
// mprotect to what the mapping is already changes nothing, and a sealed
// mapping refuses even that.
OpenHowState open_how_table_state() {
  long r = host::sys(SYS_mprotect, kOpenHowTable, kOpenHowSize, PROT_READ);
  if (r == -EPERM) return OpenHowState::kSealed;
  return r == 0 ? OpenHowState::kUnsealed : OpenHowState::kAbsent;
}

OpenHowState open_how_table_make() {
  if (OpenHowState made = open_how_table_state(); made != OpenHowState::kAbsent) return made;
  Entry table[kOpenHowSize / sizeof(Entry)] = {};
  for (uint32_t i = 0; i < kOpenHowEntries; i++) table[i] = entry_at(i);
  reinterpret_cast<char*>(table)[kSealedDot - kOpenHowTable] = '.';
  long fd = host::sys(SYS_memfd_create, "flatux-open-how", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return OpenHowState::kAbsent;
  bool ok = host::sys(SYS_ftruncate, fd, kOpenHowSize) == 0 &&
            host::sys(SYS_pwrite64, fd, table, sizeof table, 0) == (long)sizeof table &&
            host::sys(SYS_fcntl, fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0;
  long at = ok ? host::sys(SYS_mmap, kOpenHowTable, kOpenHowSize, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0)
               : -1;
  host::sys(SYS_close, fd);
  if (at == (long)kOpenHowTable) host::sys(kSysMseal, kOpenHowTable, kOpenHowSize, 0);
  return open_how_table_state();
}

const void* open_how_entry_for(uint64_t flags, host::Beneath how) {
  int i = index_for(flags, how);
  if (i < 0) return nullptr;
  return reinterpret_cast<const void*>(kOpenHowTable + (uintptr_t)i * kOpenHowEntry);
}

namespace host {

long openat2_listed(int dir, const char* rel, uint64_t flags, Beneath how) {
  const void* entry = open_how_entry_for(flags, how);
  if (!entry) return -EINVAL;
  long fd = sys(SYS_openat2, dir, rel, entry, 24);
  uint64_t late = (flags & O_PATH) ? 0 : flags & kLate;
  if (fd < 0 || !late) return fd;
  long fl = sys(SYS_fcntl, fd, F_GETFL);
  long r = fl < 0 ? fl : sys(SYS_fcntl, fd, F_SETFL, (uint64_t)fl | late);
  if (r < 0) {
    sys(SYS_close, fd);
    return r;
  }
  return fd;
}

}  // namespace host
}  // namespace flatux
