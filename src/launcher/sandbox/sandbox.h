// The host process's own confinement. A guest shares the address space
// with the kernel, so it can corrupt the kernel and call the host kernel
// through host code; what holds is what the host kernel lets this process
// do at all. The launcher makes that equal to what the command line
// granted the guest, before the first guest instruction, for the life of
// the process and every process it makes:
//
//   identity   started by root: a user namespace mapping every host id to
//              itself, so files keep their owners but the process holds no
//              capability over anything of the host's (identity.cpp)
//   processes  a pid namespace of the run's own: every host process of the
//              run ends with it, none outside it has a pid there
//              (run_init.cpp)
//   network    --net=none: an empty network namespace, so abstract socket
//              names and netlink are the run's own
//   mounts     a private mount namespace: with a folder root only the
//              granted paths exist (jail_mounts.cpp); with the whole host,
//              every mount nosuid, read-only with --ro, the run's /proc
//   landlock   file access beneath the granted paths only, no TCP with
//              --net=none, no signals or abstract sockets leaving the
//              process (landlock.cpp)
//   allowlist  the seccomp filter's second half: the kernel's own host
//              calls must be ones it makes, arguments checked
//              (src/host/host_allowlist.cpp)
//   no_new_privs
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernel/kernel.h"
#include "launcher/sandbox/run_cgroup.h"

namespace flatux::launcher {

// What the command line gave the guest.
struct SandboxGrant {
  std::string root = "/";        // canonical host folder: the guest's root, or hostfs= when booting
  bool root_readonly = false;
  struct Image {
    std::string path;            // canonical
    bool readonly;
  };
  std::vector<Image> images;     // ubd files
  struct Bind {
    std::string path;            // canonical
    bool readonly;
    bool folder;
  };
  std::vector<Bind> binds;       // host paths shown besides the root (an OCI bundle's bind mounts)
  bool net_none = false;
  bool host_owners = false;      // --hostfs-owners=host: ownership and device nodes pass through
  uint64_t mem_bytes = 0;        // mem= / --mem: what guests may make the host hold; 0: no limit
  std::string uid_map, gid_map;  // an OCI bundle's user namespace mappings ("": every id to itself)
  std::string cgroup_path;       // a container engine's cgroup for the run ("": one below the launcher's)
  CgroupSettings cgroup_settings;  // and what the engine asks of it (CPU shares, quota, cpuset...)
};

// The layers above, each of which --sandbox-without=LAYER[,LAYER] can
// leave out (to see what each one holds alone; the attack tests do).
enum SandboxLayer : unsigned {
  kLayerIdentity = 1u << 0,
  kLayerMounts = 1u << 1,
  kLayerLandlock = 1u << 2,
  kLayerAllowlist = 1u << 3,
  kLayerProcesses = 1u << 4,
  kLayerNetwork = 1u << 5,
};

struct SandboxOptions {
  bool off = false;              // --no-sandbox: no confinement at all (trusted guests)
  unsigned without = 0;          // SandboxLayer bits left out (--sandbox-without=)
  bool require = false;          // --require-sandbox: refuse to run when a layer is missing
  bool keep_root = false;        // --keep-root: started by root, keep root's host identity
  bool report = false;           // --security: say what was applied
  // Where "missing LAYER" warnings go (else stderr): an OCI runtime's log,
  // as the container's stderr is the program's.
  std::function<void(const std::string&)> warn;
};

// What was applied, layer by layer, for the report; `missing` lists the
// layers this configuration needs that the host could not provide.
struct SandboxState {
  std::vector<std::string> applied;
  std::vector<std::string> missing;
  bool in_user_namespace = false;
  bool host_root = false;       // uid 0 of the host's initial user namespace (exempt from RLIMIT_NPROC)
  bool private_mounts = false;  // a folder root shown alone
  bool pid_namespace = false;
  bool tasks_cgroup = false;    // the run's tasks counted in a pids cgroup of its own
  bool memory_cgroup = false;   // the run's memory limited by a cgroup of its own
  std::string fifo_dir;          // where the kernel makes host FIFOs (tmpfs named pipes)
  int task_dir = -1;             // /proc/self/task from before the private mounts, until the seal
  bool holds_host_files = false; // a descriptor of a host file was handed over (sandbox.cpp)
};

// Before the kernel exists, while the process has one thread: the
// identity and the mount namespace. False after a message when flatux
// must not go on.
bool sandbox_enter(const SandboxGrant& g, const SandboxOptions& o, SandboxState* s);

// After the kernel object exists, before any guest code: Landlock, then
// the seccomp filter (guest calls trap; calls from `text`, the kernel's
// code, are held to the host-call allowlist), no_new_privs. With the
// sandbox off, the filter only traps.
bool sandbox_seal(const SandboxGrant& g, const SandboxOptions& o, const TextRange* text, int ntext,
                  SandboxState* s);

// Writes the report: one line per layer, "flatux: sandbox: ...".
void sandbox_write_report(const SandboxState& s, int fd);

// --sandbox-without's value: "identity,processes,network,mounts,landlock,
// allowlist", any of them. False with *error set on an unknown name.
bool parse_sandbox_without(const std::string& list, SandboxOptions* o, std::string* error);

// Options shared by `flatux run` and a boot: --no-sandbox, --require-sandbox,
// --keep-root, --security, --sandbox-without=LIST, --hostfs-owners=guest|host. True when `arg` is
// one (consumed); false otherwise. *error is set on a bad value.
bool sandbox_parse_option(const std::string& arg, SandboxOptions* o, SandboxGrant* g, std::string* error);

}  // namespace flatux::launcher
