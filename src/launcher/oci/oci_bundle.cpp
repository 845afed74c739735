#include "launcher/oci/oci_bundle.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <map>
#include <sstream>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

struct MountOptions {
  unsigned long flags = 0;
  bool bind = false;
  std::string data;  // what the filesystem itself takes (mode=, size=...)
};

// Propagation and time options change nothing a guest of one kernel can
// tell apart; devpts' own options are the kernel devpts's already.
bool ignored_option(const std::string& o) {
  static const char* const kIgnored[] = {"rprivate",    "private",    "rshared",  "shared",     "rslave",
                                         "slave",       "runbindable", "unbindable", "strictatime", "relatime",
                                         "norelatime",  "noatime",    "atime",    "nodiratime", "diratime",
                                         "newinstance", "tmpcopyup",  "notmpcopyup", "copy-symlink", "Z", "z"};
  for (const char* i : kIgnored)
    if (o == i) return true;
  return o.compare(0, 10, "ptmxmode=") == 0;
}

MountOptions parse_options(const std::vector<std::string>& options) {
  MountOptions m;
  for (const std::string& o : options) {
    if (o == "ro") m.flags |= MS_RDONLY;
    else if (o == "rw") m.flags &= ~(unsigned long)MS_RDONLY;
    else if (o == "nosuid") m.flags |= MS_NOSUID;
    else if (o == "suid") m.flags &= ~(unsigned long)MS_NOSUID;
    else if (o == "nodev") m.flags |= MS_NODEV;
    else if (o == "dev") m.flags &= ~(unsigned long)MS_NODEV;
    else if (o == "noexec") m.flags |= MS_NOEXEC;
    else if (o == "exec") m.flags &= ~(unsigned long)MS_NOEXEC;
    else if (o == "bind" || o == "rbind") m.bind = true;
    else if (!ignored_option(o)) m.data += (m.data.empty() ? "" : ",") + o;
  }
  return m;
}

std::string clean_path(const std::string& p) {
  std::string out;
  std::istringstream in(p);
  std::string part;
  while (std::getline(in, part, '/'))
    if (!part.empty() && part != ".") out += "/" + part;
  return out.empty() ? "/" : out;
}

// Makes `dest` (a clean guest path) in the root when it is missing: every
// folder on the way, and the last as a folder or an empty file. Resolved
// inside the root: a link in the bundle's root cannot lead out of it (one
// that leads nowhere is an error). *resolved is where it is, links
// followed, as a guest path: what the kernel mounts on.
bool make_mount_point(int root, const std::string& root_path, const std::string& dest, bool file,
                      std::string* resolved, std::string* error) {
  std::string sofar;
  size_t pos = 1;
  int err = 0;
  while (pos <= dest.size() && !err) {
    size_t slash = dest.find('/', pos);
    if (slash == std::string::npos) slash = dest.size();
    std::string name = dest.substr(pos, slash - pos);
    bool last = slash == dest.size();
    std::string next = sofar.empty() ? name : sofar + "/" + name;
    pos = slash + 1;
    long fd = oci_open_in_root(root, next, O_PATH);
    if (fd >= 0) {
      close((int)fd);
      sofar = next;
      continue;
    }
    if (errno != ENOENT) {
      err = errno;
      break;
    }
    long parent = oci_open_in_root(root, sofar, O_PATH | O_DIRECTORY);
    if (parent < 0) {
      err = errno;
      break;
    }
    int r;
    if (last && file) {
      r = openat((int)parent, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (r >= 0) close(r);
    } else {
      r = mkdirat((int)parent, name.c_str(), 0755);
    }
    err = r < 0 ? errno : 0;  // EEXIST: a link that leads nowhere
    close((int)parent);
    sofar = next;
  }
  long fd = err ? -1 : oci_open_in_root(root, sofar, O_PATH);
  char host[PATH_MAX];
  ssize_t n = -1;
  if (fd >= 0) {
    n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), host, sizeof host - 1);
    close((int)fd);
  }
  if (err || n < 0) {
    *error = "making the mount point " + dest + ": " + strerror(err ? err : errno) +
             (err == EEXIST ? " (a link in the root that leads nowhere)" : "");
    return false;
  }
  host[n] = 0;
  std::string h = host;
  *resolved = root_path == "/" ? h : h.size() == root_path.size() ? "/" : h.substr(root_path.size());
  return true;
}

// One mount of the bundle as the kernel serves it, or a reason it is
// already served (or not at all).
// Whether the bundle has given the container a /dev of its own (a tmpfs
// the kernel fills) by now.
bool own_dev(const RunOptions& o) {
  for (const GuestMount& g : o.guest_mounts)
    if (g.container_dev) return true;
  return false;
}

bool under_dev(const std::string& dest) { return dest.compare(0, 5, "/dev/") == 0; }

bool add_mount(int root, const std::string& root_path, const OciMount& m, RunOptions* o,
               std::vector<std::string>* ignored, std::string* error) {
  std::string dest = clean_path(m.destination), at;
  MountOptions opt = parse_options(m.options);
  std::string type = m.type;
  bool in_dev = own_dev(*o) && under_dev(dest);
  if (opt.bind || type == "bind") {
    // A tmpfs of the kernel's stands in for an engine's shm folder.
    if (dest == "/dev/shm") {
      if (in_dev) o->guest_mounts.push_back({"tmpfs", "", dest, MS_NOSUID | MS_NODEV, "mode=1777", "shm"});
      return true;
    }
    char canon[PATH_MAX];
    if (!realpath(m.source.c_str(), canon)) {
      *error = "bind mount source " + m.source + ": " + strerror(errno);
      return false;
    }
    struct stat st;
    if (stat(canon, &st) != 0) {
      *error = "bind mount source " + m.source + ": " + strerror(errno);
      return false;
    }
    if (in_dev) at = dest;  // in the container's /dev, where the kernel makes it
    else if (!make_mount_point(root, root_path, dest, !S_ISDIR(st.st_mode), &at, error)) return false;
    o->guest_mounts.push_back({"", canon, at, opt.flags, "", "", false, in_dev});
    return true;
  }
  // The kernel's own /proc; and its devtmpfs and devpts, unless the
  // bundle gives the container a /dev of its own, as runc does.
  if (type == "proc" && dest == "/proc") return true;
  if (type == "tmpfs" && dest == "/dev") {
    o->guest_mounts.push_back({"tmpfs", "", "/dev", opt.flags, opt.data, m.source, true});
    return true;
  }
  if (!in_dev && ((type == "devpts" && dest == "/dev/pts") || (type == "tmpfs" && dest == "/dev/shm"))) return true;
  if (type == "cgroup") type = "cgroup2";  // the one hierarchy flatux serves
  if (type != "proc" && type != "tmpfs" && type != "sysfs" && type != "cgroup2" && type != "devpts" &&
      type != "mqueue") {
    *error = "mount " + dest + ": type " + (type.empty() ? "(none)" : type) + " is not served";
    return false;
  }
  if (in_dev) at = dest;
  else if (!make_mount_point(root, root_path, dest, false, &at, error)) return false;
  o->guest_mounts.push_back({type, "", at, opt.flags, opt.data, m.source, false, in_dev});
  return true;
}

// linux.namespaces: each type known, each path a namespace of its type
// (the spec's MUST: an error otherwise). Only a network namespace is
// joined; the other kinds are the kernel's own, one per container.
bool namespaces(const OciSpec& s, std::vector<std::string>* ignored, std::string* error) {
  static const std::map<std::string, int> kCloneFlag = {
      {"pid", CLONE_NEWPID}, {"network", CLONE_NEWNET}, {"mount", CLONE_NEWNS},         {"ipc", CLONE_NEWIPC},
      {"uts", CLONE_NEWUTS}, {"user", CLONE_NEWUSER},   {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME}};
  for (const OciSpec::Namespace& n : s.namespaces) {
    auto kind = kCloneFlag.find(n.type);
    if (kind == kCloneFlag.end()) {
      *error = "namespace type " + n.type + " is not known";
      return false;
    }
    if (n.path.empty()) continue;
    int fd = open(n.path.c_str(), O_RDONLY | O_CLOEXEC);
    int type = fd < 0 ? -1 : ioctl(fd, NS_GET_NSTYPE);
    if (fd >= 0) close(fd);
    if (type != kind->second) {
      *error = "namespace " + n.type + " path " + n.path + " is not a " + n.type + " namespace";
      return false;
    }
    if (n.type != "network")
      ignored->push_back("namespace " + n.type + " " + n.path + ": not joined; the container's kernel has its own");
  }
  return true;
}

void network(const OciSpec& s, RunOptions* o) {
  const OciSpec::Namespace* net = s.find_namespace("network");
  if (!net) o->net = "host";  // the host's, as runc without a network namespace
  else if (net->path.empty()) o->net = "none";  // a new one: loopback only
  else o->netns = net->path, o->net = "host";   // the engine's, with its interfaces
}

// linux.sysctl: "net.*" belongs to the network namespace (the engine's,
// which the run's host sockets live in; runc refuses them in the host's),
// the rest to the kernel, which is the container's own: any it serves.
bool sysctls(const OciSpec& s, RunOptions* o, std::vector<std::string>* ignored, std::string* error) {
  for (const auto& [key, value] : s.sysctl) {
    std::string path = key;
    for (char& c : path)
      if (c == '.') c = '/';
    if (path.compare(0, 4, "net/") != 0) {
      o->sysctls.emplace_back(path, value);
    } else if (!o->netns.empty()) {
      o->net_sysctls.emplace_back(path, value);
    } else if (o->net == "none") {
      ignored->push_back("sysctl " + key + ": not applied: the container has no network sockets (none) to tune");
    } else {
      *error = "sysctl " + key + " is not allowed in the host's network namespace";
      return false;
    }
  }
  return true;
}

}  // namespace

long oci_open_in_root(int root, const std::string& rel, uint64_t flags) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how);
}

std::string oci_cgroup_path(const std::string& p, bool systemd_cgroup) {
  if (p.empty()) return "";
  if (!systemd_cgroup) return p[0] == '/' ? p : "/" + p;  // relative: below the hierarchy's root here
  size_t c1 = p.find(':'), c2 = c1 == std::string::npos ? c1 : p.find(':', c1 + 1);
  if (c2 == std::string::npos) return p[0] == '/' ? p : "/" + p;
  std::string slice = p.substr(0, c1), prefix = p.substr(c1 + 1, c2 - c1 - 1), name = p.substr(c2 + 1);
  if (slice.empty()) slice = "system.slice";
  // systemd nests a slice in each of its dash-separated prefixes.
  std::string path;
  std::string stem = slice.substr(0, slice.size() - (slice.size() > 6 && slice.compare(slice.size() - 6, 6, ".slice") == 0 ? 6 : 0));
  for (size_t dash = stem.find('-'); dash != std::string::npos; dash = stem.find('-', dash + 1))
    path += "/" + stem.substr(0, dash) + ".slice";
  path += "/" + stem + ".slice";
  return path + "/" + (prefix.empty() ? name : prefix + "-" + name) + ".scope";
}

bool oci_bundle_to_run(const std::string& bundle, const OciSpec& s, RunOptions* o, std::vector<std::string>* ignored,
                       std::string* error, bool systemd_cgroup) {
  std::string root = s.root_path[0] == '/' ? s.root_path : bundle + "/" + s.root_path;
  char canon[PATH_MAX];
  if (!realpath(root.c_str(), canon)) {
    *error = "root " + root + ": " + strerror(errno);
    return false;
  }
  o->root = canon;
  o->readonly = s.root_readonly;
  o->argv = s.args;
  o->env_given = true;
  o->env = s.env;
  o->cwd = clean_path(s.cwd);
  o->hostname = s.hostname;
  o->domainname = s.domainname;
  o->identity = &s.identity;
  o->container = true;
  // The limit is the container cgroup's memory.max, as natively: a mapping
  // past it succeeds, the memory it makes resident gets the OOM killer.
  // mem= (what the kernel as a whole may commit) keeps a margin above it.
  if (s.memory_limit > 0) {
    int64_t limit = s.memory_limit < (4 << 20) ? (4 << 20) : s.memory_limit;
    o->cgroup_memory_max = limit;
    o->mem = std::to_string(2 * limit + (256 << 20));
  }
  if (s.pids_limit > 0) o->cgroup_pids_max = s.pids_limit;
  o->host_cgroup = oci_cgroup_path(s.cgroups_path, systemd_cgroup);
  o->host_cgroup_settings = s.cgroup_settings;
  for (const std::string& r : s.resources_not_applied)
    ignored->push_back("linux.resources." + r + ": not applied");
  if (!namespaces(s, ignored, error)) return false;
  network(s, o);
  if (s.find_namespace("user") && !s.uid_map.empty() && !s.gid_map.empty()) o->uid_map = s.uid_map, o->gid_map = s.gid_map;
  int rootfd = open(canon, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) {
    *error = std::string("root ") + canon + ": " + strerror(errno);
    return false;
  }
  bool ok = true;
  for (const OciMount& m : s.mounts)
    if (!(ok = add_mount(rootfd, canon, m, o, ignored, error))) break;
  std::string cwd_at;
  if (ok && !make_mount_point(rootfd, canon, o->cwd, false, &cwd_at, error)) ok = false;
  close(rootfd);
  if (!ok) return false;
  for (const OciDevice& d : s.devices) o->devices.push_back({clean_path(d.path), d.mode, d.rdev, d.uid, d.gid});
  o->masked_paths = s.masked_paths;
  o->readonly_paths = s.readonly_paths;
  if (!sysctls(s, o, ignored, error)) return false;
  if (s.has_seccomp) ignored->push_back("linux.seccomp: not applied to the guest yet");
  for (const char* inside : {"createContainer", "startContainer"})
    if (s.hooks.count(inside) && !s.hooks.at(inside).empty())
      ignored->push_back(std::string("hooks.") + inside + ": hooks inside the container are not run yet");
  return true;
}

}  // namespace flatux::launcher
