// A container's state under the runtime's --root: ROOT/ID/state.json (what
// create learnt) and ROOT/ID/exec.fifo (there while the container waits
// for `start`).
#pragma once
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace flatux::launcher {

struct OciState {
  std::string id, bundle, rootfs, created;
  pid_t pid = 0;            // the container's host process: flatux's launcher for it
  uint64_t pid_start = 0;   // its start time (/proc/PID/stat), so a pid used again is not taken for it
  std::map<std::string, std::string> annotations;
  std::string cgroup;       // the host cgroup the engine named, or ""
  std::vector<std::string> run_cgroups;  // the run's host cgroup folders (removed by delete)
};

// The host cgroup folders the container's launcher made for its run (its
// run init's: flatux-run-PID, or the engine's path), read once create is
// done; none when the run is in no cgroup of its own.
std::vector<std::string> oci_run_cgroups(pid_t launcher, const std::string& engine_path);

// Removes those folders once their processes are gone (the host may take
// a moment to let go of them); a folder still in use stays.
void oci_remove_run_cgroups(const std::vector<std::string>& dirs);

std::string oci_state_dir(const std::string& root, const std::string& id);
std::string oci_exec_fifo(const std::string& dir);
std::string oci_paused_marker(const std::string& dir);  // there while paused

bool oci_state_write(const std::string& dir, const OciState& s, std::string* error);
bool oci_state_read(const std::string& dir, OciState* s, std::string* error);

// "created", "running", "paused" or "stopped", as the runtime spec's
// lifecycle and runc's pause.
std::string oci_status(const std::string& dir, const OciState& s);

// The state the runtime spec defines: indented as runc's `state ID`
// prints it, or on one line (what hooks read).
std::string oci_state_json(const OciState& s, const std::string& status, bool indent = true);

// A host process's state letter, parent and start time (/proc/PID/stat).
bool oci_proc_stat(pid_t pid, char* state, pid_t* ppid, uint64_t* start_time);
// Whether pid is alive (not a zombie), and its start time.
bool oci_process_alive(pid_t pid, uint64_t* start_time);
// The host processes whose parent is `parent`.
std::vector<pid_t> oci_children(pid_t parent);

// The ids of the containers under root.
std::vector<std::string> oci_list(const std::string& root);

// The current time as RFC 3339 with nanoseconds (runc's "created").
std::string oci_now();

}  // namespace flatux::launcher
