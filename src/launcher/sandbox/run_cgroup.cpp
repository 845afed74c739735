// A guest that owns the kernel can make the host give it what the kernel
// does not count: host processes through raw clones past the task table,
// memory through raw mmap and memfd past mem=. RLIMIT_NPROC cannot hold
// the first in a root-started run (the host exempts uid 0, which the
// identity namespace maps to itself) and RLIMIT_AS not the second (the
// kernel reserves a large heap it never touches), so where the launcher
// may make cgroups, the run gets its own below the launcher's: pids.max
// counts every task of the run, threads included, and forks past it fail
// with EAGAIN; the memory limit makes the host reclaim, then kill within
// the run. The launcher makes them before it gives anything up, puts the
// run's init in them (so everything below inherits them) and removes them
// when the run has ended; the launcher itself stays outside.
#include "launcher/sandbox/run_cgroup.h"

#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

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

bool has_word(const std::string& list, const std::string& word, char sep) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(sep, pos);
    if (end == std::string::npos) end = list.size();
    if (list.compare(pos, end - pos, word) == 0) return true;
    pos = end + 1;
  }
  return false;
}

// This process's cgroup path in cgroup v2 (`controller` empty) or in v1's
// hierarchy of `controller`, from /proc/self/cgroup.
bool own_path(const std::string& table, const std::string& controller, std::string* path) {
  size_t pos = 0;
  while (pos < table.size()) {
    size_t end = table.find('\n', pos);
    std::string line = table.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? table.size() : end + 1;
    size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    if (controller.empty() ? line.compare(0, 3, "0::") == 0 : has_word(controllers, controller, ',')) {
      *path = line.substr(c2 + 1);
      if (*path == "/") path->clear();
      return true;
    }
  }
  return false;
}

// Folders of earlier runs whose launcher was killed (SIGKILL leaves no
// chance to remove them) pile up below `parent`: each named for a pid no
// process has any more is removed. rmdir takes only an empty cgroup, so
// a live run's (its init is in it) stays whatever its pid says.
void sweep_stale(int parent) {
  int fd = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  while (dirent* e = readdir(d)) {
    if (strncmp(e->d_name, "flatux-run-", 11) != 0) continue;
    long pid = strtol(e->d_name + 11, nullptr, 10);
    if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) unlinkat(parent, e->d_name, AT_REMOVEDIR);
  }
  closedir(d);
}

// Makes `name` below `parent` with `limits` written into it.
using Limits = std::vector<std::pair<std::string, std::string>>;

bool make_dir(const std::string& parent, const std::string& name, const Limits& limits, RunCgroup::Dir* out,
              std::string* why) {
  int fd = open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) sweep_stale(fd);
  // The name is this launcher's host pid, which no live launcher shares:
  // one that exists is an earlier run's left behind (its launcher killed
  // before it could remove it) whose pid came round again. rmdir succeeds
  // only on an empty cgroup, so nothing alive is taken over.
  bool made = fd >= 0 && (mkdirat(fd, name.c_str(), 0755) == 0 ||
                          (errno == EEXIST && unlinkat(fd, name.c_str(), AT_REMOVEDIR) == 0 &&
                           mkdirat(fd, name.c_str(), 0755) == 0));
  if (!made) {
    *why = "making " + parent + "/" + name + ": " + strerror(errno);
    if (fd >= 0) close(fd);
    return false;
  }
  for (const auto& [file, value] : limits)
    if (!write_text(fd, name + "/" + file, value, why)) {
      unlinkat(fd, name.c_str(), AT_REMOVEDIR);
      close(fd);
      return false;
    }
  out->parent = fd;
  out->name = name;
  return true;
}

// A v1 cpuset cgroup starts with no CPUs and no memory nodes, and takes
// no task so: an empty one gets its parent's (a folder of another
// hierarchy is left alone).
bool inherit_cpuset(const std::string& parent, const std::string& dir, std::string* why) {
  for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
    std::string mine, theirs;
    if (!read_text(dir + "/" + file, &mine)) continue;
    if (mine != "\n" && !mine.empty()) continue;
    if (!read_text(parent + "/" + file, &theirs) || !write_text(AT_FDCWD, dir + "/" + file, theirs, why)) return false;
  }
  return true;
}

// `parent` below `top` and its parents, made where missing (an engine's
// cgroupsPath names folders nobody made yet).
bool make_parents(const std::string& top, const std::string& parent, std::string* why) {
  std::string at = top;
  size_t pos = 1;
  while (pos <= parent.size()) {
    size_t slash = parent.find('/', pos);
    if (slash == std::string::npos) slash = parent.size();
    std::string part = parent.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty()) continue;
    if (part == "." || part == "..") {
      *why = "cgroup path " + parent + ": no . or .. allowed";
      return false;
    }
    std::string up = at;
    at += "/" + part;
    if (mkdir(at.c_str(), 0755) != 0 && errno != EEXIST) {
      *why = "making " + at + ": " + strerror(errno);
      return false;
    }
    if (!inherit_cpuset(up, at, why)) return false;
  }
  return true;
}

// cgroup v2's forms of the CPU settings, for the controllers enabled.
void add_v2_settings(const std::string& controllers, const CgroupSettings& c, Limits* limits) {
  if (has_word(controllers, "cpu", ' ')) {
    // runc's conversion of shares [2, 262144] to weight [1, 10000].
    if (c.cpu_shares > 0) limits->push_back({"cpu.weight", std::to_string(1 + ((c.cpu_shares - 2) * 9999) / 262142)});
    if (c.cpu_quota != -1 || c.cpu_period > 0)
      limits->push_back({"cpu.max", (c.cpu_quota > 0 ? std::to_string(c.cpu_quota) : std::string("max")) + " " +
                                        std::to_string(c.cpu_period > 0 ? c.cpu_period : 100000)});
  }
  if (has_word(controllers, "cpuset", ' ')) {
    if (!c.cpus.empty()) limits->push_back({"cpuset.cpus", c.cpus});
    if (!c.mems.empty()) limits->push_back({"cpuset.mems", c.mems});
  }
}

// cgroup v1: the run's cgroup in the cpu, cpuacct and cpuset hierarchies
// (one folder where two share a hierarchy), with the CPU settings.
bool add_v1_cpu(const std::string& table, const std::string& name, const CgroupSettings& c, RunCgroup* cg,
                std::string* why) {
  Limits cpu;
  if (c.cpu_shares >= 0) cpu.push_back({"cpu.shares", std::to_string(c.cpu_shares)});
  if (c.cpu_period > 0) cpu.push_back({"cpu.cfs_period_us", std::to_string(c.cpu_period)});
  if (c.cpu_quota != -1) cpu.push_back({"cpu.cfs_quota_us", std::to_string(c.cpu_quota)});
  if (c.rt_period > 0) cpu.push_back({"cpu.rt_period_us", std::to_string(c.rt_period)});
  if (c.rt_runtime >= 0) cpu.push_back({"cpu.rt_runtime_us", std::to_string(c.rt_runtime)});
  std::vector<std::string> seen;
  for (const char* controller : {"cpu", "cpuacct", "cpuset"}) {
    std::string path, top = std::string("/sys/fs/cgroup/") + controller;
    char real[4096];
    if (!own_path(table, controller, &path) || !realpath(top.c_str(), real)) continue;
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
    seen.push_back(real);
    Limits limits = strcmp(controller, "cpu") == 0 ? cpu : Limits{};
    bool cpuset = strcmp(controller, "cpuset") == 0;
    if (cpuset && !c.cpus.empty()) limits.push_back({"cpuset.cpus", c.cpus});
    if (cpuset && !c.mems.empty()) limits.push_back({"cpuset.mems", c.mems});
    if (cg->ndirs == (int)(sizeof cg->dirs / sizeof cg->dirs[0])) return false;
    RunCgroup::Dir* d = &cg->dirs[cg->ndirs];
    if (!make_dir(top + path, name, cpuset ? Limits{} : limits, d, why)) return false;
    cg->ndirs++;
    if (cpuset && !inherit_cpuset(top + path, top + path + "/" + name, why)) return false;
    for (const auto& [file, value] : cpuset ? limits : Limits{})
      if (!write_text(d->parent, name + "/" + file, value, why)) return false;
  }
  return true;
}

}  // namespace

bool run_cgroup_create(long max_tasks, uint64_t max_memory, RunCgroup* cg, std::string* why,
                       const std::string& engine_path, const CgroupSettings& settings) {
  std::string table, path, controllers;
  if (!read_text("/proc/self/cgroup", &table)) {
    *why = "/proc/self/cgroup unreadable";
    return false;
  }
  std::string name = "flatux-run-" + std::to_string(getpid());
  if (!engine_path.empty()) {
    // The engine's path, wherever the launcher is: the parent made first.
    size_t slash = engine_path.rfind('/');
    name = engine_path.substr(slash + 1);
    std::string parent = engine_path.substr(0, slash);
    if (name.empty() || name == "." || name == "..") {
      *why = "cgroup path " + engine_path + ": no name";
      return false;
    }
    table = "0::" + parent + "\n";
    for (const char* c : {"pids", "memory", "cpu", "cpuacct", "cpuset"}) table += std::string("1:") + c + ":" + parent + "\n";
    struct stat st;
    bool v2 = read_text("/sys/fs/cgroup/cgroup.controllers", &controllers);
    for (const char* top : {"/sys/fs/cgroup", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu",
                            "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpuset"})
      if ((v2 == (strcmp(top, "/sys/fs/cgroup") == 0)) && stat(top, &st) == 0 && !make_parents(top, parent, why))
        return false;
  }
  cg->engine = !engine_path.empty();
  std::string tasks = std::to_string(max_tasks), memory = std::to_string(max_memory);
  // cgroup v2, where our cgroup may have children with these controllers.
  if (own_path(table, "", &path) && read_text("/sys/fs/cgroup" + path + "/cgroup.controllers", &controllers) &&
      has_word(controllers.substr(0, controllers.find('\n')), "pids", ' ')) {
    std::string list = controllers.substr(0, controllers.find('\n'));
    bool mem = max_memory && has_word(list, "memory", ' ');
    Limits limits = {{"pids.max", tasks}};
    if (mem) limits.push_back({"memory.max", memory});
    if (!engine_path.empty() || settings.any()) add_v2_settings(list, settings, &limits);
    if (!make_dir("/sys/fs/cgroup" + path, name, limits, &cg->dirs[0], why)) return false;
    cg->ndirs = 1;
    cg->pids = true;
    cg->memory = mem;
    return true;
  }
  // cgroup v1: a hierarchy per controller.
  if (own_path(table, "pids", &path) &&
      make_dir("/sys/fs/cgroup/pids" + path, name, {{"pids.max", tasks}}, &cg->dirs[cg->ndirs], why)) {
    cg->ndirs++;
    cg->pids = true;
  }
  Limits memory_limits = {{"memory.limit_in_bytes", memory}};
  if (settings.memory_reservation >= 0)
    memory_limits.push_back({"memory.soft_limit_in_bytes", std::to_string(settings.memory_reservation)});
  if (settings.swappiness >= 0) memory_limits.push_back({"memory.swappiness", std::to_string(settings.swappiness)});
  if (max_memory && own_path(table, "memory", &path) &&
      make_dir("/sys/fs/cgroup/memory" + path, name, memory_limits, &cg->dirs[cg->ndirs], why)) {
    cg->ndirs++;
    cg->memory = true;
  }
  if ((!engine_path.empty() || settings.any()) && !add_v1_cpu(table, name, settings, cg, why)) {
    run_cgroup_remove(*cg);
    return false;
  }
  if (cg->ndirs == 0 && why->empty()) *why = "no pids or memory controller found";
  return cg->ndirs > 0;
}

bool run_cgroup_enter(const RunCgroup& cg, pid_t pid, std::string* why) {
  for (int i = 0; i < cg.ndirs; i++)
    if (!write_text(cg.dirs[i].parent, cg.dirs[i].name + "/cgroup.procs", std::to_string(pid), why)) return false;
  return cg.ndirs > 0;
}

void run_cgroup_leave(const RunCgroup& cg, pid_t pid) {
  std::string ignored;
  for (int i = 0; i < cg.ndirs; i++) (void)write_text(cg.dirs[i].parent, "cgroup.procs", std::to_string(pid), &ignored);
}

void run_cgroup_remove(RunCgroup& cg) {
  for (int i = 0; i < cg.ndirs; i++) {
    RunCgroup::Dir& d = cg.dirs[i];
    // The host may still be taking the namespace's last tasks down
    // (seconds after thousands of them).
    for (int t = 0; t < 1500 && unlinkat(d.parent, d.name.c_str(), AT_REMOVEDIR) != 0 && errno == EBUSY; t++)
      usleep(20 * 1000);
  }
  run_cgroup_forget(cg);
}

void run_cgroup_forget(RunCgroup& cg) {
  for (int i = 0; i < cg.ndirs; i++) {
    if (cg.dirs[i].parent >= 0) close(cg.dirs[i].parent);
    cg.dirs[i].parent = -1;
  }
  cg.ndirs = 0;
}

}  // namespace flatux::launcher
