#include "kernel/vfs/fown.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/signal/signal.h"
#include "kernel/task/process.h"
#include "kernel/vfs/file.h"

namespace flatux {
namespace {

// Does a target of this type and id exist? (tasks_lock held)
bool owner_exists_locked(Kernel& k, int type, int id) {
  if (type == F_OWNER_TID) return find_task_locked(k, id) != nullptr;
  if (type == F_OWNER_PID) return find_process_locked(k, id) != nullptr;
  for (Task* x : k.live_tasks())
    if (x && x->proc->pgid == id && x->proc->state == ProcState::kRunning) return true;
  return false;
}

long set_owner(Task& t, File& f, int type, int id) {
  if (id < 0) return -EINVAL;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  if (id && !owner_exists_locked(k, type, id)) return -ESRCH;
  f.owner_type = (uint8_t)type;
  f.owner_id = id;
  f.owner_set_by = t.proc->pid;
  return 0;
}

}  // namespace

long fcntl_owner(Task& t, File& f, int cmd, uint64_t arg) {
  switch (cmd) {
    case F_SETOWN: {
      int who = (int)arg;
      // A negative argument names a process group; INT_MIN has no positive twin.
      if (who == -2147483647 - 1) return -EINVAL;
      return who < 0 ? set_owner(t, f, F_OWNER_PGRP, -who) : set_owner(t, f, F_OWNER_PID, who);
    }
    case F_GETOWN:
      return f.owner_type == F_OWNER_PGRP ? -(long)f.owner_id : f.owner_id;
    case F_SETOWN_EX: {
      f_owner_ex o;
      if (copy_from_user(&o, (const void*)arg, sizeof o) < 0) return -EFAULT;
      if (o.type != F_OWNER_TID && o.type != F_OWNER_PID && o.type != F_OWNER_PGRP) return -EINVAL;
      return set_owner(t, f, o.type, o.pid);
    }
    case F_GETOWN_EX: {
      f_owner_ex o{};
      o.type = (__pid_type)f.owner_type;  // F_OWNER_TID (0) until one is set, as Linux
      o.pid = f.owner_id;
      return copy_to_user((void*)arg, &o, sizeof o) < 0 ? -EFAULT : 0;
    }
    case F_SETSIG:
      if (arg > (uint64_t)kNSig) return -EINVAL;
      f.owner_sig = (int)arg;
      return 0;
    case F_GETSIG:
      return f.owner_sig;
    default:
      return -EINVAL;
  }
}

void fown_set_caller(Task& t, File& f) {
  f.owner_type = F_OWNER_PID;
  f.owner_id = t.proc->pid;
  f.owner_set_by = t.proc->pid;
}

void send_sigio(Task& t, File& f, int fd, int reason, long band) {
  if (!f.owner_id) return;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  int sig = f.owner_sig ? f.owner_sig : SIGIO;
  si.si_signo = sig;
  if (f.owner_sig) {
    si.si_code = reason;
    si.si_band = band;
    si.si_fd = fd;
  } else {
    si.si_code = SI_KERNEL;
  }
  // Sent on behalf of whoever chose the owner (Linux checks that one's
  // right to signal it), not of the process whose action set it off.
  SigSender from{f.owner_set_by};
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  if (f.owner_type == F_OWNER_TID) {
    if (Task* x = find_task_locked(k, f.owner_id)) send_signal(*x->proc, x, sig, si, from);
  } else if (f.owner_type == F_OWNER_PID) {
    if (Process* p = find_process_locked(k, f.owner_id)) send_signal(*p, nullptr, sig, si, from);
  } else {
    for (Task* x : k.live_tasks())
      if (x && first_thread_of_process(*x) && x->proc->pgid == f.owner_id && x->proc->state == ProcState::kRunning)
        send_signal(*x->proc, nullptr, sig, si, from);
  }
}

}  // namespace flatux
