// Capabilities: root's power split into the rights Linux names
// (capabilities(7)), held per process in five sets (Creds::cap_*), and the
// rules that move them: capset, the bounding and ambient sets and
// securebits (prctl), the fix-ups when a process changes its user ids, and
// the transition at execve (set-user-ID files and file capabilities). Every
// permission check in the kernel asks `capable` of the effective set; a
// check of who owns something stays a check of ids.
#pragma once
#include <cstddef>
#include <cstdint>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/stat.h>

#include "kernel/task/task.h"

namespace flatux {

static_assert(kAllCaps == (uint64_t{1} << (CAP_LAST_CAP + 1)) - 1, "kAllCaps covers CAP_0..CAP_LAST_CAP");

constexpr uint64_t cap_bit(int cap) { return uint64_t{1} << cap; }
constexpr bool known_cap(uint64_t cap) { return cap <= CAP_LAST_CAP; }

// Whether `c` may do what capability `cap` guards (its effective set).
inline bool capable(const Creds& c, int cap) { return (c.cap_effective & cap_bit(cap)) != 0; }
inline bool has_securebit(const Creds& c, int bit) { return (c.securebits >> bit) & 1; }

// Linux's ptrace_may_access with PTRACE_MODE_*_REALCREDS, as far as guest
// credentials go: a process may inspect itself; another one only with
// CAP_SYS_PTRACE, or when its real ids are all of the target's ids and the
// target is dumpable (pidfd_getfd, process_vm_readv/writev, kcmp).
bool ptrace_may_access(const Process& me, const Process& target);

// Linux's cap_task_fix_setuid after a change of the user ids by
// setuid/setreuid/setresuid (`fs_only`: by setfsuid), from `old`: leaving
// uid 0 everywhere drops permitted and effective (unless SECBIT_KEEP_CAPS)
// and ambient; euid leaving 0 clears effective, reaching 0 raises it to
// permitted; fsuid leaving or reaching 0 moves the filesystem capabilities.
void caps_after_setuid(Creds& c, const Creds& old, bool fs_only);

// capset(2)'s rules for the caller's own sets: EPERM when a set grows
// beyond what it may.
long caps_set(Creds& c, uint64_t effective, uint64_t inheritable, uint64_t permitted);

// The prctl options on capabilities: PR_CAPBSET_DROP, PR_CAP_AMBIENT,
// PR_SET_SECUREBITS, PR_SET_KEEPCAPS (their Linux errors).
long caps_bset_drop(Creds& c, uint64_t cap);
long caps_ambient(Creds& c, uint64_t op, uint64_t cap, uint64_t a4, uint64_t a5);
long caps_set_securebits(Creds& c, uint64_t bits);
long caps_set_keepcaps(Creds& c, uint64_t on);

// A file's capabilities (the security.capability extended attribute).
struct FileCaps {
  bool effective = false;
  uint64_t permitted = 0, inheritable = 0;
};
// Decodes a security.capability value (struct vfs_cap_data revision 1, 2
// or 3); -EINVAL when it is none of them. A revision-3 value for a root
// other than uid 0 does not apply here (no user namespaces): -ENODATA.
long parse_file_caps(const void* value, size_t size, FileCaps* out);
// Whether a security.capability value may be stored: revision 2 or 3 of
// exactly its size (Linux's validheader); -EINVAL otherwise.
long check_file_caps_value(const void* value, size_t size);

// What execve computes from the program file: its owner, group and mode,
// whether its mount honours set-id bits, and its capabilities (null: none).
struct ExecFileIdentity {
  uint32_t mode, uid, gid;
  bool nosuid;
  const FileCaps* caps;
};
// Linux's bprm_fill_uid and cap_bprm_creds_from_file: the credentials the
// new image runs with, into *out. *secure: an exec that raised privileges
// (AT_SECURE). -EPERM when file capabilities marked effective cannot all
// be granted.
long exec_creds(const Creds& old, const ExecFileIdentity& file, bool no_new_privs, Creds* out, bool* secure);

}  // namespace flatux
