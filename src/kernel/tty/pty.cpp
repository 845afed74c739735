// Pseudo-terminals, after Linux's drivers/tty/pty.c (Unix98 ptys).
//
// A pair is a slave terminal (a Tty with the N_TTY line discipline, job
// control, termios, window size) and a master side that is a plain byte
// channel both ways:
//   master write -> `to_slave` (Linux's flip buffer) -> the slave's line
//     discipline (fed as far as its input queue has room: input
//     processing, echo, signals) -> slave reads;
//   slave write and echo -> output processing -> `to_master` -> master reads.
// A full `to_master` blocks slave writers (echo is dropped, as N_TTY
// drops echoes that do not fit); a full `to_slave` blocks master writers.
// Termios, window-size and process-group ioctls on the master act on the
// slave, as Linux's tty_pair_get_tty does. A new pair starts locked
// (TIOCSPTLCK); the slave is node N of devpts while the master is open.
// When the master closes the slave is hung up (tty_hangup); when the last
// slave file closes, master reads report EIO once the data is gone.
// Packet mode (TIOCPKT) prefixes master reads with a status byte and
// reports flushes and flow-control changes.
#include "kernel/tty/pty.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/poll.h>
#include <linux/tty.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/signal/signal.h"
#include "kernel/time.h"
#include "kernel/tty/tty.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/synth.h"
#include "kernel/vfs/vfs.h"

namespace flatux {
namespace {

constexpr size_t kRingSize = 16384;

// A byte queue in the kernel heap (callers lock).
struct ByteRing {
  char data[kRingSize];
  size_t head = 0, len = 0;
  size_t room() const { return kRingSize - len; }
  size_t put(const char* s, size_t n) {
    if (n > room()) n = room();
    for (size_t i = 0; i < n; i++) data[(head + len + i) % kRingSize] = s[i];
    len += n;
    return n;
  }
  size_t get(char* out, size_t n) {
    if (n > len) n = len;
    for (size_t i = 0; i < n; i++) out[i] = data[(head + i) % kRingSize];
    head = (head + n) % kRingSize;
    len -= n;
    return n;
  }
  void clear() { head = len = 0; }
};

}  // namespace

struct PtyPair {
  Kernel* kernel;
  int index;
  std::atomic<int> refs{1};   // the master file and each slave file
  Tty slave;
  KMutex lock;                // the rings and the state below
  ByteRing to_master;         // the slave's output, for master reads
  ByteRing to_slave;          // master writes the line discipline has not taken yet
  KMutex feed_lock;           // one feeder of the line discipline at a time
  // Bumped when to_master or the pair's state changes (wakes master
  // readers and slave writers), and when to_slave drains (master writers).
  std::atomic<uint32_t> master_seq{0};
  std::atomic<uint32_t> feed_seq{0};
  int slave_files = 0;
  bool other_closed = false;  // every slave file has closed (master reads: EIO)
  bool master_open = true;
  bool locked = true;
  bool packet = false;
  uint8_t pktstatus = 0;
  PtyNode node;
  // The master side is this host terminal (pty_host_open): the slave's
  // output is written to it, closed with the pair.
  int host_fd = -1;
};

struct PtyTable {
  KMutex lock;
  PtyPair* pairs[kMaxPtys]{};
};

namespace {

PtyPair& pair_of(Tty& tty) { return *static_cast<PtyPair*>(tty.driver_data); }
PtyPair& pair_of(File& f) { return *static_cast<PtyPair*>(f.priv); }

void bump(std::atomic<uint32_t>& seq) {
  seq.fetch_add(1, std::memory_order_release);
  futex_wake(&seq, 1 << 30);
}

// Sleeps until `seq` moves on from `seen` or a signal arrives.
long wait_seq(Task& t, std::atomic<uint32_t>& seq, uint32_t seen) {
  long r = isys(t, SYS_futex, &seq, FUTEX_WAIT, seen, 0, 0, 0);
  return r == -EINTR ? -ERESTARTSYS : 0;
}

void pair_put(PtyPair& p) {
  if (p.refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Kernel& k = *p.kernel;
  {
    Guard g(k.ptys->lock);
    k.ptys->pairs[p.index] = nullptr;
  }
  if (p.host_fd >= 0) host::sys(SYS_close, p.host_fd);
  k.heap->destroy_obj(&p);
}

// Moves master writes into the slave's line discipline while it has room.
void feed(PtyPair& p) {
  Guard f(p.feed_lock);
  for (;;) {
    size_t room = tty_receive_room(p.slave);
    char chunk[256];
    size_t n;
    {
      Guard g(p.lock);
      n = p.to_slave.get(chunk, room < sizeof chunk ? room : sizeof chunk);
    }
    if (!n) break;
    tty_receive(p.slave, chunk, n);
    bump(p.feed_seq);
  }
}

// --- the slave's device: the master side

size_t slave_write_room(Tty& tty) {
  PtyPair& p = pair_of(tty);
  Guard g(p.lock);
  // After a hangup: discarded. A host terminal takes everything (its
  // write blocks while the terminal does).
  return p.master_open && p.host_fd < 0 ? p.to_master.room() : kUnlimited;
}

// Output to a host terminal master, written through outside the lock (the
// descriptor stays open while the slave file writing holds the pair).
void host_master_write(PtyPair& p, const char* s, size_t n) {
  {
    Guard g(p.lock);
    if (!p.master_open) return;
  }
  while (n) {
    long r = host::sys(SYS_write, p.host_fd, s, n);
    if (r == -EINTR) continue;
    if (r <= 0) return;
    s += r;
    n -= (size_t)r;
  }
}

void slave_device_write(Tty& tty, const char* s, size_t n) {
  PtyPair& p = pair_of(tty);
  if (p.host_fd >= 0) return host_master_write(p, s, n);
  {
    Guard g(p.lock);
    if (p.master_open) p.to_master.put(s, n);
  }
  bump(p.master_seq);
}

long slave_wait_room(Task& t, Tty& tty, uint32_t seen) { return wait_seq(t, pair_of(tty).master_seq, seen); }
uint32_t slave_room_seq(Tty& tty) { return pair_of(tty).master_seq.load(std::memory_order_acquire); }
void slave_input_consumed(Tty& tty) { feed(pair_of(tty)); }

// Packet mode reports whether ^S/^Q flow control is on (pty_set_termios).
void slave_termios_changed(Tty& tty, const struct termios& old) {
  PtyPair& p = pair_of(tty);
  const struct termios& now = tty.tio;
  bool was = (old.c_iflag & IXON) && old.c_cc[VSTOP] == 023 && old.c_cc[VSTART] == 021;
  bool is = (now.c_iflag & IXON) && now.c_cc[VSTOP] == 023 && now.c_cc[VSTART] == 021;
  bool changed = (old.c_iflag & IXON) != (now.c_iflag & IXON) || old.c_cc[VSTOP] != now.c_cc[VSTOP] ||
                 old.c_cc[VSTART] != now.c_cc[VSTART];
  if (!changed || was == is) return;
  {
    Guard g(p.lock);
    if (!p.packet) return;
    p.pktstatus &= (uint8_t) ~(TIOCPKT_NOSTOP | TIOCPKT_DOSTOP);
    p.pktstatus |= is ? TIOCPKT_DOSTOP : TIOCPKT_NOSTOP;
  }
  bump(p.master_seq);
}

// TCFLSH on the slave: its input flush also drops what the master wrote and
// the line discipline has not taken; its output flush drops what the
// master has not read. Packet mode tells the master.
void slave_flushed(Tty& tty, int queue) {
  PtyPair& p = pair_of(tty);
  {
    Guard g(p.lock);
    if (queue != TCOFLUSH) {
      p.to_slave.clear();
      if (p.packet) p.pktstatus |= TIOCPKT_FLUSHREAD;
    }
    if (queue != TCIFLUSH) {
      p.to_master.clear();
      if (p.packet) p.pktstatus |= TIOCPKT_FLUSHWRITE;
    }
  }
  bump(p.master_seq);
  bump(p.feed_seq);
}

long slave_reopen(Task& t, Tty& tty, int flags, File** out);

const TtyDriver kPtySlaveDriver = {
    .write_room = slave_write_room,
    .write = slave_device_write,
    .wait_room = slave_wait_room,
    .room_seq = slave_room_seq,
    .input_consumed = slave_input_consumed,
    .termios_changed = slave_termios_changed,
    .flushed = slave_flushed,
    .reopen = slave_reopen,
};

// --- slave files

long slave_read(Task& t, File& f, void* buf, size_t n) { return tty_read(t, pair_of(f).slave, f, buf, n); }
long slave_write(Task& t, File& f, const void* buf, size_t n) { return tty_write(t, pair_of(f).slave, f, buf, n); }
long slave_ioctl(Task& t, File& f, unsigned cmd, uint64_t arg) { return tty_ioctl(t, pair_of(f).slave, f, cmd, arg); }
short slave_poll(Task&, File& f, short events) { return tty_poll(pair_of(f).slave, events); }

long slave_stat(Task&, File& f, struct stat* st) {
  PtyPair& p = pair_of(f);
  synth_stat(st, S_IFCHR | p.node.mode, (uint64_t)p.index + 3, 0, 0x1b);
  st->st_rdev = pty_slave_rdev(p.index);
  st->st_uid = p.node.uid;
  st->st_gid = p.node.gid;
  st->st_atim = st->st_mtim = st->st_ctim = p.node.created;
  st->st_blksize = 1024;
  return 0;
}

void slave_release(File& f) {
  PtyPair& p = pair_of(f);
  {
    Guard g(p.lock);
    if (--p.slave_files == 0) p.other_closed = true;
  }
  bump(p.master_seq);
  pair_put(p);
}

const FileOps kSlaveOps = {
    .read = slave_read, .write = slave_write, .pread = nullptr, .pwrite = nullptr, .lseek = nullptr,
    .stat = slave_stat, .getdents64 = nullptr, .ioctl = slave_ioctl, .statfs = nullptr,
    .release = slave_release, .poll = slave_poll,
};

// A new slave file on p (its caller holds a reference to p, or the table lock).
long new_slave_file(Kernel& k, PtyPair& p, int flags, File** out) {
  uint32_t keep = (uint32_t)flags & (O_ACCMODE | O_NONBLOCK | O_APPEND);
  File* f = file_alloc(k.heap, &kSlaveOps, keep, -1);
  if (!f) return -ENOMEM;
  p.refs.fetch_add(1);
  f->priv = &p;
  f->priv_word = pty_slave_rdev(p.index);
  {
    Guard g(p.lock);
    p.slave_files++;
    p.other_closed = false;
  }
  *out = f;
  return 0;
}

// Records the devpts path of a slave file not opened through a path
// (TIOCGPTPEER, /dev/tty), so /proc/PID/fd and ttyname show /dev/pts/N.
void set_devpts_origin(Kernel& k, File& f, int index) {
  // (The first namespace's: a path to show, the same in its copies.)
  Mount* m = k.vfs->find_exact(k.vfs->init_ns(), "/dev/pts");
  if (!m) return;
  char inner[16];
  KFmt fmt(inner, sizeof inner);
  fmt.ch('/').dec(index);
  fmt.ch('\0');
  f.set_origin(m, inner);
  m->put();
}

long slave_reopen(Task& t, Tty& tty, int flags, File** out) {
  PtyPair& p = pair_of(tty);
  if (tty.hung_up.load()) return -EIO;
  long r = new_slave_file(*t.kernel, p, flags, out);
  if (r == 0) set_devpts_origin(*t.kernel, **out, p.index);
  return r;
}

// --- master files

long master_read(Task& t, File& f, void* buf, size_t n) {
  PtyPair& p = pair_of(f);
  if (!access_ok(buf, n)) return -EFAULT;
  if (n == 0) return 0;
  char bounce[4096];
  for (;;) {
    uint32_t seq = p.master_seq.load(std::memory_order_acquire);
    size_t got = 0;
    {
      Guard g(p.lock);
      if (p.packet && p.pktstatus) {
        bounce[0] = (char)p.pktstatus;
        p.pktstatus = 0;
        got = 1;
      } else if (p.to_master.len) {
        size_t off = p.packet ? 1 : 0;
        if (p.packet) bounce[0] = TIOCPKT_DATA;
        size_t want = n - off < sizeof bounce - off ? n - off : sizeof bounce - off;
        got = off + p.to_master.get(bounce + off, want);
      } else if (p.other_closed) {
        return -EIO;
      }
    }
    if (got) {
      bump(p.master_seq);  // room for slave writers
      return copy_to_user(buf, bounce, got) < 0 ? -EFAULT : (long)got;
    }
    if (f.flags & O_NONBLOCK) return -EAGAIN;
    if (long r = wait_seq(t, p.master_seq, seq); r < 0) return r;
  }
}

long master_write(Task& t, File& f, const void* buf, size_t n) {
  PtyPair& p = pair_of(f);
  char bounce[4096];
  size_t done = 0;
  while (done < n) {
    size_t chunk = n - done < sizeof bounce ? n - done : sizeof bounce;
    if (copy_from_user(bounce, (const char*)buf + done, chunk) < 0) return done ? (long)done : -EFAULT;
    uint32_t seq = p.feed_seq.load(std::memory_order_acquire);
    size_t put;
    {
      Guard g(p.lock);
      put = p.to_slave.put(bounce, chunk);
    }
    done += put;
    if (put) feed(p);
    if (put == chunk) continue;
    long r = (f.flags & O_NONBLOCK) ? -EAGAIN : wait_seq(t, p.feed_seq, seq);
    if (r < 0) return done ? (long)done : r;
  }
  return (long)done;
}

short master_poll(Task&, File& f, short events) {
  PtyPair& p = pair_of(f);
  short r = 0;
  Guard g(p.lock);
  if (p.to_master.len || (p.packet && p.pktstatus)) r |= POLLIN | POLLRDNORM;
  if (p.packet && p.pktstatus) r |= POLLPRI;
  if (p.to_slave.room()) r |= POLLOUT | POLLWRNORM;
  if (p.other_closed) r |= POLLHUP;
  return (short)(r & (events | POLLERR | POLLHUP));
}

long master_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFCHR | 0666, 2, 0, 0x6);
  st->st_rdev = kPtmxRdev;
  st->st_atim = st->st_mtim = st->st_ctim = pair_of(f).node.created;
  return 0;
}

// The master side has closed: the devpts node goes, the slave hangs up.
void master_gone(PtyPair& p) {
  {
    Guard g(p.lock);
    p.master_open = false;
  }
  tty_hangup(p.slave);
  bump(p.master_seq);
  bump(p.feed_seq);
  pair_put(p);
}

void master_release(File& f) { master_gone(pair_of(f)); }

long put_int(uint64_t arg, int v) { return put_user((void*)arg, v) < 0 ? -EFAULT : 0; }

long open_peer(Task& t, PtyPair& p, uint64_t flags) {
  if (flags & ~(uint64_t)(O_ACCMODE | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_APPEND)) return -EINVAL;
  {
    Guard g(p.lock);
    if (p.locked) return -EIO;
  }
  File* f;
  long r = new_slave_file(*t.kernel, p, (int)flags, &f);
  if (r < 0) return r;
  set_devpts_origin(*t.kernel, *f, p.index);
  if (!(flags & O_NOCTTY)) tty_open_ctty(t, p.slave);
  int fd = t.proc->files->install(f, flags & O_CLOEXEC);
  f->put();
  return fd;
}

// Master-only ioctls; the rest act on the slave (termios, window size, ...).
long master_ioctl(Task& t, File& f, unsigned cmd, uint64_t arg) {
  PtyPair& p = pair_of(f);
  switch (cmd) {
    case TIOCGPTN: return put_int(arg, p.index);
    case TIOCSPTLCK: case TIOCPKT: {
      int v;
      if (get_user(v, (const void*)arg) < 0) return -EFAULT;
      Guard g(p.lock);
      if (cmd == TIOCSPTLCK) {
        p.locked = v != 0;
      } else if (v && !p.packet) {
        p.pktstatus = 0;
        p.packet = true;
      } else if (!v) {
        p.packet = false;
      }
      return 0;
    }
    case TIOCGPTLCK: case TIOCGPKT: {
      int v;
      {
        Guard g(p.lock);
        v = cmd == TIOCGPTLCK ? p.locked : p.packet;
      }
      return put_int(arg, v);
    }
    case TIOCGPTPEER: return open_peer(t, p, arg);
    case TIOCSIG: {
      if (arg < 1 || arg > (uint64_t)kNSig) return -EINVAL;
      int pgrp;
      {
        Guard g(p.slave.lock);
        pgrp = p.slave.pgrp;
      }
      if (pgrp > 0) kill_pgrp(*t.kernel, pgrp, (int)arg, sent_by(*t.proc));
      return 0;
    }
    case FIONREAD: {
      int v;
      {
        Guard g(p.lock);
        v = (int)p.to_master.len;
      }
      return put_int(arg, v);
    }
    case TCFLSH: {
      if (arg != TCIFLUSH && arg != TCOFLUSH && arg != TCIOFLUSH) return -EINVAL;
      {
        Guard g(p.lock);
        if (arg != TCOFLUSH) p.to_master.clear();
        if (arg != TCIFLUSH) p.to_slave.clear();
      }
      bump(p.master_seq);
      bump(p.feed_seq);
      return 0;
    }
    case TIOCGPGRP: case TIOCGSID: {
      int v;
      {
        Guard g(p.slave.lock);
        v = cmd == TIOCGPGRP ? p.slave.pgrp : p.slave.session;
      }
      if (cmd == TIOCGSID && !v) return -ENOTTY;
      return put_int(arg, v);
    }
    case TIOCSCTTY: case TIOCNOTTY: return -ENOTTY;  // the master is nobody's terminal here
    default: return tty_ioctl(t, p.slave, f, cmd, arg);
  }
}

const FileOps kMasterOps = {
    .read = master_read, .write = master_write, .pread = nullptr, .pwrite = nullptr, .lseek = nullptr,
    .stat = master_stat, .getdents64 = nullptr, .ioctl = master_ioctl, .statfs = nullptr,
    .release = master_release, .poll = master_poll,
};

}  // namespace

PtyTable* pty_table_create(Heap* heap) { return heap->make<PtyTable>(); }

// A new pair with its devpts node, owned by uid:gid (the master's
// reference held); nullptr with *err set.
static PtyPair* pair_make(Kernel& k, uint32_t uid, uint32_t gid, uint32_t mode, long* err) {
  PtyPair* p = k.heap->make<PtyPair>();
  if (!p) {
    *err = -ENOMEM;
    return nullptr;
  }
  p->kernel = &k;
  tty_init(p->slave, k, &kPtySlaveDriver, p);
  p->slave.tio.c_cflag = B38400 | CS8 | CREAD;  // the pts driver's init_termios: no HUPCL
  p->node = {uid, gid, mode, realtime_now()};
  Guard g(k.ptys->lock);
  int i = 0;
  while (i < kMaxPtys && k.ptys->pairs[i]) i++;
  if (i == kMaxPtys) {
    k.heap->destroy_obj(p);
    *err = -ENOSPC;
    return nullptr;
  }
  p->index = i;
  k.ptys->pairs[i] = p;
  return p;
}

long ptmx_open(Task& t, int flags, File** out) {
  Kernel& k = *t.kernel;
  uint32_t keep = (uint32_t)flags & (O_ACCMODE | O_NONBLOCK | O_APPEND);
  File* f = file_alloc(k.heap, &kMasterOps, keep, -1);
  if (!f) return -ENOMEM;
  long err = 0;
  PtyPair* p = pair_make(k, t.proc->creds.fsuid, t.proc->creds.fsgid, 0600, &err);
  if (!p) {
    f->ops = nullptr;
    f->put();
    return err;
  }
  f->priv = p;
  f->priv_word = kPtmxRdev;
  *out = f;
  return 0;
}

long pty_host_open(Kernel& k, int host_fd, uint32_t uid, uint32_t gid, PtyPair** pair, File** slave) {
  long err = 0;
  PtyPair* p = pair_make(k, uid, gid, 0620, &err);
  if (!p) return err;
  {
    Guard g(p->lock);
    p->locked = false;
    p->host_fd = host_fd;
  }
  struct winsize ws;
  if (host::sys(SYS_ioctl, host_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) p->slave.ws = ws;
  if ((err = new_slave_file(k, *p, O_RDWR, slave)) < 0) {
    Guard g(p->lock);
    p->host_fd = -1;  // still the caller's
  }
  if (err < 0) {
    master_gone(*p);
    return err;
  }
  set_devpts_origin(k, **slave, p->index);
  *pair = p;
  return 0;
}

size_t pty_host_room(PtyPair& p) {
  Guard g(p.lock);
  return p.to_slave.room();
}

void pty_host_input(PtyPair& p, const char* data, size_t n) {
  {
    Guard g(p.lock);
    p.to_slave.put(data, n);
  }
  feed(p);
}

void pty_host_resized(PtyPair& p) {
  struct winsize ws;
  if (host::sys(SYS_ioctl, p.host_fd, TIOCGWINSZ, &ws) != 0 || !ws.ws_row || !ws.ws_col) return;
  struct winsize now;
  {
    Guard g(p.slave.lock);
    now = p.slave.ws;
  }
  if (now.ws_row != ws.ws_row || now.ws_col != ws.ws_col) tty_set_winsize(p.slave, ws);
}

void pty_host_close(PtyPair& p) { master_gone(p); }

long pty_slave_open(Task& t, int index, int flags, File** out) {
  Kernel& k = *t.kernel;
  if (index < 0 || index >= kMaxPtys) return -ENOENT;
  PtyPair* p;
  {
    Guard g(k.ptys->lock);
    p = k.ptys->pairs[index];
    if (!p) return -ENOENT;
    Guard l(p->lock);
    if (!p->master_open) return -ENOENT;
    if (p->locked) return -EIO;
    p->refs.fetch_add(1);  // held across the open below
  }
  long r = new_slave_file(k, *p, flags, out);
  if (r == 0 && !(flags & O_NOCTTY)) tty_open_ctty(t, p->slave);
  pair_put(*p);
  return r;
}

bool pty_node(Kernel& k, int index, PtyNode* out) {
  if (index < 0 || index >= kMaxPtys) return false;
  Guard g(k.ptys->lock);
  PtyPair* p = k.ptys->pairs[index];
  if (!p) return false;
  Guard l(p->lock);
  if (!p->master_open) return false;
  *out = p->node;
  return true;
}

int pty_list(Kernel& k, int* out, int max) {
  int n = 0;
  Guard g(k.ptys->lock);
  for (int i = 0; i < kMaxPtys && n < max; i++) {
    PtyPair* p = k.ptys->pairs[i];
    if (!p) continue;
    Guard l(p->lock);
    if (p->master_open) out[n++] = i;
  }
  return n;
}

}  // namespace flatux
