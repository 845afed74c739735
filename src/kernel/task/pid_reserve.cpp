// Two `flatux run` instances over the same host root used to hand out the
// same pids (1, 2, ...), and programs that name files after their pid
// (Python's test runner: /tmp/test_python_<pid>) trod on each other. So
// guest pids are reserved host-wide in blocks of 64: a block is ours while
// this instance holds a host AF_UNIX socket bound to the abstract name
// "flatux-pids-<block>"; another instance finds the name taken (EADDRINUSE)
// and moves on to the next block. The host releases the names when the
// sockets close, at the latest when flatux exits, so a crashed instance
// holds nothing. A block goes back once none of its numbers names a live
// task, a zombie, a process group or a session. Numbers stay small; they
// are not kept apart from the host's own processes' pids.
//
// Pid 1 is every instance's own, as init is in each pid namespace: the
// instance's first process always gets it, whoever holds block 0, because
// guests expect a pid 1 to exist (kill(1, 0), /proc/1, `taskset -p 1`).
// Only a program that names files after its pid while being pid 1 can meet
// another instance's; the rest of block 0 is reserved as any other block.
#include "kernel/task/pid_reserve.h"

#include <cstring>
#include <linux/errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "host/raw_syscall.h"
#include "kernel/lib/kfmt.h"

namespace flatux {

constexpr int kPidBlock = 64;
constexpr int kMaxHeldBlocks = kMaxTasks;

struct PidReservations {
  int count = 0;
  int block[kMaxHeldBlocks];
  int fd[kMaxHeldBlocks];
};

namespace {

bool in_block(int pid, int b) { return pid / kPidBlock == b; }

// Whether any number of block b is in use (tasks_lock held).
bool block_in_use_locked(Kernel& k, int b) {
  for (Task* t : k.live_tasks()) {
    if (!t) continue;
    const Process& p = *t->proc;
    if (in_block(t->tid, b) || in_block(p.pid, b) || in_block(p.pgid, b) || in_block(p.sid, b)) return true;
    for (const Process* c = p.children; c; c = c->sibling)
      if (in_block(c->pid, b)) return true;  // zombies
  }
  return false;
}

long bind_block(int b) {
  long fd = host::sys(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fd;
  sockaddr_un su{};
  su.sun_family = AF_UNIX;
  KFmt f(su.sun_path + 1, sizeof su.sun_path - 1);
  f.str("flatux-pids-").dec(b);
  long r = host::sys(SYS_bind, fd, &su, offsetof(sockaddr_un, sun_path) + 1 + f.size());
  if (r < 0) {
    host::sys(SYS_close, fd);
    return r;
  }
  return fd;
}

// Gives back the blocks nothing uses any more (but `keep`).
void release_unused_locked(Kernel& k, PidReservations& r, int keep) {
  for (int i = 0; i < r.count;) {
    if (r.block[i] != keep && !block_in_use_locked(k, r.block[i])) {
      host::sys(SYS_close, r.fd[i]);
      r.count--;
      r.block[i] = r.block[r.count];
      r.fd[i] = r.fd[r.count];
    } else {
      i++;
    }
  }
}

}  // namespace

PidReservations* pid_reservations_create(Heap* heap) { return heap->make<PidReservations>(); }

int pid_next_block(int pid) { return (pid / kPidBlock + 1) * kPidBlock; }

bool pid_reserve_locked(Kernel& k, int pid) {
  PidReservations* r = k.pid_reserve;
  if (!r || pid == 1) return true;
  int b = pid / kPidBlock;
  for (int i = 0; i < r->count; i++)
    if (r->block[i] == b) return true;
  release_unused_locked(k, *r, b);
  if (r->count == kMaxHeldBlocks) return false;
  long fd = bind_block(b);
  if (fd == -EADDRINUSE) return false;
  if (fd < 0) return true;  // no host socket to be had: numbering as before
  r->block[r->count] = b;
  r->fd[r->count] = (int)fd;
  r->count++;
  return true;
}

}  // namespace flatux
