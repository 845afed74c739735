// Terminal ioctls and job control: termios, window size, the controlling
// terminal and its foreground process group (after Linux's tty_io.c,
// tty_jobctrl.c and tty_ioctl.c).
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/tty.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/task/process.h"
#include "kernel/tty/tty.h"
#include "kernel/tty/tty_internal.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

bool pgrp_exists_in_session_locked(Kernel& k, int pgrp, int sid) {
  for (Task* x : k.live_tasks())
    if (x && x->proc->pgid == pgrp && x->proc->sid == sid && x->proc->state == ProcState::kRunning)
      return true;
  return false;
}

bool session_alive_locked(Kernel& k, int sid) {
  for (Task* x : k.live_tasks())
    if (x && x->proc->sid == sid && x->proc->state == ProcState::kRunning) return true;
  return false;
}

// POSIX: a group is orphaned when no member has a parent in another group
// of the same session (nobody left to resume it after a stop).
bool pgrp_orphaned_locked(Kernel& k, int pgrp) {
  for (Task* x : k.live_tasks()) {
    if (!x || x->proc->pgid != pgrp || x->proc->state != ProcState::kRunning) continue;
    Process* parent = x->proc->parent;
    if (parent && parent->pgid != pgrp && parent->sid == x->proc->sid) return false;
  }
  return true;
}

bool sig_ignored_or_blocked(Task& t, int sig) {
  Guard g(t.proc->siglock);
  if (t.sigmask & sigbit(sig)) return true;
  return t.proc->sighand->action[sig - 1].handler == (uint64_t)SIG_IGN;
}

// tty_check_change: a background process changing the terminal.
long check_change(Task& t, Tty& tty) { return tty_job_control(t, tty, SIGTTOU); }

// The caller's controlling terminal must be this one.
bool is_ctty(Task& t, Tty& tty) { return t.proc->ctty == &tty; }

long set_termios(Task& t, Tty& tty, unsigned cmd, uint64_t arg) {
  if (long r = check_change(t, tty); r < 0) return r;
  struct termios nt, old;
  if (copy_from_user(&nt, (const void*)arg, sizeof nt) < 0) return -EFAULT;
  {
    Guard g(tty.lock);
    old = tty.tio;
    bool was_canon = tty.tio.c_lflag & ICANON;
    tty.tio = nt;
    if (cmd == TCSETSF) {
      tty.len = tty.canon_len = 0;
    } else if (!was_canon && (nt.c_lflag & ICANON) && tty.len > 0) {
      // What raw mode left unread becomes a line of its own, as N_TTY does.
      tty.mark[tty.len - 1] = kMarkDelim;
      tty.canon_len = tty.len;
    } else if (was_canon && !(nt.c_lflag & ICANON)) {
      tty.canon_len = 0;
    }
    tty.lnext = false;
  }
  tty.in_seq.fetch_add(1);
  futex_wake(&tty.in_seq, 1 << 30);
  if (tty.driver->termios_changed) tty.driver->termios_changed(tty, old);
  if (tty.driver->input_consumed) tty.driver->input_consumed(tty);  // the room may have changed
  return 0;
}

long set_pgrp(Task& t, Tty& tty, uint64_t arg) {
  if (long r = check_change(t, tty); r < 0) return r;
  int pgrp;
  if (get_user(pgrp, (const void*)arg) < 0) return -EFAULT;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  if (!is_ctty(t, tty) || tty.session != t.proc->sid) return -ENOTTY;
  if (pgrp < 0) return -EINVAL;
  if (!pgrp_exists_in_session_locked(k, pgrp, t.proc->sid)) {
    for (Task* x : k.live_tasks())
      if (x && x->proc->pgid == pgrp) return -EPERM;  // a group of another session
    return -ESRCH;
  }
  Guard l(tty.lock);
  tty.pgrp = pgrp;
  return 0;
}

long set_ctty(Task& t, Tty& tty, uint64_t arg) {
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Process& p = *t.proc;
  if (tty.hung_up.load()) return -EIO;  // set under tasks_lock: no ctty is taken after a hangup
  if (p.ctty == &tty) return 0;
  if (p.pid != p.sid || p.ctty) return -EPERM;
  Guard l(tty.lock);
  if (tty.session && tty.session != p.sid && session_alive_locked(k, tty.session)) {
    // Stealing needs arg 1 and CAP_SYS_ADMIN (every guest is root).
    if (arg != 1 || !capable(p.creds, CAP_SYS_ADMIN)) return -EPERM;
    for (Task* x : k.live_tasks())
      if (x && x->proc->sid == tty.session && x->proc->ctty == &tty) x->proc->ctty = nullptr;
  }
  p.ctty = &tty;
  tty.session = p.sid;
  tty.pgrp = p.pgid;
  return 0;
}

// TIOCNOTTY: a session leader gives the terminal up for the whole session
// (its foreground group gets SIGHUP and SIGCONT); anyone else just leaves.
long drop_ctty(Task& t, Tty& tty) {
  Kernel& k = *t.kernel;
  int fg = 0;
  {
    Guard g(k.tasks_lock);
    Process& p = *t.proc;
    if (p.ctty != &tty) return -ENOTTY;
    if (p.pid != p.sid) {
      p.ctty = nullptr;
      return 0;
    }
    for (Task* x : k.live_tasks())
      if (x && x->proc->sid == p.sid) x->proc->ctty = nullptr;
    Guard l(tty.lock);
    fg = tty.pgrp;
    tty.session = tty.pgrp = 0;
  }
  if (fg > 0) {
    kill_pgrp(k, fg, SIGHUP, sent_by(*t.proc));
    kill_pgrp(k, fg, SIGCONT, sent_by(*t.proc));
  }
  return 0;
}

long flush(Task& t, Tty& tty, uint64_t arg) {
  if (long r = check_change(t, tty); r < 0) return r;
  if (arg != TCIFLUSH && arg != TCOFLUSH && arg != TCIOFLUSH) return -EINVAL;
  if (arg != TCOFLUSH) tty_flush_input(tty);
  // Output the device has queued (a pty master's unread bytes) is the
  // driver's; the console writes through.
  if (tty.driver->flushed) tty.driver->flushed(tty, (int)arg);
  if (arg != TCOFLUSH && tty.driver->input_consumed) tty.driver->input_consumed(tty);
  return 0;
}

}  // namespace

// tty_open's controlling-terminal rule: a session leader without one gets
// the terminal it opens, if no session has it yet.
void tty_open_ctty(Task& t, Tty& tty) {
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Process& p = *t.proc;
  if (p.pid != p.sid || p.ctty || tty.hung_up.load()) return;
  Guard l(tty.lock);
  if (tty.session) return;
  p.ctty = &tty;
  tty.session = p.sid;
  tty.pgrp = p.pgid;
}

void kill_pgrp_locked(Kernel& k, int pgrp, int sig, SigSender from) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = SI_KERNEL;
  send_signal_pgrp_locked(k, pgrp, sig, si, from);
}

void kill_pgrp(Kernel& k, int pgrp, int sig, SigSender from) {
  Guard g(k.tasks_lock);
  kill_pgrp_locked(k, pgrp, sig, from);
}

long tty_job_control(Task& t, Tty& tty, int sig) {
  Kernel& k = *t.kernel;
  int pgid;
  {
    Guard g(k.tasks_lock);
    if (t.proc->ctty != &tty) return 0;  // not our controlling terminal: no job control
    Guard l(tty.lock);
    pgid = t.proc->pgid;
    if (!tty.pgrp || pgid == tty.pgrp) return 0;
    if (sig_ignored_or_blocked(t, sig)) return sig == SIGTTIN ? -EIO : 0;
    if (pgrp_orphaned_locked(k, pgid)) return -EIO;
  }
  kill_pgrp(k, pgid, sig, sent_by(*t.proc));
  return -ERESTARTSYS;
}

// Linux's __tty_hangup for a pty slave (tty_signal_session_leader).
void tty_hangup(Tty& tty) {
  Kernel& k = *tty.kernel;
  {
    Guard g(k.tasks_lock);
    tty.hung_up.store(true);
    int sid;
    {
      Guard l(tty.lock);
      sid = tty.session;
      tty.session = tty.pgrp = 0;
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_code = SI_KERNEL;
    for (Task* x : k.live_tasks()) {
      if (!x || !first_thread_of_process(*x) || x->proc->ctty != &tty) continue;
      x->proc->ctty = nullptr;
      if (x->proc->pid != sid || x->proc->state != ProcState::kRunning) continue;
      si.si_signo = SIGHUP;
      send_signal(*x->proc, nullptr, SIGHUP, si, kFromOutside);
      si.si_signo = SIGCONT;
      send_signal(*x->proc, nullptr, SIGCONT, si, kFromOutside);
    }
  }
  tty.in_seq.fetch_add(1);
  futex_wake(&tty.in_seq, 1 << 30);
}

void tty_session_leader_exit_locked(Process& leader) {
  Tty* tty = leader.ctty;
  if (!tty || leader.pid != leader.sid) return;
  Kernel& k = *leader.kernel;
  int fg;
  {
    Guard l(tty->lock);
    if (tty->session != leader.sid) return;
    fg = tty->pgrp;
    tty->session = tty->pgrp = 0;
  }
  for (Task* x : k.live_tasks())
    if (x && x->proc->sid == leader.sid && x->proc->ctty == tty) x->proc->ctty = nullptr;
  leader.ctty = nullptr;
  if (fg > 0) kill_pgrp_locked(k, fg, SIGHUP, sent_by(leader));
}

void tty_set_winsize(Tty& tty, const struct winsize& ws) {
  int fg;
  {
    Guard g(tty.lock);
    if (!memcmp(&tty.ws, &ws, sizeof ws)) return;
    tty.ws = ws;
    fg = tty.pgrp;
  }
  if (fg > 0) kill_pgrp(*tty.kernel, fg, SIGWINCH, kFromOutside);
}

long tty_ioctl(Task& t, Tty& tty, File&, unsigned cmd, uint64_t arg) {
  if (tty.hung_up.load()) return cmd == TIOCSPGRP ? -ENOTTY : -EIO;
  switch (cmd) {
    case TCGETS: {
      struct termios cur;
      {
        Guard g(tty.lock);
        cur = tty.tio;
      }
      return copy_to_user((void*)arg, &cur, sizeof cur) < 0 ? -EFAULT : 0;
    }
    case TCSETS: case TCSETSW: case TCSETSF:
      return set_termios(t, tty, cmd, arg);
    case TIOCGWINSZ: {
      struct winsize ws;
      {
        Guard g(tty.lock);
        ws = tty.ws;
      }
      return copy_to_user((void*)arg, &ws, sizeof ws) < 0 ? -EFAULT : 0;
    }
    case TIOCSWINSZ: {
      struct winsize ws;
      if (copy_from_user(&ws, (const void*)arg, sizeof ws) < 0) return -EFAULT;
      tty_set_winsize(tty, ws);
      return 0;
    }
    case TIOCGPGRP: case TIOCGSID: {
      int v;
      {
        Guard g(t.kernel->tasks_lock);
        if (!is_ctty(t, tty)) return -ENOTTY;
        Guard l(tty.lock);
        v = cmd == TIOCGPGRP ? tty.pgrp : tty.session;
      }
      if (cmd == TIOCGSID && v == 0) return -ENOTTY;
      return put_user((void*)arg, v) < 0 ? -EFAULT : 0;
    }
    case TIOCSPGRP: return set_pgrp(t, tty, arg);
    case TIOCSCTTY: return set_ctty(t, tty, arg);
    case TIOCNOTTY: return drop_ctty(t, tty);
    case FIONREAD: return put_user((void*)arg, tty_input_available(tty)) < 0 ? -EFAULT : 0;
    case TIOCOUTQ: return put_user((void*)arg, 0) < 0 ? -EFAULT : 0;  // written through
    case TCFLSH: return flush(t, tty, arg);
    case TCSBRK: case TCSBRKP: return 0;  // drained: every write reached the device
    case TIOCGETD: return put_user((void*)arg, (int)N_TTY) < 0 ? -EFAULT : 0;
    default: return -ENOTTY;
  }
}

}  // namespace flatux
