// SCM_RIGHTS of files that have no host descriptor (tmpfs, ext4, procfs,
// the kernel's devices...). Every guest socket is a host socket, so what
// crosses it must be a host descriptor: such a file travels as a ticket, a
// host pipe made for that one passing. Its write end goes into the host's
// message in the file's place; the kernel keeps the read end and a
// reference to the file. A receiving guest of this kernel knows the ticket
// by the pipe's identity and gets the file itself (the same open file, as
// Linux passes it), and closes its copy of the write end.
//
// The host's own bookkeeping of descriptors in flight tells when a ticket
// is done: once no write end is left anywhere (received, or dropped with an
// unread message when its socket went), the read end polls POLLHUP and the
// file is let go. Tickets are swept when one is issued or redeemed and when
// a socket is closed, the only moments a write end can go away.
#include <fcntl.h>
#include <linux/errno.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/heap.h"
#include "kernel/net/sock.h"

namespace flatux {

struct ScmTicket {
  File* file;
  int read_fd;
  uint64_t dev, ino;  // the pipe's, as fstat of either end gives them
  ScmTicket* next;
};

namespace {

// Past this many tickets alive, a send is refused with ETOOMANYREFS, as
// Linux refuses files in flight past the sender's RLIMIT_NOFILE: each
// holds a host descriptor of the kernel's.
constexpr int kMaxTickets = 1024;
constexpr int kPollChunk = 64;

// Moves the tickets whose write ends are all gone from the table onto
// `*dead` (lock held). Their files are put once the lock is let go: a
// last put may do a filesystem's work.
void sweep_locked(ScmTickets& st, ScmTicket** dead) {
  ScmTicket* kept = nullptr;
  ScmTicket** kept_tail = &kept;
  for (ScmTicket* rest = st.list; rest;) {
    ScmTicket* chunk[kPollChunk];
    pollfd p[kPollChunk];
    int n = 0;
    for (; rest && n < kPollChunk; rest = rest->next, n++) {
      chunk[n] = rest;
      p[n] = {rest->read_fd, POLLIN, 0};
    }
    bool any = host::sys(SYS_poll, p, n, 0) > 0;
    for (int i = 0; i < n; i++) {
      if (any && (p[i].revents & (POLLHUP | POLLNVAL))) {
        chunk[i]->next = *dead;
        *dead = chunk[i];
        st.count.fetch_sub(1, std::memory_order_relaxed);
      } else {
        *kept_tail = chunk[i];
        kept_tail = &chunk[i]->next;
      }
    }
  }
  *kept_tail = nullptr;
  st.list = kept;
}

void free_dead(Heap* heap, ScmTicket* dead) {
  while (dead) {
    ScmTicket* next = dead->next;
    host::sys(SYS_close, dead->read_fd);
    dead->file->put();
    heap->free(dead);
    dead = next;
  }
}

bool pipe_identity(int fd, uint64_t* dev, uint64_t* ino) {
  struct stat st;
  if (host::sys(SYS_fstat, fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  *dev = st.st_dev;
  *ino = st.st_ino;
  return true;
}

}  // namespace

long scm_ticket_issue(NetState& ns, File* f) {
  ScmTickets& st = ns.tickets;
  auto* tk = static_cast<ScmTicket*>(ns.heap->alloc(sizeof(ScmTicket)));
  if (!tk) return -ENOMEM;
  int p[2];
  long r = host::sys(SYS_pipe2, p, O_CLOEXEC);
  if (r < 0 || !pipe_identity(p[0], &tk->dev, &tk->ino)) {
    if (r == 0) {
      host::sys(SYS_close, p[0]);
      host::sys(SYS_close, p[1]);
    }
    ns.heap->free(tk);
    return r < 0 ? r : -EIO;
  }
  f->get();
  tk->file = f;
  tk->read_fd = p[0];
  ScmTicket* dead = nullptr;
  st.lock.lock();
  if (st.count.load(std::memory_order_relaxed) >= kMaxTickets) sweep_locked(st, &dead);
  bool room = st.count.load(std::memory_order_relaxed) < kMaxTickets;
  if (room) {
    tk->next = st.list;
    st.list = tk;
    st.count.fetch_add(1, std::memory_order_relaxed);
  } else {
    tk->next = dead;
    dead = tk;
  }
  st.lock.unlock();
  free_dead(ns.heap, dead);
  if (room) return p[1];
  host::sys(SYS_close, p[1]);
  return -ETOOMANYREFS;
}

File* scm_ticket_redeem(NetState& ns, int host_fd) {
  ScmTickets& st = ns.tickets;
  uint64_t dev, ino;
  if (st.count.load(std::memory_order_relaxed) == 0 || !pipe_identity(host_fd, &dev, &ino)) return nullptr;
  File* f = nullptr;
  st.lock.lock();
  for (ScmTicket* tk = st.list; tk; tk = tk->next)
    if (tk->dev == dev && tk->ino == ino) {
      f = tk->file;
      f->get();
      break;
    }
  st.lock.unlock();
  if (!f) return nullptr;
  host::sys(SYS_close, host_fd);
  scm_tickets_sweep(ns);
  return f;
}

void scm_tickets_sweep(NetState& ns) {
  ScmTickets& st = ns.tickets;
  if (st.count.load(std::memory_order_relaxed) == 0) return;
  ScmTicket* dead = nullptr;
  st.lock.lock();
  sweep_locked(st, &dead);
  st.lock.unlock();
  free_dead(ns.heap, dead);
}

}  // namespace flatux
