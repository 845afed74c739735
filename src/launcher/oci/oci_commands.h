// The runtime's commands, each as the runtime spec's lifecycle and runc
// define it.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace flatux::launcher {

struct OciContext {
  std::string root = "/run/flatux-oci";  // --root: where containers' state is kept
  std::string log;                       // --log: where errors and warnings go besides stderr
  bool log_json = false;                 // --log-format json
  bool systemd_cgroup = false;           // --systemd-cgroup: cgroupsPath is "slice:prefix:name"
};

// Logs `message` at `level` ("error", "warning") to --log (as runc, so an
// engine shows it) and, for errors, to stderr.
void oci_log(const OciContext& ctx, const char* level, const std::string& message);
// One line of the log as oci_log writes it (runc's text or JSON form).
std::string oci_log_line(const OciContext& ctx, const char* level, const std::string& message);

// Logs an error and returns runc's failure status (1).
int oci_fail(const OciContext& ctx, const std::string& message);

// Runs `command` with its options and arguments; returns the exit status.
int oci_command(const OciContext& ctx, const std::string& command, std::map<std::string, std::string>& opts,
                const std::vector<std::string>& args);

}  // namespace flatux::launcher
