// Signal delivery preserves the interrupted code's vector and floating
// point state: a handler that scribbles over xmm0-15, the upper halves of
// ymm0-15 and MXCSR must leave no trace once it returns. The interrupted
// code lives in assembly so that the values sit in the registers, not in
// memory, for the whole time a signal can land. Signals come both
// asynchronously (an interval timer) and synchronously (tgkill from
// inside the loop). The handler also checks that the saved context it is
// given holds those values, and that it starts with MXCSR at its default.
#include "guest_check.h"

#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MXCSR_DEFAULT 0x1f80u
#define MXCSR_LOOP 0x7f80u     // round toward zero
#define MXCSR_HANDLER 0x5f80u  // round up

// vals: 16 registers x 32 bytes; out: the same after the loop.
// spin:    counts iters down with the values in place.
// tgkill:  sends itself SIGUSR1 iters times with the values in place.
void fpu_spin_sse(const void* vals, void* out, long iters, uint32_t* mxcsr);
void fpu_spin_avx(const void* vals, void* out, long iters, uint32_t* mxcsr);
void fpu_tgkill_sse(const void* vals, void* out, long iters, uint32_t* mxcsr, long pid,
                    long tid);
void fpu_tgkill_avx(const void* vals, void* out, long iters, uint32_t* mxcsr, long pid,
                    long tid);
// Between each pair the registers hold vals and MXCSR is MXCSR_LOOP.
extern const char fpu_spin_sse_in[], fpu_spin_sse_out[], fpu_spin_avx_in[], fpu_spin_avx_out[];
extern const char fpu_tgkill_sse_in[], fpu_tgkill_sse_out[], fpu_tgkill_avx_in[],
    fpu_tgkill_avx_out[];

// Written out in full: the assembler has no loop over register names.
#define SSE_LOAD                                                                            \
  "movdqu 0x000(%rdi),%xmm0\n movdqu 0x020(%rdi),%xmm1\n movdqu 0x040(%rdi),%xmm2\n"        \
  "movdqu 0x060(%rdi),%xmm3\n movdqu 0x080(%rdi),%xmm4\n movdqu 0x0a0(%rdi),%xmm5\n"        \
  "movdqu 0x0c0(%rdi),%xmm6\n movdqu 0x0e0(%rdi),%xmm7\n movdqu 0x100(%rdi),%xmm8\n"        \
  "movdqu 0x120(%rdi),%xmm9\n movdqu 0x140(%rdi),%xmm10\n movdqu 0x160(%rdi),%xmm11\n"      \
  "movdqu 0x180(%rdi),%xmm12\n movdqu 0x1a0(%rdi),%xmm13\n movdqu 0x1c0(%rdi),%xmm14\n"     \
  "movdqu 0x1e0(%rdi),%xmm15\n"
#define SSE_STORE                                                                           \
  "movdqu %xmm0,0x000(%rsi)\n movdqu %xmm1,0x020(%rsi)\n movdqu %xmm2,0x040(%rsi)\n"        \
  "movdqu %xmm3,0x060(%rsi)\n movdqu %xmm4,0x080(%rsi)\n movdqu %xmm5,0x0a0(%rsi)\n"        \
  "movdqu %xmm6,0x0c0(%rsi)\n movdqu %xmm7,0x0e0(%rsi)\n movdqu %xmm8,0x100(%rsi)\n"        \
  "movdqu %xmm9,0x120(%rsi)\n movdqu %xmm10,0x140(%rsi)\n movdqu %xmm11,0x160(%rsi)\n"      \
  "movdqu %xmm12,0x180(%rsi)\n movdqu %xmm13,0x1a0(%rsi)\n movdqu %xmm14,0x1c0(%rsi)\n"     \
  "movdqu %xmm15,0x1e0(%rsi)\n"
#define AVX_LOAD                                                                            \
  "vmovdqu 0x000(%rdi),%ymm0\n vmovdqu 0x020(%rdi),%ymm1\n vmovdqu 0x040(%rdi),%ymm2\n"     \
  "vmovdqu 0x060(%rdi),%ymm3\n vmovdqu 0x080(%rdi),%ymm4\n vmovdqu 0x0a0(%rdi),%ymm5\n"     \
  "vmovdqu 0x0c0(%rdi),%ymm6\n vmovdqu 0x0e0(%rdi),%ymm7\n vmovdqu 0x100(%rdi),%ymm8\n"     \
  "vmovdqu 0x120(%rdi),%ymm9\n vmovdqu 0x140(%rdi),%ymm10\n vmovdqu 0x160(%rdi),%ymm11\n"   \
  "vmovdqu 0x180(%rdi),%ymm12\n vmovdqu 0x1a0(%rdi),%ymm13\n vmovdqu 0x1c0(%rdi),%ymm14\n"  \
  "vmovdqu 0x1e0(%rdi),%ymm15\n"
#define AVX_STORE                                                                           \
  "vmovdqu %ymm0,0x000(%rsi)\n vmovdqu %ymm1,0x020(%rsi)\n vmovdqu %ymm2,0x040(%rsi)\n"     \
  "vmovdqu %ymm3,0x060(%rsi)\n vmovdqu %ymm4,0x080(%rsi)\n vmovdqu %ymm5,0x0a0(%rsi)\n"     \
  "vmovdqu %ymm6,0x0c0(%rsi)\n vmovdqu %ymm7,0x0e0(%rsi)\n vmovdqu %ymm8,0x100(%rsi)\n"     \
  "vmovdqu %ymm9,0x120(%rsi)\n vmovdqu %ymm10,0x140(%rsi)\n vmovdqu %ymm11,0x160(%rsi)\n"   \
  "vmovdqu %ymm12,0x180(%rsi)\n vmovdqu %ymm13,0x1a0(%rsi)\n vmovdqu %ymm14,0x1c0(%rsi)\n"  \
  "vmovdqu %ymm15,0x1e0(%rsi)\n vzeroupper\n"

#define FUNC(name) ".globl " #name "\n .hidden " #name "\n .type " #name ",@function\n" #name ":\n"
#define LABEL(name) ".globl " #name "\n .hidden " #name "\n" #name ":\n"

// The caller's MXCSR is kept on the stack and put back before returning.
#define SPIN(name, LOAD, STORE)                       \
  FUNC(name)                                          \
  "sub $8,%rsp\n stmxcsr (%rsp)\n ldmxcsr (%rcx)\n"   \
  LOAD                                                \
  LABEL(name##_in)                                    \
  "1: dec %rdx\n jnz 1b\n"                            \
  LABEL(name##_out)                                   \
  "stmxcsr (%rcx)\n ldmxcsr (%rsp)\n add $8,%rsp\n"   \
  STORE                                               \
  "ret\n .size " #name ",.-" #name "\n"

// rbx counts; rdi/rsi/rdx are the tgkill arguments, so out and the MXCSR
// pointer wait on the stack.
#define TGKILL(name, LOAD, STORE)                                              \
  FUNC(name)                                                                   \
  "push %rbx\n push %rsi\n push %rcx\n sub $8,%rsp\n stmxcsr (%rsp)\n"         \
  "ldmxcsr (%rcx)\n mov %rdx,%rbx\n"                                           \
  LOAD                                                                         \
  LABEL(name##_in)                                                             \
  "1: mov $234,%eax\n mov %r8,%rdi\n mov %r9,%rsi\n mov $10,%edx\n syscall\n"  \
  "dec %rbx\n jnz 1b\n"                                                        \
  LABEL(name##_out)                                                            \
  "mov 8(%rsp),%rcx\n stmxcsr (%rcx)\n ldmxcsr (%rsp)\n add $8,%rsp\n"         \
  "pop %rcx\n pop %rsi\n pop %rbx\n"                                            \
  STORE                                                                        \
  "ret\n .size " #name ",.-" #name "\n"

__asm__(".text\n"
    SPIN(fpu_spin_sse, SSE_LOAD, SSE_STORE)
    SPIN(fpu_spin_avx, AVX_LOAD, AVX_STORE)
    TGKILL(fpu_tgkill_sse, SSE_LOAD, SSE_STORE)
    TGKILL(fpu_tgkill_avx, AVX_LOAD, AVX_STORE));

_Static_assert(SIGUSR1 == 10 && SYS_tgkill == 234, "hard-coded in the assembly above");

static int have_avx;
static unsigned ymmh_offset;  // of the AVX upper halves in an XSAVE image

static _Alignas(32) uint8_t vals[16][32];

// Which loop is running, so the handler knows what to expect.
struct region {
  const char *in, *out;
  int avx;
};
static volatile const struct region* active;

static volatile long handled, in_region, bad_saved_xmm, bad_saved_ymmh, bad_saved_mxcsr,
    no_xstate, bad_entry_mxcsr;

static uint32_t read_mxcsr(void) {
  uint32_t m;
  __asm__ volatile("stmxcsr %0" : "=m"(m));
  return m;
}

static void clobber_sse(void) {
  uint32_t m = MXCSR_HANDLER;
  __asm__ volatile(
      "pcmpeqd %%xmm0,%%xmm0\n pcmpeqd %%xmm1,%%xmm1\n pcmpeqd %%xmm2,%%xmm2\n"
      "pcmpeqd %%xmm3,%%xmm3\n pcmpeqd %%xmm4,%%xmm4\n pcmpeqd %%xmm5,%%xmm5\n"
      "pcmpeqd %%xmm6,%%xmm6\n pcmpeqd %%xmm7,%%xmm7\n pcmpeqd %%xmm8,%%xmm8\n"
      "pcmpeqd %%xmm9,%%xmm9\n pcmpeqd %%xmm10,%%xmm10\n pcmpeqd %%xmm11,%%xmm11\n"
      "pcmpeqd %%xmm12,%%xmm12\n pcmpeqd %%xmm13,%%xmm13\n pcmpeqd %%xmm14,%%xmm14\n"
      "pcmpeqd %%xmm15,%%xmm15\n ldmxcsr %0\n"
      :
      : "m"(m)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

// VEX encoding writes all 256 bits; no vzeroupper, so the dirty upper
// halves are still there when the handler returns.
static void clobber_avx(void) {
  __asm__ volatile(
      "vpcmpeqd %%ymm0,%%ymm0,%%ymm0\n vpcmpeqd %%ymm1,%%ymm1,%%ymm1\n"
      "vpcmpeqd %%ymm2,%%ymm2,%%ymm2\n vpcmpeqd %%ymm3,%%ymm3,%%ymm3\n"
      "vpcmpeqd %%ymm4,%%ymm4,%%ymm4\n vpcmpeqd %%ymm5,%%ymm5,%%ymm5\n"
      "vpcmpeqd %%ymm6,%%ymm6,%%ymm6\n vpcmpeqd %%ymm7,%%ymm7,%%ymm7\n"
      "vpcmpeqd %%ymm8,%%ymm8,%%ymm8\n vpcmpeqd %%ymm9,%%ymm9,%%ymm9\n"
      "vpcmpeqd %%ymm10,%%ymm10,%%ymm10\n vpcmpeqd %%ymm11,%%ymm11,%%ymm11\n"
      "vpcmpeqd %%ymm12,%%ymm12,%%ymm12\n vpcmpeqd %%ymm13,%%ymm13,%%ymm13\n"
      "vpcmpeqd %%ymm14,%%ymm14,%%ymm14\n vpcmpeqd %%ymm15,%%ymm15,%%ymm15\n"
      :
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

// The saved context: an FXSAVE image (MXCSR at 24, xmm0 at 160), and when
// the kernel used XSAVE, a marker at 464 and the XSAVE header at 512.
#define FX_MXCSR 24
#define FX_XMM 160
#define FX_SW_BYTES 464
#define XSAVE_HEADER 512
#define XSAVE_MAGIC1 0x46505853u

static void check_saved(const ucontext_t* uc, const struct region* r) {
  const uint8_t* fp = (const uint8_t*)uc->uc_mcontext.fpregs;
  if (!fp) {
    bad_saved_xmm++;
    return;
  }
  uint32_t mx;
  memcpy(&mx, fp + FX_MXCSR, 4);
  if ((mx & 0xffc0) != (MXCSR_LOOP & 0xffc0)) bad_saved_mxcsr++;
  for (int i = 0; i < 16; i++)
    if (memcmp(fp + FX_XMM + 16 * i, vals[i], 16) != 0) {
      bad_saved_xmm++;
      break;
    }
  if (!r->avx) return;
  uint32_t magic;
  memcpy(&magic, fp + FX_SW_BYTES, 4);
  if (magic != XSAVE_MAGIC1) {
    no_xstate++;
    return;
  }
  uint64_t xstate_bv;
  memcpy(&xstate_bv, fp + XSAVE_HEADER, 8);
  if (!(xstate_bv & 4)) {  // AVX state recorded as "init", i.e. zeros
    bad_saved_ymmh++;
    return;
  }
  for (int i = 0; i < 16; i++)
    if (memcmp(fp + ymmh_offset + 16 * i, vals[i] + 16, 16) != 0) {
      bad_saved_ymmh++;
      break;
    }
}

static void handler(int sig, siginfo_t* si, void* ucv) {
  handled++;
  // The handler gets a clean floating point environment of its own.
  if ((read_mxcsr() & 0xffc0) != (MXCSR_DEFAULT & 0xffc0)) bad_entry_mxcsr++;
  const struct region* r = (const struct region*)active;
  const ucontext_t* uc = ucv;
  uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  if (r && rip >= (uintptr_t)r->in && rip <= (uintptr_t)r->out) {
    in_region++;
    check_saved(uc, r);
  }
  clobber_sse();
  if (have_avx) clobber_avx();
}

static int compare(const uint8_t out[16][32], int avx, const char* what) {
  int bad = 0;
  size_t width = avx ? 32 : 16;
  for (int i = 0; i < 16; i++)
    if (memcmp(out[i], vals[i], width) != 0) {
      if (bad++ < 3) {
        size_t b = 0;
        while (out[i][b] == vals[i][b]) b++;
        CHECK(0, "%s: %smm%d changed: byte %zu is %#x, want %#x", what, avx ? "y" : "x", i, b,
              out[i][b], vals[i][b]);
      }
    }
  return bad;
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void reset_counters(void) {
  handled = in_region = bad_saved_xmm = bad_saved_ymmh = bad_saved_mxcsr = no_xstate =
      bad_entry_mxcsr = 0;
}

static void report_handler_checks(const char* what) {
  CHECK(bad_entry_mxcsr == 0, "%s: %ld handlers started with a non-default MXCSR", what,
        bad_entry_mxcsr);
  CHECK(bad_saved_xmm == 0, "%s: %ld saved contexts had wrong xmm values", what,
        bad_saved_xmm);
  CHECK(bad_saved_mxcsr == 0, "%s: %ld saved contexts had the wrong MXCSR", what,
        bad_saved_mxcsr);
  CHECK(no_xstate == 0, "%s: %ld saved contexts lacked the XSAVE marker", what, no_xstate);
  CHECK(bad_saved_ymmh == 0, "%s: %ld saved contexts had wrong ymm upper halves", what,
        bad_saved_ymmh);
}

#define WANT_SIGNALS 1000

static void timer_driven(int avx) {
  const char* what = avx ? "ymm0-15, timer" : "xmm0-15, timer";
  printf("%s: SIGALRM every 500 us while the loop holds its values:\n", what);
  static const struct region sse = {fpu_spin_sse_in, fpu_spin_sse_out, 0};
  static const struct region avx_r = {fpu_spin_avx_in, fpu_spin_avx_out, 1};
  active = avx ? &avx_r : &sse;
  reset_counters();
  struct itimerval it = {{0, 500}, {0, 500}};
  REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer: %s", strerror(errno));
  long long start = now_ms();
  long calls = 0, bad_calls = 0, bad_mxcsr = 0;
  // Each call spins for about a millisecond.
  while (handled < WANT_SIGNALS && now_ms() - start < 20000) {
    static _Alignas(32) uint8_t out[16][32];
    uint32_t mx = MXCSR_LOOP;
    memset(out, 0, sizeof out);
    if (avx)
      fpu_spin_avx(vals, out, 2000000, &mx);
    else
      fpu_spin_sse(vals, out, 2000000, &mx);
    calls++;
    if (compare(out, avx, what)) bad_calls++;
    if (mx != MXCSR_LOOP) bad_mxcsr++;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  active = NULL;
  CHECK(handled >= WANT_SIGNALS, "only %ld signals in 20 s", handled);
  CHECK(in_region > 0, "no signal landed inside the loop");
  CHECK(bad_calls == 0, "%ld of %ld loops saw changed registers", bad_calls, calls);
  CHECK(bad_mxcsr == 0, "%ld of %ld loops saw a changed MXCSR", bad_mxcsr, calls);
  report_handler_checks(what);
  CHECK(read_mxcsr() == MXCSR_DEFAULT, "MXCSR is %#x after the loops", read_mxcsr());
  printf("  %ld handlers (%ld inside the loop) over %ld loops in %lld ms; registers, MXCSR "
         "and saved contexts intact\n",
         handled, in_region, calls, now_ms() - start);
}

static void syscall_driven(int avx) {
  const char* what = avx ? "ymm0-15, tgkill" : "xmm0-15, tgkill";
  printf("%s: the loop signals itself with a raw tgkill:\n", what);
  static const struct region sse = {fpu_tgkill_sse_in, fpu_tgkill_sse_out, 0};
  static const struct region avx_r = {fpu_tgkill_avx_in, fpu_tgkill_avx_out, 1};
  active = avx ? &avx_r : &sse;
  reset_counters();
  static _Alignas(32) uint8_t out[16][32];
  uint32_t mx = MXCSR_LOOP;
  long pid = getpid(), tid = syscall(SYS_gettid);
  if (avx)
    fpu_tgkill_avx(vals, out, WANT_SIGNALS, &mx, pid, tid);
  else
    fpu_tgkill_sse(vals, out, WANT_SIGNALS, &mx, pid, tid);
  active = NULL;
  CHECK(handled == WANT_SIGNALS, "%ld handlers for %d tgkills", handled, WANT_SIGNALS);
  CHECK(in_region == handled, "%ld of %ld signals were delivered outside the loop",
        handled - in_region, handled);
  compare(out, avx, what);
  CHECK(mx == MXCSR_LOOP, "MXCSR %#x after the loop, want %#x", mx, MXCSR_LOOP);
  report_handler_checks(what);
  printf("  %ld handlers; registers, MXCSR and saved contexts intact\n", handled);
}

int main(void) {
  // Line by line, so a run that hangs shows how far it got.
  setvbuf(stdout, NULL, _IOLBF, 0);
  guest_name = "fpu_signal";
  __builtin_cpu_init();
  have_avx = __builtin_cpu_supports("avx");
  if (have_avx) {
    unsigned a, b, c, d;
    __cpuid_count(0xd, 2, a, b, c, d);
    ymmh_offset = b;
    REQUIRE(a == 256 && ymmh_offset >= 576, "CPUID 0xd.2: size %u offset %u", a, b);
  }
  printf("AVX: %s\n", have_avx ? "yes" : "no (ymm checks skipped)");
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 32; j++) vals[i][j] = (uint8_t)(0x11 + i * 32 + j * 7);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");

  syscall_driven(0);
  if (have_avx) syscall_driven(1);
  timer_driven(0);
  if (have_avx) timer_driven(1);
  return guest_finish();
}
