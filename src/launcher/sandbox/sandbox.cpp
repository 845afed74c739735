#include "launcher/sandbox/sandbox.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/open_how_table.h"
#include "host/seccomp.h"
#include "launcher/sandbox/identity.h"
#include "launcher/sandbox/jail_mounts.h"
#include "launcher/sandbox/landlock.h"
#include "launcher/sandbox/run_cgroup.h"
#include "launcher/sandbox/run_init.h"

namespace flatux::launcher {
namespace {

std::string describe_root(const SandboxGrant& g) {
  return g.root + (g.root_readonly ? " (read-only)" : " (read-write)");
}

// ", 2 images" (nothing when there are none).
std::string images(const SandboxGrant& g) {
  size_t n = g.images.size();
  return n == 0 ? "" : ", " + std::to_string(n) + (n == 1 ? " image" : " images");
}

// The threads of this process, counted in `task_dir` (this process's
// /proc/self/task, opened before the private mounts hide it) or, without
// one, through the path.
int thread_count(int task_dir = -1) {
  int fd = task_dir >= 0 ? dup(task_dir) : open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  lseek(fd, 0, SEEK_SET);
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

// Without a private mount namespace the kernel's host FIFOs go to a
// folder of their own under /dev/shm, the only one Landlock lets it make
// them in. A helper started now (so outside the sandbox) removes it once
// every process holding the other end of its pipe is gone; it is started
// through a middle process that exits at once, so it is no descendant of
// flatux.
std::string private_fifo_dir() {
  char dir[] = "/dev/shm/flatux-XXXXXX";
  if (!mkdtemp(dir)) return "";
  int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  int life[2];
  if (dirfd < 0 || pipe2(life, O_CLOEXEC) != 0) {
    rmdir(dir);
    return "";
  }
  pid_t middle = fork();
  if (middle == 0) {
    pid_t janitor = fork();
    if (janitor != 0) _exit(janitor > 0 ? 0 : 1);
    setsid();
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(s, SIG_IGN);
    close(life[1]);
    for (char c;;) {
      ssize_t n = read(life[0], &c, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    // Entries are FIFOs the kernel unlinks at once; whatever is left goes,
    // without following anything.
    int listing = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (DIR* d = listing >= 0 ? fdopendir(listing) : nullptr) {
      while (dirent* e = readdir(d))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd, e->d_name, 0);
      closedir(d);
    }
    rmdir(dir);
    _exit(0);
  }
  close(life[0]);
  close(dirfd);
  int status;
  if (middle < 0 || waitpid(middle, &status, 0) != middle || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    close(life[1]);
    rmdir(dir);
    return "";
  }
  return dir;  // life[1] stays open, unnoticed, for the life of the process
}

void enter_mount_namespace(const SandboxGrant& g, bool unshared, SandboxState* s) {
  std::string why;
  if (!unshared) {
    s->missing.push_back("private mounts (no user namespace to make them in): paths outside the root "
                         "can still be named by chmod, chown, utimes, xattr and socket calls");
    return;
  }
  if (!build_jail_mounts(g, &why)) {
    s->missing.push_back("private mounts (" + why +
                         "): paths outside the root can still be named by chmod, chown, utimes, xattr "
                         "and socket calls");
    return;
  }
  s->private_mounts = true;
  s->fifo_dir = "/dev/shm";
  s->applied.push_back("mounts: a private namespace showing only " + describe_root(g) +
                       " without set-id or devices" + images(g) +
                       ", /proc/cpuinfo, its own /proc/self/fd, /dev/{null,zero,full,random,urandom} and an "
                       "empty /dev/shm");
}

// Whether this process holds a descriptor of a host file, folder or
// device other than a terminal and the five devices every guest gets: a
// descriptor the private mounts cannot hide, since its magic link in
// /proc/self/fd reopens it in whatever mode the host allows (standard
// input redirected from a file, reopened for writing). Pipes, sockets and
// anonymous inodes reopen as themselves. `own` is the sandbox's own
// /proc/self/task, closed before any guest code runs.
bool holds_host_files(int own) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return true;
  struct stat devices[5];
  int ndev = 0;
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
    if (stat(dev, &devices[ndev]) == 0) ndev++;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    struct stat st;
    if (fd == dirfd(d) || fd == own || fstat(fd, &st) != 0) continue;
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || (st.st_mode & S_IFMT) == 0) continue;
    char link[64];
    char target[32] = "";
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    if (readlink(link, target, sizeof target - 1) > 0 && strncmp(target, "anon_inode:", 11) == 0) continue;
    if (S_ISCHR(st.st_mode)) {
      bool granted = isatty(fd);
      for (int i = 0; i < ndev && !granted; i++) granted = devices[i].st_rdev == st.st_rdev;
      if (granted) continue;
    }
    found = true;
    break;
  }
  closedir(d);
  return found;
}

// Files need Landlock only where the private mounts leave a way out: a
// handed-over host descriptor, or the capability to make device nodes
// (root kept, outside a user namespace), which nodev mounts do not stop.
bool mounts_hold_files(const SandboxState& s) {
  return s.private_mounts && !s.holds_host_files && (s.in_user_namespace || geteuid() != 0);
}

std::string left_out(const char* layer) {
  return std::string(layer) + " (left out: --sandbox-without=" + layer + ")";
}

// The user namespace (and the namespaces in `ns`, which need one when
// the process is not root) this configuration calls for. Reports the
// identity line; true when `ns` was unshared.
bool enter_identity(const SandboxGrant& g, const SandboxOptions& o, int ns, SandboxState* s, bool* drop_to_file_server) {
  std::string why;
  bool root = geteuid() == 0;
  if (o.without & kLayerIdentity) {
    s->missing.push_back(left_out("identity"));
    return ns && unshare(ns) == 0;
  }
  if (root && !o.keep_root) {
    if (enter_identity_namespace(ns, &why, g.uid_map, g.gid_map)) {
      s->in_user_namespace = true;
      s->applied.push_back(
          "identity: a user namespace mapping every host id to itself; capabilities there only "
          "to serve files (chown, dac_override, dac_read_search, fowner, fsetid), none over the host");
      return true;
    }
    s->missing.push_back("user namespace (" + why + "): running as root with only the capabilities to serve files");
    *drop_to_file_server = true;
    return ns && unshare(ns) == 0;
  }
  if (root) {
    s->applied.push_back("identity: root, as asked (--keep-root)");
    return ns && unshare(ns) == 0;
  }
  if (ns && enter_own_id_namespace(ns, &why)) {
    s->in_user_namespace = true;
    s->applied.push_back("identity: uid " + std::to_string(getuid()) +
                         " in a user namespace of its own (other users' files show as nobody)");
    return true;
  }
  s->applied.push_back("identity: uid " + std::to_string(getuid()) + ", no capability to give up");
  if (ns) s->missing.push_back("user namespace (" + why + "): no namespace of the run's own can be made");
  return false;
}

void enter_host_mounts(const SandboxGrant& g, bool unshared, SandboxState* s) {
  std::string why;
  bool own_proc = s->pid_namespace;
  if (!unshared || !build_host_mounts(g, &own_proc, &why)) {
    s->missing.push_back("private mounts (" + (unshared ? why : std::string("no namespace")) + ")" +
                         (g.root_readonly ? ": owners, modes and times of host files can still be changed" : ""));
    return;
  }
  if (g.root_readonly) s->fifo_dir = "/dev/shm";
  s->applied.push_back(std::string("mounts: a private namespace of the whole host, every mount without set-id") +
                       (g.root_readonly ? ", read-only but for an empty /dev/shm" : "") +
                       (g.images.empty() ? "" : " and the images") +
                       (own_proc ? "; a /proc of the run's own processes" : ""));
  if (s->pid_namespace && !own_proc)
    s->missing.push_back("the run's own /proc (the host refused to mount one): the host's shows its processes");
}

// A raw clone through a gadget makes host processes the kernel's task
// table does not count. In the run's own user namespace the host counts
// RLIMIT_NPROC per user of that namespace, so the limit holds the run's
// tasks alone (threads included): the table's size and the kernel's own
// threads. Outside one it would count every process of the user on the
// host.
// (A root-started run is bounded by a pids cgroup instead, run_cgroup.cpp:
// the host exempts uid 0 from RLIMIT_NPROC.)
constexpr long kKernelThreads = 512;
constexpr long kHostTasks = kMaxTasks + kKernelThreads;
// What the kernel itself may hold beyond what guests may (mem=): its heap,
// stacks, tables and the host's page cache of the files it reads.
constexpr uint64_t kKernelMemory = 512ull << 20;

void limit_host_memory(const SandboxGrant& g, SandboxState& s) {
  if (!g.mem_bytes) return;  // no limit of the kernel's own either
  uint64_t mib = (g.mem_bytes + kKernelMemory) >> 20;
  if (s.memory_cgroup)
    s.applied.push_back("memory: at most " + std::to_string(mib) +
                        " MiB held by the run's host processes (mem= plus 512 MiB for the kernel; a memory cgroup "
                        "of its own)");
  else
    s.missing.push_back("a bound on host memory (no memory cgroup could be made): raw host mmap and memfd can "
                        "take more than mem=");
}

void limit_host_tasks(SandboxState& s) {
  if (s.tasks_cgroup) {
    s.applied.push_back("tasks: at most " + std::to_string(kHostTasks) +
                        " host processes and threads in the run (a pids cgroup of its own)");
    return;
  }
  if (!s.in_user_namespace || s.host_root) {
    s.missing.push_back("a bound on host processes (no pids cgroup could be made, and RLIMIT_NPROC does not hold " +
                        std::string(s.host_root ? "root" : "a user outside a namespace of its own") + ")");
    return;
  }
  rlimit r{(rlim_t)kHostTasks, (rlim_t)kHostTasks};
  if (setrlimit(RLIMIT_NPROC, &r) != 0) {
    s.missing.push_back(std::string("a bound on host processes (RLIMIT_NPROC: ") + strerror(errno) + ")");
    return;
  }
  s.applied.push_back("tasks: at most " + std::to_string(r.rlim_max) +
                      " host processes and threads in the run (RLIMIT_NPROC in its user namespace)");
}

}  // namespace

bool sandbox_enter(const SandboxGrant& g, const SandboxOptions& o, SandboxState* s) {
  if (o.off) {
    s->applied.push_back("off (--no-sandbox): a guest can do anything this process may");
    return true;
  }
  if (thread_count() != 1) {
    fprintf(stderr, "flatux: sandbox: the process must have one thread to enter its sandbox\n");
    return false;
  }
  bool root = geteuid() == 0;
  if (root) {  // the host exempts only its own uid 0 from RLIMIT_NPROC, not a user namespace's
    FILE* f = fopen("/proc/self/uid_map", "re");
    unsigned inner = 1, outer = 1, count = 0;
    s->host_root = !f || (fscanf(f, "%u %u %u", &inner, &outer, &count) == 3 && inner == 0 && outer == 0 &&
                          count == 4294967295u);
    if (f) fclose(f);
  }
  bool jail = g.root != "/";
  bool mounts = !(o.without & kLayerMounts);
  bool pids = !(o.without & kLayerProcesses);
  bool net = g.net_none && !(o.without & kLayerNetwork);
  int ns = (mounts ? CLONE_NEWNS : 0) | (pids ? CLONE_NEWPID : 0) | (net ? CLONE_NEWNET : 0);
  std::string why;
  bool drop_to_file_server = false;  // root without a user namespace, once its mounts are made
  // Made while the launcher still may (before the user namespace).
  RunCgroup cg;
  uint64_t max_memory = g.mem_bytes ? g.mem_bytes + kKernelMemory : 0;
  bool have_cg = pids && root && run_cgroup_create(kHostTasks, max_memory, &cg, &why, g.cgroup_path, g.cgroup_settings);
  bool unshared = enter_identity(g, o, ns, s, &drop_to_file_server);
  if (o.without & kLayerProcesses) {
    s->missing.push_back(left_out("processes"));
  } else if (!unshared) {
    run_cgroup_remove(cg);
    s->missing.push_back("pid namespace: host processes a guest makes can outlive the run, and it can name host "
                         "processes by pid");
  } else if (bool in_cg = false; !become_run_process(have_cg ? &cg : nullptr, &in_cg, &why)) {
    run_cgroup_remove(cg);
    fprintf(stderr, "flatux: sandbox: %s\n", why.c_str());
    return false;
  } else {
    s->tasks_cgroup = in_cg && cg.pids;
    s->memory_cgroup = in_cg && cg.memory;
    s->pid_namespace = true;
    s->applied.push_back("processes: a pid namespace of the run's own (the kernel is pid 2 below a reaper): every "
                         "host process of the run ends with it; no other host process has a pid there");
  }
  if (g.net_none && (o.without & kLayerNetwork)) {
    s->missing.push_back(left_out("network"));
  } else if (net && !unshared) {
    s->missing.push_back("network namespace (no namespace): abstract socket names and netlink reach the host's");
  } else if (net) {
    // Its loopback stays down: no guest has an IPv4 or IPv6 socket.
    s->applied.push_back("network: an empty namespace of the run's own (no interface up; abstract socket names and "
                         "netlink are the run's)");
  }
  // Kept until the seal counts threads with it (the private /proc has no
  // /proc/self/task), closed before any guest code runs: a descriptor of
  // the host's /proc would lead to every host process's folder.
  s->task_dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  s->holds_host_files = holds_host_files(s->task_dir);
  if (!mounts) s->missing.push_back(left_out("mounts"));
  else if (jail) enter_mount_namespace(g, unshared, s);
  else enter_host_mounts(g, unshared, s);
  if (drop_to_file_server && !set_capabilities(file_server_capabilities(), &why))
    s->missing.push_back("capabilities: " + why);
  // The whole host read-write: /dev/shm as it is (nothing is confined).
  bool whole_host = !jail && !g.root_readonly;
  if (s->fifo_dir.empty() && !whole_host) s->fifo_dir = private_fifo_dir();
  if (s->in_user_namespace) {
    uint64_t keep = root ? file_server_capabilities() : 0;
    if (!set_capabilities(keep, &why)) s->missing.push_back("dropping capabilities: " + why);
  }
  return true;
}

bool sandbox_seal(const SandboxGrant& g, const SandboxOptions& o, const TextRange* text, int ntext,
                  SandboxState* s) {
  if (o.off) {
    if (long r = install_syscall_filter(text, ntext); r < 0) {
      fprintf(stderr, "flatux: installing the seccomp filter: %s\n", strerror((int)-r));
      return false;
    }
    return true;
  }
  int threads = thread_count(s->task_dir);
  if (s->task_dir >= 0) close(s->task_dir);
  s->task_dir = -1;
  if (threads != 1) {
    fprintf(stderr, "flatux: sandbox: the process must have one thread to seal its sandbox\n");
    return false;
  }
  LandlockApplied ll;
  std::string why;
  if (o.without & kLayerLandlock) {
    s->missing.push_back(left_out("landlock"));
  } else if (apply_landlock(g, s->fifo_dir, mounts_hold_files(*s), &ll, &why)) {
    std::string line = "landlock ABI " + std::to_string(ll.abi) + ": ";
    line += ll.files ? "files beneath " + describe_root(g) + images(g) +
                           ", the five character devices, /proc/cpuinfo, FIFOs in " +
                           (s->fifo_dir.empty() ? std::string("(nowhere)") : s->fifo_dir)
            : s->private_mounts ? "files: the private mounts hold them (no host file handed over, no capability to "
                                  "make devices)"
                                : "files: the whole host read-write, nothing to refuse";
    if (ll.net) line += "; TCP bind and connect refused";
    if (ll.scopes) line += "; signals and abstract sockets kept inside";
    s->applied.push_back(line);
    if (g.net_none && !ll.net)
      s->missing.push_back("landlock network rules (ABI " + std::to_string(ll.abi) + " < 4): only the allowlist keeps TCP out");
    if (!ll.scopes)
      s->missing.push_back("landlock scopes (ABI " + std::to_string(ll.abi) +
                           " < 6): signals and abstract sockets can reach processes of the same user");
  } else {
    s->missing.push_back("landlock (" + why + "): host files are not confined");
  }
  limit_host_tasks(*s);
  limit_host_memory(g, *s);
  int ncalls = 0;
  HostAllowlistOptions allow{.net_none = g.net_none, .own_pid = (uint32_t)getpid(), .host_owners = g.host_owners};
  bool listed = !(o.without & kLayerAllowlist);
  if (long r = install_syscall_filter(text, ntext, listed ? &allow : nullptr, &ncalls); r < 0) {
    fprintf(stderr, "flatux: installing the seccomp filter: %s\n", strerror((int)-r));
    return false;
  }
  if (listed) {
    s->applied.push_back("seccomp: guest calls trap; the kernel's own host calls are held to an allowlist of " +
                         std::to_string(ncalls) +
                         " (clone, socket, socketpair, ioctl, fcntl, prctl, pidfd_open, get/setpriority and membarrier "
                         "arguments checked; " +
                         (g.host_owners ? std::string("modes pass through (--hostfs-owners=host)")
                                        : std::string("no set-id mode or device node")) +
                         "; openat2 only with an open_how of a sealed table, none creating), "
                         "others fail with EPERM");
    if (open_how_table_state() != OpenHowState::kSealed)
      s->missing.push_back("a sealed open_how table (no mseal on this host): a guest that can write the table "
                           "can make set-id files through openat2");
  } else {
    s->applied.push_back("seccomp: guest calls trap");
    s->missing.push_back(left_out("allowlist"));
  }
  s->applied.push_back("no_new_privs");
  for (const std::string& m : s->missing)
    if (o.warn) o.warn("sandbox: missing " + m);
    else fprintf(stderr, "flatux: sandbox: missing %s\n", m.c_str());
  if (o.require && !s->missing.empty()) {
    fprintf(stderr, "flatux: sandbox: refusing to run (--require-sandbox)\n");
    return false;
  }
  return true;
}

void sandbox_write_report(const SandboxState& s, int fd) {
  for (const std::string& a : s.applied) dprintf(fd, "flatux: sandbox: %s\n", a.c_str());
  // sandbox_seal has told stderr what is missing already: once is enough.
  if (fd != 2)
    for (const std::string& m : s.missing) dprintf(fd, "flatux: sandbox: missing %s\n", m.c_str());
}

bool parse_sandbox_without(const std::string& list, SandboxOptions* o, std::string* error) {
  static const struct {
    const char* name;
    SandboxLayer bit;
  } kLayers[] = {{"identity", kLayerIdentity},   {"processes", kLayerProcesses}, {"network", kLayerNetwork},
                 {"mounts", kLayerMounts},       {"landlock", kLayerLandlock},   {"allowlist", kLayerAllowlist}};
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string name = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    bool known = false;
    for (const auto& l : kLayers)
      if (name == l.name) {
        o->without |= l.bit;
        known = true;
      }
    if (!known) {
      *error = "--sandbox-without: unknown layer '" + name + "' (identity, processes, network, mounts, landlock, allowlist)";
      return false;
    }
  }
  return true;
}

bool sandbox_parse_option(const std::string& arg, SandboxOptions* o, SandboxGrant* g, std::string* error) {
  if (arg == "--no-sandbox") o->off = true;
  else if (arg == "--require-sandbox") o->require = true;
  else if (arg == "--keep-root") o->keep_root = true;
  else if (arg == "--security") o->report = true;
  else if (arg.compare(0, 18, "--sandbox-without=") == 0) parse_sandbox_without(arg.substr(18), o, error);
  else if (arg == "--net=none") g->net_none = true;
  else if (arg == "--net=host") g->net_none = false;
  else if (arg == "--hostfs-owners=host") g->host_owners = true;
  else if (arg == "--hostfs-owners=guest") g->host_owners = false;
  else if (arg.compare(0, 6, "--net=") == 0 || arg.compare(0, 16, "--hostfs-owners=") == 0) {
    *error = arg + ": unknown value";
    return true;
  } else {
    return false;
  }
  return true;
}

}  // namespace flatux::launcher
