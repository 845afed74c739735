#include "launcher/oci/oci_state.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace flatux::launcher {

using json = nlohmann::json;

std::string oci_state_dir(const std::string& root, const std::string& id) { return root + "/" + id; }
std::string oci_exec_fifo(const std::string& dir) { return dir + "/exec.fifo"; }
std::string oci_paused_marker(const std::string& dir) { return dir + "/paused"; }

bool oci_state_write(const std::string& dir, const OciState& s, std::string* error) {
  json j = {{"id", s.id},           {"bundle", s.bundle},        {"rootfs", s.rootfs}, {"created", s.created},
            {"pid", s.pid},         {"pid_start", s.pid_start},  {"annotations", s.annotations},
            {"cgroup", s.cgroup}};
  std::string tmp = dir + "/state.json.tmp", path = dir + "/state.json";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
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
  } catch (const std::exception& e) {
    *error = dir + "/state.json: " + e.what();
    return false;
  }
  return true;
}

bool oci_process_alive(pid_t pid, uint64_t* start_time) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  char state = 0;
  uint64_t start = 0;
  // Fields 3 (state) to 22 (starttime).
  for (int i = 3; i <= 22 && rest >> field; i++) {
    if (i == 3) state = field[0];
    if (i == 22) start = strtoull(field.c_str(), nullptr, 10);
  }
  *start_time = start;
  return state != 'Z' && state != 'X' && state != 0;
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
  return (indent ? j.dump(2) : j.dump()) + "\n";
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

void oci_remove_host_cgroup(const std::string& path) {
  if (path.empty() || path.find("..") != std::string::npos) return;
  for (const char* top : {"/sys/fs/cgroup", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"}) {
    std::string dir = top + path;
    for (int t = 0; t < 250 && rmdir(dir.c_str()) != 0 && errno == EBUSY; t++) usleep(20 * 1000);
  }
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
