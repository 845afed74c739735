#include "launcher/oci/oci_state.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher/oci/oci_json.h"

namespace flatux::launcher {

using json = nlohmann::json;

std::string oci_state_dir(const std::string& root, const std::string& id) { return root + "/" + id; }
std::string oci_exec_fifo(const std::string& dir) { return dir + "/exec.fifo"; }
std::string oci_paused_marker(const std::string& dir) { return dir + "/paused"; }

bool oci_state_write(const std::string& dir, const OciState& s, std::string* error) {
  json j = {{"id", s.id},           {"bundle", s.bundle},        {"rootfs", s.rootfs}, {"created", s.created},
            {"pid", s.pid},         {"pid_start", s.pid_start},  {"annotations", s.annotations},
            {"cgroup", s.cgroup}, {"run_cgroups", s.run_cgroups}};
  std::string tmp = dir + "/state.json.tmp", path = dir + "/state.json";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << oci_json_text(j) << "\n";
    if (!out.flush()) {
      *error = tmp + ": cannot be written";
      return false;
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + strerror(errno);
    return false;
  }
  return true;
}

bool oci_state_read(const std::string& dir, OciState* s, std::string* error) {
  std::ifstream in(dir + "/state.json");
  if (!in) {
    *error = "container does not exist";
    return false;
  }
  try {
    json j = json::parse(in);
    s->id = j.at("id").get<std::string>();
    s->bundle = j.at("bundle").get<std::string>();
    s->rootfs = j.at("rootfs").get<std::string>();
    s->created = j.at("created").get<std::string>();
    s->pid = j.at("pid").get<pid_t>();
    s->pid_start = j.at("pid_start").get<uint64_t>();
    s->annotations = j.value("annotations", std::map<std::string, std::string>());
    s->cgroup = j.value("cgroup", "");
    s->run_cgroups = j.value("run_cgroups", std::vector<std::string>());
  } catch (const std::exception& e) {
    *error = dir + "/state.json: " + e.what();
    return false;
  }
  return true;
}

bool oci_proc_stat(pid_t pid, char* state, pid_t* ppid, uint64_t* start_time) {
  if (pid <= 0) return false;
  char path[64], text[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return false;
  text[n] = 0;
  const char* close_paren = strrchr(text, ')');
  if (!close_paren) return false;
  // Fields 3 (state), 4 (ppid) ... 22 (starttime).
  std::istringstream rest(close_paren + 2);
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; i++) {
    if (i == 3) *state = field[0];
    if (i == 4) *ppid = atoi(field.c_str());
    if (i == 22) *start_time = strtoull(field.c_str(), nullptr, 10);
  }
  return true;
}

bool oci_process_alive(pid_t pid, uint64_t* start_time) {
  char state = 0;
  pid_t ppid = 0;
  *start_time = 0;
  return oci_proc_stat(pid, &state, &ppid, start_time) && state != 'Z' && state != 'X';
}

std::vector<pid_t> oci_children(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    pid_t pid = atoi(e->d_name), ppid = 0;
    char state;
    uint64_t start;
    if (pid > 0 && oci_proc_stat(pid, &state, &ppid, &start) && ppid == parent) out.push_back(pid);
  }
  if (d) closedir(d);
  return out;
}

std::string oci_status(const std::string& dir, const OciState& s) {
  uint64_t start = 0;
  if (!oci_process_alive(s.pid, &start) || start != s.pid_start) return "stopped";
  struct stat st;
  if (stat(oci_exec_fifo(dir).c_str(), &st) == 0) return "created";
  return stat(oci_paused_marker(dir).c_str(), &st) == 0 ? "paused" : "running";
}

std::string oci_state_json(const OciState& s, const std::string& status, bool indent) {
  json j = {{"ociVersion", "1.0.2-dev"},
            {"id", s.id},
            {"pid", status == "stopped" ? 0 : s.pid},
            {"status", status},
            {"bundle", s.bundle},
            {"rootfs", s.rootfs},
            {"created", s.created},
            {"owner", ""}};
  if (!s.annotations.empty()) j["annotations"] = s.annotations;
  return oci_json_text(j, indent ? 2 : -1) + "\n";
}

std::vector<std::string> oci_list(const std::string& root) {
  std::vector<std::string> ids;
  DIR* d = opendir(root.c_str());
  if (!d) return ids;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    struct stat st;
    if (name != "." && name != ".." && stat((root + "/" + name + "/state.json").c_str(), &st) == 0)
      ids.push_back(name);
  }
  closedir(d);
  return ids;
}

std::vector<std::string> oci_run_cgroups(pid_t launcher, const std::string& engine_path) {
  // The launcher stays outside the run's cgroups; its one child, the run's
  // init, is in them.
  std::vector<pid_t> children = oci_children(launcher);
  pid_t init = children.empty() ? 0 : children[0];
  std::vector<std::string> dirs;
  std::ifstream in("/proc/" + std::to_string(init) + "/cgroup");
  std::string line;
  while (init && std::getline(in, line)) {
    size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    std::string controllers = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    std::string top = controllers.empty() ? "/sys/fs/cgroup" : controllers == "pids" || controllers == "memory"
                                                                   ? "/sys/fs/cgroup/" + controllers
                                                                   : "";
    // Only the run's own: made by the launcher, never a cgroup it was in.
    std::string name = path.substr(path.rfind('/') + 1);
    bool own = name.compare(0, 11, "flatux-run-") == 0 || (!engine_path.empty() && path == engine_path);
    if (!top.empty() && own && path.find("..") == std::string::npos) dirs.push_back(top + path);
  }
  return dirs;
}

void oci_remove_run_cgroups(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs)
    for (int t = 0; t < 250 && rmdir(dir.c_str()) != 0 && errno == EBUSY; t++) usleep(20 * 1000);
}

std::string oci_now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  snprintf(buf + n, sizeof buf - n, ".%09ldZ", ts.tv_nsec);
  return buf;
}

}  // namespace flatux::launcher
