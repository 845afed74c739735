// runc's command line, as container engines call it (podman through
// conmon, containerd's runc shim): global options, then a command.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "launcher/oci/oci.h"
#include "launcher/oci/oci_commands.h"
#include "launcher/oci/oci_spec.h"
#include "launcher/oci/oci_state.h"

namespace flatux::launcher {
namespace {

struct OptionSpec {
  const char* name;   // long name
  const char* alias;  // short name, or ""
  bool takes_value;
};

// Global options runc takes; --criu and --rootless are accepted and
// ignored, as runc ignores them where they do not apply.
const std::vector<OptionSpec> kGlobal = {{"root", "", true},        {"log", "", true},   {"log-format", "", true},
                                         {"debug", "", false},      {"systemd-cgroup", "", false},
                                         {"criu", "", true},        {"rootless", "", true}, {"help", "h", false},
                                         {"version", "v", false}};

const std::map<std::string, std::vector<OptionSpec>> kCommands = {
    {"create",
     {{"bundle", "b", true}, {"pid-file", "", true}, {"console-socket", "", true}, {"no-pivot", "", false},
      {"no-new-keyring", "", false}, {"preserve-fds", "", true}}},
    {"run",
     {{"bundle", "b", true}, {"pid-file", "", true}, {"console-socket", "", true}, {"no-pivot", "", false},
      {"no-new-keyring", "", false}, {"preserve-fds", "", true}, {"detach", "d", false}, {"keep", "", false}}},
    {"exec",
     {{"process", "p", true}, {"detach", "d", false}, {"pid-file", "", true}, {"tty", "t", false},
      {"console-socket", "", true}, {"cwd", "", true}, {"env", "e", true}, {"user", "u", true}, {"cap", "c", true},
      {"no-new-privs", "", false}, {"preserve-fds", "", true}, {"process-label", "", true}, {"apparmor", "", true},
      {"additional-gids", "g", true}, {"ignore-paused", "", false}}},
    {"start", {}},
    {"pause", {}},
    {"resume", {}},
    {"state", {}},
    {"kill", {{"all", "a", false}}},
    {"delete", {{"force", "f", false}}},
    {"list", {{"format", "f", true}, {"quiet", "q", false}}},
    {"ps", {{"format", "f", true}}},
    {"spec", {{"bundle", "b", true}, {"rootless", "", false}}},
    {"features", {}},
};

// Options (--name VALUE, --name=VALUE, -name, -n) until the first word
// that is not one; unknown ones are an error, as runc's flag parser
// makes them.
bool parse_options(int* i, int argc, char** argv, const std::vector<OptionSpec>& spec,
                   std::map<std::string, std::string>* out, std::string* error) {
  for (; *i < argc; (*i)++) {
    std::string a = argv[*i];
    if (a == "--") {
      (*i)++;
      return true;
    }
    if (a.size() < 2 || a[0] != '-') return true;
    std::string name = a.substr(a[1] == '-' ? 2 : 1), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const OptionSpec* o = nullptr;
    for (const OptionSpec& s : spec)
      if (name == s.name || (s.alias[0] && name == s.alias)) o = &s;
    if (!o) {
      *error = "flag provided but not defined: -" + name;
      return false;
    }
    if (o->takes_value && !has_value) {
      if (*i + 1 >= argc) {
        *error = "flag needs an argument: -" + name;
        return false;
      }
      value = argv[++*i];
    }
    std::string& slot = (*out)[o->name];
    if (!o->takes_value) slot = "true";
    else slot = slot.empty() ? value : slot + "\n" + value;  // repeated (--env): one per line
  }
  return true;
}

const char* kUsage =
    "flatux-oci: flatux as an OCI runtime (runc's command line)\n"
    "\n"
    "usage: flatux-oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND [OPTIONS] ARGS\n"
    "\n"
    "commands:\n"
    "  create [--bundle DIR] [--pid-file FILE] ID   prepare the container; its program waits for start\n"
    "  start ID                                     run the program of a created container\n"
    "  run [--bundle DIR] [--pid-file FILE] [--detach] ID   create and start (and wait, without --detach)\n"
    "  state ID                                     the container's state, as the runtime spec's JSON\n"
    "  kill [--all] ID [SIGNAL]                     send SIGNAL (default SIGTERM) to the container's init\n"
    "  delete [--force] ID                          remove a stopped container (--force: kill it first)\n"
    "  list [--format table|json] [--quiet]         the containers under --root\n"
    "  ps [--format table|json] ID                  the container's host processes\n"
    "  spec [--bundle DIR] [--rootless]             write a default config.json\n"
    "  features                                     what this runtime serves, as JSON\n"
    "\n"
    "  exec [--process FILE | --env E --cwd D --user U] [--detach] [--pid-file FILE] ID [COMMAND...]\n"
    "                                               a new process in a running container\n"
    "\n"
    "  pause ID / resume ID                         freeze and thaw the container's processes\n"
    "\n"
    "update, events, checkpoint and restore are not served yet.\n"
    "State is kept under --root (default /run/flatux-oci).\n";

// runc's default --root: $XDG_RUNTIME_DIR/<runtime> for a rootless caller
// (not root, or root of a user namespace other than the host's, unless
// USER=root), /run/flatux-oci for the host's root.
std::string default_root() {
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  if (!xdg || !*xdg) return "/run/flatux-oci";
  std::string mine = std::string(xdg) + "/flatux-oci";
  if (geteuid() != 0) return mine;
  FILE* f = fopen("/proc/self/uid_map", "re");
  unsigned inner = 1, outer = 1, count = 0;
  bool initial = !f || (fscanf(f, "%u %u %u", &inner, &outer, &count) == 3 && inner == 0 && outer == 0 &&
                        count == 4294967295u);
  if (f) fclose(f);
  if (initial) return "/run/flatux-oci";
  const char* user = getenv("USER");
  return !user || strcmp(user, "root") != 0 ? mine : "/run/flatux-oci";
}

}  // namespace

int oci_main(int argc, char** argv) {
  OciContext ctx;
  std::map<std::string, std::string> global;
  std::string error;
  int i = 1;
  if (!parse_options(&i, argc, argv, kGlobal, &global, &error)) return oci_fail(ctx, error);
  ctx.root = global.count("root") ? global["root"] : default_root();
  if (global.count("log")) ctx.log = global["log"];
  if (global.count("log-format")) ctx.log_json = global["log-format"] == "json";
  ctx.systemd_cgroup = global.count("systemd-cgroup") != 0;
  if (global.count("help") || (i >= argc && !global.count("version"))) {
    fputs(kUsage, global.count("help") ? stdout : stderr);
    return global.count("help") ? 0 : 1;
  }
  if (global.count("version")) {
    printf("flatux-oci version 0.1\nspec: 1.0.2-dev\n");
    return 0;
  }
  std::string command = argv[i++];
  auto it = kCommands.find(command);
  if (it == kCommands.end()) {
    static const char* const kLater[] = {"update", "events", "checkpoint", "restore"};
    for (const char* c : kLater)
      if (command == c) return oci_fail(ctx, command + ": not served by flatux-oci yet");
    return oci_fail(ctx, "no such command: " + command);
  }
  std::map<std::string, std::string> opts;
  if (!parse_options(&i, argc, argv, it->second, &opts, &error)) return oci_fail(ctx, error);
  std::vector<std::string> args(argv + i, argv + argc);
  try {
    return oci_command(ctx, command, opts, args);
  } catch (const std::exception& e) {  // a library's surprise is an error message, never an abort
    return oci_fail(ctx, command + ": " + e.what());
  }
}

}  // namespace flatux::launcher
