// What the host-call allowlist costs each host call the kernel makes,
// measured natively: the same calls timed in a process with no filter, with
// the trap filter alone (its calls are "the kernel's", so they pass its
// instruction-pointer ranges and are allowed), and with the trap filter
// and the allowlist (the binary search on the call number, and the argument
// checks of fcntl and socket). Each mode runs in a child of its own.
//
// Usage: filter_cost [ITERS [ROUNDS]]
// Output: a table of ns per call per mode, min and median over the rounds.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "host/seccomp.h"

using namespace flatux;

namespace {

double now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

TextRange around(const void* code) {
  uintptr_t p = (uintptr_t)code;
  return {p - (64u << 20), p + (64u << 20)};
}

struct Call {
  const char* name;
  long (*fn)(int fd);
};

const Call kCalls[] = {
    {"getpid", [](int) { return syscall(SYS_getpid); }},
    {"read", [](int fd) {
       char c;
       return syscall(SYS_pread64, fd, &c, 1, 0);
     }},
    {"fcntl", [](int fd) { return syscall(SYS_fcntl, fd, F_GETFL); }},
    {"socket+close", [](int) {
       long s = syscall(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
       return syscall(SYS_close, s);
     }},
};

// One timed pass of every call: ns per call, in kCalls' order.
void measure(long iters, double* out) {
  int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  for (size_t c = 0; c < sizeof kCalls / sizeof kCalls[0]; c++) {
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) kCalls[c].fn(fd);
    out[c] = (now_ns() - t0) / iters;
  }
  close(fd);
}

constexpr int kNumCalls = sizeof kCalls / sizeof kCalls[0];
const char* const kModes[] = {"no-filter", "trap-filter", "trap+allowlist"};

// A pass in a fresh child under `mode`'s filter; false when it failed.
bool pass(int mode, long iters, double* out) {
  int p[2];
  if (pipe(p) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    const TextRange self[] = {around((void*)&measure), around((void*)&syscall)};
    HostAllowlistOptions o{.net_none = false, .own_pid = (uint32_t)getpid()};
    if (mode > 0 && install_syscall_filter(self, 2, mode == 2 ? &o : nullptr) != 0) _exit(2);
    double t[kNumCalls];
    measure(iters, t);
    _exit(write(p[1], t, sizeof t) == (ssize_t)sizeof t ? 0 : 3);
  }
  close(p[1]);
  bool ok = read(p[0], out, sizeof(double) * kNumCalls) == (ssize_t)(sizeof(double) * kNumCalls);
  close(p[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  int reps = argc > 2 ? atoi(argv[2]) : 15;
  // Rounds of one pass per mode, the order turning, so load drift hits
  // every mode alike.
  std::vector<double> got[3][kNumCalls];
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < 3; i++) {
      int mode = (i + r) % 3;
      double t[kNumCalls];
      if (!pass(mode, iters, t)) {
        fprintf(stderr, "filter_cost: a pass under %s failed\n", kModes[mode]);
        return 1;
      }
      for (int c = 0; c < kNumCalls; c++) got[mode][c].push_back(t[c]);
    }
  printf("%-14s %-16s %10s %10s\n", "call", "mode", "min_ns", "median_ns");
  for (int c = 0; c < kNumCalls; c++)
    for (int m = 0; m < 3; m++) {
      std::vector<double>& v = got[m][c];
      std::sort(v.begin(), v.end());
      printf("%-14s %-16s %10.1f %10.1f\n", kCalls[c].name, kModes[m], v[0], v[v.size() / 2]);
    }
  return 0;
}
