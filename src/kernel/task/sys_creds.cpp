// Changing the guest's own credentials: set[res][ug]id, setfs[ug]id,
// setgroups, capget. The rules are Linux's: root (euid 0, holding
// CAP_SETUID/CAP_SETGID) may set anything; others may only shuffle among
// their real, effective and saved ids. The filesystem ids follow the
// effective ones. They govern the guest's own permission checks only: the
// host process keeps its identity.
#include <linux/capability.h>
#include <linux/errno.h>

#include "kernel/mm/usercopy.h"
#include "kernel/syscalls.h"
#include "kernel/kernel.h"
#include "kernel/task/process.h"

namespace flatux {
namespace {

constexpr uint32_t kKeep = 0xffffffffu;  // "-1": leave this id alone

// The fields of Creds for one kind of id (user or group).
struct IdSet {
  uint32_t* real;
  uint32_t* eff;
  uint32_t* saved;
  uint32_t* fs;
};

IdSet user_ids(Creds& c) { return {&c.uid, &c.euid, &c.suid, &c.fsuid}; }
IdSet group_ids(Creds& c) { return {&c.gid, &c.egid, &c.sgid, &c.fsgid}; }

bool privileged(const Creds& c) { return c.euid == 0; }

bool is_current(const IdSet& s, uint32_t id) { return id == *s.real || id == *s.eff || id == *s.saved; }

long set_res(Creds& c, IdSet s, uint32_t r, uint32_t e, uint32_t sv) {
  if (!privileged(c)) {
    for (uint32_t id : {r, e, sv})
      if (id != kKeep && !is_current(s, id)) return -EPERM;
  }
  if (r != kKeep) *s.real = r;
  if (e != kKeep) *s.eff = e;
  if (sv != kKeep) *s.saved = sv;
  *s.fs = *s.eff;
  return 0;
}

long set_re(Creds& c, IdSet s, uint32_t r, uint32_t e) {
  uint32_t old_real = *s.real;
  if (!privileged(c)) {
    if (r != kKeep && r != *s.real && r != *s.eff) return -EPERM;
    if (e != kKeep && !is_current(s, e)) return -EPERM;
  }
  if (r != kKeep) *s.real = r;
  if (e != kKeep) *s.eff = e;
  if (r != kKeep || (e != kKeep && e != old_real)) *s.saved = *s.eff;
  *s.fs = *s.eff;
  return 0;
}

long set_one(Creds& c, IdSet s, uint32_t id) {
  if (privileged(c)) {
    *s.real = *s.eff = *s.saved = *s.fs = id;
    return 0;
  }
  if (id != *s.real && id != *s.saved) return -EPERM;
  *s.eff = *s.fs = id;
  return 0;
}

// setfs[ug]id returns the old value whether or not it changed anything.
long set_fs(Creds& c, IdSet s, uint32_t id) {
  uint32_t old = *s.fs;
  if (privileged(c) || is_current(s, id) || id == *s.fs) *s.fs = id;
  return old;
}

// Linux's commit_creds: a change of the effective or filesystem ids drops
// the parent-death signal (PR_SET_PDEATHSIG).
template <typename Change>
long changing_creds(Process& p, Change change) {
  Creds before = p.creds;
  long r = change(p.creds);
  const Creds& c = p.creds;
  if (c.euid != before.euid || c.egid != before.egid || c.fsuid != before.fsuid || c.fsgid != before.fsgid)
    p.pdeath_signal = 0;
  return r;
}

}  // namespace

long sys_setuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_one(c, user_ids(c), (uint32_t)a[0]); });
}
long sys_setgid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_one(c, group_ids(c), (uint32_t)a[0]); });
}
long sys_setreuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_re(c, user_ids(c), (uint32_t)a[0], (uint32_t)a[1]); });
}
long sys_setregid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_re(c, group_ids(c), (uint32_t)a[0], (uint32_t)a[1]); });
}
long sys_setresuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_res(c, user_ids(c), (uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2]); });
}
long sys_setresgid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_res(c, group_ids(c), (uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2]); });
}
long sys_setfsuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_fs(c, user_ids(c), (uint32_t)a[0]); });
}
long sys_setfsgid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, [&](Creds& c) { return set_fs(c, group_ids(c), (uint32_t)a[0]); });
}

long sys_getgroups(Task& t, SyscallArgs a) {
  const Creds& c = t.proc->creds;
  int size = (int)a[0];
  if (size < 0) return -EINVAL;
  if (size == 0) return c.ngroups;
  if (size < c.ngroups) return -EINVAL;
  if (copy_to_user((void*)a[1], c.groups, sizeof(uint32_t) * c.ngroups) < 0) return -EFAULT;
  return c.ngroups;
}

long sys_setgroups(Task& t, SyscallArgs a) {
  Creds& c = t.proc->creds;
  if (!privileged(c)) return -EPERM;
  if (a[0] > 65536) return -EINVAL;  // NGROUPS_MAX
  if (a[0] > (uint64_t)Creds::kMaxGroups) return -ENOMEM;
  uint32_t groups[Creds::kMaxGroups];
  if (a[0] && copy_from_user(groups, (const void*)a[1], sizeof(uint32_t) * a[0]) < 0) return -EFAULT;
  for (uint64_t i = 0; i < a[0]; i++) c.groups[i] = groups[i];
  c.ngroups = (int)a[0];
  return 0;
}

// capget: root holds every capability, anyone else none (the effective
// set follows euid as Linux's does when a process drops root).
long sys_capget(Task& t, SyscallArgs a) {
  __user_cap_header_struct hdr;
  if (copy_from_user(&hdr, (const void*)a[0], sizeof hdr) < 0) return -EFAULT;
  int words;
  switch (hdr.version) {
    case _LINUX_CAPABILITY_VERSION_1: words = 1; break;
    case _LINUX_CAPABILITY_VERSION_2: case _LINUX_CAPABILITY_VERSION_3: words = 2; break;
    default: {
      uint32_t v3 = _LINUX_CAPABILITY_VERSION_3;
      if (copy_to_user((void*)a[0], &v3, sizeof v3) < 0) return -EFAULT;
      return a[1] ? -EINVAL : 0;
    }
  }
  if (hdr.pid < 0) return -EINVAL;
  if (hdr.pid != 0 && hdr.pid != t.proc->pid) {
    Guard g(t.kernel->tasks_lock);
    if (!find_process_locked(*t.kernel, hdr.pid)) return -ESRCH;
  }
  if (!a[1]) return 0;
  __user_cap_data_struct data[2] = {};
  if (t.proc->creds.euid == 0) {
    data[0].effective = data[0].permitted = 0xffffffffu;
    data[1].effective = data[1].permitted = (1u << (CAP_LAST_CAP - 31)) - 1;
  }
  return copy_to_user((void*)a[1], data, sizeof data[0] * words) < 0 ? -EFAULT : 0;
}

}  // namespace flatux
