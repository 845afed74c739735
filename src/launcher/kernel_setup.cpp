#include "launcher/kernel_setup.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "host/entry.h"
#include "launcher/boot_info.h"

namespace flatux::launcher {

bool open_strace(KernelConfig& cfg, const std::string& strace) {
  if (strace.empty()) return true;
  cfg.strace_fd = strace == "-" ? fcntl(2, F_DUPFD_CLOEXEC, 3)
                                : open(strace.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (cfg.strace_fd < 0) {
    fprintf(stderr, "flatux: --strace=%s: %s\n", strace.c_str(), strerror(errno));
    return false;
  }
  return true;
}

namespace {

// `flatux run` starts with the host's node and domain names, as the program
// would see them natively (it resolves its own name through the host's
// /etc/hosts); a booted system starts as "flatux" and names itself. Either
// way sethostname changes only the guest's copy.
void take_host_names(Kernel& k) {
  struct utsname u;
  if (uname(&u) != 0) return;
  snprintf(k.uts.nodename, sizeof k.uts.nodename, "%s", u.nodename);
  snprintf(k.uts.domainname, sizeof k.uts.domainname, "%s", u.domainname);
}

}  // namespace

Kernel* start_kernel(KernelConfig& cfg, Sandbox& sb) {
  if (!gather_boot_info(cfg)) return nullptr;
  // Identity and mounts first: the kernel opens its root where it will see it.
  if (!sandbox_enter(sb.grant, sb.options, &sb.state)) return nullptr;
  snprintf(cfg.fifo_dir, sizeof cfg.fifo_dir, "%s", sb.state.fifo_dir.c_str());
  cfg.hostfs_host_owners = sb.grant.host_owners;
  umask(0);  // the guest's umask is applied by the kernel
  Kernel* k = Kernel::create(cfg);
  if (!k) {
    fprintf(stderr, "flatux: cannot create the kernel (heap or root filesystem)\n");
    return nullptr;
  }
  if (!cfg.boot.enabled) take_host_names(*k);
  if (long r = install_host_handlers(); r < 0) {
    fprintf(stderr, "flatux: installing signal handlers: %s\n", strerror((int)-r));
    return nullptr;
  }
  if (!sandbox_seal(sb.grant, sb.options, k->cfg.text, k->cfg.ntext, &sb.state)) return nullptr;
  if (sb.options.report) sandbox_write_report(sb.state, 2);
  else if (cfg.strace_fd >= 0) sandbox_write_report(sb.state, cfg.strace_fd);
  return k;
}

}  // namespace flatux::launcher
