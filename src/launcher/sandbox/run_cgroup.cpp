// A guest that owns the kernel can make host processes with raw clones
// that the kernel's task table does not count. RLIMIT_NPROC cannot hold
// them in a root-started run (the host exempts uid 0, which the identity
// namespace maps to itself), so where the launcher may make cgroups, the
// run gets a pids cgroup of its own below the launcher's: pids.max counts
// every task of the run, threads included, and forks past it fail with
// EAGAIN. The launcher makes it before it gives anything up, puts the
// run's init in it (so everything below inherits it) and removes it when
// the run has ended; the launcher itself stays outside.
#include "launcher/sandbox/run_cgroup.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

bool read_text(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) return false;
  out->assign(buf, (size_t)n);
  return true;
}

bool write_text(int dir, const std::string& path, const std::string& text, std::string* why) {
  int fd = openat(dir, path.c_str(), O_WRONLY | O_CLOEXEC);
  bool ok = fd >= 0 && write(fd, text.data(), text.size()) == (ssize_t)text.size();
  if (!ok) *why = path + ": " + strerror(errno);
  if (fd >= 0) close(fd);
  return ok;
}

// This process's cgroup path in the hierarchy whose /proc/self/cgroup
// line starts with `prefix` ("0::" for v2, or ends in ":pids:" for v1).
bool own_path(const std::string& table, bool v2, std::string* path) {
  size_t pos = 0;
  while (pos < table.size()) {
    size_t end = table.find('\n', pos);
    std::string line = table.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? table.size() : end + 1;
    size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    bool pids = controllers == "pids" || controllers.find("pids,") == 0 || controllers.find(",pids") != std::string::npos;
    if ((v2 && line.compare(0, 3, "0::") == 0) || (!v2 && pids)) {
      *path = line.substr(c2 + 1);
      if (*path == "/") path->clear();
      return true;
    }
  }
  return false;
}

// The folder of this process's pids cgroup.
bool pids_parent(std::string* dir, std::string* why) {
  std::string table, path, controllers;
  if (!read_text("/proc/self/cgroup", &table)) {
    *why = "/proc/self/cgroup unreadable";
    return false;
  }
  if (own_path(table, true, &path) && read_text("/sys/fs/cgroup" + path + "/cgroup.controllers", &controllers) &&
      controllers.find("pids") != std::string::npos) {
    *dir = "/sys/fs/cgroup" + path;
    return true;
  }
  if (own_path(table, false, &path) && access(("/sys/fs/cgroup/pids" + path + "/pids.max").c_str(), F_OK) == 0) {
    *dir = "/sys/fs/cgroup/pids" + path;
    return true;
  }
  if (own_path(table, false, &path) && access(("/sys/fs/cgroup/pids" + path).c_str(), F_OK) == 0) {
    *dir = "/sys/fs/cgroup/pids" + path;  // v1's root cgroup has no pids.max of its own
    return true;
  }
  *why = "no pids controller found (cgroup v2 without it, no v1 pids hierarchy)";
  return false;
}

}  // namespace

bool run_cgroup_create(long max, RunCgroup* cg, std::string* why) {
  std::string parent;
  if (!pids_parent(&parent, why)) return false;
  int fd = open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::string name = "flatux-run-" + std::to_string(getpid());
  if (fd < 0 || mkdirat(fd, name.c_str(), 0755) != 0) {
    *why = "making " + parent + "/" + name + ": " + strerror(errno);
    if (fd >= 0) close(fd);
    return false;
  }
  if (!write_text(fd, name + "/pids.max", std::to_string(max), why)) {
    unlinkat(fd, name.c_str(), AT_REMOVEDIR);
    close(fd);
    return false;
  }
  cg->parent = fd;
  cg->name = name;
  return true;
}

bool run_cgroup_enter(const RunCgroup& cg, pid_t pid, std::string* why) {
  return write_text(cg.parent, cg.name + "/cgroup.procs", std::to_string(pid), why);
}

void run_cgroup_remove(RunCgroup& cg) {
  if (cg.parent < 0) return;
  // The host may still be taking the namespace's last tasks down (seconds
  // after thousands of them).
  for (int i = 0; i < 1500 && unlinkat(cg.parent, cg.name.c_str(), AT_REMOVEDIR) != 0 && errno == EBUSY; i++)
    usleep(20 * 1000);
  run_cgroup_forget(cg);
}

void run_cgroup_forget(RunCgroup& cg) {
  if (cg.parent >= 0) close(cg.parent);
  cg.parent = -1;
}

}  // namespace flatux::launcher
