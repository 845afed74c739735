// wait4 and waitid: zombies, stopped and continued children.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kernel/task/isys.h"
#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/task/exit.h"
#include "kernel/task/pidfd.h"
#include "kernel/vfs/fdref.h"

namespace flatux {
namespace {

constexpr int kWall = 0x40000000, kWclone = (int)0x80000000, kWnothread = 0x20000000;

struct WaitQuery {
  int idtype;     // P_ALL, P_PID, P_PGID
  int id;
  int options;
};

struct WaitResult {
  int pid = 0;
  int status = 0;   // wait4-style
  int code = 0;     // CLD_*
  int value = 0;    // exit code or signal
  uint32_t uid = 0;
  uint64_t cpu_ns = 0;
};

bool matches(const WaitQuery& q, const Process& self, const Process& c) {
  switch (q.idtype) {
    case P_PID: return c.pid == q.id;
    case P_PGID: return c.pgid == (q.id ? q.id : self.pgid);
    default: return true;
  }
}

void fill_exit(const Process& c, WaitResult* r) {
  r->pid = c.pid;
  r->status = c.wait_status;
  r->uid = c.creds.uid;
  r->cpu_ns = c.cpu_ns + c.children_cpu_ns;
  if (WIFSIGNALED(c.wait_status)) {
    r->code = WCOREDUMP(c.wait_status) ? CLD_DUMPED : CLD_KILLED;
    r->value = WTERMSIG(c.wait_status);
  } else {
    r->code = CLD_EXITED;
    r->value = WEXITSTATUS(c.wait_status);
  }
}

// One scan of the children. Returns 1 with *r filled, 0 if some child
// matches but has nothing to report, -ECHILD if none matches.
int scan_locked(Task& t, const WaitQuery& q, WaitResult* r) {
  Process& self = *t.proc;
  bool any = false;
  for (Process* c = self.children; c; c = c->sibling) {
    if (!matches(q, self, *c)) continue;
    // __WCLONE children are those reporting something other than SIGCHLD.
    bool clone_child = c->exit_signal != SIGCHLD;
    if (!(q.options & kWall) && clone_child != ((q.options & kWclone) != 0)) continue;
    any = true;
    if (c->state == ProcState::kZombie && (q.options & WEXITED)) {
      fill_exit(*c, r);
      if (!(q.options & WNOWAIT)) release_zombie(*c);
      return 1;
    }
    if (c->stopped && c->report_stopped && (q.options & WSTOPPED)) {
      r->pid = c->pid;
      r->status = c->wait_status;
      r->code = CLD_STOPPED;
      r->value = WSTOPSIG(c->wait_status);
      r->uid = c->creds.uid;
      if (!(q.options & WNOWAIT)) c->report_stopped = false;
      return 1;
    }
    if (c->report_continued && (q.options & WCONTINUED)) {
      r->pid = c->pid;
      r->status = 0xffff;
      r->code = CLD_CONTINUED;
      r->value = SIGCONT;
      r->uid = c->creds.uid;
      if (!(q.options & WNOWAIT)) c->report_continued = false;
      return 1;
    }
  }
  return any ? 0 : -ECHILD;
}

long do_wait(Task& t, const WaitQuery& q, WaitResult* r) {
  Kernel& k = *t.kernel;
  Process& self = *t.proc;
  for (;;) {
    uint32_t seq = self.child_event.load();
    int found;
    {
      Guard g(k.tasks_lock);
      found = scan_locked(t, q, r);
    }
    if (found != 0) return found < 0 ? found : r->pid;
    if (q.options & WNOHANG) return 0;
    long w = isys(t, SYS_futex, &self.child_event, FUTEX_WAIT, seq, 0);
    if (w == -EINTR) return -ERESTARTSYS;
  }
}

long put_rusage(uint64_t guest, uint64_t cpu_ns) {
  if (!guest) return 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  ru.ru_utime.tv_sec = (time_t)(cpu_ns / 1000000000ull);
  ru.ru_utime.tv_usec = (suseconds_t)(cpu_ns % 1000000000ull / 1000);
  return copy_to_user((void*)guest, &ru, sizeof ru);
}

}  // namespace

long sys_wait4(Task& t, SyscallArgs a) {
  int pid = (int)a[0];
  int options = (int)a[2];
  if (options & ~(WNOHANG | WUNTRACED | WCONTINUED | kWall | kWclone | kWnothread)) return -EINVAL;
  if (pid == INT32_MIN) return -ESRCH;
  WaitQuery q{P_ALL, 0, options | WEXITED};
  if (pid > 0) q = {P_PID, pid, q.options};
  else if (pid == 0) q = {P_PGID, 0, q.options};
  else if (pid < -1) q = {P_PGID, -pid, q.options};
  if (options & WUNTRACED) q.options |= WSTOPPED;
  // As on Linux, a bad result pointer is reported after the child is reaped.
  WaitResult r;
  long ret = do_wait(t, q, &r);
  if (ret <= 0) return ret;
  if (a[1] && put_user((void*)a[1], r.status) < 0) return -EFAULT;
  if (put_rusage(a[3], r.cpu_ns) < 0) return -EFAULT;
  return ret;
}

long sys_waitid(Task& t, SyscallArgs a) {
  int idtype = (int)a[0];
  int options = (int)a[3];
  if (options & ~(WNOHANG | WEXITED | WSTOPPED | WCONTINUED | WNOWAIT | kWall | kWclone | kWnothread))
    return -EINVAL;
  if (!(options & (WEXITED | WSTOPPED | WCONTINUED))) return -EINVAL;
  int id = (int)a[1];
  bool nonblock_pidfd = false;
  if (idtype == P_PIDFD) {  // the pidfd's process, as P_PID
    if (id < 0) return -EINVAL;
    FdRef f(t, (uint64_t)id);
    if (!f || !(id = pidfd_pid(*f))) return -EBADF;
    idtype = P_PID;
    nonblock_pidfd = f->flags & O_NONBLOCK;
  }
  if (idtype != P_ALL && idtype != P_PID && idtype != P_PGID) return -EINVAL;
  if ((idtype == P_PID && id <= 0) || (idtype == P_PGID && id < 0)) return -EINVAL;
  WaitQuery q{idtype, id, options | (nonblock_pidfd ? WNOHANG : 0)};
  WaitResult r;
  long ret = do_wait(t, q, &r);
  if (ret < 0) return ret;
  if (ret == 0 && nonblock_pidfd && !(options & WNOHANG)) return -EAGAIN;
  if (a[2]) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (ret > 0) {
      si.si_signo = SIGCHLD;
      si.si_code = r.code;
      si.si_pid = r.pid;
      si.si_uid = r.uid;
      si.si_status = r.value;
    }
    if (copy_to_user((void*)a[2], &si, sizeof si) < 0) return -EFAULT;
  }
  if (put_rusage(a[4], r.cpu_ns) < 0) return -EFAULT;
  return 0;
}

}  // namespace flatux
