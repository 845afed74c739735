// A terminal with Linux's N_TTY line discipline: the input queue, canonical
// line editing, echo, ISIG, VMIN/VTIME, output post-processing, and the
// job-control state (session, foreground process group). The device under
// it is anything that can take output bytes (the host terminal for the
// console); input arrives through tty_receive().
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

struct Tty {
  Kernel* kernel = nullptr;
  KMutex lock;                 // termios, the input queue, session and pgrp
  KMutex out_lock;             // keeps each write's bytes together
  struct termios tio {};       // the kernel's struct termios (36 bytes)
  struct winsize ws {};
  int host_out = -1;           // where output goes
  int session = 0;             // the session it is the controlling terminal of
  int pgrp = 0;                // its foreground process group

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
void tty_init(Tty& tty, Kernel& k, int host_out);

// Bytes typed on the device: input processing, echo, signals.
void tty_receive(Tty& tty, const char* data, size_t n);

// The file operations of a terminal (read, write, ioctl, poll).
long tty_read(Task& t, Tty& tty, File& f, void* guest_buf, size_t n);
long tty_write(Task& t, Tty& tty, File& f, const void* guest_buf, size_t n);
long tty_ioctl(Task& t, Tty& tty, File& f, unsigned cmd, uint64_t arg);
short tty_poll(Tty& tty, short events);

// Kernel text to the device, through output processing (printk).
void tty_write_kernel(Tty& tty, const char* s, size_t n);

// The device's window size changed: SIGWINCH to the foreground group.
void tty_set_winsize(Tty& tty, const struct winsize& ws);

// Signals every process of group `pgrp` (SI_KERNEL, as the tty layer does).
void kill_pgrp(Kernel& k, int pgrp, int sig);

}  // namespace flatux
