#include "launcher/oci/oci_hooks.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace flatux::launcher {
namespace {

// One hook: 0 when it succeeded, else a reason.
std::string run_hook(const OciHook& h, const std::string& state) {
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return std::string("pipe: ") + strerror(errno);
  std::vector<const char*> argv, envp;
  for (const std::string& a : h.args) argv.push_back(a.c_str());
  if (argv.empty()) argv.push_back(h.path.c_str());
  argv.push_back(nullptr);
  for (const std::string& e : h.env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    execve(h.path.c_str(), const_cast<char* const*>(argv.data()), const_cast<char* const*>(envp.data()));
    _exit(127);
  }
  close(in[0]);
  if (pid < 0) {
    close(in[1]);
    return std::string("fork: ") + strerror(errno);
  }
  signal(SIGPIPE, SIG_IGN);  // a hook that does not read its input
  (void)!write(in[1], state.data(), state.size());
  close(in[1]);
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (h.timeout > 0 && now.tv_sec - start.tv_sec >= h.timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return "timed out after " + std::to_string(h.timeout) + " s";
    }
    usleep(5000);
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return "";
  return WIFEXITED(st) ? "exit status " + std::to_string(WEXITSTATUS(st))
                       : std::string("killed by ") + strsignal(WTERMSIG(st));
}

}  // namespace

bool oci_run_hooks(const OciSpec& spec, const std::string& when, const std::string& state, std::string* error) {
  auto it = spec.hooks.find(when);
  if (it == spec.hooks.end()) return true;
  for (const OciHook& h : it->second) {
    std::string why = run_hook(h, state);
    if (!why.empty()) {
      *error = when + " hook " + h.path + ": " + why;
      return false;
    }
  }
  return true;
}

}  // namespace flatux::launcher
