#include "launcher/boot_info.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <dirent.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

long count_entries(const char* dir_path) {
  DIR* d = opendir(dir_path);
  if (!d) return 0;
  long n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

// The host limits every guest shares (kernel/sys/host_share.h). The
// descriptor limit is raised to its hard limit first: it is the one host
// table of all guests, and the kernel hands out shares of it.
void gather_host_limits(KernelConfig& cfg, long nmaps) {
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    if (rl.rlim_cur < rl.rlim_max) {
      rlimit raised = rl;
      raised.rlim_cur = rl.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    }
    cfg.host_nofile = rl.rlim_cur > (rlim_t)LONG_MAX ? LONG_MAX : (long)rl.rlim_cur;
  }
  cfg.host_fds_at_boot = count_entries("/proc/self/fd");
  if (FILE* f = fopen("/proc/sys/vm/max_map_count", "r")) {
    long v = 0;
    if (fscanf(f, "%ld", &v) == 1 && v > 0) cfg.host_max_map_count = v;
    fclose(f);
  }
  cfg.host_maps_at_boot = nmaps;
}

}  // namespace

bool gather_boot_info(KernelConfig& cfg) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) {
    perror("flatux: /proc/self/maps");
    return false;
  }
  char exe[PATH_MAX] = "";
  ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (el > 0) exe[el] = 0;
  char line[PATH_MAX + 256];
  long nmaps = 0;
  cfg.ntext = 0;
  cfg.nhost_maps = 0;
  bool maps_fit = true;
  while (fgets(line, sizeof line, maps)) {
    unsigned long start, end, off;
    char perms[8], path[PATH_MAX] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095[^\n]", &start, &end, perms, &off, path) < 4)
      continue;
    nmaps++;
    if (cfg.nhost_maps > 0 && cfg.host_maps[cfg.nhost_maps - 1].end == start) {
      cfg.host_maps[cfg.nhost_maps - 1].end = end;
    } else if (cfg.nhost_maps < (int)(sizeof cfg.host_maps / sizeof cfg.host_maps[0])) {
      cfg.host_maps[cfg.nhost_maps++] = {start, end};
    } else {
      maps_fit = false;
    }
    const char* p = path;
    while (*p == ' ') p++;
    if (!cfg.image_base && el > 0 && strcmp(p, exe) == 0 && off == 0) cfg.image_base = start;
    // Executable host code at boot is the kernel's (flatux, libc, libstdc++,
    // ld.so); the vDSO is left out so guest vDSO fallbacks trap to us.
    // Page 0 (rewrite-page0's trampoline) is guest-facing too, and holds no syscall.
    if (perms[2] != 'x' || strcmp(p, "[vdso]") == 0 || strcmp(p, "[vsyscall]") == 0 || start == 0) continue;
    if (cfg.ntext > 0 && cfg.text[cfg.ntext - 1].end == start) {
      cfg.text[cfg.ntext - 1].end = end;
    } else if (cfg.ntext < (int)(sizeof cfg.text / sizeof cfg.text[0])) {
      cfg.text[cfg.ntext++] = {start, end};
    }
  }
  fclose(maps);
  if (!maps_fit) cfg.nhost_maps = 0;
  gather_host_limits(cfg, nmaps);
  cfg.vdso_base = getauxval(AT_SYSINFO_EHDR);
  cfg.hwcap = getauxval(AT_HWCAP);
  cfg.hwcap2 = getauxval(AT_HWCAP2);
  cfg.minsigstksz = getauxval(AT_MINSIGSTKSZ);
  cfg.fsgsbase = cfg.hwcap2 & (1 << 1);  // HWCAP2_FSGSBASE
  unsigned eax, ebx, ecx, edx;
  cfg.xsave = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 27));  // OSXSAVE
  unsigned long fs = 0;
  syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
  cfg.host_fs = fs;
  return true;
}

}  // namespace flatux::launcher
