// flatux launcher: parses the command line, gathers host facts, boots the
// kernel and waits for it to halt. Runs with the host C library; nothing
// here runs once guest code has started, except the final wait.
#include <CLI/CLI.hpp>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <linux/futex.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "kernel/task/hostproc.h"
#include "kernel/block/ubd.h"
#include "kernel/fs/ext4/ext4_vfs.h"
#include "kernel/kernel.h"
#include "kernel/mm/site_survey.h"
#include "kernel/task/process.h"
#include "kernel/vfs/new_fs.h"
#include "launcher/boot_mode.h"
#include "launcher/cmdline.h"
#include "launcher/kernel_setup.h"
#include "launcher/sandbox/sandbox.h"
#include "tools/mkimage/mkimage.h"

extern char** environ;

namespace {

// Host signals meant for the guest, noted by the handler and forwarded by
// the main loop (the handler itself must stay async-signal-safe).
volatile sig_atomic_t g_host_signal = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void on_host_signal(int sig) { g_host_signal = sig; }

void install_forwarding() {
  struct sigaction sa {};
  sa.sa_handler = on_host_signal;  // no SA_RESTART: the wait below must wake
  sigemptyset(&sa.sa_mask);
  for (int s : kForwarded) sigaction(s, &sa, nullptr);
}

struct RunOptions {
  std::string root = "/";
  bool readonly = false;
  std::string strace;  // "" off, "-" stderr, else a file
  std::string net = "host";  // "host": the host's network; "none": no AF_INET/AF_INET6
  std::string syscall_entry;  // auto|trap|rewrite|rewrite-page0; "" = $FLATUX_SYSCALL_ENTRY or auto
  std::string site_survey;    // --site-survey=FILE: syscall sites by shape, written at the end
  std::vector<std::string> ubd;     // "N[r]=FILE": /dev/ubd<a+N> from a host file (FILE canonical once parsed)
  std::vector<std::string> mounts;  // "DEV:DIR": an ext4 device mounted before the guest starts
  std::string mem;                  // --mem=SIZE, as boot's mem=; "" for the default share
  std::vector<std::string> tmpfs;   // "DIR[:OPTIONS]": a private tmpfs mounted at DIR
  std::vector<std::string> argv;
  flatux::launcher::SandboxOptions sandbox;
  std::string hostfs_owners = "guest";
  std::string sandbox_without;  // layers left out, "landlock,allowlist"
};

// PROG without a slash is looked up in the guest's PATH, inside the root.
std::string find_program(const RunOptions& o) {
  const std::string& prog = o.argv[0];
  if (prog.find('/') != std::string::npos) return prog;
  const char* path = getenv("PATH");
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

int run(const RunOptions& o) {
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
  if (getcwd(here, sizeof here)) {
    size_t rl = strlen(root);
    if (strcmp(root, "/") == 0) snprintf(cfg.cwd, sizeof cfg.cwd, "%s", here);
    else if (strncmp(here, root, rl) == 0 && (here[rl] == '/' || here[rl] == 0))
      snprintf(cfg.cwd, sizeof cfg.cwd, "%s", here[rl] ? here + rl : "/");
  }
  cfg.root_readonly = o.readonly;
  if (!guest_memory_limit(o.mem, &cfg.boot.mem_bytes)) return 2;
  cfg.net_none = o.net == "none";
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
  for (const UbdSpec& u : ubds) sb.grant.images.push_back({u.file, u.readonly});
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
  flatux::Kernel* k = flatux::launcher::start_kernel(cfg, sb);
  if (!k) return 125;
  if (!attach_devices(*k, o, ubds, tmpfs)) return 125;
  if (survey_fd >= 0 && !flatux::site_survey_start(*k, survey_fd)) {
    fprintf(stderr, "flatux: --site-survey=%s: cannot start the survey\n", o.site_survey.c_str());
    return 125;
  }

  install_forwarding();
  std::vector<const char*> argv;
  for (const auto& a : o.argv) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const char* why = nullptr;
  long r = flatux::spawn_init(*k, prog.c_str(), argv.data(), environ, &why);
  if (r < 0) {
    int err = (int)-r;
    const char* msg = (err == ENOEXEC && why) ? why : strerror(err);
    fprintf(stderr, "flatux: %s: %s\n", o.argv[0].c_str(), msg);
    return err == ENOENT ? 127 : 126;
  }
  while (k->halted.load() == 0) {
    // A signal landing just before the wait is picked up on the next tick.
    timespec tick{0, 100 * 1000 * 1000};
    syscall(SYS_futex, &k->halted, FUTEX_WAIT, 0, &tick, nullptr, 0);
    if (int sig = g_host_signal) {
      g_host_signal = 0;
      flatux::forward_host_signal(*k, sig);
    }
  }
  flatux::hostprocs_kill_all(*k);  // forked guests end with the kernel, as with their threads
  flatux::ext4_poweroff(*k);  // write-back caches reach the images
  flatux::site_survey_write(*k);
  int status = k->exit_wait_status;
  if (WIFSIGNALED(status)) {
    if (const char* what = signal_report(WTERMSIG(status)))
      fprintf(stderr, "%s%s\n", what, WCOREDUMP(status) ? " (core dumped)" : "");
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

}  // namespace

// Where the guest's command line starts in `flatux run ...`: after "--", or
// at the first word that is not one of run's options. Everything from there
// on belongs to the guest and is never parsed as a flatux option.
int guest_argv_start(int argc, char** argv) {
  for (int i = 2; i < argc; i++) {
    std::string_view a = argv[i];
    if (a == "--") return i + 1;
    if (a == "--root" || a == "--net" || a == "--ubd" || a == "--mount-ext4" || a == "--hostfs-owners" ||
        a == "--syscall-entry" || a == "--site-survey" || a == "--tmpfs" || a == "--mem") {
      i++;  // takes the next word
      continue;
    }
    if (a.empty() || a[0] != '-') return i;
  }
  return argc;
}

int main(int argc, char** argv) {
  // Anything but a subcommand is a kernel command line: boot.
  std::string_view first = argc > 1 ? argv[1] : "";
  if (first != "run" && first != "mkimage") return flatux::launcher::boot_main(argc, argv);
  CLI::App app{"flatux: a user-mode no-MMU Linux kernel for unmodified x86_64 programs"};
  app.require_subcommand(1);
  RunOptions o;
  CLI::App* run_cmd = app.add_subcommand("run", "Run one program under flatux");
  run_cmd->add_option("--root", o.root, "Host folder used as the guest's root (default /); an image is booted (ubd0=IMAGE) or mounted (--ubd, --mount-ext4)");
  run_cmd->add_flag("--ro", o.readonly, "Mount the root read-only");
  run_cmd->add_option("--strace", o.strace, "Print one line per guest syscall (to FILE, default stderr)")
      ->expected(0, 1)
      ->default_str("-");
  run_cmd->add_option("--net", o.net, "Network: host (the host's own, default) or none (no IPv4/IPv6 sockets)")
      ->check(CLI::IsMember({"host", "none"}));
  run_cmd->add_option("--mem", o.mem, "Guest memory, as boot's mem= (K, M or G suffix; default: half the host's RAM)");
  run_cmd->add_option("--syscall-entry", o.syscall_entry,
                      "How guest syscalls enter the kernel: auto (default: rewrite where the host allows, "
                      "else trap), trap (SIGSYS every time), rewrite (each site rewritten at its first trap "
                      "to jump in), rewrite-page0 (also zpoline's call *%rax; needs page 0: root)")
      ->check(CLI::IsMember({"auto", "trap", "rewrite", "rewrite-page0"}));
  run_cmd->add_option("--site-survey", o.site_survey,
                      "Write to FILE, at the end, the syscall sites the guests executed and their calls by "
                      "shape: what each --syscall-entry can rewrite (call counts are complete with "
                      "--syscall-entry=trap)");
  run_cmd->add_option("--ubd", o.ubd, "N=FILE or Nr=FILE: block device /dev/ubd<a+N> on a host file (r: read-only)");
  run_cmd->add_option("--mount-ext4", o.mounts, "DEV:DIR: mount the ext4/ext3/ext2 filesystem on DEV (/dev/ubda) at DIR");
  run_cmd->add_option("--tmpfs", o.tmpfs,
                      "DIR[:OPTIONS]: a private tmpfs at DIR (e.g. /tmp, or /tmp:size=64m), in no host folder");
  run_cmd->add_option("--hostfs-owners", o.hostfs_owners,
                      "guest (default): owners, set-id bits and device nodes a guest gives hostfs files are "
                      "kept by flatux; host: they go to the host files as they are (trusted guests)")
      ->check(CLI::IsMember({"guest", "host"}));
  run_cmd->add_flag("--require-sandbox", o.sandbox.require,
                    "Refuse to run when the host cannot confine flatux to what the guest was granted");
  run_cmd->add_flag("--no-sandbox", o.sandbox.off, "Do not confine the host process (trusted guests only)");
  run_cmd->add_flag("--keep-root", o.sandbox.keep_root,
                    "Started by root: keep root's host capabilities instead of a user namespace");
  run_cmd->add_flag("--security", o.sandbox.report, "Print what confines the host process");
  run_cmd->add_option("--sandbox-without", o.sandbox_without,
                      "LAYER[,LAYER]: leave out identity, processes, network, mounts, landlock or allowlist (to see what each "
                      "holds)");
  run_cmd->footer("Usage: flatux run [OPTIONS] [--] PROG [ARGS...]");
  flatux::mkimage::Options mk;
  CLI::App* mk_cmd = app.add_subcommand("mkimage", "Build an ext4 image from a folder or a tar archive, unprivileged");
  mk_cmd->add_option("src", mk.src, "Folder, or tar archive (plain, .gz, .xz, .bz2; - for stdin)")->required();
  mk_cmd->add_option("-o,--output", mk.output, "Image file to write")->required();
  mk_cmd->add_option("--size", mk.size, "Image size, e.g. 512M or 2G (default: from the content)");
  mk_cmd->add_option("--label", mk.label, "Volume label (at most 16 bytes)");
  int parsed = argc;
  if (argc > 1 && std::string_view(argv[1]) == "run") {
    int start = guest_argv_start(argc, argv);
    for (int i = start; i < argc; i++) o.argv.push_back(argv[i]);
    parsed = start > 2 && std::string_view(argv[start - 1]) == "--" ? start - 1 : start;
  }
  try {
    app.parse(parsed, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (run_cmd->parsed()) {
    std::string error;
    if (!o.sandbox_without.empty() && !flatux::launcher::parse_sandbox_without(o.sandbox_without, &o.sandbox, &error)) {
      fprintf(stderr, "flatux run: %s\n", error.c_str());
      return 2;
    }
    if (o.argv.empty()) {
      fprintf(stderr, "flatux run: no program given\n%s", app.help("", CLI::AppFormatMode::All).c_str());
      return 2;
    }
    return run(o);
  }
  if (mk_cmd->parsed()) return flatux::mkimage::run(mk);
  return 0;
}
