#include "launcher/host_terminal.h"

#include <csignal>
#include <cstdlib>
#include <termios.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

struct termios g_saved;
int g_fd = -1;

// Signals that would kill flatux without a word: restore, then die of them.
constexpr int kFatal[] = {SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
                          SIGSTKFLT, SIGIO, SIGABRT};

void restore_and_die(int sig) {
  host_terminal_restore();
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

bool host_terminal_make_raw(int fd) {
  if (tcgetattr(fd, &g_saved) != 0) return false;
  struct termios raw = g_saved;
  cfmakeraw(&raw);
  if (tcsetattr(fd, TCSADRAIN, &raw) != 0) return false;
  g_fd = fd;
  atexit(host_terminal_restore);
  struct sigaction sa {};
  sa.sa_handler = restore_and_die;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (int s : kFatal) sigaction(s, &sa, nullptr);
  return true;
}

void host_terminal_restore() {
  if (g_fd >= 0) tcsetattr(g_fd, TCSADRAIN, &g_saved);
}

}  // namespace flatux::launcher
