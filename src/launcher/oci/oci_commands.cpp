#include "launcher/oci/oci_commands.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/oci/oci_bundle.h"
#include "launcher/oci/oci_console.h"
#include "launcher/oci/oci_exec.h"
#include "launcher/oci/oci_hooks.h"
#include "launcher/oci/oci_spec.h"
#include "launcher/oci/oci_json.h"
#include "launcher/oci/oci_state.h"
#include "launcher/run_mode.h"

namespace flatux::launcher {
namespace {

using json = nlohmann::json;

bool valid_id(const std::string& id) {
  if (id.empty() || id == "." || id == ".." || id.size() > 1024) return false;
  for (char c : id)
    if (!(isalnum((unsigned char)c) || c == '_' || c == '+' || c == '-' || c == '.')) return false;
  return true;
}

// SIGTERM, TERM, term or 15.
int parse_signal(const std::string& s) {
  if (!s.empty() && isdigit((unsigned char)s[0])) {
    int n = atoi(s.c_str());
    return n > 0 && n < NSIG ? n : -1;
  }
  std::string name;
  for (char c : s) name += (char)toupper((unsigned char)c);
  if (name.compare(0, 3, "SIG") == 0) name = name.substr(3);
  for (int sig = 1; sig < NSIG; sig++)
    if (const char* abbrev = sigabbrev_np(sig); abbrev && name == abbrev) return sig;
  return -1;
}

bool write_file_atomically(const std::string& path, const std::string& text, std::string* error) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, text.data(), text.size()) != (ssize_t)text.size() || close(fd) != 0 ||
      rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + strerror(errno);
    if (fd >= 0) close(fd);
    return false;
  }
  return true;
}

void remove_state(const std::string& dir) {
  unlink(oci_exec_fifo(dir).c_str());
  unlink((dir + "/ctl.sock").c_str());
  unlink(oci_paused_marker(dir).c_str());
  unlink((dir + "/state.json").c_str());
  rmdir(dir.c_str());
}

// Waits up to `ms` for the container's process to end.
bool wait_stopped(const std::string& dir, const OciState& s, int ms) {
  for (int waited = 0; waited < ms; waited += 10) {
    if (oci_status(dir, s) == "stopped") return true;
    usleep(10 * 1000);
  }
  return oci_status(dir, s) == "stopped";
}

// In the container's kernel process, everything ready: tell create, then
// wait for start's byte on the exec FIFO (a signal meanwhile ends it).
bool wait_for_start(int ready_fd, int fifo_fd) {
  (void)!write(ready_fd, "r", 1);
  close(ready_fd);
  char byte;
  ssize_t n;
  while ((n = read(fifo_fd, &byte, 1)) < 0 && errno == EINTR && !run_pending_host_signal()) {
  }
  close(fifo_fd);
  return n == 1;
}

struct Created {
  pid_t pid = 0;
  std::string dir;
};

// create: everything up to the program, which waits for `start`.
int create(const OciContext& ctx, std::map<std::string, std::string>& opts, const std::string& id, Created* out) {
  if (!valid_id(id)) return oci_fail(ctx, "invalid container id: " + id);
  char bundle[PATH_MAX];
  std::string given = opts.count("bundle") ? opts["bundle"] : ".";
  if (!realpath(given.c_str(), bundle)) return oci_fail(ctx, "bundle " + given + ": " + strerror(errno));
  OciSpec spec;
  std::string error;
  if (!oci_read_spec(std::string(bundle) + "/config.json", &spec, &error)) return oci_fail(ctx, error);
  if (spec.terminal && !opts.count("console-socket"))
    return oci_fail(ctx, "process.terminal needs --console-socket (where the terminal goes)");
  // The root and the folders on its way, as runc makes them (an engine
  // names one below its own state folder, which may not be there yet).
  for (size_t slash = ctx.root.find('/', 1); slash != std::string::npos; slash = ctx.root.find('/', slash + 1))
    mkdir(ctx.root.substr(0, slash).c_str(), 0711);
  mkdir(ctx.root.c_str(), 0711);
  std::string dir = oci_state_dir(ctx.root, id);
  if (mkdir(dir.c_str(), 0711) != 0)
    return oci_fail(ctx, errno == EEXIST ? "container with id exists: " + id : dir + ": " + strerror(errno));
  RunOptions run;
  // The sandbox's warnings go to the log, opened now: the sandbox is made
  // where the log's path may be out of reach.
  int log_fd = ctx.log.empty() ? -1 : open(ctx.log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd >= 0)
    run.sandbox.warn = [&ctx, log_fd](const std::string& m) {
      std::string line = oci_log_line(ctx, "warning", m);
      (void)!write(log_fd, line.data(), line.size());
    };
  std::vector<std::string> ignored;
  if (!oci_bundle_to_run(bundle, spec, &run, &ignored, &error, ctx.systemd_cgroup)) {
    remove_state(dir);
    return oci_fail(ctx, error);
  }
  for (const std::string& what : ignored) oci_log(ctx, "warning", what);
  std::string fifo = oci_exec_fifo(dir);
  int ready[2];
  int fifo_fd = -1;
  if (mkfifo(fifo.c_str(), 0622) != 0 || (fifo_fd = open(fifo.c_str(), O_RDWR | O_CLOEXEC)) < 0 ||
      pipe2(ready, O_CLOEXEC) != 0) {
    error = fifo + ": " + strerror(errno);
    remove_state(dir);
    return oci_fail(ctx, error);
  }
  int control = oci_control_listen(dir, &error);
  int terminal = -1;
  if (control < 0 ||
      (spec.terminal && !oci_console_open(opts["console-socket"], spec.console_rows, spec.console_cols, &terminal, &error))) {
    if (control >= 0) close(control);
    remove_state(dir);
    return oci_fail(ctx, error);
  }
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    if (terminal >= 0) {  // the container's stdio and controlling terminal, as runc's init has it
      setsid();
      for (int fd = 0; fd < 3; fd++) dup2(terminal, fd);
      ioctl(0, TIOCSCTTY, 0);
      close(terminal);
      run.terminal = true;
    }
    OciExecServer server;
    run.before_program = [&] { return wait_for_start(ready[1], fifo_fd); };
    run.control_fd = control;
    run.serve_control = [&](flatux::Kernel& k, int c) { server.serve(k, c); };
    run.on_kernel_event = [&](flatux::Kernel& k) { server.ended(k); };
    run.control_poll = [&](pollfd* fds, int max) { return server.poll_fds(fds, max); };
    run.control_polled = [&](flatux::Kernel& k, const pollfd* fds, int n) { server.polled(k, fds, n); };
    exit(run_program(run));
  }
  close(control);
  if (terminal >= 0) close(terminal);
  close(ready[1]);
  close(fifo_fd);
  char byte = 0;
  bool ok = pid > 0 && read(ready[0], &byte, 1) == 1;
  close(ready[0]);
  if (!ok) {
    int st = 0;
    if (pid > 0) waitpid(pid, &st, 0);
    remove_state(dir);
    return oci_fail(ctx, pid < 0 ? std::string("fork: ") + strerror(errno)
                                 : "the container's kernel did not start (exit status " +
                                       std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) + ")");
  }
  OciState s;
  s.id = id;
  s.bundle = bundle;
  s.rootfs = run.root;
  s.created = oci_now();
  s.pid = pid;
  s.annotations = spec.annotations;
  s.cgroup = run.host_cgroup;
  s.run_cgroups = oci_run_cgroups(pid, s.cgroup);
  oci_process_alive(pid, &s.pid_start);
  if (!oci_state_write(dir, s, &error) ||
      (opts.count("pid-file") && !write_file_atomically(opts["pid-file"], std::to_string(pid), &error))) {
    kill(pid, SIGKILL);
    remove_state(dir);
    return oci_fail(ctx, error);
  }
  std::string state_json = oci_state_json(s, "created", false);
  if (!oci_run_hooks(spec, "prestart", state_json, &error) || !oci_run_hooks(spec, "createRuntime", state_json, &error)) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    remove_state(dir);
    return oci_fail(ctx, error);
  }
  out->pid = pid;
  out->dir = dir;
  return 0;
}

// The bundle's hooks of `when` after create (the config as it is now,
// as runc reads it again), failures logged.
void run_later_hooks(const OciContext& ctx, const OciState& s, const std::string& when, const std::string& status) {
  OciSpec spec;
  std::string error;
  if (!oci_read_spec(s.bundle + "/config.json", &spec, &error)) return;
  if (!oci_run_hooks(spec, when, oci_state_json(s, status, false), &error)) oci_log(ctx, "warning", error);
}

bool load(const OciContext& ctx, const std::string& id, std::string* dir, OciState* s, std::string* error) {
  if (!valid_id(id)) {
    *error = "invalid container id: " + id;
    return false;
  }
  *dir = oci_state_dir(ctx.root, id);
  return oci_state_read(*dir, s, error);
}

int start(const OciContext& ctx, const std::string& id) {
  std::string dir, error;
  OciState s;
  if (!load(ctx, id, &dir, &s, &error)) return oci_fail(ctx, error);
  std::string status = oci_status(dir, s);
  if (status != "created") return oci_fail(ctx, "cannot start a container that is " + status);
  int fd = open(oci_exec_fifo(dir).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return oci_fail(ctx, std::string("cannot start the container: ") + strerror(errno));
  bool sent = write(fd, "s", 1) == 1;
  close(fd);
  unlink(oci_exec_fifo(dir).c_str());
  if (!sent) return oci_fail(ctx, "cannot start the container: its process is gone");
  run_later_hooks(ctx, s, "poststart", "running");
  return 0;
}

int kill_container(const OciContext& ctx, const std::string& id, const std::string& signame) {
  std::string dir, error;
  OciState s;
  if (!load(ctx, id, &dir, &s, &error)) return oci_fail(ctx, error);
  int sig = parse_signal(signame);
  if (sig < 0) return oci_fail(ctx, "invalid signal: " + signame);
  if (oci_status(dir, s) == "stopped") return oci_fail(ctx, "container not running");
  if (kill(s.pid, sig) != 0) return oci_fail(ctx, std::string("kill: ") + strerror(errno));
  return 0;
}

int delete_container(const OciContext& ctx, const std::string& id, bool force) {
  std::string dir, error;
  OciState s;
  if (!load(ctx, id, &dir, &s, &error)) return force ? 0 : oci_fail(ctx, error);
  std::string status = oci_status(dir, s);
  if (status == "running" && !force)
    return oci_fail(ctx, "cannot delete container " + id + " that is not stopped: running");
  if (status != "stopped") {
    kill(s.pid, SIGKILL);  // the launcher's end takes the whole run (its pid namespace) with it
    if (!wait_stopped(dir, s, 10000)) return oci_fail(ctx, "container " + id + " did not end after SIGKILL");
  }
  run_later_hooks(ctx, s, "poststop", "stopped");
  oci_remove_run_cgroups(s.run_cgroups);
  remove_state(dir);
  return 0;
}

int state(const OciContext& ctx, const std::string& id) {
  std::string dir, error;
  OciState s;
  if (!load(ctx, id, &dir, &s, &error)) return oci_fail(ctx, error);
  fputs(oci_state_json(s, oci_status(dir, s)).c_str(), stdout);
  return 0;
}

int list(const OciContext& ctx, const std::string& format, bool quiet) {
  json all = json::array();
  std::vector<std::string> ids = oci_list(ctx.root);
  if (quiet) {
    for (const std::string& id : ids) printf("%s\n", id.c_str());
    return 0;
  }
  if (format == "table") printf("%-12s %-8s %-10s %-40s %-30s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER");
  for (const std::string& id : ids) {
    OciState s;
    std::string error, dir = oci_state_dir(ctx.root, id);
    if (!oci_state_read(dir, &s, &error)) continue;
    std::string status = oci_status(dir, s);
    pid_t pid = status == "stopped" ? 0 : s.pid;
    if (format == "table")
      printf("%-12s %-8d %-10s %-40s %-30s %s\n", id.c_str(), pid, status.c_str(), s.bundle.c_str(), s.created.c_str(),
             "root");
    else
      all.push_back({{"ociVersion", "1.0.2-dev"}, {"id", id}, {"pid", pid}, {"status", status}, {"bundle", s.bundle},
                     {"rootfs", s.rootfs}, {"created", s.created}, {"owner", "root"}});
  }
  if (format != "table") printf("%s\n", oci_json_text(all).c_str());
  return 0;
}

// The host processes of a container: its launcher and every descendant.
std::vector<pid_t> host_processes(pid_t top) {
  std::vector<pid_t> out{top};
  for (size_t i = 0; i < out.size(); i++)
    for (pid_t child : oci_children(out[i])) out.push_back(child);
  return out;
}

int ps(const OciContext& ctx, const std::string& id, const std::string& format) {
  std::string dir, error;
  OciState s;
  if (!load(ctx, id, &dir, &s, &error)) return oci_fail(ctx, error);
  std::vector<pid_t> pids;
  if (oci_status(dir, s) != "stopped") pids = host_processes(s.pid);
  // json: the host processes (what a shim looks up in the host's /proc);
  // the table: the guest processes, as the container's kernel sees them.
  if (format == "json") {
    printf("%s\n", oci_json_text(json(pids)).c_str());
    return 0;
  }
  std::string text;
  if (!pids.empty() && !oci_list_processes(dir, &text, &error)) return oci_fail(ctx, error);
  printf("PID PPID UID COMMAND\n%s", text.c_str());
  return 0;
}

int spec(const OciContext& ctx, std::map<std::string, std::string>& opts) {
  std::string path = (opts.count("bundle") ? opts["bundle"] : std::string(".")) + "/config.json";
  struct stat st;
  if (stat(path.c_str(), &st) == 0) return oci_fail(ctx, "File " + path + " exists. Remove it first");
  std::string error;
  if (!write_file_atomically(path, oci_default_spec(opts.count("rootless") != 0), &error)) return oci_fail(ctx, error);
  return 0;
}

int features() {
  json caps = json::array();
  for (int bit = 0; const char* name = oci_capability_name(bit); bit++) caps.push_back(name);
  json f = {{"ociVersionMin", "1.0.0"},
            {"ociVersionMax", "1.0.2-dev"},
            {"hooks", json::array()},
            {"mountOptions",
             {"ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec", "bind", "rbind", "private", "rprivate",
              "shared", "rshared", "slave", "rslave", "strictatime", "relatime", "noatime"}},
            {"linux",
             {{"namespaces", {"mount", "network", "pid", "uts", "ipc"}},
              {"capabilities", caps},
              {"cgroup", {{"v1", false}, {"v2", true}, {"systemd", false}, {"systemdUser", false}}},
              {"seccomp", {{"enabled", false}}},
              {"apparmor", {{"enabled", false}}},
              {"selinux", {{"enabled", false}}}}},
            {"annotations", {{"org.flatux.runtime", "flatux"}}}};
  printf("%s\n", oci_json_text(f, 2).c_str());
  return 0;
}

// run: create, start, and (without --detach) wait and delete, ending as
// the container's program ended.
int run(const OciContext& ctx, std::map<std::string, std::string>& opts, const std::string& id) {
  Created c;
  if (int r = create(ctx, opts, id, &c); r != 0) return r;
  if (int r = start(ctx, id); r != 0) return r;
  if (opts.count("detach")) return 0;
  int st = 0;
  while (waitpid(c.pid, &st, 0) < 0 && errno == EINTR) {
  }
  OciState s;
  std::string error;
  if (oci_state_read(c.dir, &s, &error)) {
    run_later_hooks(ctx, s, "poststop", "stopped");
    oci_remove_run_cgroups(s.run_cgroups);
  }
  remove_state(c.dir);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool want_args(const OciContext& ctx, const std::vector<std::string>& args, size_t min, size_t max, int* status) {
  if (args.size() >= min && args.size() <= max) return true;
  *status = oci_fail(ctx, args.size() < min ? "missing the container id" : "too many arguments");
  return false;
}

}  // namespace

std::string oci_log_line(const OciContext& ctx, const char* level, const std::string& message) {
  if (ctx.log_json) return oci_json_text(json({{"level", level}, {"msg", message}, {"time", oci_now()}})) + "\n";
  return "time=\"" + oci_now() + "\" level=" + level + " msg=" + oci_json_text(json(message)) + "\n";
}

void oci_log(const OciContext& ctx, const char* level, const std::string& message) {
  if (strcmp(level, "error") == 0) fprintf(stderr, "flatux-oci: %s\n", message.c_str());
  if (ctx.log.empty()) return;
  int fd = open(ctx.log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string line = oci_log_line(ctx, level, message);
  (void)!write(fd, line.data(), line.size());
  close(fd);
}

int oci_fail(const OciContext& ctx, const std::string& message) {
  oci_log(ctx, "error", message);
  return 1;
}

int oci_command(const OciContext& ctx, const std::string& command, std::map<std::string, std::string>& opts,
                const std::vector<std::string>& args) {
  int status = 0;
  if (command == "features") return features();
  if (command == "spec") return spec(ctx, opts);
  if (command == "list") return list(ctx, opts.count("format") ? opts["format"] : "table", opts.count("quiet") != 0);
  if (command == "exec") return oci_exec(ctx, opts, args);
  if (command == "kill") {
    if (!want_args(ctx, args, 1, 2, &status)) return status;
    return kill_container(ctx, args[0], args.size() > 1 ? args[1] : "SIGTERM");
  }
  if (!want_args(ctx, args, 1, command == "ps" ? 64 : 1, &status)) return status;
  const std::string& id = args[0];
  if (command == "create") {
    Created c;
    return create(ctx, opts, id, &c);
  }
  if (command == "run") return run(ctx, opts, id);
  if (command == "start") return start(ctx, id);
  if (command == "pause" || command == "resume") return oci_freeze(ctx, id, command == "pause");
  if (command == "state") return state(ctx, id);
  if (command == "delete") return delete_container(ctx, id, opts.count("force") != 0);
  if (command == "ps") return ps(ctx, id, opts.count("format") ? opts["format"] : "table");
  return oci_fail(ctx, "no such command: " + command);
}

}  // namespace flatux::launcher
