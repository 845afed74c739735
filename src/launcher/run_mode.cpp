#include "launcher/run_mode.h"

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/block/ubd.h"
#include "kernel/cgroup/cgroup.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/fs/ext4/ext4_vfs.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"
#include "kernel/mm/site_survey.h"
#include "kernel/task/hostproc.h"
#include "kernel/sys/sysctl.h"
#include "kernel/task/process.h"
#include "kernel/vfs/new_fs.h"
#include "kernel/vfs/path_ops.h"
#include "launcher/cmdline.h"
#include "kernel/tty/console.h"
#include "kernel/vfs/file.h"
#include "launcher/host_terminal.h"
#include "launcher/kernel_setup.h"
#include "launcher/sandbox/run_init.h"

extern char** environ;

namespace flatux::launcher {
namespace {

// Host signals meant for the guest, noted by the handler and forwarded by
// the main loop (the handler itself must stay async-signal-safe).
volatile sig_atomic_t g_host_signal = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_resized = 0;  // SIGWINCH on the console's terminal

void on_host_signal(int sig) { g_host_signal = sig; }
void on_resize(int) { g_resized = 1; }

void install_forwarding(bool terminal) {
  struct sigaction sa {};
  sa.sa_handler = on_host_signal;  // no SA_RESTART: the wait below must wake
  sigemptyset(&sa.sa_mask);
  for (int s : kForwarded) sigaction(s, &sa, nullptr);
  if (terminal) {
    sa.sa_handler = on_resize;
    sigaction(SIGWINCH, &sa, nullptr);
  }
}


// NAME's value in an environment list, or nullptr.
const char* env_value(const std::vector<std::string>& env, const char* name) {
  size_t n = strlen(name);
  for (const std::string& e : env)
    if (e.size() > n && e.compare(0, n, name) == 0 && e[n] == '=') return e.c_str() + n + 1;
  return nullptr;
}

// A /proc/sys file of the host's, as this process sees it (its network
// namespace's, for net/...); false with errno set.
bool write_host_sysctl(const std::string& name, const std::string& value) {
  int fd = open(("/proc/sys/" + name).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, value.data(), value.size()) == (ssize_t)value.size();
  int err = errno;
  close(fd);
  errno = err;
  return ok;
}

// The host network namespace at `path` (a container engine's, with its
// interfaces and routes) becomes the one every host socket of the run is
// made in: joined before the sandbox, whose layers then treat it as the
// host's network.
bool join_network_namespace(const std::string& path, const RunOptions& o) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    fprintf(stderr, "flatux: network namespace %s: %s\n", path.c_str(), strerror(errno));
    if (fd >= 0) close(fd);
    return false;
  }
  close(fd);
  // Every port may be bound by the kernel's process there: whether a guest
  // may bind one below 1024 is the kernel's own check (its
  // CAP_NET_BIND_SERVICE), as the container's root has it natively; the
  // kernel's process itself holds no capability in that namespace.
  if (!write_host_sysctl("net/ipv4/ip_unprivileged_port_start", "0"))
    fprintf(stderr, "flatux: network namespace %s: ports below 1024 stay closed: %s\n", path.c_str(), strerror(errno));
  // The container's own network settings (linux.sysctl), as runc writes
  // them in the namespace: each a host socket of the run obeys.
  for (const auto& [name, value] : o.net_sysctls)
    if (!write_host_sysctl(name, value)) {
      fprintf(stderr, "flatux: sysctl %s=%s: %s\n", name.c_str(), value.c_str(), strerror(errno));
      return false;
    }
  return true;
}

// The bundle's mounts, in its order, over the root and the kernel's own
// /proc and /dev.
bool mount_guest_filesystems(flatux::Kernel& k, const RunOptions& o) {
  for (const GuestMount& m : o.guest_mounts) {
    const std::string& source = m.source.empty() ? m.type : m.source;
    long r = 0;
    if (m.in_container_dev) {
      struct stat st;
      bool dir = m.host.empty() || (stat(m.host.c_str(), &st) == 0 && S_ISDIR(st.st_mode));
      r = flatux::devfs_container_mount_point(k, m.target.c_str(), dir);
    }
    if (m.container_dev) r = flatux::devfs_drop_run_dev(k);
    if (r == 0)
      r = m.host.empty()
              ? flatux::mount_new_fs(k, m.type.c_str(), m.target.c_str(), source.c_str(), m.flags, m.data.c_str())
              : flatux::hostfs_mount_host_path(k, m.host.c_str(), m.target.c_str(), m.flags);
    if (r == 0 && m.container_dev) r = flatux::devfs_populate_container(k, m.target.c_str(), o.terminal);
    if (r < 0) {
      fprintf(stderr, "flatux: mounting %s at %s: %s\n", m.host.empty() ? m.type.c_str() : m.host.c_str(),
              m.target.c_str(), strerror((int)-r));
      return false;
    }
  }
  return true;
}

// A linux.devices node, with the folders on the way, owned and moded as
// the bundle says (whatever the umask).
long make_device(flatux::Task& t, const RunOptions::Device& d) {
  for (size_t slash = d.path.find('/', 1); slash != std::string::npos; slash = d.path.find('/', slash + 1))
    if (long r = flatux::vfs_mkdir(t, AT_FDCWD, d.path.substr(0, slash).c_str(), 0755); r < 0 && r != -EEXIST) return r;
  long r = flatux::vfs_mknod(t, AT_FDCWD, d.path.c_str(), (int)d.mode, d.rdev);
  if (r == -EEXIST) {
    if ((r = flatux::vfs_unlink(t, AT_FDCWD, d.path.c_str())) == 0) r = flatux::vfs_mknod(t, AT_FDCWD, d.path.c_str(), (int)d.mode, d.rdev);
  }
  if (r < 0) return r;
  flatux::Attr a;
  a.mask = flatux::kAttrMode | flatux::kAttrUid | flatux::kAttrGid;
  a.mode = d.mode & 07777;
  a.uid = d.uid;
  a.gid = d.gid;
  return flatux::vfs_setattr(t, AT_FDCWD, d.path.c_str(), false, a);
}

// What runc does in the container just before its program: the sysctls
// the kernel itself serves, then the masked and read-only paths (after
// the sysctls, which a read-only /proc/sys would refuse).
long container_setup(flatux::Task& t, void* arg) {
  const RunOptions& o = *static_cast<const RunOptions*>(arg);
  for (const auto& [name, value] : o.sysctls)
    if (long r = flatux::sysctl_set(t, name, value); r < 0) {
      fprintf(stderr, "flatux: sysctl %s=%s: %s\n", name.c_str(), value.c_str(), strerror((int)-r));
      return r;
    }
  for (const RunOptions::Device& d : o.devices)
    if (long r = make_device(t, d); r < 0) {
      fprintf(stderr, "flatux: device %s: %s\n", d.path.c_str(), strerror((int)-r));
      return r;
    }
  for (const std::string& p : o.masked_paths)
    if (long r = flatux::mount_mask_path(t, p.c_str()); r < 0) {
      fprintf(stderr, "flatux: masking %s: %s\n", p.c_str(), strerror((int)-r));
      return r;
    }
  for (const std::string& p : o.readonly_paths)
    if (long r = flatux::mount_readonly_path(t, p.c_str()); r < 0) {
      fprintf(stderr, "flatux: making %s read-only: %s\n", p.c_str(), strerror((int)-r));
      return r;
    }
  return 0;
}

void name_the_host(flatux::Kernel& k, const RunOptions& o) {
  if (!o.hostname.empty()) snprintf(k.uts.nodename, sizeof k.uts.nodename, "%s", o.hostname.c_str());
  if (!o.domainname.empty()) snprintf(k.uts.domainname, sizeof k.uts.domainname, "%s", o.domainname.c_str());
}

// The kernel's process between guest events when it has more to watch
// than `halted`: a control connection to serve, a process entered from
// outside that ended, the first process's end (the kernel's event
// descriptor too), terminal input for the console, or a signal.
void wait_for_events(flatux::Kernel& k, const RunOptions& o, const timespec& tick, bool* input_open) {
  constexpr int kMore = 16;
  pollfd fds[3 + kMore] = {{k.cfg.launcher_event_fd, POLLIN, 0}, {o.control_fd, POLLIN, 0}, {-1, POLLIN, 0}};
  if (*input_open) fds[2].fd = 0;
  int more = o.control_poll ? o.control_poll(fds + 3, kMore) : 0;
  if (ppoll(fds, 3 + more, &tick, nullptr) <= 0) return;
  if (more && o.control_polled) o.control_polled(k, fds + 3, more);
  if (fds[0].revents & POLLIN) {
    uint64_t n;
    (void)!read(k.cfg.launcher_event_fd, &n, sizeof n);
    if (o.on_kernel_event) o.on_kernel_event(k);
  }
  if (fds[1].revents & POLLIN) {
    int c = accept4(o.control_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0 && o.serve_control) o.serve_control(k, c);
    else if (c >= 0) close(c);
  }
  if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) {
    char buf[4096];
    ssize_t r = read(0, buf, sizeof buf);
    if (r > 0) flatux::console_receive(k, buf, (size_t)r);
    else if (r == 0 || (errno != EINTR && errno != EAGAIN)) *input_open = false;  // the terminal is gone
  }
}

// The kernel's console on the terminal at 0 and 1 (raw: the kernel's line
// discipline cooks), opened for the program.
bool open_console(flatux::Kernel& k, flatux::File** out) {
  bool raw = host_terminal_make_raw(0);
  if (!raw || flatux::console_create(k, 0, 1, true) < 0 || flatux::console_open_initial(k, out) < 0) {
    fprintf(stderr, "flatux: cannot make the console on the terminal\n");
    return false;
  }
  return true;
}


// PROG without a slash is looked up in the guest's PATH, inside the root.
std::string find_program(const RunOptions& o) {
  const std::string& prog = o.argv[0];
  if (prog.find('/') != std::string::npos) return prog;
  const char* path = o.env_given ? env_value(o.env, "PATH") : getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t colon = dirs.find(':', pos);
    std::string dir = dirs.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    pos = colon == std::string::npos ? dirs.size() + 1 : colon + 1;
    if (dir.empty() || dir[0] != '/') continue;
    std::string guest = dir + "/" + prog;
    std::string host = (o.root == "/" ? "" : o.root) + guest;
    if (access(host.c_str(), X_OK) == 0) return guest;
  }
  return prog;
}

const char* signal_report(int sig) {
  // What a shell prints for a child killed by a signal.
  switch (sig) {
    case SIGINT: return nullptr;
    case SIGPIPE: return nullptr;
    default: return strsignal(sig);
  }
}

struct UbdSpec {
  int index;
  bool readonly;
  std::string given, file;  // as typed, canonical
};

// --ubd N[r]=FILE (UML's ubdN[r]=FILE), parsed before the sandbox is built:
// the files are part of what the guest is granted.
bool parse_ubd_specs(const RunOptions& o, std::vector<UbdSpec>* out) {
  for (const std::string& spec : o.ubd) {
    size_t eq = spec.find('=');
    char* end = nullptr;
    long idx = strtol(spec.c_str(), &end, 10);
    bool ro = end && *end == 'r';
    if (eq == std::string::npos || end == spec.c_str() || end != spec.c_str() + eq - (ro ? 1 : 0)) {
      fprintf(stderr, "flatux: --ubd %s: expected N=FILE or Nr=FILE\n", spec.c_str());
      return false;
    }
    std::string given = spec.substr(eq + 1);
    char canon[PATH_MAX];
    if (!realpath(given.c_str(), canon)) {
      fprintf(stderr, "flatux: ubd%ld=%s: %s\n", idx, given.c_str(), strerror(errno));
      return false;
    }
    out->push_back({(int)idx, ro, given, canon});
  }
  return true;
}

struct TmpfsSpec {
  std::string given, dir, options;
};

// --tmpfs DIR[:OPTIONS], checked before the sandbox is built: like
// mount(2), only over a folder that is there, a folder of the root.
bool parse_tmpfs_specs(const RunOptions& o, const char* root, std::vector<TmpfsSpec>* out) {
  for (const std::string& spec : o.tmpfs) {
    size_t colon = spec.find(':');
    std::string dir = spec.substr(0, colon);
    struct stat st;
    std::string host_dir = (strcmp(root, "/") == 0 ? "" : root) + dir;
    if (dir.empty() || dir[0] != '/' || stat(host_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      fprintf(stderr, "flatux: --tmpfs %s: not a folder of the root\n", spec.c_str());
      return false;
    }
    // Anyone may make files there, as in the host's /tmp, unless the
    // options say otherwise (a later mode= wins).
    std::string options = "mode=1777";
    if (colon != std::string::npos) options += "," + spec.substr(colon + 1);
    out->push_back({spec, dir, options});
  }
  return true;
}

// The ubd devices, --mount-ext4 DEV:DIR and --tmpfs DIR[:OPTIONS].
bool attach_devices(flatux::Kernel& k, const RunOptions& o, const std::vector<UbdSpec>& ubds,
                    const std::vector<TmpfsSpec>& tmpfs) {
  for (const UbdSpec& u : ubds) {
    if (long r = flatux::ubd_attach(k, u.index, u.file.c_str(), u.readonly); r < 0) {
      fprintf(stderr, "flatux: ubd%d=%s: %s\n", u.index, u.given.c_str(), strerror((int)-r));
      return false;
    }
  }
  for (const std::string& spec : o.mounts) {
    size_t colon = spec.find(':');
    if (colon == std::string::npos) {
      fprintf(stderr, "flatux: --mount-ext4 %s: expected DEV:DIR\n", spec.c_str());
      return false;
    }
    std::string dev = spec.substr(0, colon), dir = spec.substr(colon + 1);
    if (long r = flatux::ext4_mount_device(k, dev.c_str(), dir.c_str(), 0); r < 0) {
      fprintf(stderr, "flatux: mounting %s at %s: %s\n", dev.c_str(), dir.c_str(), strerror((int)-r));
      return false;
    }
  }
  for (const TmpfsSpec& t : tmpfs) {
    if (long r = flatux::mount_new_fs(k, "tmpfs", t.dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, t.options.c_str());
        r < 0) {
      fprintf(stderr, "flatux: --tmpfs %s: %s\n", t.given.c_str(), strerror((int)-r));
      return false;
    }
  }
  return true;
}

// --mem: what the guests may make the host hold, accounted as boot's mem=
// (mm/mm.h). Without it, half of the host's RAM: a guest cannot take the
// machine, and ordinary programs never meet the limit.
bool guest_memory_limit(const std::string& spec, uint64_t* bytes) {
  if (spec.empty()) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 0;
    return true;
  }
  if (!flatux::launcher::parse_mem_size(spec, bytes) || *bytes < (4u << 20)) {
    fprintf(stderr, "flatux run: --mem=%s: want a size of at least 4M, e.g. 64M or 1G\n", spec.c_str());
    return false;
  }
  return true;
}

}  // namespace

int run_pending_host_signal() { return g_host_signal; }

int run_program(const RunOptions& o) {
  flatux::KernelConfig cfg;
  char root[PATH_MAX];
  if (!realpath(o.root.c_str(), root)) {
    fprintf(stderr, "flatux: --root %s: %s\n", o.root.c_str(), strerror(errno));
    return 125;
  }
  struct stat st;
  if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
      fprintf(stderr,
              "flatux: --root %s: not a folder; an image is booted (flatux ubd0=%s rw init=PROG) or mounted "
              "(--ubd 0=%s --mount-ext4 /dev/ubda:DIR)\n",
              o.root.c_str(), o.root.c_str(), o.root.c_str());
    else fprintf(stderr, "flatux: --root %s: Not a directory\n", o.root.c_str());
    return 125;
  }
  snprintf(cfg.root, sizeof cfg.root, "%s", root);
  // The guest starts where we are, when that is inside its root.
  char here[PATH_MAX];
  if (!o.cwd.empty()) {
    snprintf(cfg.cwd, sizeof cfg.cwd, "%s", o.cwd.c_str());
  } else if (getcwd(here, sizeof here)) {
    size_t rl = strlen(root);
    if (strcmp(root, "/") == 0) snprintf(cfg.cwd, sizeof cfg.cwd, "%s", here);
    else if (strncmp(here, root, rl) == 0 && (here[rl] == '/' || here[rl] == 0))
      snprintf(cfg.cwd, sizeof cfg.cwd, "%s", here[rl] ? here + rl : "/");
  }
  cfg.root_readonly = o.readonly;
  if (!guest_memory_limit(o.mem, &cfg.boot.mem_bytes)) return 2;
  cfg.net_none = o.net == "none";
  cfg.container_init = o.container;
  if ((o.control_fd >= 0 || o.terminal) && (cfg.launcher_event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    fprintf(stderr, "flatux: eventfd: %s\n", strerror(errno));
    return 125;
  }
  if (!o.netns.empty() && !join_network_namespace(o.netns, o)) return 125;
  std::vector<UbdSpec> ubds;
  if (!parse_ubd_specs(o, &ubds)) return 125;
  std::vector<TmpfsSpec> tmpfs;
  if (!parse_tmpfs_specs(o, root, &tmpfs)) return 125;
  flatux::launcher::Sandbox sb;
  sb.options = o.sandbox;
  sb.grant.root = root;
  sb.grant.root_readonly = o.readonly;
  sb.grant.net_none = cfg.net_none;
  sb.grant.host_owners = o.hostfs_owners == "host";
  sb.grant.mem_bytes = cfg.boot.mem_bytes;
  sb.grant.cgroup_path = o.host_cgroup;
  sb.grant.cgroup_settings = o.host_cgroup_settings;
  sb.grant.uid_map = o.uid_map;
  sb.grant.gid_map = o.gid_map;
  for (const UbdSpec& u : ubds) sb.grant.images.push_back({u.file, u.readonly});
  for (const GuestMount& m : o.guest_mounts)
    if (!m.host.empty()) {
      if (stat(m.host.c_str(), &st) != 0) {
        fprintf(stderr, "flatux: bind mount of %s: %s\n", m.host.c_str(), strerror(errno));
        return 125;
      }
      sb.grant.binds.push_back({m.host, (m.flags & MS_RDONLY) != 0, S_ISDIR(st.st_mode)});
    }
  std::string prog = find_program(o);  // looked up before the host's view narrows
  if (!flatux::launcher::open_strace(cfg, o.strace)) return 125;
  if (!flatux::launcher::choose_syscall_entry(cfg, o.syscall_entry)) return 125;
  // Opened before the host process is confined to what the guests were given.
  int survey_fd = -1;
  if (!o.site_survey.empty()) {
    survey_fd = open(o.site_survey.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (survey_fd < 0) {
      fprintf(stderr, "flatux: --site-survey=%s: %s\n", o.site_survey.c_str(), strerror(errno));
      return 125;
    }
  }
  flatux::Kernel* k = flatux::launcher::start_kernel(cfg, sb, [&](flatux::Kernel& k) {
    name_the_host(k, o);
    return mount_guest_filesystems(k, o);
  });
  if (!k) return 125;
  if (!attach_devices(*k, o, ubds, tmpfs)) return 125;
  // After the seal: a limit starts the memory watch's thread.
  if (o.container) flatux::cgroup_delegate_root(*k, o.cgroup_memory_max, o.cgroup_pids_max);
  if (survey_fd >= 0 && !flatux::site_survey_start(*k, survey_fd)) {
    fprintf(stderr, "flatux: --site-survey=%s: cannot start the survey\n", o.site_survey.c_str());
    return 125;
  }

  install_forwarding(o.terminal);
  if (o.before_program && !o.before_program()) {
    if (int sig = g_host_signal) end_as(sig);  // killed while it waited: as the program would have been (a wait status)
    return 125;
  }
  std::vector<const char*> argv, envp;
  for (const auto& a : o.argv) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  for (const auto& e : o.env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  const char* why = nullptr;
  flatux::File* console = nullptr;
  if (o.terminal && !open_console(*k, &console)) return 125;
  flatux::SpawnSpec spec;
  spec.path = prog.c_str();
  spec.argv = argv.data();
  spec.envp = o.env_given ? envp.data() : environ;
  spec.console = console;
  spec.console_ctty = console != nullptr;
  spec.identity = o.identity;
  spec.setup = container_setup;
  spec.setup_arg = const_cast<RunOptions*>(&o);
  long r = flatux::spawn_process(*k, spec, nullptr, &why);
  if (console) console->put();
  if (r < 0) {
    int err = (int)-r;
    const char* msg = (err == ENOEXEC && why) ? why : strerror(err);
    fprintf(stderr, "flatux: %s: %s\n", o.argv[0].c_str(), msg);
    return err == ENOENT ? 127 : 126;
  }
  bool input_open = o.terminal;
  while (k->halted.load() == 0) {
    // A signal landing just before the wait is picked up on the next tick.
    timespec tick{0, 100 * 1000 * 1000};
    if (cfg.launcher_event_fd >= 0) wait_for_events(*k, o, tick, &input_open);
    else syscall(SYS_futex, &k->halted, FUTEX_WAIT, 0, &tick, nullptr, 0);
    if (g_resized) {
      g_resized = 0;
      flatux::console_host_resized(*k);
    }
    if (int sig = g_host_signal) {
      g_host_signal = 0;
      flatux::forward_host_signal(*k, sig);
    }
  }
  flatux::hostprocs_kill_all(*k);  // forked guests end with the kernel, as with their threads
  flatux::ext4_poweroff(*k);  // write-back caches reach the images
  flatux::site_survey_write(*k);
  int status = k->exit_wait_status;
  if (WIFSIGNALED(status) && o.container) end_as(status);
  if (WIFSIGNALED(status)) {
    if (const char* what = signal_report(WTERMSIG(status)))
      fprintf(stderr, "%s%s\n", what, WCOREDUMP(status) ? " (core dumped)" : "");
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}


}  // namespace flatux::launcher
