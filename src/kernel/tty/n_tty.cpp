// N_TTY: input processing, canonical editing, echo and reads/writes of a
// terminal, after Linux's drivers/tty/n_tty.c.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/poll.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/time.h"
#include "kernel/tty/tty.h"
#include "kernel/tty/tty_internal.h"

namespace flatux {
namespace {

bool is(const Tty& tty, unsigned char c, int cc) {
  return tty.tio.c_cc[cc] != 0 /* _POSIX_VDISABLE */ && c == tty.tio.c_cc[cc];
}
bool lflag(const Tty& tty, unsigned f) { return tty.tio.c_lflag & f; }
bool iflag(const Tty& tty, unsigned f) { return tty.tio.c_iflag & f; }

// Output post-processing (OPOST, ONLCR, OCRNL) into `out`, as much as
// fits in `cap`; returns its length and sets *used to the input taken.
size_t opost(const Tty& tty, const char* s, size_t n, char* out, size_t cap, size_t* used) {
  size_t o = 0, i = 0;
  bool post = tty.tio.c_oflag & OPOST;
  for (; i < n; i++) {
    char c = s[i];
    bool crlf = post && c == '\n' && (tty.tio.c_oflag & ONLCR);
    if (o + (crlf ? 2 : 1) > cap) break;
    if (crlf) {
      out[o++] = '\r';
    } else if (post && c == '\r' && (tty.tio.c_oflag & OCRNL)) {
      c = '\n';
    }
    out[o++] = c;
  }
  *used = i;
  return o;
}

// Hands the device as much of `s` as it has room for, post-processed
// (out_lock held); returns the input bytes taken.
size_t output_some(Tty& tty, const char* s, size_t n) {
  char buf[1024];
  size_t done = 0;
  while (done < n) {
    size_t room = tty.driver->write_room(tty);
    size_t used;
    size_t o = opost(tty, s + done, n - done, buf, room < sizeof buf ? room : sizeof buf, &used);
    if (!used) break;
    tty.driver->write(tty, buf, o);
    done += used;
  }
  return done;
}

// Echo and kernel text: what the device has no room for is dropped, as
// N_TTY drops echoes that do not fit.
void output(Tty& tty, const char* s, size_t n) { output_some(tty, s, n); }

// Raw bytes to the device (erase sequences), dropped when it is full.
void device_write(Tty& tty, const char* s, size_t n) {
  size_t room = tty.driver->write_room(tty);
  tty.driver->write(tty, s, n < room ? n : room);
}

// Echo of one input byte: control characters as ^X under ECHOCTL.
void echo_char(Tty& tty, unsigned char c) {
  if (lflag(tty, ECHOCTL) && (c < 32 || c == 0x7f) && c != '\t' && c != '\n' &&
      !is(tty, c, VSTART) && !is(tty, c, VSTOP)) {
    char s[2] = {'^', (char)(c == 0x7f ? '?' : c ^ 0x40)};
    output(tty, s, 2);
    return;
  }
  char ch = (char)c;
  output(tty, &ch, 1);
}

// Columns an echoed byte took (for erasing it).
int echo_width(const Tty& tty, unsigned char c) {
  if (lflag(tty, ECHOCTL) && (c < 32 || c == 0x7f) && c != '\t') return 2;
  return 1;
}

// Erases the last byte of the line being edited; false when there is none.
bool erase_one(Tty& tty) {
  if (tty.len <= tty.canon_len) return false;
  unsigned char c = (unsigned char)tty.buf[--tty.len];
  if (lflag(tty, ECHO) && lflag(tty, ECHOE)) {
    for (int i = echo_width(tty, c); i > 0; i--) device_write(tty, "\b \b", 3);
  }
  return true;
}

bool is_word_char(char c) { return c != ' ' && c != '\t'; }

void flush_input_locked(Tty& tty) {
  tty.len = tty.canon_len = 0;
  tty.lnext = false;
}

void put_byte(Tty& tty, char c, uint8_t mark) {
  if (tty.len >= Tty::kBufSize) return;  // full: dropped, as a full N_TTY queue does
  tty.buf[tty.len] = c;
  tty.mark[tty.len] = mark;
  tty.len++;
  if (mark) tty.canon_len = tty.len;
}

// Canonical-mode editing keys; true when `c` was one.
bool canon_edit(Tty& tty, unsigned char c) {
  bool iexten = lflag(tty, IEXTEN);
  if (is(tty, c, VERASE)) {
    erase_one(tty);
    return true;
  }
  if (iexten && is(tty, c, VWERASE)) {
    while (tty.len > tty.canon_len && !is_word_char(tty.buf[tty.len - 1])) erase_one(tty);
    while (tty.len > tty.canon_len && is_word_char(tty.buf[tty.len - 1])) erase_one(tty);
    return true;
  }
  if (is(tty, c, VKILL)) {
    if (lflag(tty, ECHO) && !lflag(tty, ECHOKE)) {
      tty.len = tty.canon_len;
      echo_char(tty, c);
      if (lflag(tty, ECHOK)) output(tty, "\n", 1);
    } else {
      while (erase_one(tty)) {}
    }
    return true;
  }
  if (iexten && is(tty, c, VREPRINT)) {
    if (lflag(tty, ECHO)) {
      echo_char(tty, c);
      output(tty, "\n", 1);
      for (int i = tty.canon_len; i < tty.len; i++) echo_char(tty, (unsigned char)tty.buf[i]);
    }
    return true;
  }
  return false;
}

// One input byte (lock held); returns a signal to send, or 0.
int receive_one(Tty& tty, unsigned char c) {
  if (iflag(tty, ISTRIP)) c &= 0x7f;
  bool canon = lflag(tty, ICANON);
  if (tty.lnext) {
    tty.lnext = false;
    if (lflag(tty, ECHO)) {
      device_write(tty, "\b", 1);
      echo_char(tty, c);
    }
    put_byte(tty, (char)c, 0);
    return 0;
  }
  if (lflag(tty, ISIG)) {
    int sig = is(tty, c, VINTR) ? SIGINT : is(tty, c, VQUIT) ? SIGQUIT : is(tty, c, VSUSP) ? SIGTSTP : 0;
    if (sig) {
      if (!lflag(tty, NOFLSH)) flush_input_locked(tty);
      if (lflag(tty, ECHO)) echo_char(tty, c);
      return sig;
    }
  }
  if (c == '\r') {
    if (iflag(tty, IGNCR)) return 0;
    if (iflag(tty, ICRNL)) c = '\n';
  } else if (c == '\n' && iflag(tty, INLCR)) {
    c = '\r';
  }
  if (canon) {
    if (canon_edit(tty, c)) return 0;
    if (lflag(tty, IEXTEN) && is(tty, c, VLNEXT)) {
      tty.lnext = true;
      if (lflag(tty, ECHO) && lflag(tty, ECHOCTL)) output(tty, "^", 1);
      return 0;
    }
    if (is(tty, c, VEOF)) {
      put_byte(tty, 0, kMarkEof);
      return 0;
    }
    bool delim = c == '\n' || is(tty, c, VEOL) || (lflag(tty, IEXTEN) && is(tty, c, VEOL2));
    // Room for the delimiter stays free, as N_TTY keeps it.
    if (!delim && tty.len >= Tty::kBufSize - 1) return 0;
    if (lflag(tty, ECHO) || (c == '\n' && lflag(tty, ECHONL))) echo_char(tty, c);
    put_byte(tty, (char)c, delim ? kMarkDelim : 0);
    return 0;
  }
  if (lflag(tty, ECHO)) echo_char(tty, c);
  put_byte(tty, (char)c, 0);
  return 0;
}

// Bytes a read could take now (canonical: complete lines only).
int readable_locked(const Tty& tty) { return lflag(tty, ICANON) ? tty.canon_len : tty.len; }

void consume_locked(Tty& tty, int n) {
  memmove(tty.buf, tty.buf + n, (size_t)(tty.len - n));
  memmove(tty.mark, tty.mark + n, (size_t)(tty.len - n));
  tty.len -= n;
  tty.canon_len = tty.canon_len > n ? tty.canon_len - n : 0;
}

// Canonical read: one line at most; the VEOF byte ends it unseen.
long take_line_locked(Tty& tty, char* out, size_t n) {
  size_t got = 0;
  int i = 0;
  while (i < tty.canon_len && got < n) {
    if (tty.mark[i] == kMarkEof) {
      i++;
      break;
    }
    out[got++] = tty.buf[i];
    if (tty.mark[i++] == kMarkDelim) break;
  }
  consume_locked(tty, i);
  return (long)got;
}

long take_raw_locked(Tty& tty, char* out, size_t n) {
  size_t got = (size_t)tty.len < n ? (size_t)tty.len : n;
  memcpy(out, tty.buf, got);
  consume_locked(tty, (int)got);
  return (long)got;
}

// Sleeps until the input changes, a signal arrives, or `deadline_ns` (0:
// none) passes. Returns -ERESTARTSYS when interrupted.
long wait_input(Task& t, Tty& tty, uint32_t seq, uint64_t deadline_ns) {
  timespec rel{}, *ts = nullptr;
  if (deadline_ns) {
    uint64_t now = monotonic_ns();
    if (now >= deadline_ns) return 0;
    rel.tv_sec = (time_t)((deadline_ns - now) / 1000000000ull);
    rel.tv_nsec = (long)((deadline_ns - now) % 1000000000ull);
    ts = &rel;
  }
  long r = isys(t, SYS_futex, &tty.in_seq, FUTEX_WAIT, seq, ts, 0, 0);
  return r == -EINTR ? -ERESTARTSYS : 0;
}

}  // namespace

void tty_init(Tty& tty, Kernel& k, const TtyDriver* driver, void* driver_data) {
  tty.kernel = &k;
  tty.driver = driver;
  tty.driver_data = driver_data;
  tty.tio.c_iflag = ICRNL | IXON;
  tty.tio.c_oflag = OPOST | ONLCR;
  tty.tio.c_cflag = B38400 | CS8 | CREAD | HUPCL;
  tty.tio.c_lflag = ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN;
  static constexpr unsigned char kInitCc[] = {3, 28, 127, 21, 4, 0, 1, 0, 17, 19, 26, 0, 18, 15, 23, 22, 0};
  memcpy(tty.tio.c_cc, kInitCc, sizeof kInitCc);
}

size_t tty_receive_room(Tty& tty) {
  Guard g(tty.lock);
  if (lflag(tty, ICANON) && tty.canon_len == 0) return kUnlimited;
  return (size_t)(Tty::kBufSize - tty.len);
}

void tty_receive(Tty& tty, const char* data, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int sig, pgrp;
    {
      Guard g(tty.lock);
      Guard o(tty.out_lock);
      sig = receive_one(tty, (unsigned char)data[i]);
      pgrp = tty.pgrp;
    }
    if (sig && pgrp > 0) kill_pgrp(*tty.kernel, pgrp, sig, kFromOutside);
  }
  tty.in_seq.fetch_add(1, std::memory_order_release);
  futex_wake(&tty.in_seq, 1 << 30);
}

void tty_flush_input(Tty& tty) {
  {
    Guard g(tty.lock);
    flush_input_locked(tty);
  }
  tty.in_seq.fetch_add(1);
  futex_wake(&tty.in_seq, 1 << 30);
}

int tty_input_available(Tty& tty) {
  Guard g(tty.lock);
  if (!lflag(tty, ICANON)) return tty.len;
  int n = 0;
  for (int i = 0; i < tty.canon_len; i++) n += tty.mark[i] != kMarkEof;
  return n;
}

long tty_read(Task& t, Tty& tty, File& f, void* guest_buf, size_t n) {
  if (!access_ok(guest_buf, n)) return -EFAULT;
  if (tty.hung_up.load()) return 0;
  if (long r = tty_job_control(t, tty, SIGTTIN); r < 0) return r;
  if (n == 0) return 0;
  char bounce[Tty::kBufSize];
  if (n > sizeof bounce) n = sizeof bounce;
  size_t got = 0;
  uint64_t start = monotonic_ns(), last_byte = 0;
  for (;;) {
    uint32_t seq = tty.in_seq.load(std::memory_order_acquire);
    uint64_t deadline = 0;
    {
      Guard g(tty.lock);
      if (lflag(tty, ICANON)) {
        if (tty.canon_len > 0) {
          got = (size_t)take_line_locked(tty, bounce, n);
          break;
        }
      } else {
        int vmin = tty.tio.c_cc[VMIN], vtime = tty.tio.c_cc[VTIME];
        if (tty.len > 0) {
          got += (size_t)take_raw_locked(tty, bounce + got, n - got);
          last_byte = monotonic_ns();
        }
        size_t want = vmin < 1 ? 1 : (size_t)vmin;
        if (want > n) want = n;
        if (got >= want || (vmin == 0 && vtime == 0)) break;
        if (vtime) {
          uint64_t span = (uint64_t)vtime * 100000000ull;
          // MIN 0: one timer for the whole read; else an inter-byte timer.
          if (vmin == 0) deadline = start + span;
          else if (got) deadline = last_byte + span;
          if (deadline && monotonic_ns() >= deadline) break;
        }
      }
    }
    if (tty.hung_up.load()) break;
    if (f.flags & O_NONBLOCK) {
      if (got) break;
      return -EAGAIN;
    }
    long r = wait_input(t, tty, seq, deadline);
    if (r < 0) {
      if (got) break;
      return r;
    }
  }
  if (got && tty.driver->input_consumed) tty.driver->input_consumed(tty);
  if (got && copy_to_user(guest_buf, bounce, got) < 0) return -EFAULT;
  return (long)got;
}

long tty_write(Task& t, Tty& tty, File& f, const void* guest_buf, size_t n) {
  if (tty.hung_up.load()) return -EIO;
  if (tty.tio.c_lflag & TOSTOP) {
    if (long r = tty_job_control(t, tty, SIGTTOU); r < 0) return r;
  }
  char bounce[512];
  size_t done = 0;
  Guard w(tty.write_lock);
  while (done < n) {
    size_t chunk = n - done < sizeof bounce ? n - done : sizeof bounce;
    if (copy_from_user(bounce, (const char*)guest_buf + done, chunk) < 0) return done ? (long)done : -EFAULT;
    size_t taken = 0;
    while (taken < chunk) {
      uint32_t seq = tty.driver->room_seq(tty);
      {
        Guard o(tty.out_lock);
        taken += output_some(tty, bounce + taken, chunk - taken);
      }
      if (taken == chunk) break;
      // The device is full: wait for room, as n_tty_write does.
      long r = tty.hung_up.load() ? -EIO : (f.flags & O_NONBLOCK) ? -EAGAIN : tty.driver->wait_room(t, tty, seq);
      if (r < 0) return done + taken ? (long)(done + taken) : r;
    }
    done += chunk;
  }
  return (long)done;
}

void tty_write_kernel(Tty& tty, const char* s, size_t n) {
  Guard o(tty.out_lock);
  output(tty, s, n);
}

short tty_poll(Tty& tty, short events) {
  if (tty.hung_up.load())
    return (short)((POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDNORM | POLLWRNORM) & (events | POLLERR | POLLHUP));
  short r = 0;
  if (tty.driver->write_room(tty) > 0) r |= POLLOUT | POLLWRNORM;
  Guard g(tty.lock);
  if (readable_locked(tty) > 0) r |= POLLIN | POLLRDNORM;
  return (short)(r & (events | POLLERR | POLLHUP));
}

}  // namespace flatux
