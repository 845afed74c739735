// The text of procfs files.
#pragma once
#include <string_view>

#include "kernel/task/task.h"
#include "kernel/vfs/synth.h"

namespace flatux {

enum class ProcFile : uint8_t {
  kNone,
  // per process
  kCmdline, kEnviron, kComm, kStat, kStatm, kStatus, kMaps, kMounts, kMountinfo, kLimits, kPagemap, kMem, kCgroup,
  kOomScoreAdj,
  // global
  kMeminfo, kCpuinfo, kUptime, kLoadavg, kVersion, kFilesystems, kGlobalMounts, kKernelCmdline,
  kGlobalStat, kCgroups,
  // /proc/sysvipc
  kSysvipcShm, kSysvipcSem, kSysvipcMsg,
};

ProcFile proc_file_named(std::string_view name, bool per_pid);
ProcFile proc_sysvipc_file(std::string_view name);
bool proc_file_writable(ProcFile f);
// A write to a writable per-process file (oom_score_adj): 0 or -errno.
long proc_store(Task& t, ProcFile f, int pid, std::string_view text);
// The mode bits of a generated file (0444; 0644 writable; 0400 pagemap).
uint32_t proc_file_mode(ProcFile f);

// /proc/PID/pagemap, read page by page (procfs_pagemap.cpp).
long procfs_open_pagemap(Task& t, int pid, uint32_t flags, File** out);
// /proc/PID/mem (procfs_mem.cpp): -EACCES unless ptrace's rule lets the caller in.
long procfs_open_mem(Task& t, int pid, uint32_t flags, File** out);
int proc_global_count();
const char* proc_global_name(int i);
int proc_pid_file_count();
const char* proc_pid_file_name(int i);

// The mount table as the process whose root is `root` sees it
// (procfs_mounts.cpp), and the filesystem types.
void gen_mounts(SynthText& o, Kernel& k, const MountNs& ns, const char* root, bool mountinfo);
void gen_filesystems(SynthText& o, Kernel& k);

// Generates the file's text for process/task `pid` (ignored for global files).
long proc_generate(Task& t, ProcFile f, int pid, SynthText& out);

}  // namespace flatux
