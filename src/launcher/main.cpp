// flatux launcher: parses the command line, gathers host facts, boots the
// kernel and waits for it to halt. Runs with the host C library; nothing
// here runs once guest code has started, except the final wait.
#include <CLI/CLI.hpp>
#include <cstring>
#include <string>
#include <string_view>

#include "launcher/boot_mode.h"
#include "launcher/oci/oci.h"
#include "launcher/run_mode.h"
#include "launcher/sandbox/sandbox.h"
#include "tools/mkimage/mkimage.h"

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
  // Started as flatux-oci (a link to flatux): an OCI runtime, runc's command line.
  const char* base = strrchr(argv[0], '/');
  if (std::string_view(base ? base + 1 : argv[0]) == "flatux-oci") return flatux::launcher::oci_main(argc, argv);
  // Anything but a subcommand is a kernel command line: boot.
  std::string_view first = argc > 1 ? argv[1] : "";
  if (first != "run" && first != "mkimage") return flatux::launcher::boot_main(argc, argv);
  CLI::App app{"flatux: a user-mode no-MMU Linux kernel for unmodified x86_64 programs"};
  app.require_subcommand(1);
  flatux::launcher::RunOptions o;
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
    return flatux::launcher::run_program(o);
  }
  if (mk_cmd->parsed()) return flatux::mkimage::run(mk);
  return 0;
}
