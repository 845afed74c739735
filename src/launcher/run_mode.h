// `flatux run`: one program under a kernel of its own, over a host folder
// (or the whole host), as the command line or an OCI bundle describes it.
#pragma once
#include <poll.h>
#include <functional>
#include <string>
#include <vector>

#include "kernel/task/process.h"
#include "launcher/sandbox/sandbox.h"

namespace flatux::launcher {

// A filesystem mounted in the guest before its program starts, after the
// root and the kernel's own /proc and /dev: one of the kernel's types
// (tmpfs, sysfs, cgroup2, proc...), or a host path bound (`host` set).
struct GuestMount {
  std::string type;     // a kernel filesystem type; ignored for a host bind
  std::string host;     // a host path (canonical), granted to the guest; "" for a kernel filesystem
  std::string target;   // guest path; the folder or file must exist
  unsigned long flags = 0;  // MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC
  std::string data;     // mount(2)'s data: the filesystem's options
  std::string source;   // what /proc/mounts names as its source ("" : the type)
  // A container's /dev (a tmpfs the kernel fills with the default devices,
  // devfs_populate_container), or a mount point the kernel makes in one.
  bool container_dev = false;
  bool in_container_dev = false;
};

struct RunOptions {
  std::string root = "/";
  bool readonly = false;
  std::string strace;  // "" off, "-" stderr, else a file
  std::string net = "host";  // "host": the host's network; "none": no AF_INET/AF_INET6
  std::string syscall_entry;  // auto|trap|rewrite|rewrite-page0; "" = $FLATUX_SYSCALL_ENTRY or auto
  std::string site_survey;    // --site-survey=FILE: syscall sites by shape, written at the end
  std::vector<std::string> ubd;     // "N[r]=FILE": /dev/ubd<a+N> from a host file (FILE canonical once parsed)
  std::vector<std::string> mounts;  // "DEV:DIR": an ext4 device mounted before the guest starts
  std::string mem;                  // --mem=SIZE, as boot's mem=; "" for the default share
  std::vector<std::string> tmpfs;   // "DIR[:OPTIONS]": a private tmpfs mounted at DIR
  std::vector<std::string> argv;
  SandboxOptions sandbox;
  std::string hostfs_owners = "guest";
  std::string sandbox_without;  // layers left out, "landlock,allowlist"

  // What an OCI bundle sets (launcher/oci); `flatux run` takes these from
  // the host.
  bool env_given = false;
  std::vector<std::string> env;       // the program's environment (else flatux's own)
  std::string cwd;                    // guest folder to start in (else where flatux started, inside the root)
  std::string hostname, domainname;   // else the host's
  const InitIdentity* identity = nullptr;  // else root with every capability
  std::vector<GuestMount> guest_mounts;
  std::string netns;                  // a host network namespace to join: the guest's network is its
  // linux.maskedPaths and readonlyPaths, applied as runc does in the guests'
  // mount namespace just before the program starts.
  std::vector<std::string> masked_paths, readonly_paths;
  // linux.devices: nodes made (with the folders on the way) just before the
  // program starts, as runc makes them.
  struct Device {
    std::string path;
    uint32_t mode;
    uint64_t rdev;
    uint32_t uid, gid;
  };
  std::vector<Device> devices;
  // linux.sysctl: the kernel's own tunables ("kernel/shmmax"), set just
  // before the program starts, and the network namespace's ("net/..."),
  // set in the host namespace joined (netns).
  std::vector<std::pair<std::string, std::string>> sysctls, net_sysctls;
  // An OCI container: host signals reach the program as from an ancestor
  // pid namespace, and flatux ends killed by the program's signal
  // (silently) where `flatux run` exits 128+N.
  bool container = false;
  // A container's cgroup limits (linux.resources), on the guests' root
  // cgroup, which stands for the container's own: 0 for none.
  int64_t cgroup_memory_max = 0, cgroup_pids_max = 0;
  std::string uid_map, gid_map;  // the container's user namespace (linux.uidMappings), "" for the identity
  std::string host_cgroup;  // the host cgroup the engine names for the run (cgroupsPath), "" for flatux's own
  CgroupSettings host_cgroup_settings;  // what the engine asks of that cgroup besides (CPU...)
  // In the kernel's host process once everything is ready, just before
  // the program is loaded: an OCI container's "created" state. False ends
  // the run (exit 125).
  std::function<bool()> before_program;
  // 0 and 1 are a terminal (an OCI container's pty): the kernel's console
  // runs on it (raw mode, the kernel's line discipline) as the program's
  // stdio and controlling terminal.
  bool terminal = false;
  // A listening socket the kernel's process accepts on while the guests
  // run (an OCI container's exec requests): each connection goes to
  // serve_control, and on_kernel_event runs when a process entered from
  // outside has ended (kernel/task/process.h, entered_take_exit).
  int control_fd = -1;
  std::function<void(flatux::Kernel&, int connection)> serve_control;
  std::function<void(flatux::Kernel&)> on_kernel_event;
  // More host descriptors for that wait (an exec session's terminal):
  // control_poll fills at most `max` and says how many; control_polled
  // gets them back with their revents.
  std::function<int(pollfd* fds, int max)> control_poll;
  std::function<void(flatux::Kernel&, const pollfd* fds, int n)> control_polled;
};

// A signal sent to flatux to end the run, noted while before_program
// waits (0: none): the hook returns false on it.
int run_pending_host_signal();

// Runs o.argv[0]; returns the exit code flatux exits with: the program's,
// 128+N when a signal ended it, 125 when flatux could not start it, 126
// or 127 when the program could not be executed or found.
int run_program(const RunOptions& o);

}  // namespace flatux::launcher
