// /proc/sys: one table of the kernel's tunables. Each file shows its value
// when read and, where Linux lets root change it, parses a write the way
// Linux's proc_dointvec family does (whitespace-separated numbers, EINVAL
// out of range). Everything changed here is this kernel instance's.
#include "kernel/sys/sysctl.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>

#include "host/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/vfs/synth.h"

namespace flatux {

uint32_t round_pipe_size(uint64_t size) {
  if (size > (1u << 31)) return 0;
  if (size < 4096) return 4096;
  uint64_t p = 4096;
  while (p < size) p <<= 1;
  return (uint32_t)p;
}

namespace {

// Parses up to `max` integers (decimal, optional sign) separated by white
// space; the count, or -EINVAL for anything else.
long parse_ints(std::string_view s, int64_t* out, int max) {
  int n = 0;
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
  for (;;) {
    while (i < s.size() && space(s[i])) i++;
    if (i >= s.size() || s[i] == 0) break;
    if (n == max) return -EINVAL;
    bool neg = s[i] == '-';
    if (neg || s[i] == '+') i++;
    size_t start = i;
    uint64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (v > (~0ull - 9) / 10) return -EINVAL;
      v = v * 10 + (uint64_t)(s[i++] - '0');
    }
    if (i == start || (i < s.size() && !space(s[i]) && s[i] != 0)) return -EINVAL;
    out[n++] = neg ? -(int64_t)v : (int64_t)v;
  }
  return n ? n : -EINVAL;
}

long parse_one(std::string_view s, int64_t min, int64_t max, int64_t* out) {
  long n = parse_ints(s, out, 1);
  if (n < 0) return n;
  return *out < min || *out > max ? -EINVAL : 0;
}

// A string value: up to the first newline, at most cap-1 bytes.
void store_string(std::string_view s, char* dst, size_t cap) {
  size_t n = 0;
  while (n < s.size() && n + 1 < cap && s[n] != '\n' && s[n] != 0) n++;
  memcpy(dst, s.data(), n);
  dst[n] = 0;
}

bool root(Task& t) { return t.proc->creds.euid == 0; }

// --- the entries' show and store ------------------------------------------

void show_hostname(Kernel& k, SynthText& o) {
  Guard g(k.uts.lock);
  o.str(k.uts.nodename).ch('\n');
}
long store_hostname(Task& t, std::string_view s) {
  UtsNames& u = t.kernel->uts;
  Guard g(u.lock);
  store_string(s, u.nodename, sizeof u.nodename);
  return 0;
}
void show_domainname(Kernel& k, SynthText& o) {
  Guard g(k.uts.lock);
  o.str(k.uts.domainname).ch('\n');
}
long store_domainname(Task& t, std::string_view s) {
  UtsNames& u = t.kernel->uts;
  Guard g(u.lock);
  store_string(s, u.domainname, sizeof u.domainname);
  return 0;
}
void show_osrelease(Kernel&, SynthText& o) { o.str("6.1.0-flatux\n"); }
void show_ostype(Kernel&, SynthText& o) { o.str("Linux\n"); }

void show_pid_max(Kernel& k, SynthText& o) { o.dec(k.sysctl.pid_max.load()).ch('\n'); }
long store_pid_max(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 301, 4194304, &v));  // RESERVED_PIDS + 1 .. PID_MAX_LIMIT
  t.kernel->sysctl.pid_max.store((int)v);
  return 0;
}

void show_tainted(Kernel& k, SynthText& o) { o.udec(k.sysctl.tainted.load()).ch('\n'); }
// Linux's proc_taint: CAP_SYS_ADMIN, and bits are only ever added.
long store_tainted(Task& t, std::string_view s) {
  if (!root(t)) return -EPERM;
  int64_t v;
  TRY_LONG(parse_one(s, 0, INT64_MAX, &v));
  t.kernel->sysctl.tainted.fetch_or((uint64_t)v);
  return 0;
}

void show_core_pattern(Kernel& k, SynthText& o) {
  Guard g(k.sysctl.lock);
  o.str(k.sysctl.core_pattern).ch('\n');
}
long store_core_pattern(Task& t, std::string_view s) {
  Sysctl& c = t.kernel->sysctl;
  Guard g(c.lock);
  store_string(s, c.core_pattern, sizeof c.core_pattern);
  return 0;
}

void show_drop_caches(Kernel& k, SynthText& o) { o.dec(k.sysctl.drop_caches.load()).ch('\n'); }
// Guest caches are the ext4 volumes' (clean pages and snapshots, which the
// volumes drop under their own pressure rules); the value is kept, as
// Linux keeps it, and accepted in Linux's range.
long store_drop_caches(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 1, 4, &v));
  t.kernel->sysctl.drop_caches.store((int)v);
  return 0;
}

void show_pipe_max(Kernel& k, SynthText& o) { o.udec(k.sysctl.pipe_max_size.load()).ch('\n'); }
long store_pipe_max(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, UINT32_MAX, &v));
  uint32_t size = round_pipe_size((uint64_t)v);
  if (!size) return -EINVAL;
  t.kernel->sysctl.pipe_max_size.store(size);
  return 0;
}

void show_lease_break(Kernel& k, SynthText& o) { o.dec(k.sysctl.lease_break_time.load()).ch('\n'); }
long store_lease_break(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, INT32_MIN, INT32_MAX, &v));
  t.kernel->sysctl.lease_break_time.store((int)v);
  return 0;
}

void show_nr_open(Kernel& k, SynthText& o) { o.udec(k.sysctl.nr_open.load()).ch('\n'); }
long store_nr_open(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 64, 2147483584, &v));  // sysctl_nr_open_min .. _max
  t.kernel->sysctl.nr_open.store((uint32_t)v);
  return 0;
}

void show_max_map_count(Kernel& k, SynthText& o) { o.dec(k.mem.max_map_count.load()).ch('\n'); }
long store_max_map_count(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, INT32_MAX, &v));
  t.kernel->mem.max_map_count.store((int)v);
  return 0;
}

// The IPC namespace's limits.
IpcLimits& ipc_limits(Kernel& k) { return k.ipc->limits; }
void show_shmmax(Kernel& k, SynthText& o) { o.udec(ipc_limits(k).shmmax.load()).ch('\n'); }
long store_shmmax(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, INT64_MAX, &v));
  ipc_limits(*t.kernel).shmmax.store((uint64_t)v);
  return 0;
}
void show_shmall(Kernel& k, SynthText& o) { o.udec(ipc_limits(k).shmall.load()).ch('\n'); }
long store_shmall(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, INT64_MAX, &v));
  ipc_limits(*t.kernel).shmall.store((uint64_t)v);
  return 0;
}
void show_shmmni(Kernel& k, SynthText& o) { o.dec(ipc_limits(k).shmmni.load()).ch('\n'); }
long store_shmmni(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, kIpcMni, &v));
  ipc_limits(*t.kernel).shmmni.store((int)v);
  return 0;
}
void show_rmid_forced(Kernel& k, SynthText& o) { o.dec(ipc_limits(k).shm_rmid_forced.load()).ch('\n'); }
long store_rmid_forced(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, 1, &v));
  ipc_limits(*t.kernel).shm_rmid_forced.store((int)v);
  return 0;
}
void show_sem(Kernel& k, SynthText& o) {
  IpcLimits& l = ipc_limits(k);
  o.dec(l.sem[0].load()).ch('\t').dec(l.sem[1].load()).ch('\t').dec(l.sem[2].load()).ch('\t');
  o.dec(l.sem[3].load()).ch('\n');
}
long store_sem(Task& t, std::string_view s) {
  int64_t v[4];
  long n = parse_ints(s, v, 4);
  if (n < 0) return n;
  // semmni within IPCMNI; semopm as Linux bounds it (EINVAL otherwise).
  if (n == 4 && (v[3] < 0 || v[3] > kIpcMni)) return -EINVAL;
  for (long i = 0; i < n; i++)
    if (v[i] < INT32_MIN || v[i] > INT32_MAX) return -EINVAL;
  IpcLimits& l = ipc_limits(*t.kernel);
  for (long i = 0; i < n; i++) l.sem[i].store((int)v[i]);
  return 0;
}
void show_msgmax(Kernel& k, SynthText& o) { o.dec(ipc_limits(k).msgmax.load()).ch('\n'); }
long store_msgmax(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, INT32_MAX, &v));
  ipc_limits(*t.kernel).msgmax.store((int)v);
  return 0;
}
void show_msgmnb(Kernel& k, SynthText& o) { o.dec(ipc_limits(k).msgmnb.load()).ch('\n'); }
long store_msgmnb(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, INT32_MAX, &v));
  ipc_limits(*t.kernel).msgmnb.store((int)v);
  return 0;
}
void show_msgmni(Kernel& k, SynthText& o) { o.dec(ipc_limits(k).msgmni.load()).ch('\n'); }
long store_msgmni(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, kIpcMni, &v));
  ipc_limits(*t.kernel).msgmni.store((int)v);
  return 0;
}

struct Entry {
  const char* path;  // below /proc/sys; grouped by directory
  uint16_t mode;
  void (*show)(Kernel&, SynthText&);
  long (*store)(Task&, std::string_view);
};

constexpr Entry kEntries[] = {
    {"fs/lease-break-time", 0644, show_lease_break, store_lease_break},
    {"fs/nr_open", 0644, show_nr_open, store_nr_open},
    {"fs/pipe-max-size", 0644, show_pipe_max, store_pipe_max},
    {"kernel/core_pattern", 0644, show_core_pattern, store_core_pattern},
    {"kernel/domainname", 0644, show_domainname, store_domainname},
    {"kernel/hostname", 0644, show_hostname, store_hostname},
    {"kernel/msgmax", 0644, show_msgmax, store_msgmax},
    {"kernel/msgmnb", 0644, show_msgmnb, store_msgmnb},
    {"kernel/msgmni", 0644, show_msgmni, store_msgmni},
    {"kernel/osrelease", 0444, show_osrelease, nullptr},
    {"kernel/ostype", 0444, show_ostype, nullptr},
    {"kernel/pid_max", 0644, show_pid_max, store_pid_max},
    {"kernel/sem", 0644, show_sem, store_sem},
    {"kernel/shm_rmid_forced", 0644, show_rmid_forced, store_rmid_forced},
    {"kernel/shmall", 0644, show_shmall, store_shmall},
    {"kernel/shmmax", 0644, show_shmmax, store_shmmax},
    {"kernel/shmmni", 0644, show_shmmni, store_shmmni},
    {"kernel/tainted", 0644, show_tainted, store_tainted},
    {"vm/drop_caches", 0200, show_drop_caches, store_drop_caches},
    {"vm/max_map_count", 0644, show_max_map_count, store_max_map_count},
};
constexpr int kCount = (int)(sizeof kEntries / sizeof kEntries[0]);

// --- the open file ----------------------------------------------------------

const Entry& entry_of(File& f) { return kEntries[f.priv_word]; }

long sysctl_pread(Task& t, File& f, void* buf, size_t n, int64_t off) {
  if (off < 0) return -EINVAL;
  SynthText text(t.kernel->heap);
  entry_of(f).show(*t.kernel, text);  // the value as it is now
  if (!text.ok()) return -ENOMEM;
  std::string_view v = text.view();
  if ((uint64_t)off >= v.size()) return 0;
  size_t take = v.size() - (size_t)off < n ? v.size() - (size_t)off : n;
  return copy_to_user(buf, v.data() + off, take) < 0 ? -EFAULT : (long)take;
}

// Linux's strict sysctl writes: a value is written whole at offset 0; a
// write further on changes nothing.
long sysctl_pwrite(Task& t, File& f, const void* buf, size_t n, int64_t off) {
  if (off < 0) return -EINVAL;
  if (n == 0 || off > 0) return (long)n;
  char tmp[512];
  if (n >= sizeof tmp) return -EINVAL;
  if (copy_from_user(tmp, buf, n) < 0) return -EFAULT;
  long r = entry_of(f).store(t, std::string_view(tmp, n));
  return r < 0 ? r : (long)n;
}

long sysctl_read(Task& t, File& f, void* buf, size_t n) {
  Guard g(f.pos_lock);
  long r = sysctl_pread(t, f, buf, n, f.pos);
  if (r > 0) f.pos += r;
  return r;
}

long sysctl_write(Task& t, File& f, const void* buf, size_t n) {
  Guard g(f.pos_lock);
  long r = sysctl_pwrite(t, f, buf, n, f.pos);
  if (r > 0) f.pos += r;
  return r;
}

long sysctl_lseek(Task&, File& f, int64_t off, int whence) {
  Guard g(f.pos_lock);
  int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f.pos : -1;
  if (base < 0 || base + off < 0) return -EINVAL;
  f.pos = base + off;
  return f.pos;
}

long sysctl_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFREG | entry_of(f).mode, f.priv_word + 0x5c000, 0, 0x16);
  return 0;
}

const FileOps kSysctlOps = {
    .read = sysctl_read,
    .write = sysctl_write,
    .pread = sysctl_pread,
    .pwrite = sysctl_pwrite,
    .lseek = sysctl_lseek,
    .stat = sysctl_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = nullptr,
};

}  // namespace

int sysctl_count() { return kCount; }
std::string_view sysctl_path(int index) { return kEntries[index].path; }
uint32_t sysctl_mode(int index) { return kEntries[index].mode; }

SysctlNode sysctl_lookup(std::string_view path, int* index) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return SysctlNode::kDir;
  for (int i = 0; i < kCount; i++) {
    std::string_view p(kEntries[i].path);
    if (p == path) {
      *index = i;
      return SysctlNode::kFile;
    }
    if (p.size() > path.size() && starts_with(p, path) && p[path.size()] == '/') return SysctlNode::kDir;
  }
  return SysctlNode::kNone;
}

long sysctl_open(Task& t, int index, int flags, uint64_t, File** out) {
  const Entry& e = kEntries[index];
  // Linux's proc_sys_permission: the mode decides, for root too (a
  // read-only value cannot be written, drop_caches cannot be read).
  uint32_t bits = t.proc->creds.euid == 0 ? e.mode >> 6 : e.mode;
  int acc = flags & O_ACCMODE;
  bool want_read = acc != O_WRONLY, want_write = acc != O_RDONLY || (flags & O_TRUNC);
  if ((want_read && !(bits & 4)) || (want_write && (!(bits & 2) || !e.store))) return -EACCES;
  if (flags & O_DIRECTORY) return -ENOTDIR;
  File* f = file_alloc(t.kernel->heap, &kSysctlOps, (uint32_t)flags & ~(O_CLOEXEC | O_CREAT | O_TRUNC), -1);
  if (!f) return -ENOMEM;
  f->priv_word = (uint64_t)index;
  *out = f;
  return 0;
}

}  // namespace flatux
