// Pseudo-terminals (Unix98): /dev/ptmx makes a master, /dev/pts/N (devpts)
// is its slave, a terminal with the N_TTY line discipline. See pty.cpp.
#pragma once
#include <cstdint>
#include <ctime>

#include "kernel/kernel.h"

namespace flatux {

struct PtyTable;
struct PtyPair;

constexpr int kMaxPtys = 1024;
constexpr uint64_t kPtmxRdev = (5 << 8) | 2;  // makedev(5, 2)
constexpr unsigned kPtySlaveMajor = 136;

PtyTable* pty_table_create(Heap* heap);

// A new master (an open of /dev/ptmx or /dev/pts/ptmx).
long ptmx_open(Task& t, int flags, File** out);
// The slave of pty `index` (an open of /dev/pts/N): ENOENT when there is no
// such pty (or its master has gone), EIO while it is locked. A session
// leader without a controlling terminal gets this one unless O_NOCTTY.
long pty_slave_open(Task& t, int index, int flags, File** out);

// What devpts shows of pty `index`: false when it has no node.
struct PtyNode {
  uint32_t uid, gid, mode;
  timespec created;
};
bool pty_node(Kernel& k, int index, PtyNode* out);
// The indexes of the ptys with nodes, ascending; returns how many (at most max).
int pty_list(Kernel& k, int* out, int max);

// A pty whose master side is a host terminal (an OCI exec session's pty):
// the slave's output is written to host_fd, and what is typed there comes
// in through pty_host_input (the launcher's thread). The slave is
// /dev/pts/N, owned by uid:gid; *slave is an open file on it. *pair holds
// the master's reference, and host_fd (taken over) until the pair is gone.
long pty_host_open(Kernel& k, int host_fd, uint32_t uid, uint32_t gid, PtyPair** pair, File** slave);
// Input bytes the slave's queue takes now.
size_t pty_host_room(PtyPair& p);
void pty_host_input(PtyPair& p, const char* data, size_t n);
// The host terminal's window size, if it changed, becomes the slave's
// (SIGWINCH to its foreground group).
void pty_host_resized(PtyPair& p);
// The host side has gone: as a master's close (the slave hangs up). The
// caller's reference is dropped.
void pty_host_close(PtyPair& p);

inline uint64_t pty_slave_rdev(int index) {
  uint64_t minor = (uint64_t)index;
  return ((uint64_t)kPtySlaveMajor << 8) | (minor & 0xff) | ((minor & ~0xffull) << 12);
}

}  // namespace flatux
