// A classic BPF program under construction, for the seccomp filter.
// BPF jumps only forward, and a conditional jump reaches at most 255
// instructions: code that needs further goes through an unconditional one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <linux/filter.h>
#include <linux/seccomp.h>

namespace flatux {

struct BpfProg {
  static constexpr int kMax = 1024;
  sock_filter f[kMax];
  int n = 0;
  bool overflow = false;

  int emit(uint16_t code, uint32_t k, uint8_t jt = 0, uint8_t jf = 0) {
    if (n >= kMax) {
      overflow = true;
      return n;
    }
    f[n] = {code, jt, jf, k};
    return n++;
  }
  int ret(uint32_t action) { return emit(BPF_RET | BPF_K, action); }
  int load(uint32_t off) { return emit(BPF_LD | BPF_W | BPF_ABS, off); }
  // Points the true or false branch of the conditional jump at `at` to
  // instruction `to`; false when it is out of reach.
  bool patch(int at, int to, bool true_branch) {
    int d = to - at - 1;
    if (d < 0 || d > 255) {
      overflow = true;
      return false;
    }
    (true_branch ? f[at].jt : f[at].jf) = (uint8_t)d;
    return true;
  }
};

constexpr uint32_t kSeccompNr = offsetof(seccomp_data, nr);
constexpr uint32_t kSeccompArch = offsetof(seccomp_data, arch);
// The low 32 bits of argument i (little-endian).
constexpr uint32_t seccomp_arg_lo(int i) { return offsetof(seccomp_data, args) + 8 * i; }

}  // namespace flatux
