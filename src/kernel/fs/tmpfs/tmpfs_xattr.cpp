// Extended attributes of tmpfs inodes, kept in kernel memory as Linux's
// simple_xattr list: the user., trusted. and security. namespaces (the VFS
// has checked the name and the caller's rights; system.* would be ACLs,
// which tmpfs does not keep here: EOPNOTSUPP). security.capability is what
// execve reads for file capabilities; a write or a change of owner drops
// it, as Linux's killpriv does.
#include <cstring>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/lib/kstring.h"
#include "kernel/task/caps.h"
#include "kernel/vfs/perm.h"

namespace flatux {

// One attribute: its name and value in one allocation.
struct TmpXattr {
  TmpXattr* next;
  uint32_t size;      // of the value
  uint16_t name_len;
  char name[];        // NUL-terminated, the value follows
  const char* value() const { return name + name_len + 1; }
  char* value() { return name + name_len + 1; }
};

namespace {

// What one inode's attributes may hold in all (names and values), so a
// guest cannot fill the kernel heap through one file.
constexpr size_t kInodeBudget = 1u << 20;

TmpXattr** find(TmpInode& n, const char* name) {
  TmpXattr** p = &n.xattrs;
  for (; *p; p = &(*p)->next)
    if (!strcmp((*p)->name, name)) return p;
  return p;
}

size_t bytes_of(const TmpXattr& x) { return x.name_len + 1 + x.size; }

size_t used(const TmpInode& n) {
  size_t s = 0;
  for (const TmpXattr* x = n.xattrs; x; x = x->next) s += bytes_of(*x);
  return s;
}

long get(TmpInode& n, XattrOp& op) {
  TmpXattr* x = *find(n, op.name);
  if (!x) return -ENODATA;
  if (op.size == 0) return x->size;
  if (op.size < x->size) return -ERANGE;
  memcpy(op.value, x->value(), x->size);
  return x->size;
}

long set(Tmpfs& fs, TmpInode& n, const XattrOp& op) {
  TmpXattr** at = find(n, op.name);
  if (*at && (op.flags & XATTR_CREATE)) return -EEXIST;
  if (!*at && (op.flags & XATTR_REPLACE)) return -ENODATA;
  size_t len = strlen(op.name);
  size_t now = used(n) - (*at ? bytes_of(**at) : 0);
  if (now + len + 1 + op.size > kInodeBudget) return -ENOSPC;
  auto* x = static_cast<TmpXattr*>(fs.heap->alloc(sizeof(TmpXattr) + len + 1 + op.size));
  if (!x) return -ENOMEM;
  x->size = (uint32_t)op.size;
  x->name_len = (uint16_t)len;
  memcpy(x->name, op.name, len + 1);
  if (op.size) memcpy(x->value(), op.value, op.size);
  // The new one takes the old one's place in the list.
  x->next = *at ? (*at)->next : nullptr;
  TmpXattr* old = *at;
  *at = x;
  fs.heap->free(old);
  return 0;
}

long remove(Tmpfs& fs, TmpInode& n, const char* name) {
  TmpXattr** at = find(n, name);
  if (!*at) return -ENODATA;
  TmpXattr* x = *at;
  *at = x->next;
  fs.heap->free(x);
  return 0;
}

// The names, each NUL-terminated; trusted.* only for CAP_SYS_ADMIN.
long list(Task& t, TmpInode& n, XattrOp& op) {
  bool trusted = capable(creds_of(t), CAP_SYS_ADMIN);
  size_t need = 0;
  for (TmpXattr* x = n.xattrs; x; x = x->next) {
    if (!trusted && starts_with(x->name, "trusted.")) continue;
    size_t len = x->name_len + 1u;
    if (op.size) {
      if (need + len > op.size) return -ERANGE;
      memcpy(static_cast<char*>(op.value) + need, x->name, len);
    }
    need += len;
  }
  return (long)need;
}

}  // namespace

long tmp_xattr(Task& t, Tmpfs& fs, TmpInode& n, XattrOp& op) {
  if (op.kind != XattrOp::kList && starts_with(op.name, "system.")) return -EOPNOTSUPP;
  switch (op.kind) {
    case XattrOp::kGet: return get(n, op);
    case XattrOp::kList: return list(t, n, op);
    case XattrOp::kSet:
    case XattrOp::kRemove: {
      long r = op.kind == XattrOp::kSet ? set(fs, n, op) : remove(fs, n, op.name);
      if (r == 0) n.ctime = tmp_now();
      return r;
    }
  }
  return -EINVAL;
}

void tmp_kill_file_caps(Tmpfs& fs, TmpInode& n) {
  if (n.xattrs) remove(fs, n, "security.capability");
}

void tmp_xattrs_free(Tmpfs& fs, TmpInode& n) {
  while (TmpXattr* x = n.xattrs) {
    n.xattrs = x->next;
    fs.heap->free(x);
  }
}

}  // namespace flatux
