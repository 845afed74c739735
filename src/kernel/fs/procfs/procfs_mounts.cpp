// /proc/mounts, /proc/PID/mounts and /proc/PID/mountinfo, generated from the
// mount table as Linux's show_vfsmnt and show_mountinfo write them: only
// the mounts inside the process's root, with paths as it sees them.
#include <cstring>
#include <sys/mount.h>

#include "kernel/fs/procfs/procfs_gen.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/vfs.h"

namespace flatux {
namespace {

// Spaces, tabs, newlines and backslashes in names become octal escapes,
// so the lines stay splittable on whitespace.
void escaped(SynthText& o, std::string_view s) {
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') o.ch('\\').oct((unsigned char)c, 3);
    else o.ch(c);
  }
}

// The flags of the mount itself (not its filesystem's), after "ro"/"rw".
void mount_flags(SynthText& o, unsigned long flags, bool readonly) {
  o.str(readonly ? "ro" : "rw");
  if (flags & MS_NOSUID) o.str(",nosuid");
  if (flags & MS_NODEV) o.str(",nodev");
  if (flags & MS_NOEXEC) o.str(",noexec");
  if (flags & MS_NOATIME) o.str(",noatime");
  if (flags & MS_NODIRATIME) o.str(",nodiratime");
  if (!(flags & (MS_NOATIME | MS_STRICTATIME))) o.str(",relatime");
}

void fs_options(SynthText& o, const Mount& m) {
  if (m.options[0]) o.ch(',').str(m.options);
}

// mountinfo's optional fields, as show_mountinfo writes them.
void propagation_fields(SynthText& o, const Mount& m) {
  if (m.group) o.str(" shared:").dec(m.group);
  if (m.master) o.str(" master:").dec(m.master);
  if (m.unbindable) o.str(" unbindable");
}

// Linux's split of a dev_t into major and minor.
uint64_t dev_major(uint64_t d) { return ((d >> 8) & 0xfff) | ((d >> 32) & ~0xfffull); }
uint64_t dev_minor(uint64_t d) { return (d & 0xff) | ((d >> 12) & ~0xffull); }

}  // namespace

void gen_mounts(SynthText& o, Kernel& k, const MountNs& ns, const char* root, bool mountinfo) {
  std::string_view r(root);
  k.vfs->for_each_mount_in(ns, [&](const Mount& m) {
    std::string_view point(m.path, m.len);
    std::string_view seen = strip_root(root, point);
    if (r.size() > 1 && seen.data() == point.data()) return;  // outside the process's root
    const char* type = m.type ? m.type->name : m.fs->ops->name;
    if (mountinfo) {
      o.dec(m.id).ch(' ').dec(m.parent_id).ch(' ').udec(dev_major(m.fs->dev)).ch(':');
      o.udec(dev_minor(m.fs->dev)).ch(' ');
      const char* prefix = m.fs->ops->shown_root ? m.fs->ops->shown_root(*m.fs) : nullptr;
      std::string_view inner(m.root, m.root_len);
      if (prefix && *prefix) escaped(o, prefix);
      if (!(prefix && *prefix) || inner != "/") escaped(o, inner);
      o.ch(' ');
      escaped(o, seen);
      o.ch(' ');
      unsigned long flags = m.flags_now();
      mount_flags(o, flags, flags & MS_RDONLY);
      propagation_fields(o, m);
      o.str(" - ").str(type).ch(' ');
      escaped(o, m.source);
      o.ch(' ').str(m.fs->readonly.load(std::memory_order_relaxed) ? "ro" : "rw");
      fs_options(o, m);
    } else {
      escaped(o, m.source);
      o.ch(' ');
      escaped(o, seen);
      o.ch(' ').str(type).ch(' ');
      unsigned long flags = m.flags_now();
      mount_flags(o, flags, (flags & MS_RDONLY) || m.fs->readonly.load(std::memory_order_relaxed));
      fs_options(o, m);
      o.str(" 0 0");
    }
    o.ch('\n');
  });
}

void gen_filesystems(SynthText& o, Kernel& k) {
  k.vfs->for_each_type([&](const FsType& type) {
    o.str(type.needs_device ? "\t" : "nodev\t").str(type.name).ch('\n');
  });
  o.str("nodev\tpipefs\n");
}

}  // namespace flatux
