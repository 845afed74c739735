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
bool make_dir(const std::string& parent, const std::string& name,
              std::initializer_list<std::pair<const char*, std::string>> limits, RunCgroup::Dir* out,
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
    at += "/" + part;
    if (mkdir(at.c_str(), 0755) != 0 && errno != EEXIST) {
      *why = "making " + at + ": " + strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

bool run_cgroup_create(long max_tasks, uint64_t max_memory, RunCgroup* cg, std::string* why,
                       const std::string& engine_path) {
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
    for (const char* c : {"pids", "memory"}) table += std::string("1:") + c + ":" + parent + "\n";
    struct stat st;
    bool v2 = read_text("/sys/fs/cgroup/cgroup.controllers", &controllers);
    for (const char* top : {"/sys/fs/cgroup", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"})
      if ((v2 == (strcmp(top, "/sys/fs/cgroup") == 0)) && stat(top, &st) == 0 && !make_parents(top, parent, why))
        return false;
  }
  std::string tasks = std::to_string(max_tasks), memory = std::to_string(max_memory);
  // cgroup v2, where our cgroup may have children with these controllers.
  if (own_path(table, "", &path) && read_text("/sys/fs/cgroup" + path + "/cgroup.controllers", &controllers) &&
      has_word(controllers.substr(0, controllers.find('\n')), "pids", ' ')) {
    bool mem = max_memory && has_word(controllers.substr(0, controllers.find('\n')), "memory", ' ');
    bool ok = mem ? make_dir("/sys/fs/cgroup" + path, name, {{"pids.max", tasks}, {"memory.max", memory}},
                             &cg->dirs[0], why)
                  : make_dir("/sys/fs/cgroup" + path, name, {{"pids.max", tasks}}, &cg->dirs[0], why);
    if (!ok) return false;
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
  if (max_memory && own_path(table, "memory", &path) &&
      make_dir("/sys/fs/cgroup/memory" + path, name, {{"memory.limit_in_bytes", memory}}, &cg->dirs[cg->ndirs],
               why)) {
    cg->ndirs++;
    cg->memory = true;
  }
  if (cg->ndirs == 0 && why->empty()) *why = "no pids or memory controller found";
  return cg->ndirs > 0;
}

bool run_cgroup_enter(const RunCgroup& cg, pid_t pid, std::string* why) {
  for (int i = 0; i < cg.ndirs; i++)
    if (!write_text(cg.dirs[i].parent, cg.dirs[i].name + "/cgroup.procs", std::to_string(pid), why)) return false;
  return cg.ndirs > 0;
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
