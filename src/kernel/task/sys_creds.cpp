// Changing the guest's own credentials: set[res][ug]id, setfs[ug]id,
// setgroups, capget and capset. The rules are Linux's: a process holding
// CAP_SETUID (CAP_SETGID) may set any user (group) id; others may only
// shuffle among their real, effective and saved ids. The filesystem ids
// follow the effective ones, and the capability sets follow the user ids
// (caps.h). They govern the guest's own permission checks only: the host
// process keeps its identity.
#include <linux/capability.h>
#include <linux/errno.h>

#include "kernel/mm/usercopy.h"
#include "kernel/syscalls.h"
#include "kernel/kernel.h"
#include "kernel/task/caps.h"
#include "kernel/task/process.h"

namespace flatux {
namespace {

constexpr uint32_t kKeep = 0xffffffffu;  // "-1": leave this id alone

// The fields of Creds for one kind of id (user or group), and the
// capability that lets a process set them freely.
struct IdSet {
  uint32_t* real;
  uint32_t* eff;
  uint32_t* saved;
  uint32_t* fs;
  int cap;
};

IdSet user_ids(Creds& c) { return {&c.uid, &c.euid, &c.suid, &c.fsuid, CAP_SETUID}; }
IdSet group_ids(Creds& c) { return {&c.gid, &c.egid, &c.sgid, &c.fsgid, CAP_SETGID}; }

bool is_current(const IdSet& s, uint32_t id) { return id == *s.real || id == *s.eff || id == *s.saved; }

long set_res(Creds& c, IdSet s, uint32_t r, uint32_t e, uint32_t sv) {
  if (!capable(c, s.cap)) {
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
  if (!capable(c, s.cap)) {
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
  if (capable(c, s.cap)) {
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
  if (capable(c, s.cap) || is_current(s, id) || id == *s.fs) *s.fs = id;
  return old;
}

// Which capability fix-up a change of ids makes (caps_after_setuid).
enum class Fixup { kNone, kUserIds, kFsUid };

// Linux's commit_creds: a change of the effective or filesystem ids drops
// the parent-death signal (PR_SET_PDEATHSIG) and makes the process not
// dumpable (suid_dumpable, 0), so that ptrace's rule and /proc guard it.
template <typename Change>
long changing_creds(Process& p, Fixup fixup, Change change) {
  Creds before = p.creds;
  long r = change(p.creds);
  Creds& c = p.creds;
  if (fixup != Fixup::kNone) caps_after_setuid(c, before, fixup == Fixup::kFsUid);
  if (c.euid != before.euid || c.egid != before.egid || c.fsuid != before.fsuid || c.fsgid != before.fsgid) {
    p.pdeath_signal = 0;
    p.dumpable = 0;
  }
  return r;
}

// The capget/capset header: how many 32-bit words of each set the
// caller's version carries; an unknown version is answered with the one
// the kernel prefers, written back.
long cap_words(uint64_t guest_hdr, __user_cap_header_struct* hdr, int* words) {
  if (copy_from_user(hdr, (const void*)guest_hdr, sizeof *hdr) < 0) return -EFAULT;
  switch (hdr->version) {
    case _LINUX_CAPABILITY_VERSION_1: *words = 1; return 0;
    case _LINUX_CAPABILITY_VERSION_2: case _LINUX_CAPABILITY_VERSION_3: *words = 2; return 0;
    default: {
      uint32_t v3 = _LINUX_CAPABILITY_VERSION_3;
      return copy_to_user((void*)guest_hdr, &v3, sizeof v3) < 0 ? -EFAULT : -EINVAL;
    }
  }
}

}  // namespace

long sys_setuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kUserIds, [&](Creds& c) { return set_one(c, user_ids(c), (uint32_t)a[0]); });
}
long sys_setgid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kNone, [&](Creds& c) { return set_one(c, group_ids(c), (uint32_t)a[0]); });
}
long sys_setreuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kUserIds,
                        [&](Creds& c) { return set_re(c, user_ids(c), (uint32_t)a[0], (uint32_t)a[1]); });
}
long sys_setregid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kNone,
                        [&](Creds& c) { return set_re(c, group_ids(c), (uint32_t)a[0], (uint32_t)a[1]); });
}
long sys_setresuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kUserIds, [&](Creds& c) {
    return set_res(c, user_ids(c), (uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2]);
  });
}
long sys_setresgid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kNone, [&](Creds& c) {
    return set_res(c, group_ids(c), (uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2]);
  });
}
long sys_setfsuid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kFsUid, [&](Creds& c) { return set_fs(c, user_ids(c), (uint32_t)a[0]); });
}
long sys_setfsgid(Task& t, SyscallArgs a) {
  return changing_creds(*t.proc, Fixup::kNone, [&](Creds& c) { return set_fs(c, group_ids(c), (uint32_t)a[0]); });
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
  if (!capable(c, CAP_SETGID)) return -EPERM;
  if (a[0] > 65536) return -EINVAL;  // NGROUPS_MAX
  if (a[0] > (uint64_t)Creds::kMaxGroups) return -ENOMEM;
  uint32_t groups[Creds::kMaxGroups];
  if (a[0] && copy_from_user(groups, (const void*)a[1], sizeof(uint32_t) * a[0]) < 0) return -EFAULT;
  for (uint64_t i = 0; i < a[0]; i++) c.groups[i] = groups[i];
  c.ngroups = (int)a[0];
  return 0;
}

// capget: the capability sets of the caller or of another process.
long sys_capget(Task& t, SyscallArgs a) {
  __user_cap_header_struct hdr;
  int words;
  long r = cap_words(a[0], &hdr, &words);
  if (!a[1]) return r == -EINVAL ? 0 : r;  // a probe of the preferred version
  if (r < 0) return r;
  if (hdr.pid < 0) return -EINVAL;
  Creds c = t.proc->creds;
  if (hdr.pid != 0 && hdr.pid != t.proc->pid) {
    Guard g(t.kernel->tasks_lock);
    Process* p = find_process_locked(*t.kernel, hdr.pid);
    if (!p) return -ESRCH;
    c = p->creds;
  }
  __user_cap_data_struct data[2];
  for (int i = 0; i < 2; i++) {
    data[i].effective = (uint32_t)(c.cap_effective >> (32 * i));
    data[i].permitted = (uint32_t)(c.cap_permitted >> (32 * i));
    data[i].inheritable = (uint32_t)(c.cap_inheritable >> (32 * i));
  }
  return copy_to_user((void*)a[1], data, sizeof data[0] * words) < 0 ? -EFAULT : 0;
}

// capset: the caller's own sets only (another pid: EPERM, as Linux since
// 2.6.25).
long sys_capset(Task& t, SyscallArgs a) {
  __user_cap_header_struct hdr;
  int words;
  if (long r = cap_words(a[0], &hdr, &words)) return r;
  if (hdr.pid != 0 && hdr.pid != t.proc->pid) return -EPERM;
  __user_cap_data_struct data[2] = {};
  if (copy_from_user(data, (const void*)a[1], sizeof data[0] * words) < 0) return -EFAULT;
  auto join = [](uint32_t lo, uint32_t hi) { return ((uint64_t)hi << 32 | lo) & kAllCaps; };
  return changing_creds(*t.proc, Fixup::kNone, [&](Creds& c) {
    return caps_set(c, join(data[0].effective, data[1].effective), join(data[0].inheritable, data[1].inheritable),
                    join(data[0].permitted, data[1].permitted));
  });
}

}  // namespace flatux
