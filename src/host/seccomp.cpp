#include "host/seccomp.h"

#include <cstddef>
#include <linux/audit.h>
#include <linux/errno.h>
#include <linux/filter.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "host/bpf.h"
#include "host/raw_syscall.h"

namespace flatux {
namespace {

constexpr uint32_t kIpLo = offsetof(seccomp_data, instruction_pointer);
constexpr uint32_t kIpHi = kIpLo + 4;
// Per range: ld hi; jeq; ld lo; jge; jge  (see below)
constexpr int kInsnsPerRange = 5;
// BPF jumps are 8-bit: every block must reach the kernel's part within 255.
constexpr int kMaxSplit = 48;

}  // namespace

long install_syscall_filter(const TextRange* ranges, int n, const HostAllowlistOptions* allowlist, int* ncalls) {
  // Ranges are split at 4 GiB boundaries so each compares one high word.
  TextRange split[kMaxSplit];
  int m = 0;
  for (int i = 0; i < n && m < kMaxSplit; i++) {
    uintptr_t s = ranges[i].start, e = ranges[i].end;
    while (s < e && m < kMaxSplit) {
      uintptr_t boundary = (s | 0xffffffffull) + 1;
      uintptr_t pe = e < boundary ? e : boundary;
      split[m++] = {s, pe};
      s = pe;
    }
  }
  static_assert(sizeof(BpfProg) < 16384, "built on the launcher's stack");
  BpfProg p;
  p.load(kSeccompArch);
  p.emit(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  p.ret(SECCOMP_RET_KILL_PROCESS);
  // Block layout (5 insns): if (hi == H && lo >= L && lo < U) goto kernel.
  // An x32 or out-of-range number from guest code traps like any other.
  const int trap_at = p.n + m * kInsnsPerRange;
  const int kernel_at = trap_at + 1;
  for (int i = 0; i < m; i++) {
    uint32_t hi = (uint32_t)(split[i].start >> 32);
    uint32_t lo = (uint32_t)split[i].start;
    uint64_t end_lo = split[i].end - ((uint64_t)hi << 32);  // may be 2^32
    int next = p.n + kInsnsPerRange;
    p.load(kIpHi);
    p.emit(BPF_JMP | BPF_JEQ | BPF_K, hi, 0, (uint8_t)(next - p.n - 1));
    p.load(kIpLo);
    p.emit(BPF_JMP | BPF_JGE | BPF_K, lo, 0, (uint8_t)(next - p.n - 1));
    if (end_lo > 0xffffffffull) {  // range reaches the top of this 4 GiB window
      p.emit(BPF_JMP | BPF_JA, (uint32_t)(kernel_at - p.n - 1));
    } else {
      p.emit(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)end_lo, (uint8_t)(next - p.n - 1),
             (uint8_t)(kernel_at - p.n - 1));
    }
  }
  p.ret(SECCOMP_RET_TRAP);
  // The kernel's own call: allowed, or held to the host-call allowlist.
  if (!allowlist) {
    p.ret(SECCOMP_RET_ALLOW);
    if (ncalls) *ncalls = 0;
  } else if (!emit_host_allowlist(p, *allowlist, ncalls)) {
    return -E2BIG;
  }
  if (p.overflow) return -E2BIG;

  sock_fprog prog{(unsigned short)p.n, p.f};
  long r = host::sys(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (r < 0) return r;
  r = host::sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  return r > 0 ? -EBUSY : r;  // TSYNC reports a thread it could not sync as a positive tid
}

}  // namespace flatux
