#include "launcher/boot_mode.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#include "kernel/task/hostproc.h"
#include "kernel/boot/boot.h"
#include "kernel/fs/ext4/ext4_vfs.h"
#include "kernel/printk.h"
#include "kernel/tty/console.h"
#include "launcher/cmdline.h"
#include "launcher/host_terminal.h"
#include "launcher/kernel_setup.h"

namespace flatux::launcher {
namespace {

// Host signals, noted by the handler and acted on by the pump loop.
volatile sig_atomic_t g_pending[NSIG];
constexpr int kHandled[] = {SIGTERM, SIGHUP, SIGPWR, SIGINT, SIGWINCH};
// How long init gets to power off by itself after a host SIGTERM.
constexpr double kShutdownGraceS = 10.0;

void on_signal(int sig) { g_pending[sig] = 1; }

void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: poll must wake
  sigemptyset(&sa.sa_mask);
  for (int s : kHandled) sigaction(s, &sa, nullptr);
}

bool take(int sig) {
  if (!g_pending[sig]) return false;
  g_pending[sig] = 0;
  return true;
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

// Canonical paths for the kernel and the sandbox: hostfs= is the host
// folder the guest is granted (its root, or what it may mount as hostfs),
// the ubd files are its images.
bool fill_config(BootConfig& boot, const BootOptions& opts, KernelConfig& cfg, Sandbox& sb) {
  char dir[PATH_MAX];
  struct stat st;
  errno = 0;
  if (!realpath(boot.hostfs, dir) || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "flatux: hostfs=%s: %s\n", boot.hostfs, errno ? strerror(errno) : "Not a directory");
    return false;
  }
  snprintf(boot.hostfs, sizeof boot.hostfs, "%s", dir);
  for (int i = 0; i < boot.nubd; i++) {
    UbdParam& u = boot.ubd[i];
    char file[PATH_MAX];
    if (!realpath(u.path, file)) {
      fprintf(stderr, "flatux: ubd%d=%s: %s\n", u.index, u.path, strerror(errno));
      return false;
    }
    snprintf(u.path, sizeof u.path, "%s", file);
    sb.grant.images.push_back({file, u.readonly});
  }
  cfg.boot = boot;
  snprintf(cfg.root, sizeof cfg.root, "%s", boot.hostfs);
  cfg.net_none = opts.net_none;
  sb.options = opts.sandbox;
  sb.grant.root = boot.hostfs;
  // As kernel/boot/boot.cpp chooses the root: hostfs unless a device is named.
  const char* root = boot.root[0] ? boot.root : boot.nubd ? "/dev/ubda" : "";
  bool hostfs_root = (!root[0] || strcmp(root, "/dev/root") == 0 || strcmp(root, "hostfs") == 0) &&
                     (!boot.rootfstype[0] || strcmp(boot.rootfstype, "hostfs") == 0);
  sb.grant.root_readonly = hostfs_root && boot.root_readonly;
  sb.grant.net_none = opts.net_none;
  sb.grant.host_owners = opts.host_owners;
  sb.grant.mem_bytes = boot.mem_bytes;
  return true;
}

// Feeds the host terminal to the console and waits for the kernel to stop.
void pump(Kernel& k, bool terminal) {
  bool input_open = terminal;
  double shutdown_deadline = 0;
  char buf[4096];
  while (k.halted.load() == 0) {
    struct pollfd p{0, POLLIN, 0};
    int n = poll(&p, input_open ? 1 : 0, 50);
    if (n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t r = read(0, buf, sizeof buf);
      if (r > 0) console_receive(k, buf, (size_t)r);
      else if (r == 0 || (errno != EINTR && errno != EAGAIN)) input_open = false;  // terminal gone
    }
    if (take(SIGWINCH)) console_host_resized(k);
    if (take(SIGINT)) kernel_ctrl_alt_del(k);
    if (take(SIGTERM) | take(SIGHUP) | take(SIGPWR)) {
      kernel_request_poweroff(k);
      if (!shutdown_deadline) shutdown_deadline = now_s() + kShutdownGraceS;
    }
    if (shutdown_deadline && now_s() > shutdown_deadline) {
      printk(k, "<4>flatux: init did not power off in time; powering off");
      kernel_stop(k, HaltReason::kPowerOff);
    }
  }
}

int exit_status(Kernel& k) {
  switch (k.halt_reason.load()) {
    case HaltReason::kPowerOff: case HaltReason::kHalt: return kExitPowerOff;
    case HaltReason::kRestart: return kExitRestart;
    default: break;
  }
  if (k.shutdown_requested.load()) return kExitPowerOff;  // init ended after the host's SIGTERM
  char msg[96];
  snprintf(msg, sizeof msg, "Attempted to kill init! exitcode=0x%08x", k.exit_wait_status);
  boot_panic_message(k, msg);
  return kExitPanic;
}

}  // namespace

int boot_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  BootConfig* boot = new BootConfig;
  BootOptions opts;
  std::string error;
  if (!parse_boot_command_line(args, boot, &opts, &error)) {
    fprintf(stderr, "flatux: %s\n", error.c_str());
    return 2;
  }
  if (opts.help) {
    fputs(boot_help().c_str(), stdout);
    return 0;
  }
  KernelConfig* cfg = new KernelConfig;
  Sandbox* sb = new Sandbox;
  if (!fill_config(*boot, opts, *cfg, *sb) || !open_strace(*cfg, opts.strace) ||
      !choose_syscall_entry(*cfg, opts.syscall_entry))
    return kExitPanic;
  Kernel* k = start_kernel(*cfg, *sb);
  if (!k) return kExitPanic;
  install_handlers();
  bool terminal = isatty(0) && host_terminal_make_raw(0);
  if (console_create(*k, 0, 1, terminal) < 0) {
    fprintf(stderr, "flatux: cannot create the console\n");
    return kExitPanic;
  }
  const char* why = "";
  if (kernel_boot(*k, &why) < 0) {
    boot_panic_message(*k, why);
    return kExitPanic;
  }
  pump(*k, terminal);
  hostprocs_kill_all(*k);  // forked guests end with the kernel, as with their threads
  ext4_poweroff(*k);  // write-back caches reach the images
  return exit_status(*k);
}

}  // namespace flatux::launcher
