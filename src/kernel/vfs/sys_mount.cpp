// mount(2) and umount2(2): new mounts of registered filesystem types, bind
// and recursive bind mounts, remounts (of one mount with MS_BIND, of the
// filesystem without), and unmounting with EBUSY, MNT_DETACH and MNT_FORCE.
//
// Propagation types (MS_SHARED, MS_PRIVATE, MS_SLAVE, MS_UNBINDABLE, with
// MS_REC) and moving a mount (MS_MOVE) are the mount table's
// (vfs/mount_table.cpp). MNT_EXPIRE is not implemented.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kernel/mm/usercopy.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/new_fs.h"
#include "kernel/vfs/mount_ns.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/patharg.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

constexpr unsigned long kPerMountFlags =
    MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME;
constexpr unsigned long kPropagation = MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE;
constexpr size_t kDataMax = 4096;  // Linux copies one page of options

// CAP_SYS_ADMIN, which only root has here.
bool capable(Task& t) { return capable(t.proc->creds, CAP_SYS_ADMIN); }

// A resolved path: the mount showing it (one reference held), the path
// inside its filesystem, the canonical guest path, and what it is.
struct Target {
  Mount* mount = nullptr;
  char inner[kPathMax];
  char guest[kPathMax];
  struct stat st;
  ~Target() {
    if (mount) mount->put();
  }
  bool is_mount_root() const { return mount->is_root(inner); }
};

constexpr long kMagic = 1;  // the walk ended on a magic link: go on from its file's path

long resolve(Task& t, const char* path, bool follow, Target* out, int depth = 0) {
  char* real = nullptr;  // the magic link's file's path (kernel heap: off the stack)
  long r = vfs_walk(t, AT_FDCWD, path, follow, [&](Lookup& lk) -> long {
    Filesystem& fs = *lk.mount->fs;
    File* f = nullptr;
    if (follow && depth == 0 && fs.ops->magic_file && fs.ops->magic_file(t, fs, lk, &f) == 0) {
      // mount(…, "/proc/self/fd/N", …), as systemd mounts: Linux follows
      // the link to the open file's own place.
      bool deleted = false;
      real = static_cast<char*>(t.kernel->heap->alloc(kPathMax));
      long g = !real ? -ENOMEM : !f->mount ? -ENOENT : vfs_of(t).file_guest_path(t, *f, real, kPathMax, &deleted);
      f->put();
      if (g < 0) return g;
      return deleted ? -ENOENT : kMagic;
    }
    long r = fs.ops->stat(t, fs, lk, &out->st);
    if (r < 0) return r;
    if (!copy_cstr(out->inner, sizeof out->inner, lk.path)) return -ENAMETOOLONG;
    if ((r = inner_to_guest(*lk.mount, lk.path, out->guest, sizeof out->guest)) < 0) return r;
    lk.mount->get();
    out->mount = lk.mount;
    return 0;
  });
  if (r == kMagic) r = resolve(t, real, true, out, depth + 1);
  if (real) t.kernel->heap->free(real);
  return r;
}

long copy_string(uint64_t guest, char* buf, size_t cap, const char* fallback) {
  if (!guest) return copy_cstr(buf, cap, fallback) ? 0 : -EINVAL;
  long r = strncpy_from_user(buf, (const char*)guest, cap);
  return r == -ENAMETOOLONG ? (buf[cap - 1] = 0, 0) : r < 0 ? r : 0;
}

// The options /proc/mounts shows for fs: its own rendering, or the data.
void options_of(const FsType* type, Filesystem& fs, const char* data, char* out, size_t n) {
  if (type && type->show_options) type->show_options(fs, out, n);
  else copy_cstr(out, n, data ? data : "");
}

long new_mount(Task& t, Target& at, uint64_t guest_source, uint64_t guest_type, unsigned long flags,
               const char* data) {
  char type_name[64], source[256];
  long r = copy_string(guest_type, type_name, sizeof type_name, "");
  if (r < 0) return r;
  if ((r = copy_string(guest_source, source, sizeof source, "none")) < 0) return r;
  if (!t.kernel->vfs->find_type(type_name)) return -ENODEV;
  if (!S_ISDIR(at.st.st_mode)) return -ENOTDIR;
  return mount_new_fs(*t.kernel, type_name, at.guest, source, flags, data, &mnt_ns_of(t));
}

// One atomic change of m's per-mount flags (others read them meanwhile,
// and another remount may change the rest).
void set_per_mount_flags(Mount& m, unsigned long per_mount) {
  unsigned long old = m.flags_now();
  while (!m.flags.compare_exchange_weak(old, (old & ~kPerMountFlags) | per_mount, std::memory_order_relaxed)) {
  }
}

long remount(Task& t, Target& at, unsigned long flags, const char* data) {
  if (!at.is_mount_root()) return -EINVAL;
  Mount& m = *at.mount;
  unsigned long per_mount = flags & kPerMountFlags;
  if (flags & MS_BIND) {  // this mount's flags only
    set_per_mount_flags(m, per_mount);
    t.kernel->vfs->touch();
    return 0;
  }
  Filesystem& fs = *m.fs;
  if (m.type && m.type->remount) {
    long r = m.type->remount(fs, flags, data);
    if (r < 0) return r;
  }
  fs.readonly.store(flags & MS_RDONLY, std::memory_order_relaxed);
  set_per_mount_flags(m, per_mount);
  t.kernel->vfs->touch();
  if (m.type && m.type->show_options) {
    // Every mount of the filesystem shows its new options.
    char options[256];
    m.type->show_options(fs, options, sizeof options);
    t.kernel->vfs->for_each_mount([&](const Mount& x) {
      if (x.fs == &fs) copy_cstr(const_cast<Mount&>(x).options, sizeof x.options, options);
    });
  }
  return 0;
}

// Whether guest path p lies at or below dir.
bool under(std::string_view p, std::string_view dir) {
  if (dir == "/") return true;
  return starts_with(p, dir) && (p.size() == dir.size() || p[dir.size()] == '/');
}

long bind(Task& t, Target& at, uint64_t guest_source, bool recursive) {
  PathArg src(guest_source);
  if (!src.ok()) return src.err;
  Target from;
  long r = resolve(t, src.buf, true, &from);
  if (r < 0) return r;
  if (S_ISDIR(from.st.st_mode) != S_ISDIR(at.st.st_mode)) return -ENOTDIR;
  if (from.mount->ns != &mnt_ns_of(t)) return -EINVAL;  // another namespace's, or unmounted
  return t.kernel->vfs->bind(mnt_ns_of(t), at.guest, *from.mount, from.inner, from.guest, recursive);
}

// mount --move: the mount whose root `guest_source` names goes to `at`.
long move(Task& t, Target& at, uint64_t guest_source) {
  PathArg src(guest_source);
  if (!src.ok()) return src.err;
  Target from;
  long r = resolve(t, src.buf, true, &from);
  if (r < 0) return r;
  if (!from.is_mount_root() || from.mount->ns != &mnt_ns_of(t)) return -EINVAL;
  if (S_ISDIR(from.st.st_mode) != S_ISDIR(at.st.st_mode)) return -EINVAL;
  return t.kernel->vfs->move(from.mount, at.guest);
}

// mount --make-{shared,private,slave,unbindable}: exactly one of the four,
// with MS_REC at most (Linux's flags_to_propagation_type, after the
// per-mount flags that path_mount ignores here).
long change_type(Task& t, Target& at, unsigned long flags) {
  unsigned long type = flags & ~(MS_REC | MS_SILENT | kPerMountFlags);
  if (type != MS_SHARED && type != MS_PRIVATE && type != MS_SLAVE && type != MS_UNBINDABLE) return -EINVAL;
  if (!at.is_mount_root()) return -EINVAL;
  return t.kernel->vfs->set_propagation(at.mount, type, flags & MS_REC);
}

// Whether any process of namespace ns has its working directory or root
// inside the mount at `point` (which holds no files open, or the
// reference count says so).
bool in_use_as_dir(Kernel& k, const MountNs& ns, const char* point) {
  Guard g(k.tasks_lock);
  for (int i = 0; i < kMaxTasks; i++) {
    Task* task = k.tasks[i];
    if (!task || !task->proc || !task->proc->fs || &mnt_ns_of(*task->proc) != &ns) continue;
    FsContext& fc = *task->proc->fs;
    char root[kPathMax], cwd[kPathMax];
    Guard c(fc.lock);
    if (fc.root && guest_path_of(fc.root, root, sizeof root, nullptr) == 0 && under(root, point)) return true;
    if (fc.cwd && guest_path_of(fc.cwd, cwd, sizeof cwd, nullptr) == 0 && under(cwd, point)) return true;
  }
  return false;
}

}  // namespace

uint64_t mount_anon_dev(Kernel& k) {
  // Minors 64..255 of major 0 (st_dev is the minor itself there).
  uint64_t used[4] = {};
  k.vfs->for_each_mount([&](const Mount& m) {
    if (m.fs->dev < 256) used[m.fs->dev / 64] |= 1ull << (m.fs->dev % 64);
  });
  for (uint64_t d = 64; d < 256; d++)
    if (!(used[d / 64] & (1ull << (d % 64)))) return d;
  return 255;
}

long sys_mount(Task& t, SyscallArgs a) {
  unsigned long flags = a[3];
  if ((flags & MS_MGC_MSK) == MS_MGC_VAL) flags &= ~MS_MGC_MSK;  // the old magic number
  PathArg target(a[1]);
  if (!target.ok()) return target.err;
  Target at;
  long r = resolve(t, target.buf, true, &at);
  if (r < 0) return r;
  if (!capable(t)) return -EPERM;
  // Linux's check_mnt: not a mount of another namespace, or an unmounted
  // one (both reached through a descriptor).
  if (at.mount->ns != &mnt_ns_of(t)) return -EINVAL;
  char data[kDataMax];
  if ((r = copy_string(a[4], data, sizeof data, "")) < 0) return r;
  const char* opts = a[4] ? data : nullptr;
  if (flags & MS_REMOUNT) return remount(t, at, flags, opts);
  if (flags & MS_BIND) return bind(t, at, a[0], flags & MS_REC);
  if (flags & kPropagation) return change_type(t, at, flags);
  if (flags & MS_MOVE) return move(t, at, a[0]);
  return new_mount(t, at, a[0], a[2], flags, opts);
}

long sys_umount2(Task& t, SyscallArgs a) {
  uint64_t flags = a[1];
  if (flags & ~(uint64_t)(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW)) return -EINVAL;
  if ((flags & MNT_EXPIRE) && (flags & (MNT_FORCE | MNT_DETACH))) return -EINVAL;
  PathArg target(a[0]);
  if (!target.ok()) return target.err;
  Target at;
  long r = resolve(t, target.buf, !(flags & UMOUNT_NOFOLLOW), &at);
  if (r < 0) return r;
  if (!capable(t)) return -EPERM;
  if (!at.is_mount_root() || at.mount->ns != &mnt_ns_of(t)) return -EINVAL;
  if (flags & MNT_EXPIRE) return -ENOSYS;
  bool lazy = flags & MNT_DETACH;
  // MNT_FORCE cannot pry anything loose from these filesystems: like a
  // plain unmount, it fails while the mount is in use.
  if (!lazy && in_use_as_dir(*t.kernel, mnt_ns_of(t), at.guest)) return -EBUSY;
  return t.kernel->vfs->umount(at.mount, lazy);
}

long mount_new_fs(Kernel& k, const char* type_name, const char* guest_path, const char* source,
                  unsigned long flags, const char* data, MountNs* ns) {
  Vfs& vfs = *k.vfs;
  const FsType* type = vfs.find_type(type_name);
  if (!type) return -ENODEV;
  Filesystem* fs = nullptr;
  long r = type->mount(k, source, flags, data, &fs);
  if (r < 0) return r;
  fs->readonly = flags & MS_RDONLY;
  char options[256];
  options_of(type, *fs, data, options, sizeof options);
  r = vfs.mount(guest_path, fs, type, flags & kPerMountFlags, source, "/", options, ns);
  if (r < 0 && fs->mounts.load() == 0 && type->unmount) {
    fs_drop_dentries(*fs);
    type->unmount(*fs);
  }
  return r;
}

}  // namespace flatux

namespace flatux {

long mount_mask_path(Task& t, const char* path) {
  Target at;
  long r = resolve(t, path, true, &at);
  if (r == -ENOENT || r == -ENOTDIR) return 0;  // nothing there to hide
  if (r < 0) return r;
  if (S_ISDIR(at.st.st_mode))
    return mount_new_fs(*t.kernel, "tmpfs", at.guest, "tmpfs", MS_RDONLY, "", &mnt_ns_of(t));
  Target null;
  if ((r = resolve(t, "/dev/null", true, &null)) < 0) return r;
  return t.kernel->vfs->bind(mnt_ns_of(t), at.guest, *null.mount, null.inner, null.guest, false);
}

long mount_readonly_path(Task& t, const char* path) {
  Target at;
  long r = resolve(t, path, true, &at);
  if (r == -ENOENT || r == -ENOTDIR) return 0;
  if (r < 0) return r;
  if ((r = t.kernel->vfs->bind(mnt_ns_of(t), at.guest, *at.mount, at.inner, at.guest, true)) < 0) return r;
  Target copy;
  if ((r = resolve(t, at.guest, false, &copy)) < 0) return r;
  if (!copy.is_mount_root()) return -EINVAL;
  set_per_mount_flags(*copy.mount, (copy.mount->flags_now() & kPerMountFlags) | MS_RDONLY);
  t.kernel->vfs->touch();
  return 0;
}

}  // namespace flatux
