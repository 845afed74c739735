// An OCI bundle's config.json (the runtime spec's config.md), read into
// what flatux serves of it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernel/task/process.h"
#include "launcher/sandbox/run_cgroup.h"

namespace flatux::launcher {

struct OciMount {
  std::string destination, type, source;
  std::vector<std::string> options;
};

struct OciDevice {  // linux.devices
  std::string path;
  uint32_t mode = 0;  // S_IFCHR, S_IFBLK or S_IFIFO with the permission bits (fileMode)
  uint64_t rdev = 0;
  uint32_t uid = 0, gid = 0;
};

struct OciHook {
  std::string path;
  std::vector<std::string> args, env;
  int timeout = 0;  // seconds; 0: none
};

struct OciSpec {
  std::string oci_version;
  // process
  std::vector<std::string> args, env;
  std::string cwd = "/";
  bool terminal = false;
  unsigned console_rows = 0, console_cols = 0;  // process.consoleSize
  InitIdentity identity;
  // root
  std::string root_path;  // as written (relative to the bundle or absolute)
  bool root_readonly = false;
  std::string hostname, domainname;
  std::vector<OciMount> mounts;
  // linux
  struct Namespace {
    std::string type, path;
  };
  std::vector<Namespace> namespaces;
  int64_t memory_limit = -1;  // bytes; -1: none
  int64_t pids_limit = -1;
  CgroupSettings cgroup_settings;           // linux.resources.cpu, memory.reservation and swappiness
  std::vector<std::string> resources_not_applied;  // what else linux.resources asks, by name
  std::string cgroups_path;
  std::vector<std::string> masked_paths, readonly_paths;
  std::vector<OciDevice> devices;
  std::map<std::string, std::string> sysctl, annotations;
  std::map<std::string, std::vector<OciHook>> hooks;  // "prestart", "createRuntime", ... "poststop"
  bool has_seccomp = false;
  std::string uid_map, gid_map;  // linux.uidMappings/gidMappings as /proc/PID/uid_map text

  const Namespace* find_namespace(const std::string& type) const;
};

// Reads a "process" object alone (exec --process FILE) into spec's process
// fields. False with *error set.
bool oci_read_process(const std::string& path, OciSpec* spec, std::string* error);

// Reads and checks `path`. False with *error saying what is wrong.
bool oci_read_spec(const std::string& path, OciSpec* spec, std::string* error);

// The bit of a capability name ("CAP_CHOWN"), or -1; the name of a bit, or nullptr.
int oci_capability_bit(const std::string& name);
const char* oci_capability_name(int bit);

// A default config.json for `spec` (runc's, with args ["sh"]); rootless
// maps the caller's ids.
std::string oci_default_spec(bool rootless);

}  // namespace flatux::launcher
