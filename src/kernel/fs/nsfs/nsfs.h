// nsfs: the namespaces of a process as /proc/PID/ns/* shows them ("mnt:
// [4026531840]") and as descriptors (an open /proc/PID/ns/mnt) that setns(2)
// joins. Mount and UTS namespaces are the kernel's own (any number); of the
// other kinds there is one each, the first (their unshare is EPERM), so
// each shows that one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

struct stat;

namespace flatux {

struct Kernel;
struct Process;
struct Task;
struct File;

enum class NsKind : uint8_t {
  kCgroup, kIpc, kMnt, kNet, kPid, kPidForChildren, kTime, kTimeForChildren, kUser, kUts,
};
constexpr int kNsKinds = 10;

// /proc/PID/ns/NAME: its kind; false for no such name.
bool ns_kind_named(std::string_view name, NsKind* out);
const char* ns_kind_name(NsKind kind);

// "mnt:[4026531840]" for p's namespace of `kind` (tasks_lock held); the
// length, or -ENAMETOOLONG.
long ns_link_text_locked(Process& p, NsKind kind, char* out, size_t n);
// A descriptor of p's namespace of `kind`, holding it (tasks_lock held).
long ns_open_locked(Kernel& k, Process& p, NsKind kind, uint32_t flags, File** out);
// What stat of /proc/PID/ns/NAME followed shows: the namespace's inode
// (tasks_lock held).
void ns_stat_locked(Process& p, NsKind kind, struct stat* out);

// CLONE_NEWNS... of a kind.
int ns_clone_flag(NsKind kind);

struct MountNs;
struct UtsNames;
// The namespace an open /proc/PID/ns/NAME names (setns), its references
// still the file's: false for any other file.
struct NsTarget {
  NsKind kind;
  MountNs* mnt;    // kMnt
  UtsNames* uts;   // kUts (nullptr: the kernel's first)
  uint64_t inum;
};
bool ns_file_target(File& f, NsTarget* out);

}  // namespace flatux
