// The floor of flatux's trap path, measured natively: a seccomp filter that
// traps one syscall site, a SIGSYS handler on an alternate stack that does
// nothing but write RAX, and the rt_sigreturn back. No kernel trap path can be
// cheaper than this on the same machine, so flatux's getpid is judged against
// it (target: within 15%).
//
// Usage: sigsys_floor [ITERS [REPS [MODE]]]
// Output: one line per measurement, "<name> <min_ns> <median_ns>", ns per call.
// MODE "trap" measures the trapped call alone (for a profiler: bench/profile);
// MODE "split" also times the two halves of the round trip from inside (see
// measure_split).
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

// The trapped call site. 16-byte aligned and shorter than 16 bytes, so the
// whole stub shares one upper 32-bit half and the filter can compare the low
// halves only.
__asm__(
    ".pushsection .text.sigsys_floor_stub,\"ax\",@progbits\n"
    ".p2align 4\n"
    ".globl trap_getpid\n"
    ".type trap_getpid,@function\n"
    "trap_getpid:\n"
    "  mov $39, %eax\n"
    "  syscall\n"
    "  ret\n"
    ".size trap_getpid, .-trap_getpid\n"
    ".globl trap_getpid_end\n"
    "trap_getpid_end:\n"
    ".popsection\n");
extern long trap_getpid(void);
extern char trap_getpid_end[];

static inline long raw_getpid(void) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_getpid) : "rcx", "r11", "memory");
  return ret;
}

// What the handler answers; distinct from any real pid so the self-check can
// tell the trap path from a native call that slipped through.
#define FAKE_PID 0x7ead

// Set by the split measurement: the handler then stamps its entry and exit.
static volatile int stamping;
static struct timespec at_entry, at_exit;

static void on_sigsys(int sig, siginfo_t* si, void* ctx) {
  (void)sig;
  (void)si;
  if (stamping) clock_gettime(CLOCK_MONOTONIC, &at_entry);
  ((ucontext_t*)ctx)->uc_mcontext.gregs[REG_RAX] = FAKE_PID;
  if (stamping) clock_gettime(CLOCK_MONOTONIC, &at_exit);
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

static void install_handler(void) {
  // The handler's stack is separate from the caller's, like flatux's
  // per-task kernel stack, so delivery pays the same stack switch.
  size_t sz = 64 * 1024;
  void* stk = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (stk == MAP_FAILED) die("mmap");
  stack_t ss = {.ss_sp = stk, .ss_size = sz, .ss_flags = 0};
  if (sigaltstack(&ss, NULL)) die("sigaltstack");

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  // flatux masks every asynchronous signal while it serves a call; the
  // sigprocmask work done by delivery and sigreturn is part of the floor.
  sigfillset(&sa.sa_mask);
  sigdelset(&sa.sa_mask, SIGSEGV);
  sigdelset(&sa.sa_mask, SIGBUS);
  sigdelset(&sa.sa_mask, SIGILL);
  sigdelset(&sa.sa_mask, SIGFPE);
  sigdelset(&sa.sa_mask, SIGTRAP);
  if (sigaction(SIGSYS, &sa, NULL)) die("sigaction");
}

static void install_filter(void) {
  uint64_t lo = (uint64_t)(uintptr_t)&trap_getpid;
  uint64_t hi = (uint64_t)(uintptr_t)trap_getpid_end;
  if ((lo >> 32) != ((hi - 1) >> 32)) {
    fprintf(stderr, "sigsys_floor: stub straddles a 4 GiB boundary\n");
    exit(1);
  }
  // instruction_pointer is the address after the syscall instruction, which
  // lies inside [lo, hi) because the stub ends with ret.
  struct sock_filter prog[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 6),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(lo >> 32), 0, 4),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)lo, 0, 2),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)hi, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog fprog = {.len = sizeof prog / sizeof prog[0], .filter = prog};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die("prctl(PR_SET_NO_NEW_PRIVS)");
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog)) die("seccomp");
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef long (*call_fn)(void);

static long call_native(void) { return raw_getpid(); }

// One unmeasured warm-up pass, then REPS timed passes of ITERS calls.
static void measure(const char* name, call_fn fn, long iters, int reps) {
  double* ns = calloc((size_t)reps, sizeof *ns);
  if (!ns) die("calloc");
  for (int r = -1; r < reps; r++) {
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) fn();
    double t1 = now_ns();
    if (r >= 0) ns[r] = (t1 - t0) / (double)iters;
  }
  qsort(ns, (size_t)reps, sizeof *ns, cmp_double);
  double median = reps % 2 ? ns[reps / 2] : (ns[reps / 2 - 1] + ns[reps / 2]) / 2;
  printf("%s %.1f %.1f\n", name, ns[0], median);
  fflush(stdout);
  free(ns);
}

static double ts_ns(const struct timespec* ts) {
  return (double)ts->tv_sec * 1e9 + (double)ts->tv_nsec;
}

// Splits the trapped round trip into what the host kernel does before the
// handler runs (syscall entry, seccomp, raising SIGSYS, building the signal
// frame with XSAVE, the exit to the handler) and after it returns (the
// restorer's rt_sigreturn: entry, XRSTOR, mask restore, exit). Each half is
// a difference of clock reads taken in user space, less one clock read's own
// cost (measured alongside), so the halves are approximate: the clock reads
// on either side of the trap disturb it a little, and their sum comes out
// above the plain measurement.
static void measure_split(long iters, int reps) {
  double* d = calloc((size_t)reps * 3, sizeof *d);
  if (!d) die("calloc");
  stamping = 1;
  for (int r = -1; r < reps; r++) {
    double deliver = 0, ret = 0, clk = 0;
    struct timespec a, b;
    for (long i = 0; i < iters; i++) {
      clock_gettime(CLOCK_MONOTONIC, &a);
      trap_getpid();
      clock_gettime(CLOCK_MONOTONIC, &b);
      deliver += ts_ns(&at_entry) - ts_ns(&a);
      ret += ts_ns(&b) - ts_ns(&at_exit);
      clock_gettime(CLOCK_MONOTONIC, &a);
      clock_gettime(CLOCK_MONOTONIC, &b);
      clk += ts_ns(&b) - ts_ns(&a);
    }
    if (r >= 0) {
      d[r] = (deliver - clk) / (double)iters;
      d[reps + r] = (ret - clk) / (double)iters;
      d[2 * reps + r] = clk / (double)iters;
    }
  }
  stamping = 0;
  static const char* names[] = {"split_deliver_ns", "split_return_ns", "split_clock_read_ns"};
  for (int k = 0; k < 3; k++) {
    double* v = d + (size_t)k * reps;
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    double median = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
    printf("%s %.1f %.1f\n", names[k], v[0], median);
  }
  fflush(stdout);
  free(d);
}

int main(int argc, char** argv) {
  long iters = argc > 1 ? strtol(argv[1], NULL, 0) : 100000;
  int reps = argc > 2 ? (int)strtol(argv[2], NULL, 0) : 9;
  const char* mode = argc > 3 ? argv[3] : "all";
  int trap_only = strcmp(mode, "trap") == 0, split = strcmp(mode, "split") == 0;
  if (iters < 1 || reps < 1 || (!trap_only && !split && strcmp(mode, "all") != 0)) {
    fprintf(stderr, "usage: sigsys_floor [ITERS [REPS [all|trap|split]]]\n");
    return 2;
  }
  printf("# iters %ld reps %d\n", iters, reps);

  // Before any filter exists: the bare host syscall.
  if (!trap_only) measure("native_getpid_ns", call_native, iters, reps);

  install_handler();
  install_filter();
  long real = raw_getpid(), trapped = trap_getpid();
  if (real == FAKE_PID || trapped != FAKE_PID) {
    fprintf(stderr, "sigsys_floor: self-check failed (native %ld, trapped %ld)\n", real, trapped);
    return 1;
  }
  // The same syscall, now run through the filter and allowed.
  if (!trap_only) measure("seccomp_allow_getpid_ns", call_native, iters, reps);
  measure("sigsys_floor_ns", trap_getpid, iters, reps);
  if (split) measure_split(iters, reps);
  return 0;
}
