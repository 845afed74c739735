#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <regex>
#include <stdexcept>
#include "launcher/oci/oci_spec.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

namespace flatux::launcher {
namespace {

using json = nlohmann::json;

constexpr const char* kCapabilities[] = {
    "CAP_CHOWN",          "CAP_DAC_OVERRIDE",  "CAP_DAC_READ_SEARCH", "CAP_FOWNER",        "CAP_FSETID",
    "CAP_KILL",           "CAP_SETGID",        "CAP_SETUID",          "CAP_SETPCAP",       "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN",     "CAP_NET_RAW",       "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",      "CAP_SYS_MODULE",    "CAP_SYS_RAWIO",       "CAP_SYS_CHROOT",    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",      "CAP_SYS_ADMIN",     "CAP_SYS_BOOT",        "CAP_SYS_NICE",      "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",       "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",          "CAP_LEASE",         "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",  "CAP_SETFCAP",       "CAP_MAC_OVERRIDE",    "CAP_MAC_ADMIN",     "CAP_SYSLOG",
    "CAP_WAKE_ALARM",     "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",      "CAP_PERFMON",       "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE"};

constexpr const char* kRlimits[] = {"RLIMIT_CPU",     "RLIMIT_FSIZE",      "RLIMIT_DATA",     "RLIMIT_STACK",
                                    "RLIMIT_CORE",    "RLIMIT_RSS",        "RLIMIT_NPROC",    "RLIMIT_NOFILE",
                                    "RLIMIT_MEMLOCK", "RLIMIT_AS",         "RLIMIT_LOCKS",    "RLIMIT_SIGPENDING",
                                    "RLIMIT_MSGQUEUE", "RLIMIT_NICE",      "RLIMIT_RTPRIO",   "RLIMIT_RTTIME"};

// Capability names (unknown ones, newer than flatux, are left out as runc
// leaves them) as a set of bits.
uint64_t capability_set(const json& names) {
  uint64_t set = 0;
  for (const json& n : names)
    if (int bit = oci_capability_bit(n.get<std::string>()); bit >= 0) set |= uint64_t{1} << bit;
  return set;
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && !j[key].is_null())
    for (const json& s : j[key]) out.push_back(s.get<std::string>());
  return out;
}

std::string string_or(const json& j, const char* key, const std::string& def = "") {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : def;
}

void read_process(const json& p, OciSpec* s) {
  s->args = strings(p, "args");
  s->env = strings(p, "env");
  s->cwd = string_or(p, "cwd", "/");
  s->terminal = p.value("terminal", false);
  if (p.contains("consoleSize")) {
    s->console_rows = p["consoleSize"].value("height", 0u);
    s->console_cols = p["consoleSize"].value("width", 0u);
  }
  InitIdentity& id = s->identity;
  if (p.contains("user")) {
    const json& u = p["user"];
    id.uid = u.value("uid", 0u);
    id.gid = u.value("gid", 0u);
    id.umask = u.value("umask", 022u);
    for (const json& g : u.value("additionalGids", json::array()))
      if (id.ngroups < Creds::kMaxGroups) id.groups[id.ngroups++] = g.get<uint32_t>();
  }
  if (p.contains("capabilities")) {
    const json& c = p["capabilities"];
    id.set_caps = true;
    id.cap_bounding = capability_set(c.value("bounding", json::array()));
    id.cap_effective = capability_set(c.value("effective", json::array()));
    id.cap_permitted = capability_set(c.value("permitted", json::array()));
    id.cap_inheritable = capability_set(c.value("inheritable", json::array()));
    id.cap_ambient = capability_set(c.value("ambient", json::array()));
  }
  for (const json& r : p.value("rlimits", json::array())) {
    std::string type = r.at("type").get<std::string>();
    int res = -1;
    for (int i = 0; i < kNumRlimits; i++)
      if (type == kRlimits[i]) res = i;
    if (res < 0) throw std::runtime_error("process.rlimits: unknown type " + type);
    if (id.nrlimits < kNumRlimits)
      id.rlimits[id.nrlimits++] = {res, r.at("soft").get<uint64_t>(), r.at("hard").get<uint64_t>()};
  }
  id.no_new_privs = p.value("noNewPrivileges", false);
  id.oom_score_adj = p.value("oomScoreAdj", 0);
}

int64_t number_or(const json& o, const char* key, int64_t fallback) {
  return o.contains(key) && o[key].is_number() ? o[key].get<int64_t>() : fallback;
}

// linux.resources beyond the memory and pids limits: what the host
// cgroup takes (CPU, the memory reservation and swappiness), and the
// names of the rest, which are not applied.
void read_resources(const json& r, OciSpec* s) {
  CgroupSettings& c = s->cgroup_settings;
  if (r.contains("cpu") && r["cpu"].is_object()) {
    const json& cpu = r["cpu"];
    c.cpu_shares = number_or(cpu, "shares", -1);
    c.cpu_quota = number_or(cpu, "quota", -1);
    c.cpu_period = number_or(cpu, "period", -1);
    c.rt_runtime = number_or(cpu, "realtimeRuntime", -1);
    c.rt_period = number_or(cpu, "realtimePeriod", -1);
    c.cpus = string_or(cpu, "cpus");
    c.mems = string_or(cpu, "mems");
  }
  if (r.contains("memory") && r["memory"].is_object()) {
    const json& m = r["memory"];
    c.memory_reservation = number_or(m, "reservation", -1);
    c.swappiness = number_or(m, "swappiness", -1);
    for (const char* k : {"swap", "kernel", "kernelTCP", "disableOOMKiller"})
      if (m.contains(k) && !m[k].is_null()) s->resources_not_applied.push_back(std::string("memory.") + k);
  }
  for (const char* k : {"blockIO", "hugepageLimits", "network", "rdma", "unified"})
    if (r.contains(k) && !r[k].is_null() && !r[k].empty()) s->resources_not_applied.push_back(k);
}

void read_linux(const json& l, OciSpec* s) {
  for (const json& n : l.value("namespaces", json::array()))
    s->namespaces.push_back({n.at("type").get<std::string>(), string_or(n, "path")});
  if (l.contains("resources")) {
    const json& r = l["resources"];
    if (r.contains("memory") && r["memory"].contains("limit") && r["memory"]["limit"].is_number())
      s->memory_limit = r["memory"]["limit"].get<int64_t>();
    if (r.contains("pids") && r["pids"].contains("limit") && r["pids"]["limit"].is_number())
      s->pids_limit = r["pids"]["limit"].get<int64_t>();
    read_resources(r, s);
  }
  s->cgroups_path = string_or(l, "cgroupsPath");
  s->masked_paths = strings(l, "maskedPaths");
  s->readonly_paths = strings(l, "readonlyPaths");
  const json sysctl = l.value("sysctl", json::object());
  for (auto& [k, v] : sysctl.items()) s->sysctl[k] = v.get<std::string>();
  s->has_seccomp = l.contains("seccomp") && !l["seccomp"].is_null();
  for (auto [key, out] : {std::pair{"uidMappings", &s->uid_map}, std::pair{"gidMappings", &s->gid_map}})
    for (const json& m : l.value(key, json::array()))
      *out += std::to_string(m.at("containerID").get<uint32_t>()) + " " + std::to_string(m.at("hostID").get<uint32_t>()) +
              " " + std::to_string(m.at("size").get<uint32_t>()) + "\n";
  for (const json& d : l.value("devices", json::array())) {
    OciDevice dev;
    dev.path = d.at("path").get<std::string>();
    std::string type = d.at("type").get<std::string>();
    uint32_t kind = type == "b" ? S_IFBLK : type == "p" ? S_IFIFO : (type == "c" || type == "u") ? S_IFCHR : 0;
    if (!kind || dev.path.empty() || dev.path[0] != '/') throw std::invalid_argument("linux.devices: " + dev.path + " type " + type);
    uint64_t major = d.value("major", 0ull), minor = d.value("minor", 0ull);
    dev.rdev = kind == S_IFIFO ? 0 : makedev(major, minor);
    dev.mode = kind | (d.value("fileMode", 0666u) & 07777);
    dev.uid = d.value("uid", 0u);
    dev.gid = d.value("gid", 0u);
    s->devices.push_back(dev);
  }
}

void read_hooks(const json& h, OciSpec* s) {
  for (auto& [when, list] : h.items())
    for (const json& e : list) {
      OciHook hook;
      hook.path = e.at("path").get<std::string>();
      hook.args = strings(e, "args");
      hook.env = strings(e, "env");
      hook.timeout = e.value("timeout", 0);
      s->hooks[when].push_back(hook);
    }
}

}  // namespace

const OciSpec::Namespace* OciSpec::find_namespace(const std::string& type) const {
  for (const Namespace& n : namespaces)
    if (n.type == type) return &n;
  return nullptr;
}

int oci_capability_bit(const std::string& name) {
  for (int i = 0; i < (int)(sizeof kCapabilities / sizeof kCapabilities[0]); i++)
    if (name == kCapabilities[i]) return i;
  return -1;
}

const char* oci_capability_name(int bit) {
  return bit >= 0 && bit < (int)(sizeof kCapabilities / sizeof kCapabilities[0]) ? kCapabilities[bit] : nullptr;
}

bool oci_read_process(const std::string& path, OciSpec* s, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot be read";
    return false;
  }
  try {
    s->identity = InitIdentity{};
    read_process(json::parse(in), s);
    if (s->args.empty()) throw std::runtime_error("args is empty");
  } catch (const std::exception& e) {
    *error = path + ": " + e.what();
    return false;
  }
  return true;
}

// ociVersion is SemVer 2.0.0; this runtime serves the spec's major 1.
static bool spec_version_served(const std::string& v) {
  static const std::regex kSemVer(R"(1\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?)");
  return std::regex_match(v, kSemVer);
}

bool oci_read_spec(const std::string& path, OciSpec* s, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot be read";
    return false;
  }
  try {
    json j = json::parse(in);
    s->oci_version = j.at("ociVersion").get<std::string>();
    if (!spec_version_served(s->oci_version))
      throw std::runtime_error("ociVersion " + s->oci_version + " is not a version 1 of the runtime spec (SemVer 1.x.y)");
    if (!j.contains("process")) throw std::runtime_error("no process");
    read_process(j["process"], s);
    if (s->args.empty()) throw std::runtime_error("process.args is empty");
    if (!j.contains("root")) throw std::runtime_error("no root");
    s->root_path = j["root"].at("path").get<std::string>();
    s->root_readonly = j["root"].value("readonly", false);
    s->hostname = string_or(j, "hostname");
    s->domainname = string_or(j, "domainname");
    for (const json& m : j.value("mounts", json::array()))
      s->mounts.push_back({m.at("destination").get<std::string>(), string_or(m, "type"), string_or(m, "source"),
                           strings(m, "options")});
    if (j.contains("linux")) read_linux(j["linux"], s);
    if (j.contains("hooks")) read_hooks(j["hooks"], s);
    const json annotations = j.value("annotations", json::object());
    for (auto& [k, v] : annotations.items()) s->annotations[k] = v.get<std::string>();
  } catch (const std::exception& e) {
    *error = path + ": " + e.what();
    return false;
  }
  return true;
}

std::string oci_default_spec(bool rootless) {
  json caps = json::array({"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"});
  json spec = {
      {"ociVersion", "1.0.2-dev"},
      {"process",
       {{"terminal", true},
        {"user", {{"uid", 0}, {"gid", 0}}},
        {"args", {"sh"}},
        {"env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"}},
        {"cwd", "/"},
        {"capabilities",
         {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"ambient", caps}}},
        {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
        {"noNewPrivileges", true}}},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "flatux"},
      {"mounts",
       {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
        {{"destination", "/dev"},
         {"type", "tmpfs"},
         {"source", "tmpfs"},
         {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
        {{"destination", "/dev/pts"},
         {"type", "devpts"},
         {"source", "devpts"},
         {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
        {{"destination", "/dev/shm"},
         {"type", "tmpfs"},
         {"source", "shm"},
         {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
        {{"destination", "/sys"},
         {"type", "sysfs"},
         {"source", "sysfs"},
         {"options", {"nosuid", "noexec", "nodev", "ro"}}}}},
      {"linux",
       {{"namespaces",
         {{{"type", "pid"}}, {{"type", "network"}}, {{"type", "ipc"}}, {{"type", "uts"}}, {{"type", "mount"}}}},
        {"maskedPaths", {"/proc/kcore", "/proc/keys", "/sys/firmware"}},
        {"readonlyPaths", {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}}}}};
  if (rootless) {
    spec["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", getuid()}, {"size", 1}}};
    spec["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", getgid()}, {"size", 1}}};
    spec["linux"]["namespaces"].push_back({{"type", "user"}});
  }
  return spec.dump(1, '\t') + "\n";
}

}  // namespace flatux::launcher
