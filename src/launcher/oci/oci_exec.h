// exec: a new process in a running container, started by the container's
// kernel (its mounts, its pid numbering, the credentials asked for) and
// seen from the host as the `exec` command itself (or, with --detach, a
// process it leaves behind), whose exit status is the guest process's.
//
// The kernel's process listens on ROOT/ID/ctl.sock, made by create before
// the sandbox. A request carries the process (oci_exec.cpp's wire format)
// and, as SCM_RIGHTS, the three descriptors that become its stdio; the
// answer is its pid (or -errno), then its wait status when it ends.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "launcher/oci/oci_commands.h"
#include "launcher/run_mode.h"

namespace flatux {
struct PtyPair;
}

namespace flatux::launcher {

// The control socket's path (through an O_PATH descriptor of `dir`, so its
// length does not depend on --root's), and the listening socket create
// makes there; -1 after *error.
std::string oci_control_path(int dir_fd);
int oci_control_listen(const std::string& dir, std::string* error);

// The kernel's side: connections and ended processes, from run_program's
// wait loop (RunOptions::serve_control and on_kernel_event).
class OciExecServer {
 public:
  void serve(flatux::Kernel& k, int connection);
  void ended(flatux::Kernel& k);
  // The host terminals of sessions with one (exec --tty): what they type
  // goes to the session's pty in the kernel.
  int poll_fds(pollfd* fds, int max);
  void polled(flatux::Kernel& k, const pollfd* fds, int n);

 private:
  struct Session {
    int pid;
    int connection;
    flatux::PtyPair* pty = nullptr;  // exec --tty: a pty whose master is the host terminal
    int terminal = -1;               // that host terminal (the pair's)
  };
  std::vector<Session> sessions_;
};

// The guest processes of a running container, one "PID PPID UID COMMAND"
// line each, from its kernel.
bool oci_list_processes(const std::string& dir, std::string* text, std::string* error);

// pause and resume: the guests' root cgroup frozen or thawed (cgroup.freeze)
// through the same socket; the state says "paused" meanwhile.
int oci_freeze(const OciContext& ctx, const std::string& id, bool freeze);

// `exec [OPTIONS] ID [COMMAND ARGS...]`.
int oci_exec(const OciContext& ctx, std::map<std::string, std::string>& opts, const std::vector<std::string>& args);

}  // namespace flatux::launcher
