// A terminal with Linux's N_TTY line discipline: the input queue, canonical
// line editing, echo, ISIG, VMIN/VTIME, output post-processing, and the
// job-control state (session, foreground process group). The device under
// it is a TtyDriver: the host terminal for the console (console.cpp), the
// master side for a pseudo-terminal's slave (pty.cpp). Input arrives
// through tty_receive().
#pragma once
#include <linux/termios.h>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernel/lib/sync.h"

namespace flatux {

struct Kernel;
struct Task;
struct File;
struct Process;
struct Tty;
struct SigSender;

// What a terminal's device does with output, and what it wants to hear of.
struct TtyDriver {
  // Room for output bytes now (kUnlimited: the device takes everything).
  size_t (*write_room)(Tty&);
  // Hands the device at most write_room() bytes.
  void (*write)(Tty&, const char* s, size_t n);
  // Sleeps until write_room() may have grown: 0, or -ERESTARTSYS when a
  // signal interrupts. Only called when write_room() was 0.
  long (*wait_room)(Task&, Tty&, uint32_t seen);
  // A word that changes whenever write_room() may have grown (read before
  // asking for room, handed to wait_room).
  uint32_t (*room_seq)(Tty&);
  // Optional hooks: a reader took input (room for more), termios changed,
  // a flush (TCFLSH queue) happened.
  void (*input_consumed)(Tty&) = nullptr;
  void (*termios_changed)(Tty&, const struct termios& old) = nullptr;
  void (*flushed)(Tty&, int queue) = nullptr;
  // A new open file on this terminal: /dev/tty for a process whose
  // controlling terminal it is.
  long (*reopen)(Task&, Tty&, int flags, File** out) = nullptr;
};

constexpr size_t kUnlimited = ~size_t{0};

struct Tty {
  Kernel* kernel = nullptr;
  const TtyDriver* driver = nullptr;
  void* driver_data = nullptr;
  KMutex lock;                 // termios, the input queue, session and pgrp
  KMutex write_lock;           // one write(2) at a time, so its bytes stay together
  KMutex out_lock;             // output processing and the device (writes and echo)
  struct termios tio {};       // the kernel's struct termios (36 bytes)
  struct winsize ws {};
  int session = 0;             // the session it is the controlling terminal of
  int pgrp = 0;                // its foreground process group
  // Hung up (a pty whose master has gone): reads see end of file, writes
  // and ioctls EIO, poll everything.
  std::atomic<bool> hung_up{false};

  // The input queue. In canonical mode the first canon_len bytes are
  // complete lines, each ending at a byte with a delimiter mark; the rest
  // is the line being edited.
  static constexpr int kBufSize = 4096;
  char buf[kBufSize];
  uint8_t mark[kBufSize];      // kMarkDelim / kMarkEof on line ends
  int len = 0;
  int canon_len = 0;
  bool lnext = false;          // the previous byte was VLNEXT
  std::atomic<uint32_t> in_seq{0};  // bumped on input or mode changes: wakes readers
};

constexpr uint8_t kMarkDelim = 1;  // '\n', VEOL, VEOL2: returned to the reader
constexpr uint8_t kMarkEof = 2;    // VEOF: ends the line, is not returned

// Linux's defaults for a fresh terminal (tty_std_termios).
void tty_init(Tty& tty, Kernel& k, const TtyDriver* driver, void* driver_data);

// Bytes typed on the device: input processing, echo, signals.
void tty_receive(Tty& tty, const char* data, size_t n);
// How many bytes tty_receive() can take now without losing any (Linux's
// receive_room; in canonical mode without a complete line the line keeps
// taking bytes and drops what does not fit, as N_TTY does).
size_t tty_receive_room(Tty& tty);

// The file operations of a terminal (read, write, ioctl, poll).
long tty_read(Task& t, Tty& tty, File& f, void* guest_buf, size_t n);
long tty_write(Task& t, Tty& tty, File& f, const void* guest_buf, size_t n);
long tty_ioctl(Task& t, Tty& tty, File& f, unsigned cmd, uint64_t arg);
short tty_poll(Tty& tty, short events);

// Kernel text to the device, through output processing (printk).
void tty_write_kernel(Tty& tty, const char* s, size_t n);

// The device's window size changed: SIGWINCH to the foreground group.
void tty_set_winsize(Tty& tty, const struct winsize& ws);

// Signals every process of group `pgrp` (SI_KERNEL, as the tty layer
// does) on `from`'s account (kFromOutside: the terminal's own doing).
void kill_pgrp(Kernel& k, int pgrp, int sig, SigSender from);
void kill_pgrp_locked(Kernel& k, int pgrp, int sig, SigSender from);  // tasks_lock held

// The device has gone (a pty's master closed): the session loses its
// controlling terminal, its leader gets SIGHUP and SIGCONT, and every open
// file on the terminal is hung up.
void tty_hangup(Tty& tty);
// tty_open's controlling-terminal rule: a session leader without one gets
// the terminal it opens (unless O_NOCTTY), if no session has it yet.
void tty_open_ctty(Task& t, Tty& tty);

// A session leader is exiting (Linux's disassociate_ctty on exit): the
// foreground group of its controlling terminal gets SIGHUP and the session
// loses the terminal. Called with tasks_lock held.
void tty_session_leader_exit_locked(Process& leader);

}  // namespace flatux
