#include "kernel/tty/console.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <linux/poll.h>
#include <linux/termios.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/tty/tty.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/synth.h"

namespace flatux {

struct Console {
  Tty tty;
  int host_in = -1, host_out = -1;
  bool terminal = false;
};

namespace {

constexpr uint64_t kDevConsole = (5 << 8) | 1;  // makedev(5, 1)
constexpr uint64_t kDevTty = (5 << 8) | 0;      // makedev(5, 0)

Tty& tty_of(File& f) { return *static_cast<Tty*>(f.priv); }

long con_read(Task& t, File& f, void* buf, size_t n) { return tty_read(t, tty_of(f), f, buf, n); }
long con_write(Task& t, File& f, const void* buf, size_t n) { return tty_write(t, tty_of(f), f, buf, n); }
long con_ioctl(Task& t, File& f, unsigned cmd, uint64_t arg) { return tty_ioctl(t, tty_of(f), f, cmd, arg); }
short con_poll(Task&, File& f, short events) { return tty_poll(tty_of(f), events); }
long con_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFCHR | 0620, f.priv_word == kDevTty ? 3 : f.priv_word == kDevConsole ? 4 : 5 + (f.priv_word & 0xff), 0, 6);
  st->st_rdev = f.priv_word;
  return 0;
}

const FileOps kTtyOps = {
    .read = con_read, .write = con_write, .pread = nullptr, .pwrite = nullptr, .lseek = nullptr,
    .stat = con_stat, .getdents64 = nullptr, .ioctl = con_ioctl, .statfs = nullptr, .release = nullptr,
    .poll = con_poll,
};

// Not a terminal: the host's stdin and stdout, byte for byte.
Console& console_of(File& f) { return *static_cast<Console*>(f.priv); }
long pass_read(Task& t, File& f, void* buf, size_t n) {
  if (!access_ok(buf, n)) return -EFAULT;
  return restartable(isys(t, SYS_read, console_of(f).host_in, buf, n));
}
long pass_write(Task& t, File& f, const void* buf, size_t n) {
  if (!access_ok(buf, n)) return -EFAULT;
  return restartable(isys(t, SYS_write, console_of(f).host_out, buf, n));
}
short pass_poll(Task&, File& f, short events) {
  Console& c = console_of(f);
  struct pollfd p[2] = {{c.host_in, (short)(events & POLLIN), 0}, {c.host_out, (short)(events & POLLOUT), 0}};
  if (host::sys(SYS_poll, p, 2, 0) < 0) return 0;
  return (short)((p[0].revents | p[1].revents) & (events | POLLERR | POLLHUP));
}

const FileOps kPassOps = {
    .read = pass_read, .write = pass_write, .pread = nullptr, .pwrite = nullptr, .lseek = nullptr,
    .stat = con_stat, .getdents64 = nullptr, .ioctl = nullptr, .statfs = nullptr, .release = nullptr,
    .poll = pass_poll,
};

// The host terminal as the console's device: output is written through
// (the host's write blocks when the terminal does), so there is always room.
size_t host_room(Tty&) { return kUnlimited; }
void host_write(Tty& tty, const char* s, size_t n) {
  int fd = static_cast<Console*>(tty.driver_data)->host_out;
  while (n) {
    long r = host::sys(SYS_write, fd, s, n);
    if (r == -EINTR) continue;
    if (r <= 0) return;
    s += r;
    n -= (size_t)r;
  }
}
long host_wait_room(Task&, Tty&, uint32_t) { return 0; }
uint32_t host_room_seq(Tty&) { return 0; }
long console_reopen(Task& t, Tty& tty, int flags, File** out);

const TtyDriver kHostTerminal = {
    .write_room = host_room, .write = host_write, .wait_room = host_wait_room, .room_seq = host_room_seq,
    .reopen = console_reopen,
};

long open_on(Kernel& k, Console& c, int flags, uint64_t dev, File** out) {
  uint32_t keep = (uint32_t)flags & (O_ACCMODE | O_NONBLOCK | O_APPEND);
  File* f = file_alloc(k.heap, c.terminal ? &kTtyOps : &kPassOps, keep, -1);
  if (!f) return -ENOMEM;
  f->priv = c.terminal ? static_cast<void*>(&c.tty) : static_cast<void*>(&c);
  f->priv_word = dev;
  *out = f;
  return 0;
}

}  // namespace

long console_create(Kernel& k, int host_in, int host_out, bool terminal) {
  Console* c = k.heap->make<Console>();
  if (!c) return -ENOMEM;
  c->host_in = host_in;
  c->host_out = host_out;
  c->terminal = terminal;
  tty_init(c->tty, k, &kHostTerminal, c);
  c->tty.ws.ws_row = 24;
  c->tty.ws.ws_col = 80;
  if (terminal) {
    struct winsize ws;
    if (host::sys(SYS_ioctl, host_in, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) c->tty.ws = ws;
  }
  k.console = c;
  return 0;
}

void console_receive(Kernel& k, const char* data, size_t n) {
  if (k.console && k.console->terminal) tty_receive(k.console->tty, data, n);
}

void console_host_resized(Kernel& k) {
  Console* c = k.console;
  if (!c || !c->terminal) return;
  struct winsize ws;
  if (host::sys(SYS_ioctl, c->host_in, TIOCGWINSZ, &ws) == 0) tty_set_winsize(c->tty, ws);
}

bool console_is_terminal(const Kernel& k) { return k.console && k.console->terminal; }

void console_become_ctty(Task& t) {
  if (Console* c = t.kernel->console; c && c->terminal) tty_open_ctty(t, c->tty);
}

bool console_write_kernel(Kernel& k, std::string_view text) {
  Console* c = k.console;
  if (!c) return false;
  if (c->terminal) {
    tty_write_kernel(c->tty, text.data(), text.size());
    return true;
  }
  return false;  // passthrough: kernel messages keep going to the host's stderr
}

long console_open(Task& t, int flags, File** out) {
  Console* c = t.kernel->console;
  if (!c) return -ENXIO;
  return open_on(*t.kernel, *c, flags, kDevConsole, out);
}

long console_vt_open(Task& t, int flags, int minor, File** out) {
  Console* c = t.kernel->console;
  if (!c || !c->terminal) return -ENXIO;
  long r = open_on(*t.kernel, *c, flags, (uint64_t)(4 << 8) | (uint64_t)minor, out);
  if (r == 0 && !(flags & O_NOCTTY)) tty_open_ctty(t, c->tty);
  return r;
}

long console_open_initial(Kernel& k, File** out) {
  if (!k.console) return -ENXIO;
  return open_on(k, *k.console, O_RDWR, kDevConsole, out);
}

namespace {
long console_reopen(Task& t, Tty& tty, int flags, File** out) {
  return open_on(*t.kernel, *static_cast<Console*>(tty.driver_data), flags, kDevTty, out);
}
}  // namespace

// /dev/tty: the caller's controlling terminal, reopened by its driver
// (under tasks_lock, so a pty cannot go away meanwhile). Without a
// controlling terminal, a console that is not a tty stands in for it.
long ctty_open(Task& t, int flags, File** out) {
  {
    Guard g(t.kernel->tasks_lock);
    if (Tty* ctty = t.proc->ctty) return ctty->driver->reopen(t, *ctty, flags, out);
  }
  Console* c = t.kernel->console;
  if (!c || c->terminal) return -ENXIO;
  return open_on(*t.kernel, *c, flags, kDevTty, out);
}

}  // namespace flatux
