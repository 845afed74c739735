#include "kernel/vfs/mount_ns.h"
#include "kernel/cgroup/cgroup.h"
#include "kernel/fs/procfs/procfs_gen.h"

#include <cstring>
#include <sys/mount.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>

#include "kernel/task/hostproc.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/mm/mm.h"
#include "kernel/mm/resident.h"
#include "kernel/seccomp/seccomp.h"
#include "kernel/task/process.h"
#include "kernel/time.h"
#include "kernel/timer/timer.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/vfs.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

struct Named {
  const char* name;
  ProcFile file;
};

constexpr Named kPidFiles[] = {
    {"cmdline", ProcFile::kCmdline}, {"environ", ProcFile::kEnviron}, {"comm", ProcFile::kComm},
    {"stat", ProcFile::kStat},       {"statm", ProcFile::kStatm},     {"status", ProcFile::kStatus},
    {"maps", ProcFile::kMaps},       {"mounts", ProcFile::kMounts},   {"mountinfo", ProcFile::kMountinfo},
    {"limits", ProcFile::kLimits},   {"pagemap", ProcFile::kPagemap}, {"cgroup", ProcFile::kCgroup},
    {"oom_score_adj", ProcFile::kOomScoreAdj}, {"mem", ProcFile::kMem},
};

constexpr Named kGlobalFiles[] = {
    {"meminfo", ProcFile::kMeminfo},         {"cpuinfo", ProcFile::kCpuinfo},
    {"uptime", ProcFile::kUptime},           {"loadavg", ProcFile::kLoadavg},
    {"version", ProcFile::kVersion},         {"filesystems", ProcFile::kFilesystems},
    {"mounts", ProcFile::kGlobalMounts},     {"cmdline", ProcFile::kKernelCmdline},
    {"stat", ProcFile::kGlobalStat},         {"cgroups", ProcFile::kCgroups},
};

constexpr Named kSysvipc[] = {
    {"shm", ProcFile::kSysvipcShm}, {"sem", ProcFile::kSysvipcSem}, {"msg", ProcFile::kSysvipcMsg},
};

template <size_t N>
ProcFile find(const Named (&table)[N], std::string_view name) {
  for (const Named& n : table)
    if (name == n.name) return n.file;
  return ProcFile::kNone;
}

constexpr uint64_t kTick = 10000000ull;  // 100 Hz

char state_char(const Process& p) { return p.state == ProcState::kZombie ? 'Z' : p.stopped ? 'T' : 'S'; }

void mask_hex(SynthText& o, uint64_t m) { o.hex(m, 16); }

// Copies a range of a process's memory (cmdline, environ): from here when
// it lives in the reader's host process (and only what the process owns),
// else from the host process it lives in (a forked one).
long user_range(SynthText& o, const Task& task, const Mm& mm, uintptr_t start, uintptr_t end) {
  int host_pid = task_host_pid(task);
  bool here = host_pid == (int)host::sys(SYS_getpid);
  char buf[512];
  for (uintptr_t p = start; p < end;) {
    size_t n = end - p < sizeof buf ? end - p : sizeof buf;
    iovec local{buf, n}, remote{(void*)p, n};
    long r = here ? copy_from_process(mm, buf, (const void*)p, n)
                  : host::sys(SYS_process_vm_readv, host_pid, &local, 1, &remote, 1, 0);
    if (r < 0 || (!here && r != (long)n)) return 0;  // gone: empty, like a zombie's
    o.str(std::string_view(buf, n));
    p += n;
  }
  return 0;
}

// The resident part of p's memory (none without an Mm).
Resident resident_of(Process& p, Task& task) {
  Resident r;
  if (p.mm) task_resident(task, *p.mm, &r);
  return r;
}

// size resident shared text lib data dt, in pages, as Linux's statm:
// "shared" is the resident file and shmem pages, "data" the private
// writable mappings and the stack.
void gen_statm(SynthText& o, Process& p, Task& task) {
  size_t vsz = 0, data = 0;
  if (p.mm) {
    Guard g(p.mm->lock);
    vsz = p.mm->regions.total_bytes();
    data = p.mm->data_vm + (p.mm->stack_top - p.mm->stack_low);
  }
  Resident r = resident_of(p, task);
  o.udec(vsz / 4096).ch(' ').udec(r.rss() / 4096).ch(' ').udec((r.file + r.shmem) / 4096);
  o.str(" 0 0 ").udec(data / 4096).str(" 0\n");
}

void gen_stat(SynthText& o, Kernel& k, Process& p, Task* task) {
  uint64_t start = (p.start_ns - k.boot_ns) / kTick;
  size_t vsz = p.mm ? p.mm->regions.total_bytes() : 0;
  o.dec(task ? task->tid : p.pid).str(" (").str(p.comm).str(") ").ch(state_char(p)).ch(' ');
  o.dec(p.parent ? p.parent->pid : 0).ch(' ').dec(p.pgid).ch(' ').dec(p.sid);
  o.str(" 0 -1 4194304 0 0 0 0 ");
  // utime and stime: the host's clocks of the living threads and what the
  // exited ones used (counted as user time).
  uint64_t user = process_cpu_ns_locked(p, kCpuVirtual);
  uint64_t all = process_cpu_ns_locked(p, kCpuProf);
  uint64_t sys = all > user ? all - user : 0;
  o.udec(user / kTick).ch(' ').udec(sys / kTick).ch(' ').udec(p.children_cpu_ns / kTick).str(" 0 20 0 ");
  uint64_t rss = task ? resident_of(p, *task).rss() : 0;
  o.dec(p.nthreads).str(" 0 ").udec(start).ch(' ').udec(vsz).ch(' ').udec(rss / 4096);
  o.str(" 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
}

void gen_status(SynthText& o, Process& p, Task* task) {
  o.str("Name:\t").str(p.comm).str("\nUmask:\t").oct(p.fs ? p.fs->umask : 022, 4);
  o.str("\nState:\t").ch(state_char(p)).str(p.state == ProcState::kZombie ? " (zombie)" : p.stopped ? " (stopped)" : " (sleeping)");
  o.str("\nTgid:\t").dec(p.pid).str("\nNgid:\t0\nPid:\t").dec(task ? task->tid : p.pid);
  o.str("\nPPid:\t").dec(p.parent ? p.parent->pid : 0).str("\nTracerPid:\t0");
  const Creds& c = p.creds;
  o.str("\nUid:\t").udec(c.uid).ch('\t').udec(c.euid).ch('\t').udec(c.suid).ch('\t').udec(c.fsuid);
  o.str("\nGid:\t").udec(c.gid).ch('\t').udec(c.egid).ch('\t').udec(c.sgid).ch('\t').udec(c.fsgid);
  o.str("\nFDSize:\t").dec(p.files ? p.files->limit() : 0).str("\nGroups:\t\n");
  size_t vsz = 0, locked = 0, data = 0, stack = 0;
  Resident res;
  if (p.mm) {
    {
      Guard g(p.mm->lock);
      vsz = p.mm->regions.total_bytes();
      locked = p.mm->regions.locked_bytes();
      data = p.mm->data_vm;
      stack = p.mm->stack_top - p.mm->stack_low;
    }
    if (task) task_resident(*task, *p.mm, &res);
  }
  auto kb = [&](const char* name, uint64_t bytes) {  // "%8lu kB", as Linux's
    char b[24];
    KFmt f(b, sizeof b);
    f.udec(bytes / 1024);
    o.str(name).str(":\t");
    for (size_t pad = f.size(); pad < 8; pad++) o.ch(' ');
    o.str(f.view()).str(" kB\n");
  };
  kb("VmSize", vsz);
  kb("VmLck", locked);
  kb("VmHWM", p.mm ? p.mm->hiwater_rss.load(std::memory_order_relaxed) : 0);
  kb("VmRSS", res.rss());
  kb("RssAnon", res.anon);
  kb("RssFile", res.file);
  kb("RssShmem", res.shmem);
  kb("VmData", data);
  kb("VmStk", stack);
  kb("VmSwap", res.swap);
  o.str("Threads:\t").dec(p.nthreads).ch('\n');
  uint64_t pend = task ? task->pending.set : 0, ign = 0, cgt = 0;
  for (int s = 1; p.sighand && s <= kNSig; s++) {
    uint64_t h = p.sighand->action[s - 1].handler;
    if (h == (uint64_t)SIG_IGN) ign |= sigbit(s);
    else if (h != (uint64_t)SIG_DFL) cgt |= sigbit(s);
  }
  o.str("SigPnd:\t"), mask_hex(o, pend);
  o.str("\nShdPnd:\t"), mask_hex(o, p.shared_pending.set);
  o.str("\nSigBlk:\t"), mask_hex(o, task ? task->sigmask : 0);
  o.str("\nSigIgn:\t"), mask_hex(o, ign);
  o.str("\nSigCgt:\t"), mask_hex(o, cgt);
  o.str("\nCapInh:\t"), mask_hex(o, c.cap_inheritable);
  o.str("\nCapPrm:\t"), mask_hex(o, c.cap_permitted);
  o.str("\nCapEff:\t"), mask_hex(o, c.cap_effective);
  o.str("\nCapBnd:\t"), mask_hex(o, c.cap_bset);
  o.str("\nCapAmb:\t"), mask_hex(o, c.cap_ambient);
  o.str("\nNoNewPrivs:\t").dec(p.no_new_privs ? 1 : 0);
  if (task) {
    o.str("\nSeccomp:\t").dec(task->seccomp_mode.load());
    o.str("\nSeccomp_filters:\t").dec(seccomp_filter_count(*task));
  }
  o.ch('\n');
}

// One /proc/PID/maps line, as Linux's show_map_vma: the name (a path, or
// [stack]/[heap]) starts at column 73.
void map_line(SynthText& o, const Region& r, const Mm& mm) {
  char line[160];
  KFmt f(line, sizeof line);
  f.hexraw(r.start, 8).ch('-').hexraw(r.end, 8).ch(' ');
  f.ch(r.prot & PROT_READ ? 'r' : '-').ch(r.prot & PROT_WRITE ? 'w' : '-');
  f.ch(r.prot & PROT_EXEC ? 'x' : '-').ch(r.flags & kRegionShared ? 's' : 'p').ch(' ');
  const RegionName* n = r.attrs.name;
  uint64_t dev = n ? n->dev : 0;
  unsigned major = (unsigned)(((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfffull));
  unsigned minor = (unsigned)((dev & 0xff) | ((dev >> 12) & ~0xffull));
  f.hexraw(r.attrs.offset, 8).ch(' ').hexraw(major, 2).ch(':').hexraw(minor, 2).ch(' ').udec(n ? n->ino : 0);
  const char* name = n ? n->path
                     : r.kind == kRegionStack && r.end == mm.stack_top ? "[stack]"
                     : r.kind == kRegionBrk ? "[heap]" : nullptr;
  o.str(f.view());
  if (name) {
    for (size_t col = f.size(); col < 72; col++) o.ch(' ');
    o.ch(' ');
    for (const char* c = name; *c; c++) {
      if (*c == '\n') o.str("\\012");  // as Linux's seq_file_path escapes it
      else o.ch(*c);
    }
  }
  o.ch('\n');
}

void gen_maps(SynthText& o, Process& p) {
  if (!p.mm) return;
  Guard g(p.mm->lock);
  for (const Region* r = p.mm->regions.first(); r; r = r->next) map_line(o, *r, *p.mm);
}

void gen_limits(SynthText& o, Process& p) {
  static constexpr const char* kNames[kNumRlimits] = {
      "Max cpu time", "Max file size", "Max data size", "Max stack size", "Max core file size",
      "Max resident set", "Max processes", "Max open files", "Max locked memory", "Max address space",
      "Max file locks", "Max pending signals", "Max msgqueue size", "Max nice priority",
      "Max realtime priority", "Max realtime timeout"};
  o.str("Limit                     Soft Limit           Hard Limit           Units     \n");
  for (int i = 0; i < kNumRlimits; i++) {
    o.str(kNames[i]);
    for (size_t pad = strlen(kNames[i]); pad < 26; pad++) o.ch(' ');
    for (int j = 0; j < 2; j++) {
      char b[24];
      KFmt f(b, sizeof b);
      if (p.rlimits[i][j] == RLIM_INFINITY) f.str("unlimited");
      else f.udec(p.rlimits[i][j]);
      o.str(f.view());
      for (size_t pad = f.size(); pad < 21; pad++) o.ch(' ');
    }
    o.ch('\n');
  }
}

long host_file(SynthText& o, const char* path) {
  long fd = host::sys(SYS_open, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fd;
  char buf[4096];
  long n;
  while ((n = host::sys(SYS_read, fd, buf, sizeof buf)) > 0) o.str(std::string_view(buf, (size_t)n));
  host::sys(SYS_close, fd);
  return 0;
}

void gen_meminfo(SynthText& o, Kernel& k) {
  struct sysinfo si;
  host::sys(SYS_sysinfo, &si);
  mem_limit_sysinfo(k.mem, &si);
  uint64_t unit = si.mem_unit ? si.mem_unit : 1;
  auto line = [&](const char* name, uint64_t bytes) {
    o.str(name);
    char b[24];
    KFmt f(b, sizeof b);
    f.udec(bytes / 1024);
    for (size_t pad = strlen(name) + f.size(); pad < 24; pad++) o.ch(' ');
    o.str(f.view()).str(" kB\n");
  };
  line("MemTotal:", si.totalram * unit);
  line("MemFree:", si.freeram * unit);
  uint64_t available = si.freeram + si.bufferram;
  line("MemAvailable:", (available < si.totalram ? available : si.totalram) * unit);
  line("Buffers:", si.bufferram * unit);
  line("Cached:", 0);
  line("SwapTotal:", si.totalswap * unit);
  line("SwapFree:", si.freeswap * unit);
  line("Shmem:", si.sharedram * unit);
  // The kernel's own memory: its heap (objects, tmpfs pages, caches) and
  // the tasks' kernel stacks carved from it; and mem='s commit account.
  size_t kstacks = k.heap->kstack_bytes();
  line("Slab:", k.heap->bytes_in_use() - kstacks);
  line("SUnreclaim:", k.heap->bytes_in_use() - kstacks);
  line("KernelStack:", kstacks);
  if (k.mem.limit) line("CommitLimit:", k.mem.limit);
  line("Committed_AS:", k.mem.used.load(std::memory_order_relaxed));
}

void gen_global_stat(SynthText& o, Kernel& k) {
  o.str("cpu  0 0 0 0 0 0 0 0 0 0\nintr 0\nctxt 0\nbtime ");
  timespec rt;
  host::sys(SYS_clock_gettime, CLOCK_REALTIME, &rt);
  o.udec((uint64_t)rt.tv_sec - (monotonic_ns() - k.boot_ns) / 1000000000ull);
  int procs = 0;
  for (Task* t : k.live_tasks()) procs += t != nullptr;
  o.str("\nprocesses ").dec(k.next_pid - 1).str("\nprocs_running ").dec(procs).str("\nprocs_blocked 0\n");
}

}  // namespace

ProcFile proc_file_named(std::string_view name, bool per_pid) {
  return per_pid ? find(kPidFiles, name) : find(kGlobalFiles, name);
}
ProcFile proc_sysvipc_file(std::string_view name) { return find(kSysvipc, name); }
bool proc_file_writable(ProcFile f) {
  return f == ProcFile::kComm || f == ProcFile::kOomScoreAdj || f == ProcFile::kMem;
}

// Linux's oom_score_adj_write: an integer in [-1000, 1000] (EINVAL), and
// going below the current value takes CAP_SYS_RESOURCE (EACCES).
long proc_store(Task& t, ProcFile f, int pid, std::string_view text) {
  if (f != ProcFile::kOomScoreAdj) return -EINVAL;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  bool negative = !text.empty() && text.front() == '-';
  if (negative || (!text.empty() && text.front() == '+')) text.remove_prefix(1);
  uint64_t v;
  if (!parse_decimal(text, 5, &v) || v > 1000) return -EINVAL;
  int adj = negative ? -(int)v : (int)v;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Task* x = find_task_locked(k, pid);
  if (!x || x->proc->state != ProcState::kRunning) return -ESRCH;
  if (adj < x->proc->oom_score_adj && !capable(t.proc->creds, CAP_SYS_RESOURCE)) return -EACCES;
  x->proc->oom_score_adj = adj;
  return 0;
}
uint32_t proc_file_mode(ProcFile f) {
  return f == ProcFile::kPagemap ? 0400 : f == ProcFile::kMem ? 0600 : proc_file_writable(f) ? 0644 : 0444;
}
int proc_global_count() { return (int)(sizeof kGlobalFiles / sizeof kGlobalFiles[0]); }
const char* proc_global_name(int i) { return kGlobalFiles[i].name; }
int proc_pid_file_count() { return (int)(sizeof kPidFiles / sizeof kPidFiles[0]); }
const char* proc_pid_file_name(int i) { return kPidFiles[i].name; }

long proc_generate(Task& t, ProcFile f, int pid, SynthText& o) {
  Kernel& k = *t.kernel;
  switch (f) {
    case ProcFile::kMeminfo: gen_meminfo(o, k); return 0;
    case ProcFile::kCpuinfo: return host_file(o, "/proc/cpuinfo");
    case ProcFile::kUptime: {
      uint64_t up = monotonic_ns() - k.boot_ns;
      o.udec(up / 1000000000ull).ch('.').udec(up / 10000000ull % 100 / 10).udec(up / 10000000ull % 10);
      o.str(" 0.00\n");
      return 0;
    }
    case ProcFile::kLoadavg: {
      Guard g(k.tasks_lock);
      o.str("0.00 0.00 0.00 1/").dec(k.ntasks).ch(' ').dec(k.next_pid - 1).ch('\n');
      return 0;
    }
    case ProcFile::kVersion:
      o.str("Linux version 6.1.0-flatux (flatux " FLATUX_VERSION_STRING ") #1 SMP flatux\n");
      return 0;
    case ProcFile::kFilesystems: gen_filesystems(o, k); return 0;
    case ProcFile::kGlobalMounts: {
      char root[kPathMax];
      bool removed = false;  // a removed root: the mounts seen from where it was
      if (long r = fs_root_path(t, root, sizeof root, &removed); r < 0) return r;
      gen_mounts(o, k, mnt_ns_of(t), root, false);
      return 0;
    }
    case ProcFile::kMounts: case ProcFile::kMountinfo: {
      char root[kPathMax];
      MountNs* ns = nullptr;  // counted: the process may leave it meanwhile
      {
        Guard g(k.tasks_lock);
        Task* task = find_task_locked(k, pid);
        if (!task || task->proc->state != ProcState::kRunning || !task->proc->fs) return -ENOENT;
        Guard r(task->proc->fs->lock);
        bool removed = false;
        if (fs_root_path(*task->proc->fs, root, sizeof root, &removed) < 0) return -ENOENT;
        ns = &mnt_ns_of(*task->proc);
        ns->refs.fetch_add(1, std::memory_order_relaxed);
      }
      gen_mounts(o, k, *ns, root, f == ProcFile::kMountinfo);
      k.vfs->put_ns(ns);
      return 0;
    }
    case ProcFile::kKernelCmdline:
      o.str(k.cfg.boot.cmdline[0] ? k.cfg.boot.cmdline : "flatux").ch('\n');
      return 0;
    case ProcFile::kGlobalStat: {
      Guard g(k.tasks_lock);
      gen_global_stat(o, k);
      return 0;
    }
    case ProcFile::kCgroups: {
      Guard g(k.tasks_lock);
      cgroup_proc_cgroups(k, o);
      return 0;
    }
    case ProcFile::kSysvipcShm: shm_proc_show(k, o); return 0;
    case ProcFile::kSysvipcSem: sem_proc_show(k, o); return 0;
    case ProcFile::kSysvipcMsg: msg_proc_show(k, o); return 0;
    default: break;
  }
  Guard g(k.tasks_lock);
  Task* task = find_task_locked(k, pid);
  if (!task || task->proc->state != ProcState::kRunning) return -ENOENT;
  Process& p = *task->proc;
  switch (f) {
    case ProcFile::kCmdline: return p.mm ? user_range(o, *task, *p.mm, p.mm->arg_start, p.mm->arg_end) : 0;
    case ProcFile::kEnviron: return p.mm ? user_range(o, *task, *p.mm, p.mm->env_start, p.mm->env_end) : 0;
    case ProcFile::kComm: o.str(p.comm).ch('\n'); return 0;
    case ProcFile::kStat: gen_stat(o, k, p, task); return 0;
    case ProcFile::kStatm: gen_statm(o, p, *task); return 0;
    case ProcFile::kStatus: gen_status(o, p, task); return 0;
    case ProcFile::kMaps: gen_maps(o, p); return 0;
    case ProcFile::kLimits: gen_limits(o, p); return 0;
    case ProcFile::kCgroup: cgroup_proc_pid(k, p, o); return 0;
    case ProcFile::kOomScoreAdj: o.dec(p.oom_score_adj).ch('\n'); return 0;
    default: return -ENOENT;
  }
}

}  // namespace flatux
