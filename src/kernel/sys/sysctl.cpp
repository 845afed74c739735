// /proc/sys: one table of the kernel's tunables. Each file shows its value
// when read and, where Linux lets root change it, parses a write the way
// Linux's proc_dointvec family does (whitespace-separated numbers, EINVAL
// out of range). Everything changed here is this kernel instance's.
#include "kernel/sys/sysctl.h"
#include "kernel/ipc/mqueue.h"

#include <cstring>
#include <type_traits>
#include <fcntl.h>
#include <linux/errno.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/vfs/synth.h"
#include "kernel/sys/uts.h"
#include "kernel/task/caps.h"

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

bool root(Task& t) { return capable(t.proc->creds, CAP_SYS_ADMIN); }

// --- the entries' show and store ------------------------------------------

// Text values: shown with a newline, written up to the first one.
struct StrField {
  KMutex& lock;
  char* buf;
  size_t cap;
};

template <StrField (*Get)(Task&)>
void show_str(Task& t, SynthText& o) {
  StrField f = Get(t);
  Guard g(f.lock);
  o.str(f.buf).ch('\n');
}

template <StrField (*Get)(Task&)>
long store_str(Task& t, std::string_view s) {
  StrField f = Get(t);
  Guard g(f.lock);
  store_string(s, f.buf, f.cap);
  return 0;
}

// kernel/hostname and kernel/domainname: a write is a setting pollers hear of.
template <StrField (*Get)(Task&)>
long store_uts(Task& t, std::string_view s) {
  long r = store_str<Get>(t, s);
  uts_of(*t.proc).events.fetch_add(1, std::memory_order_release);
  return r;
}

// The UTS names are the caller's namespace's.
StrField hostname(Task& t) {
  UtsNames& u = uts_of(*t.proc);
  return {u.lock, u.nodename, sizeof u.nodename};
}
StrField domainname(Task& t) {
  UtsNames& u = uts_of(*t.proc);
  return {u.lock, u.domainname, sizeof u.domainname};
}
StrField core_pattern(Task& t) {
  Sysctl& s = t.kernel->sysctl;
  return {s.lock, s.core_pattern, sizeof s.core_pattern};
}

// A value that is the kernel's, whoever asks.
template <void (*Show)(Kernel&, SynthText&)>
void of_kernel(Task& t, SynthText& o) {
  Show(*t.kernel, o);
}

// A random (version 4) UUID in its text form, 36 characters and a NUL.
void random_uuid(char out[37]) {
  uint8_t b[16] = {};
  host::sys(SYS_getrandom, b, sizeof b, 0);
  b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
  b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  int at = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[at++] = '-';
    out[at++] = kHex[b[i] >> 4];
    out[at++] = kHex[b[i] & 15];
  }
  out[at] = 0;
}

// kernel/random/boot_id: one UUID for the life of the kernel; uuid: a new
// one at each read.
void show_boot_id(Kernel& k, SynthText& o) { o.str(k.sysctl.boot_id).ch('\n'); }
void show_uuid(Kernel&, SynthText& o) {
  char u[37];
  random_uuid(u);
  o.str(u).ch('\n');
}

void show_osrelease(Kernel&, SynthText& o) { o.str("6.1.0-flatux\n"); }
void show_ostype(Kernel&, SynthText& o) { o.str("Linux\n"); }
// The highest capability the kernel knows (libcap and runtimes size their
// capability sets by it).
void show_cap_last_cap(Kernel&, SynthText& o) { o.dec(CAP_LAST_CAP).ch('\n'); }

// Plain numbers: shown in decimal, written within [Min, Max].
template <auto& (*Get)(Kernel&)>
void show_num(Kernel& k, SynthText& o) {
  auto v = Get(k).load();
  if constexpr (std::is_signed_v<decltype(v)>) o.dec(v);
  else o.udec(v);
  o.ch('\n');
}

template <auto& (*Get)(Kernel&), int64_t Min, int64_t Max>
long store_num(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, Min, Max, &v));
  auto& field = Get(*t.kernel);
  using Value = typename std::remove_reference_t<decltype(field)>::value_type;
  field.store((Value)v);
  return 0;
}

auto& pid_max(Kernel& k) { return k.sysctl.pid_max; }
auto& tainted(Kernel& k) { return k.sysctl.tainted; }
auto& drop_caches(Kernel& k) { return k.sysctl.drop_caches; }
auto& pipe_max_size(Kernel& k) { return k.sysctl.pipe_max_size; }
auto& lease_break_time(Kernel& k) { return k.sysctl.lease_break_time; }
auto& nr_open(Kernel& k) { return k.sysctl.nr_open; }
auto& max_map_count(Kernel& k) { return k.mem.max_map_count; }
auto& shmmax(Kernel& k) { return k.ipc->limits.shmmax; }
auto& shmall(Kernel& k) { return k.ipc->limits.shmall; }
auto& shmmni(Kernel& k) { return k.ipc->limits.shmmni; }
auto& shm_rmid_forced(Kernel& k) { return k.ipc->limits.shm_rmid_forced; }
auto& msgmax(Kernel& k) { return k.ipc->limits.msgmax; }
auto& msgmnb(Kernel& k) { return k.ipc->limits.msgmnb; }
auto& msgmni(Kernel& k) { return k.ipc->limits.msgmni; }
auto& mq_queues_max(Kernel& k) { return k.ipc->mq->queues_max; }
auto& mq_msg_max(Kernel& k) { return k.ipc->mq->msg_max; }
auto& mq_msgsize_max(Kernel& k) { return k.ipc->mq->msgsize_max; }
auto& mq_msg_default(Kernel& k) { return k.ipc->mq->msg_default; }
auto& mq_msgsize_default(Kernel& k) { return k.ipc->mq->msgsize_default; }

// fs/file-nr: the host descriptors held for guests (their open files that
// have one), none free, and what they may hold in all (kernel/sys/host_share.h).
void show_file_nr(Kernel& k, SynthText& o) {
  o.dec(k.host_fds.used.load(std::memory_order_relaxed)).str("\t0\t").dec(k.host_fds.limit).ch('\n');
}

// fs/file-max: the files guests may hold open in all, which is the host
// descriptors the kernel shares out (not to be raised past the host's).
void show_file_max(Kernel& k, SynthText& o) { o.dec(k.host_fds.limit).ch('\n'); }

// Linux's proc_taint: CAP_SYS_ADMIN, and bits are only ever added.
long store_tainted(Task& t, std::string_view s) {
  if (!root(t)) return -EPERM;
  int64_t v;
  TRY_LONG(parse_one(s, 0, INT64_MAX, &v));
  t.kernel->sysctl.tainted.fetch_or((uint64_t)v);
  return 0;
}

// Pipe capacities are whole pages, a power of two (round_pipe_size).
long store_pipe_max(Task& t, std::string_view s) {
  int64_t v;
  TRY_LONG(parse_one(s, 0, UINT32_MAX, &v));
  uint32_t size = round_pipe_size((uint64_t)v);
  if (!size) return -EINVAL;
  t.kernel->sysctl.pipe_max_size.store(size);
  return 0;
}

// semmsl semmns semopm semmni, as one line.
void show_sem(Kernel& k, SynthText& o) {
  IpcLimits& l = k.ipc->limits;
  o.dec(l.sem[0].load()).ch('\t').dec(l.sem[1].load()).ch('\t').dec(l.sem[2].load()).ch('\t');
  o.dec(l.sem[3].load()).ch('\n');
}
long store_sem(Task& t, std::string_view s) {
  int64_t v[4];
  long n = parse_ints(s, v, 4);
  if (n < 0) return n;
  if (n == 4 && (v[3] < 0 || v[3] > kIpcMni)) return -EINVAL;  // semmni within IPCMNI
  for (long i = 0; i < n; i++)
    if (v[i] < INT32_MIN || v[i] > INT32_MAX) return -EINVAL;
  IpcLimits& l = t.kernel->ipc->limits;
  for (long i = 0; i < n; i++) l.sem[i].store((int)v[i]);
  return 0;
}

struct Entry {
  const char* path;  // below /proc/sys; grouped by directory
  uint16_t mode;
  void (*show)(Task&, SynthText&);
  long (*store)(Task&, std::string_view);
  bool uts = false;  // a UTS name: poll reports its settings (UtsNames::events)
};

template <auto& (*Get)(Kernel&), int64_t Min, int64_t Max>
constexpr Entry num(const char* path) {
  return Entry{path, 0644, of_kernel<show_num<Get>>, store_num<Get, Min, Max>};
}

// vm/drop_caches: guest caches are the ext4 volumes' (clean pages and
// snapshots, which they drop under their own pressure rules); the value is
// kept, as Linux keeps it, within Linux's range.
constexpr Entry kEntries[] = {
    num<lease_break_time, INT32_MIN, INT32_MAX>("fs/lease-break-time"),
    {"fs/file-max", 0444, of_kernel<show_file_max>, nullptr},
    {"fs/file-nr", 0444, of_kernel<show_file_nr>, nullptr},
    num<nr_open, 64, 2147483584>("fs/nr_open"),  // sysctl_nr_open_min .. _max
    // fs/mqueue: Linux's ranges (MIN_/HARD_ limits of ipc/mq_sysctl.c); the
    // queues' table holds kMqQueuesMaxLimit.
    num<mq_msg_default, 1, 65536>("fs/mqueue/msg_default"),
    num<mq_msg_max, 1, 65536>("fs/mqueue/msg_max"),
    num<mq_msgsize_default, 128, 16 * 1024 * 1024>("fs/mqueue/msgsize_default"),
    num<mq_msgsize_max, 128, 16 * 1024 * 1024>("fs/mqueue/msgsize_max"),
    num<mq_queues_max, 0, kMqQueuesMaxLimit>("fs/mqueue/queues_max"),
    {"fs/pipe-max-size", 0644, of_kernel<show_num<pipe_max_size>>, store_pipe_max},
    {"kernel/cap_last_cap", 0444, of_kernel<show_cap_last_cap>, nullptr},
    {"kernel/core_pattern", 0644, show_str<core_pattern>, store_str<core_pattern>},
    {"kernel/domainname", 0644, show_str<domainname>, store_uts<domainname>, true},
    {"kernel/hostname", 0644, show_str<hostname>, store_uts<hostname>, true},
    num<msgmax, 0, INT32_MAX>("kernel/msgmax"),
    num<msgmnb, 0, INT32_MAX>("kernel/msgmnb"),
    num<msgmni, 0, kIpcMni>("kernel/msgmni"),
    {"kernel/osrelease", 0444, of_kernel<show_osrelease>, nullptr},
    {"kernel/ostype", 0444, of_kernel<show_ostype>, nullptr},
    num<pid_max, 301, 4194304>("kernel/pid_max"),  // RESERVED_PIDS + 1 .. PID_MAX_LIMIT
    {"kernel/random/boot_id", 0444, of_kernel<show_boot_id>, nullptr},
    {"kernel/random/uuid", 0444, of_kernel<show_uuid>, nullptr},
    {"kernel/sem", 0644, of_kernel<show_sem>, store_sem},
    num<shm_rmid_forced, 0, 1>("kernel/shm_rmid_forced"),
    num<shmall, 0, INT64_MAX>("kernel/shmall"),
    num<shmmax, 0, INT64_MAX>("kernel/shmmax"),
    num<shmmni, 0, kIpcMni>("kernel/shmmni"),
    {"kernel/tainted", 0644, of_kernel<show_num<tainted>>, store_tainted},
    {"vm/drop_caches", 0200, of_kernel<show_num<drop_caches>>, store_num<drop_caches, 1, 4>},
    num<max_map_count, 0, INT32_MAX>("vm/max_map_count"),
};
constexpr int kCount = (int)(sizeof kEntries / sizeof kEntries[0]);

// --- the open file ----------------------------------------------------------

const Entry& entry_of(File& f) { return kEntries[f.priv_word]; }

long sysctl_pread(Task& t, File& f, void* buf, size_t n, int64_t off) {
  SynthText text(t.kernel->heap);
  entry_of(f).show(t, text);  // the value as it is now
  return text.pread_to_user(buf, n, off);
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

long sysctl_lseek(Task&, File& f, int64_t off, int whence) { return file_seek_kept(f, off, whence, -1); }

long sysctl_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFREG | entry_of(f).mode, f.priv_word + 0x5c000, 0, 0x16);
  return 0;
}

// Linux's proc_sys_poll: always ready (DEFAULT_POLLMASK); a UTS name's
// file also says POLLERR|POLLPRI once for each setting since it was opened
// or last said so (the count seen rides in File::priv).
short sysctl_poll(Task& t, File& f, short events) {
  short r = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
  if (entry_of(f).uts) {
    uintptr_t now = (uintptr_t)uts_of(*t.proc).events.load(std::memory_order_acquire);
    void* seen = __atomic_load_n(&f.priv, __ATOMIC_RELAXED);
    if ((uintptr_t)seen != now &&
        __atomic_compare_exchange_n(&f.priv, &seen, (void*)now, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      r = POLLIN | POLLRDNORM | POLLERR | POLLPRI;
  }
  return (short)(r & (events | POLLERR | POLLHUP));
}

const FileOps kSysctlOps = {
    .read = file_read_at_pos,
    .write = file_write_at_pos,
    .pread = sysctl_pread,
    .pwrite = sysctl_pwrite,
    .lseek = sysctl_lseek,
    .stat = sysctl_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = nullptr,
    .poll = sysctl_poll,
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
  f->priv = (void*)(uintptr_t)uts_of(*t.proc).events.load(std::memory_order_acquire);
  *out = f;
  return 0;
}

long sysctl_set(Task& t, std::string_view path, std::string_view value) {
  int index;
  if (sysctl_lookup(path, &index) != SysctlNode::kFile) return -ENOENT;
  if (!kEntries[index].store || !(kEntries[index].mode & 0200)) return -EACCES;
  return kEntries[index].store(t, value);
}

void sysctl_start(Sysctl& s) { random_uuid(s.boot_id); }

}  // namespace flatux
