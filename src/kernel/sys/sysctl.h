// The kernel's tunables, as /proc/sys shows them. Values live here (one set
// per kernel instance: a guest's root changes its own kernel, never the
// host's) and the subsystems that obey them read them from here.
#pragma once
#include <atomic>
#include <cstdint>
#include <string_view>

#include "kernel/lib/kstring.h"
#include "kernel/lib/sync.h"

namespace flatux {

struct Kernel;
struct Task;
struct File;

struct Sysctl {
  std::atomic<int> pid_max{4194304};        // kernel/pid_max
  std::atomic<uint64_t> tainted{0};         // kernel/tainted (bits only ever added)
  KMutex lock;                              // guards core_pattern
  char core_pattern[128] = "core";          // kernel/core_pattern (CORENAME_MAX_SIZE)
  std::atomic<int> drop_caches{0};          // vm/drop_caches (the last value written)
  std::atomic<uint32_t> pipe_max_size{1048576};  // fs/pipe-max-size
  std::atomic<int> lease_break_time{45};    // fs/lease-break-time, seconds
  std::atomic<uint32_t> nr_open{1048576};   // fs/nr_open: RLIMIT_NOFILE's ceiling
  char boot_id[37] = "";                    // kernel/random/boot_id (sysctl_start)
};

// What a kernel instance fixes at its start: the boot id.
void sysctl_start(Sysctl& s);

// Linux's round_pipe_size: a pipe's capacity for a requested size (whole
// pages, a power of two), or 0 when it is too big.
uint32_t round_pipe_size(uint64_t size);

// /proc/sys as procfs walks it: a path below /proc/sys ("kernel/pid_max")
// is a directory, a file (its index), or nothing.
enum class SysctlNode { kNone, kDir, kFile };
SysctlNode sysctl_lookup(std::string_view path, int* index);
// The names directly inside a directory path ("" is /proc/sys itself):
// fn(name, is_dir) once each.
template <typename F>
void sysctl_list(std::string_view dir, F&& fn);
// The mode bits (0644, 0444, 0200) of file `index`.
uint32_t sysctl_mode(int index);
// Opens file `index` (permission as Linux's proc_sys_permission: by mode,
// root included); reads show the current value, writes set it.
long sysctl_open(Task& t, int index, int flags, uint64_t ino, File** out);

// Sets file `path` ("kernel/shmmax") to `value` as a write by t would
// (a container runtime's linux.sysctl): ENOENT for no such file, EACCES
// for a read-only one, else what the write would return.
long sysctl_set(Task& t, std::string_view path, std::string_view value);

// Implementation detail of sysctl_list.
int sysctl_count();
std::string_view sysctl_path(int index);

template <typename F>
void sysctl_list(std::string_view dir, F&& fn) {
  std::string_view last;  // entries are grouped by directory: skip repeats of a subdirectory
  for (int i = 0; i < sysctl_count(); i++) {
    std::string_view p = sysctl_path(i);
    if (!dir.empty()) {
      if (p.size() <= dir.size() + 1 || !starts_with(p, dir) || p[dir.size()] != '/') continue;
      p = tail(p, dir.size() + 1);
    }
    size_t slash = p.find('/');
    std::string_view name = head(p, slash);
    if (slash != std::string_view::npos && name == last) continue;
    last = slash == std::string_view::npos ? std::string_view() : name;
    fn(name, slash != std::string_view::npos);
  }
}

}  // namespace flatux
