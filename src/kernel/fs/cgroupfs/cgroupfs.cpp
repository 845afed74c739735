#include "kernel/fs/cgroupfs/cgroupfs.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/cgroup/cgroup.h"
#include "kernel/cgroup/memcg.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/task/process.h"
#include "kernel/mm/usercopy.h"
#include "kernel/vfs/perm.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr uint64_t kCgroupfsDev = 0x1a;
constexpr uint32_t kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC

enum class Kind : uint8_t {
  kProcs, kThreads, kControllers, kSubtreeControl, kEvents, kType, kMaxDescendants, kMaxDepth, kStat, kKill,
  kFreeze, kCpuStat,
  kPidsMax, kPidsCurrent, kPidsEvents,
  kMemCurrent, kMemMax, kMemHigh, kMemPeak, kMemEvents, kMemStat, kMemOomGroup,
};

enum Where : uint8_t { kRootToo = 1, kNonRoot = 2 };

struct FileDef {
  const char* name;
  Kind kind;
  uint32_t mode;
  uint8_t where;       // kRootToo: every cgroup; else not the root
  uint32_t controller; // shown where the cgroup has it
};

constexpr FileDef kFiles[] = {
    {"cgroup.procs", Kind::kProcs, 0644, kRootToo, 0},
    {"cgroup.threads", Kind::kThreads, 0644, kRootToo, 0},
    {"cgroup.controllers", Kind::kControllers, 0444, kRootToo, 0},
    {"cgroup.subtree_control", Kind::kSubtreeControl, 0644, kRootToo, 0},
    {"cgroup.events", Kind::kEvents, 0444, kNonRoot, 0},
    {"cgroup.type", Kind::kType, 0644, kNonRoot, 0},
    {"cgroup.max.descendants", Kind::kMaxDescendants, 0644, kRootToo, 0},
    {"cgroup.max.depth", Kind::kMaxDepth, 0644, kRootToo, 0},
    {"cgroup.stat", Kind::kStat, 0444, kRootToo, 0},
    {"cgroup.kill", Kind::kKill, 0200, kNonRoot, 0},
    {"cgroup.freeze", Kind::kFreeze, 0644, kNonRoot, 0},
    {"cpu.stat", Kind::kCpuStat, 0444, kRootToo, 0},
    {"pids.max", Kind::kPidsMax, 0644, kNonRoot, kCgroupPids},
    {"pids.current", Kind::kPidsCurrent, 0444, kNonRoot, kCgroupPids},
    {"pids.events", Kind::kPidsEvents, 0444, kNonRoot, kCgroupPids},
    {"memory.current", Kind::kMemCurrent, 0444, kNonRoot, kCgroupMemory},
    {"memory.max", Kind::kMemMax, 0644, kNonRoot, kCgroupMemory},
    {"memory.high", Kind::kMemHigh, 0644, kNonRoot, kCgroupMemory},
    {"memory.peak", Kind::kMemPeak, 0444, kNonRoot, kCgroupMemory},
    {"memory.events", Kind::kMemEvents, 0444, kNonRoot, kCgroupMemory},
    {"memory.stat", Kind::kMemStat, 0444, kNonRoot, kCgroupMemory},
    {"memory.oom.group", Kind::kMemOomGroup, 0644, kNonRoot, kCgroupMemory},
};
constexpr int kNFiles = sizeof kFiles / sizeof kFiles[0];

bool shown(const FileDef& d, const Cgroup& cg) {
  if (!(d.where & kRootToo) && !cg.parent && !cg.delegated_root) return false;
  return !d.controller || (cgroup_controllers(cg) & d.controller);
}

uint64_t file_ino(const Cgroup& cg, int file) { return (cg.id << 5) | (uint64_t)(file + 1); }

// What an inner path names: a cgroup, or one of its files (file >= 0).
struct Node {
  Cgroup* cg = nullptr;
  int file = -1;
};

// (tasks_lock held) -ENOENT when nothing.
long resolve_locked(Kernel& k, const char* path, Node* n) {
  if ((n->cg = cgroup_find_locked(k, path))) return 0;
  std::string_view p(path);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  size_t slash = p.rfind('/');
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : head(p, slash);
  std::string_view name = slash == std::string_view::npos ? p : tail(p, slash + 1);
  Cgroup* cg = cgroup_find_locked(k, dir);
  if (!cg) return -ENOENT;
  for (int i = 0; i < kNFiles; i++)
    if (name == kFiles[i].name && shown(kFiles[i], *cg)) {
      n->cg = cg;
      n->file = i;
      return 0;
    }
  return -ENOENT;
}

void show_limit(SynthText& o, int64_t v) {
  if (v == kCgroupMax) o.str("max\n");
  else o.dec(v).ch('\n');
}

// "max" or a number >= 0 (trailing white space allowed).
bool parse_limit(std::string_view s, int64_t* out) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s == "max") {
    *out = kCgroupMax;
    return true;
  }
  uint64_t v;
  if (!parse_decimal(s, 18, &v)) return false;
  *out = (int64_t)v;
  return true;
}

// memory.max and memory.high: "max", or bytes with an optional K, M, G or
// T suffix (Linux's memparse), kept in whole pages as Linux keeps them.
bool parse_memory_limit(std::string_view s, int64_t* out) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  int shift = 0;
  if (!s.empty() && s != "max") {
    switch (s.back() | 0x20) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
    }
    if (shift) s.remove_suffix(1);
  }
  int64_t v;
  if (!parse_limit(s, &v)) return false;
  if (v == kCgroupMax) {
    *out = v;
    return true;
  }
  if (v > (kCgroupMax >> shift)) v = kCgroupMax >> shift;  // too large: as good as "max"
  v <<= shift;
  *out = v & ~int64_t{4095};
  return true;
}

void show_memory_locked(Kernel& k, Cgroup& cg, Kind kind, SynthText& o) {
  MemCounter& m = cg.mem;
  MemUsage u;
  switch (kind) {
    case Kind::kMemCurrent:
      memcg_usage_locked(k, cg, &u);
      o.dec(u.current()).ch('\n');
      return;
    case Kind::kMemMax: show_limit(o, m.max); return;
    case Kind::kMemHigh: show_limit(o, m.high); return;
    case Kind::kMemPeak: o.dec(m.peak).ch('\n'); return;
    case Kind::kMemEvents:
      o.str("low 0\nhigh ").udec(m.events_high).str("\nmax ").udec(m.events_max).str("\noom ").udec(m.events_oom);
      o.str("\noom_kill ").udec(m.events_oom_kill).str("\noom_group_kill ").udec(m.events_oom_group_kill).ch('\n');
      return;
    case Kind::kMemStat:
      // Linux's "file" is the page cache charged here: tmpfs and shared
      // memory (shmem); a host file's pages are the host's, mapped only.
      memcg_usage_locked(k, cg, &u);
      o.str("anon ").dec(u.anon).str("\nfile ").dec(u.shmem).str("\nshmem ").dec(u.shmem);
      o.str("\nfile_mapped ").dec(u.file_mapped).ch('\n');
      return;
    case Kind::kMemOomGroup: o.dec(m.oom_group ? 1 : 0).ch('\n'); return;
    default: return;
  }
}

void show_members_locked(Kernel& k, const Cgroup& cg, bool threads, SynthText& o) {
  for (Task* x : k.live_tasks()) {
    if (!x || x->proc->cgroup != &cg || !x->proc->cgroup_live || x->proc->state != ProcState::kRunning) continue;
    if (threads) o.dec(x->tid).ch('\n');
    else if (first_thread_of_process(*x)) o.dec(x->proc->pid).ch('\n');
  }
}

void show_locked(Kernel& k, Cgroup& cg, Kind kind, SynthText& o) {
  switch (kind) {
    case Kind::kProcs: show_members_locked(k, cg, false, o); return;
    case Kind::kThreads: show_members_locked(k, cg, true, o); return;
    case Kind::kControllers: cgroup_show_controllers(cgroup_controllers(cg), o); return;
    case Kind::kSubtreeControl: cgroup_show_controllers(cg.subtree_control, o); return;
    case Kind::kEvents:
      o.str("populated ").dec(cg.populated_below > 0 ? 1 : 0);
      o.str("\nfrozen ").dec(cgroup_frozen_locked(k, cg) ? 1 : 0).ch('\n');
      return;
    case Kind::kFreeze: o.dec(cg.freeze ? 1 : 0).ch('\n'); return;
    case Kind::kCpuStat: {
      uint64_t all, user;
      cgroup_cpu_ns_locked(k, cg, &all, &user);
      o.str("usage_usec ").udec(all / 1000).str("\nuser_usec ").udec(user / 1000);
      o.str("\nsystem_usec ").udec((all - user) / 1000).ch('\n');
      return;
    }
    case Kind::kType: o.str("domain\n"); return;
    case Kind::kMaxDescendants: show_limit(o, cg.max_descendants); return;
    case Kind::kMaxDepth: show_limit(o, cg.max_depth); return;
    case Kind::kStat: o.str("nr_descendants ").dec(cg.ndescendants).str("\nnr_dying_descendants 0\n"); return;
    case Kind::kKill: return;
    case Kind::kPidsMax: show_limit(o, cg.pids_max); return;
    case Kind::kPidsCurrent: o.dec(cg.pids_current).ch('\n'); return;
    case Kind::kPidsEvents: o.str("max ").dec(cg.pids_events_max).ch('\n'); return;
    default: show_memory_locked(k, cg, kind, o); return;
  }
}

long store_locked(Task& t, Cgroup& cg, Kind kind, std::string_view s) {
  Kernel& k = *t.kernel;
  int64_t v;
  switch (kind) {
    case Kind::kProcs:
      if (!parse_limit(s, &v) || v == kCgroupMax || v > INT32_MAX) return -EINVAL;
      return cgroup_move_locked(k, *t.proc, cg, (int)v);
    case Kind::kThreads:
    case Kind::kType:
      return -EOPNOTSUPP;  // threaded cgroups are not served: every cgroup is a domain
    case Kind::kSubtreeControl: return cgroup_set_subtree_control_locked(cg, s);
    case Kind::kMaxDescendants:
    case Kind::kMaxDepth:
      if (!parse_limit(s, &v) || (v != kCgroupMax && v > INT32_MAX)) return -EINVAL;
      (kind == Kind::kMaxDepth ? cg.max_depth : cg.max_descendants) = v;
      return 0;
    case Kind::kKill:
      if (!parse_limit(s, &v) || v != 1) return -ERANGE;  // only "1" (Linux)
      cgroup_kill_locked(k, cg, *t.proc);
      return 0;
    case Kind::kFreeze:
      if (!parse_limit(s, &v)) return -EINVAL;
      if (v > 1) return -ERANGE;  // Linux: 0 or 1
      cgroup_set_freeze_locked(k, cg, v == 1);
      return 0;
    case Kind::kPidsMax:
      if (!parse_limit(s, &v)) return -EINVAL;
      cg.pids_max = v;
      return 0;
    case Kind::kMemMax:
    case Kind::kMemHigh:
      // A max below what the cgroup holds now is met by its next look
      // (memcg.h), as Linux's OOM-kills at once when reclaim cannot help.
      if (!parse_memory_limit(s, &v)) return -EINVAL;
      (kind == Kind::kMemMax ? cg.mem.max : cg.mem.high) = v;
      memcg_limits_changed_locked(k);
      return 0;
    case Kind::kMemOomGroup:
      if (!parse_limit(s, &v)) return -EINVAL;
      if (v > 1) return -EINVAL;  // Linux: 0 or 1
      cg.mem.oom_group = v == 1;
      return 0;
    default: return -EINVAL;
  }
}

// --- an open interface file ------------------------------------------------
// priv_word: the cgroup's id; the file's index in kFiles in the top bits.

uint64_t pack(const Cgroup& cg, int file) { return cg.id | ((uint64_t)file << 56); }
int file_of(const File& f) { return (int)(f.priv_word >> 56); }
uint64_t id_of(const File& f) { return f.priv_word & ((1ull << 56) - 1); }

long file_pread(Task& t, File& f, void* buf, size_t n, int64_t off) {
  if (off < 0) return -EINVAL;
  Kernel& k = *t.kernel;
  SynthText text(k.heap);
  {
    Guard g(k.tasks_lock);
    Cgroup* cg = cgroup_by_id_locked(k, id_of(f));
    if (!cg) return -ENODEV;  // removed since it was opened
    show_locked(k, *cg, kFiles[file_of(f)].kind, text);
  }
  if (!text.ok()) return -ENOMEM;
  std::string_view v = text.view();
  if ((uint64_t)off >= v.size()) return 0;
  size_t take = v.size() - (size_t)off < n ? v.size() - (size_t)off : n;
  return copy_to_user(buf, v.data() + off, take) < 0 ? -EFAULT : (long)take;
}

// Each write is one whole value, as Linux's kernfs writes.
long file_pwrite(Task& t, File& f, const void* buf, size_t n, int64_t) {
  if (n == 0) return 0;
  char tmp[512];
  if (n >= sizeof tmp) return -E2BIG;
  if (copy_from_user(tmp, buf, n) < 0) return -EFAULT;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Cgroup* cg = cgroup_by_id_locked(k, id_of(f));
  if (!cg) return -ENODEV;
  long r = store_locked(t, *cg, kFiles[file_of(f)].kind, std::string_view(tmp, n));
  return r < 0 ? r : (long)n;
}

long file_lseek(Task&, File& f, int64_t off, int whence) { return file_seek_kept(f, off, whence, -1); }

long file_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFREG | kFiles[file_of(f)].mode, (id_of(f) << 5) | (uint64_t)(file_of(f) + 1), 0, kCgroupfsDev);
  return 0;
}

const FileOps kInterfaceFileOps = {
    .read = file_read_at_pos,
    .write = file_write_at_pos,
    .pread = file_pread,
    .pwrite = file_pwrite,
    .lseek = file_lseek,
    .stat = file_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = nullptr,
};

// --- the filesystem ---------------------------------------------------------

long cg_stat(Task& t, Filesystem&, Lookup& lk, struct stat* out) {
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Node n;
  if (long r = resolve_locked(k, lk.path, &n)) return r;
  if (n.file < 0) synth_stat(out, S_IFDIR | 0755, n.cg->id, 0, kCgroupfsDev);
  else synth_stat(out, S_IFREG | kFiles[n.file].mode, file_ino(*n.cg, n.file), 0, kCgroupfsDev);
  return 0;
}

File* list_locked(Kernel& k, Cgroup& cg) {
  int count = 0;
  for (Cgroup* c = cg.children; c; c = c->sibling) count++;
  auto* ents = static_cast<SynthDirent*>(k.heap->alloc(sizeof(SynthDirent) * (size_t)(count + kNFiles)));
  if (!ents) return nullptr;
  int n = 0;
  for (int i = 0; i < kNFiles; i++)
    if (shown(kFiles[i], cg)) {
      copy_cstr(ents[n].name, sizeof ents[n].name, kFiles[i].name);
      ents[n].type = DT_REG;
      ents[n++].ino = file_ino(cg, i);
    }
  for (Cgroup* c = cg.children; c; c = c->sibling) {
    if (!copy_cstr(ents[n].name, sizeof ents[n].name, c->name)) continue;  // longer than a listing holds
    ents[n].type = DT_DIR;
    ents[n++].ino = c->id;
  }
  File* f = synth_dir_file(k.heap, ents, n, S_IFDIR | 0755, cg.id, kCgroupfsDev);
  k.heap->free(ents);
  return f;
}

long cg_open(Task& t, Filesystem& fs, Lookup& lk, int flags, int, File** out) {
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Node n;
  if (long r = resolve_locked(k, lk.path, &n)) return (flags & O_CREAT) ? -EPERM : r;
  if ((flags & O_CREAT) && (flags & O_EXCL)) return -EEXIST;
  int acc = flags & O_ACCMODE;
  File* f;
  if (n.file < 0) {
    if (acc != O_RDONLY) return -EISDIR;
    f = list_locked(k, *n.cg);
  } else {
    if (flags & O_DIRECTORY) return -ENOTDIR;
    // The owner is root: its mode bits decide, for root too (as kernfs).
    uint32_t bits = creds_of(t).fsuid == 0 ? kFiles[n.file].mode >> 6 : kFiles[n.file].mode;
    bool want_read = acc != O_WRONLY, want_write = acc != O_RDONLY || (flags & O_TRUNC);
    if ((want_read && !(bits & 4)) || (want_write && !(bits & 2))) return -EACCES;
    f = file_alloc(k.heap, &kInterfaceFileOps, (uint32_t)flags & ~(O_CLOEXEC | O_CREAT | O_TRUNC | O_EXCL), -1);
    if (f) f->priv_word = pack(*n.cg, n.file);
  }
  if (!f) return -ENOMEM;
  f->fs = &fs;
  *out = f;
  return 0;
}

long cg_access(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  struct stat st;
  if (long r = cg_stat(t, fs, lk, &st)) return r;
  uint32_t bits = creds_of(t).fsuid == 0 ? (st.st_mode >> 6) & 7 : st.st_mode & 7;
  if (passes_dac(creds_of(t)) && S_ISDIR(st.st_mode)) return 0;
  if (((mode & R_OK) && !(bits & 4)) || ((mode & W_OK) && !(bits & 2)) || ((mode & X_OK) && !(bits & 1)))
    return -EACCES;
  return 0;
}

long cg_readlink(Task& t, Filesystem& fs, Lookup& lk, char*, size_t) {
  struct stat st;
  long r = cg_stat(t, fs, lk, &st);
  return r < 0 ? r : -EINVAL;
}

long cg_statfs(Task&, Filesystem&, Lookup&, struct statfs* out) {
  memset(out, 0, sizeof *out);
  out->f_type = kCgroup2Magic;
  out->f_bsize = 4096;
  out->f_namelen = 255;
  return 0;
}

// mkdir and rmdir: write permission on the folder, which root owns with
// mode 0755 (no delegation by chown yet).
long cg_mkdir(Task& t, Filesystem&, Lookup& lk, int) {
  if (long r = permission(creds_of(t), {S_IFDIR | 0755, 0, 0}, W_OK | X_OK)) return r;
  Kernel& k = *t.kernel;
  std::string_view p(lk.path);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  size_t slash = p.rfind('/');
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : head(p, slash);
  std::string_view name = slash == std::string_view::npos ? p : tail(p, slash + 1);
  Guard g(k.tasks_lock);
  Node n;
  if (resolve_locked(k, lk.path, &n) == 0) return -EEXIST;
  Cgroup* parent = cgroup_find_locked(k, dir);
  if (!parent) return -ENOENT;
  return cgroup_mkdir_locked(k, *parent, name);
}

long cg_rmdir(Task& t, Filesystem&, Lookup& lk) {
  if (long r = permission(creds_of(t), {S_IFDIR | 0755, 0, 0}, W_OK | X_OK)) return r;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Node n;
  if (long r = resolve_locked(k, lk.path, &n)) return r;
  if (n.file >= 0) return -ENOTDIR;
  return cgroup_rmdir_locked(k, *n.cg);
}

long cg_unlink(Task& t, Filesystem& fs, Lookup& lk) {
  struct stat st;
  if (long r = cg_stat(t, fs, lk, &st)) return r;
  return S_ISDIR(st.st_mode) ? -EISDIR : -EPERM;
}

const FsOps kCgroupFsOps = {
    .name = "cgroup2",
    .open = cg_open,
    .stat = cg_stat,
    .readlink = cg_readlink,
    .access = cg_access,
    .statfs = cg_statfs,
    .mkdir = cg_mkdir,
    .unlink = cg_unlink,
    .rmdir = cg_rmdir,
    .dcache_drop_unused = true,
};

long cgroup2_mount(Kernel& k, const char*, unsigned long, const char*, Filesystem** out) {
  Filesystem* fs = k.heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kCgroupFsOps;
  fs->dev = kCgroupfsDev;
  *out = fs;
  return 0;
}

}  // namespace

const FsType kCgroup2Type = {.name = "cgroup2", .mount = cgroup2_mount};

}  // namespace flatux
