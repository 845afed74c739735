#include "kernel/task/caps.h"

#include <cstring>
#include <linux/errno.h>
#include <linux/prctl.h>

namespace flatux {
namespace {

// The capabilities a filesystem check uses: what moves with fsuid 0.
constexpr uint64_t kFsCaps = cap_bit(CAP_CHOWN) | cap_bit(CAP_MKNOD) | cap_bit(CAP_DAC_OVERRIDE) |
                             cap_bit(CAP_DAC_READ_SEARCH) | cap_bit(CAP_FOWNER) | cap_bit(CAP_FSETID) |
                             cap_bit(CAP_MAC_OVERRIDE) | cap_bit(CAP_LINUX_IMMUTABLE);

constexpr uint32_t kSecureAllBits = SECBIT_NOROOT | SECBIT_NO_SETUID_FIXUP | SECBIT_KEEP_CAPS |
                                    SECBIT_NO_CAP_AMBIENT_RAISE;
constexpr uint32_t kSecureAllLocks = kSecureAllBits << 1;

bool subset(uint64_t a, uint64_t of) { return (a & ~of) == 0; }

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

}  // namespace

void caps_after_setuid(Creds& c, const Creds& old, bool fs_only) {
  if (has_securebit(old, SECURE_NO_SETUID_FIXUP)) return;
  if (fs_only) {
    if (old.fsuid == 0 && c.fsuid != 0) c.cap_effective &= ~kFsCaps;
    if (old.fsuid != 0 && c.fsuid == 0) c.cap_effective |= c.cap_permitted & kFsCaps;
    return;
  }
  bool had_root = old.uid == 0 || old.euid == 0 || old.suid == 0;
  bool has_root = c.uid == 0 || c.euid == 0 || c.suid == 0;
  if (had_root && !has_root) {
    if (!has_securebit(old, SECURE_KEEP_CAPS)) c.cap_permitted = c.cap_effective = 0;
    c.cap_ambient = 0;
  }
  if (old.euid == 0 && c.euid != 0) c.cap_effective = 0;
  if (old.euid != 0 && c.euid == 0) c.cap_effective = c.cap_permitted;
}

long caps_set(Creds& c, uint64_t effective, uint64_t inheritable, uint64_t permitted) {
  // Without CAP_SETPCAP a process may only pass on what it holds.
  if (!capable(c, CAP_SETPCAP) && !subset(inheritable, c.cap_inheritable | c.cap_permitted)) return -EPERM;
  if (!subset(inheritable, c.cap_inheritable | c.cap_bset)) return -EPERM;
  if (!subset(permitted, c.cap_permitted)) return -EPERM;
  if (!subset(effective, permitted)) return -EPERM;
  c.cap_effective = effective;
  c.cap_inheritable = inheritable;
  c.cap_permitted = permitted;
  c.cap_ambient &= permitted & inheritable;
  return 0;
}

long caps_bset_drop(Creds& c, uint64_t cap) {
  if (!capable(c, CAP_SETPCAP)) return -EPERM;
  if (!known_cap(cap)) return -EINVAL;
  c.cap_bset &= ~cap_bit((int)cap);
  return 0;
}

long caps_ambient(Creds& c, uint64_t op, uint64_t cap, uint64_t a4, uint64_t a5) {
  if (op == PR_CAP_AMBIENT_CLEAR_ALL) {
    if (cap || a4 || a5) return -EINVAL;
    c.cap_ambient = 0;
    return 0;
  }
  if (!known_cap(cap) || a4 || a5) return -EINVAL;
  uint64_t bit = cap_bit((int)cap);
  switch (op) {
    case PR_CAP_AMBIENT_IS_SET: return (c.cap_ambient & bit) ? 1 : 0;
    case PR_CAP_AMBIENT_RAISE:
      // Only what is both permitted and inheritable may be ambient.
      if (!(c.cap_permitted & bit) || !(c.cap_inheritable & bit) || has_securebit(c, SECURE_NO_CAP_AMBIENT_RAISE))
        return -EPERM;
      c.cap_ambient |= bit;
      return 0;
    case PR_CAP_AMBIENT_LOWER: c.cap_ambient &= ~bit; return 0;
    default: return -EINVAL;
  }
}

long caps_set_securebits(Creds& c, uint64_t bits) {
  uint32_t old = c.securebits;
  // A locked bit may not change, a lock may not be released, no unknown
  // bits, and CAP_SETPCAP is needed at all.
  if ((((old & kSecureAllLocks) >> 1) & (old ^ bits)) || (old & kSecureAllLocks & ~bits) ||
      (bits & ~(uint64_t)(kSecureAllBits | kSecureAllLocks)) || !capable(c, CAP_SETPCAP))
    return -EPERM;
  c.securebits = (uint32_t)bits;
  return 0;
}

long caps_set_keepcaps(Creds& c, uint64_t on) {
  if (on > 1) return -EINVAL;
  if (has_securebit(c, SECURE_KEEP_CAPS_LOCKED)) return -EPERM;
  if (on) c.securebits |= SECBIT_KEEP_CAPS;
  else c.securebits &= ~(uint32_t)SECBIT_KEEP_CAPS;
  return 0;
}

long parse_file_caps(const void* value, size_t size, FileCaps* out) {
  const uint8_t* p = static_cast<const uint8_t*>(value);
  if (size < XATTR_CAPS_SZ_1) return -EINVAL;
  uint32_t magic = le32(p);
  int words;
  switch (magic & VFS_CAP_REVISION_MASK) {
    case VFS_CAP_REVISION_1: words = 1; if (size != XATTR_CAPS_SZ_1) return -EINVAL; break;
    case VFS_CAP_REVISION_2: words = 2; if (size != XATTR_CAPS_SZ_2) return -EINVAL; break;
    case VFS_CAP_REVISION_3:
      words = 2;
      if (size != XATTR_CAPS_SZ_3) return -EINVAL;
      if (le32(p + XATTR_CAPS_SZ_2) != 0) return -ENODATA;  // another namespace's root
      break;
    default: return -EINVAL;
  }
  *out = FileCaps{};
  out->effective = magic & VFS_CAP_FLAGS_EFFECTIVE;
  for (int i = 0; i < words; i++) {
    out->permitted |= (uint64_t)le32(p + 4 + 8 * i) << (32 * i);
    out->inheritable |= (uint64_t)le32(p + 8 + 8 * i) << (32 * i);
  }
  out->permitted &= kAllCaps;
  out->inheritable &= kAllCaps;
  return 0;
}

long check_file_caps_value(const void* value, size_t size) {
  if (!value || size < 4) return -EINVAL;
  uint32_t rev = le32(static_cast<const uint8_t*>(value)) & VFS_CAP_REVISION_MASK;
  if ((rev == VFS_CAP_REVISION_2 && size == XATTR_CAPS_SZ_2) || (rev == VFS_CAP_REVISION_3 && size == XATTR_CAPS_SZ_3))
    return 0;
  return -EINVAL;
}

long exec_creds(const Creds& old, const ExecFileIdentity& file, bool no_new_privs, Creds* out, bool* secure) {
  Creds& c = *out;
  c = old;
  // Set-id bits (bprm_fill_uid): not on a nosuid mount, not under
  // no_new_privs; set-group-ID only with group execute.
  if (!file.nosuid && !no_new_privs) {
    if (file.mode & S_ISUID) c.euid = file.uid;
    if ((file.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) c.egid = file.gid;
  }
  // pP' = (pI & fI) | (fP & X) from the file's capabilities.
  c.cap_permitted = 0;
  bool effective = false, has_fcap = false;
  if (file.caps && !file.nosuid) {
    has_fcap = true;
    effective = file.caps->effective;
    c.cap_permitted = (old.cap_bset & file.caps->permitted) | (old.cap_inheritable & file.caps->inheritable);
    if (effective && !subset(file.caps->permitted, c.cap_permitted)) return -EPERM;
  }
  // Root's programs run with every capability the bounding set allows
  // (unless SECBIT_NOROOT); a set-user-ID-root file with file
  // capabilities gets only those.
  bool suid_root = c.uid != 0 && c.euid == 0;
  if (!has_securebit(old, SECURE_NOROOT) && !(has_fcap && suid_root)) {
    if (c.euid == 0 || c.uid == 0) c.cap_permitted = old.cap_bset | old.cap_inheritable;
    if (c.euid == 0) effective = true;
  }
  bool gained = !subset(c.cap_permitted, old.cap_permitted);
  bool is_setid = c.euid != old.uid || c.egid != old.gid;
  if ((is_setid || gained) && no_new_privs) {
    c.euid = c.uid;
    c.egid = c.gid;
    c.cap_permitted &= old.cap_permitted;
  }
  c.suid = c.fsuid = c.euid;
  c.sgid = c.fsgid = c.egid;
  if (has_fcap || is_setid) c.cap_ambient = 0;
  c.cap_permitted |= c.cap_ambient;
  c.cap_effective = effective ? c.cap_permitted : c.cap_ambient;
  *secure = is_setid || (c.uid != 0 && (effective || !subset(c.cap_permitted, c.cap_ambient)));
  c.securebits &= ~(uint32_t)SECBIT_KEEP_CAPS;
  return 0;
}

bool ptrace_may_access(const Process& me, const Process& target) {
  if (&me == &target) return true;
  const Creds& c = me.creds;
  const Creds& x = target.creds;
  if (capable(c, CAP_SYS_PTRACE)) return true;
  return c.uid == x.uid && c.uid == x.euid && c.uid == x.suid && c.gid == x.gid && c.gid == x.egid &&
         c.gid == x.sgid && target.dumpable;
}

}  // namespace flatux
