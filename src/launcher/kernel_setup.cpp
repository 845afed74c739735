#include "launcher/kernel_setup.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kernel/entry/entry.h"
#include "host/fast_entry.h"
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

// What rewriting guest code needs from the host beyond mprotect: a way to
// make every CPU see new instructions (host/code_patch.cpp).
bool prepare_code_patching(std::string* why) {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) != 0) {
    *why = std::string("membarrier(SYNC_CORE): ") + strerror(errno);
    return false;
  }
  return true;
}

// rewrite-page0's trampoline at address 0 (host/fast_entry.h), which only
// a privileged host process may map (CAP_SYS_RAWIO, or vm.mmap_min_addr=0).
bool map_page0(std::string* why) {
  void* p = mmap(nullptr, kPage0Size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != nullptr) {
    *why = std::string("mapping page 0: ") + (p == MAP_FAILED ? strerror(errno) : "placed elsewhere");
    if (p != MAP_FAILED) munmap(p, kPage0Size);
    return false;
  }
  uint8_t page[kPage0Size];
  page0_contents(page);
  // The compiler knows p is null here, and a store through null is not C++:
  // the address goes through an empty asm it cannot see into.
  uint8_t* at = static_cast<uint8_t*>(p);
  asm("" : "+r"(at));
  memcpy(at, page, sizeof page);
  if (mprotect(p, kPage0Size, PROT_READ | PROT_EXEC) != 0) {
    *why = std::string("page 0: ") + strerror(errno);
    return false;
  }
  uintptr_t word_page = kPage0Word & ~(uintptr_t)(kPage0Size - 1);
  void* w = mmap((void*)word_page, kPage0Size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (w != (void*)word_page) {
    *why = std::string("mapping page 0's jump target word: ") + strerror(errno);
    return false;
  }
  uint64_t entry = (uint64_t)flatux_fast_entry_page0;
  memcpy((void*)kPage0Word, &entry, sizeof entry);
  mprotect(w, kPage0Size, PROT_READ);
  return true;
}

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

bool choose_syscall_entry(KernelConfig& cfg, const std::string& requested) {
  std::string mode = requested;
  if (mode.empty()) {
    const char* env = getenv("FLATUX_SYSCALL_ENTRY");
    mode = env && *env ? env : "auto";
  }
  cfg.syscall_entry = SyscallEntryMode::kTrap;
  if (mode == "trap") return true;
  if (mode != "auto" && mode != "rewrite" && mode != "rewrite-page0") {
    fprintf(stderr, "flatux: --syscall-entry=%s: want auto, trap, rewrite or rewrite-page0\n", mode.c_str());
    return false;
  }
  std::string why;
  if (!prepare_code_patching(&why) || (mode == "rewrite-page0" && !map_page0(&why))) {
    if (mode == "auto") return true;
    fprintf(stderr, "flatux: --syscall-entry=%s: %s\n", mode.c_str(), why.c_str());
    return false;
  }
  cfg.syscall_entry = mode == "rewrite-page0" ? SyscallEntryMode::kRewritePage0 : SyscallEntryMode::kRewrite;
  return true;
}

Kernel* start_kernel(KernelConfig& cfg, Sandbox& sb, const std::function<bool(Kernel&)>& prepare) {
  if (!gather_boot_info(cfg)) return nullptr;
  for (int i = 0; i < 3; i++) {
    int r = prctl(PR_GET_SPECULATION_CTRL, i, 0, 0, 0);
    cfg.spec_ctrl[i] = r >= 0 ? r : -errno;
  }
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
  if (prepare && !prepare(*k)) return nullptr;
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
