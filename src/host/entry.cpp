#include "host/entry.h"

#include <csignal>
#include <cstring>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "host/kstack.h"
#include "host/raw_syscall.h"

extern "C" {
void flatux_sigreturn_to(ucontext_t* uc) __attribute__((noreturn));
void flatux_restorer();
// The trampolines (entry.S) into the kernel's handlers
// (kernel/entry/trap.cpp).
void flatux_sigsys_entry(int, siginfo_t*, void*);
void flatux_kick_entry(int, siginfo_t*, void*);
void flatux_fault_entry(int, siginfo_t*, void*);
}

namespace flatux {
namespace {

// The host kernel's struct sigaction layout (not glibc's).
struct HostSigaction {
  void (*handler)(int, siginfo_t*, void*);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};
constexpr unsigned long kSaRestorer = 0x04000000;
constexpr unsigned long kUcSigcontextSS = 0x2, kUcStrictRestoreSS = 0x4;
constexpr int kSsAutodisarm = 1 << 31;  // SS_AUTODISARM (linux/signal.h)

constexpr int kSyncSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP};

}  // namespace

uint64_t kernel_mode_mask() {
  uint64_t m = ~0ull;
  for (int s : kSyncSignals) m &= ~signal_bit(s);
  return m & ~signal_bit(kKickSignal);
}

long install_host_handlers() {
  HostSigaction sa{};
  sa.flags = SA_SIGINFO | SA_ONSTACK | kSaRestorer;
  sa.restorer = flatux_restorer;
  sa.mask = kernel_mode_mask();
  sa.handler = flatux_sigsys_entry;
  long r = host::sys(SYS_rt_sigaction, SIGSYS, &sa, nullptr, 8);
  if (r < 0) return r;
  // A guest's broken pipe is the guest's SIGPIPE, never the host process's.
  HostSigaction ign{};
  ign.handler = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(SIG_IGN);
  if ((r = host::sys(SYS_rt_sigaction, SIGPIPE, &ign, nullptr, 8)) < 0) return r;
  sa.handler = flatux_fault_entry;
  sa.flags |= SA_NODEFER;  // a fault while reporting a fault must still reach us
  for (int s : kSyncSignals)
    if ((r = host::sys(SYS_rt_sigaction, s, &sa, nullptr, 8)) < 0) return r;
  // No SA_RESTART: a kicked blocking host call must return EINTR.
  HostSigaction kick{};
  kick.handler = flatux_kick_entry;
  kick.flags = SA_SIGINFO | SA_ONSTACK | kSaRestorer;
  kick.restorer = flatux_restorer;
  kick.mask = ~0ull & ~signal_bit(SIGSYS);
  for (int s : kSyncSignals) kick.mask &= ~signal_bit(s);
  return host::sys(SYS_rt_sigaction, kKickSignal, &kick, nullptr, 8);
}

size_t fpstate_size(const void* fpstate) {
  // fpx_sw_bytes live in the legacy area's software-reserved bytes.
  const uint32_t* sw = reinterpret_cast<const uint32_t*>((const char*)fpstate + 464);
  if (sw[0] != 0x46505853u) return 512;  // FP_XSTATE_MAGIC1
  size_t ext = sw[1];
  return ext > kMaxFpstate ? kMaxFpstate : ext;
}

void kstack_guard(void* base) {
  host::sys(SYS_mprotect, (uintptr_t)base + 4096, 4096, PROT_NONE);
  host::sys(SYS_mprotect, (uintptr_t)base + kFastStackTop, 4096, PROT_NONE);
}

void kstack_unguard(void* base) {
  host::sys(SYS_mprotect, (uintptr_t)base + 4096, 4096, PROT_READ | PROT_WRITE);
  host::sys(SYS_mprotect, (uintptr_t)base + kFastStackTop, 4096, PROT_READ | PROT_WRITE);
}

void enter_guest_context(void* kstack, const greg_t (&regs)[NGREG], const void* fpstate) {
  ucontext_t uc;
  memset(&uc, 0, sizeof uc);
  alignas(64) char fpbuf[kMaxFpstate];
  if (fpstate) {
    memcpy(fpbuf, fpstate, fpstate_size(fpstate));
    uc.uc_flags |= 0x1;  // UC_FP_XSTATE
  }
  uc.uc_flags |= kUcSigcontextSS | kUcStrictRestoreSS;
  // The kernel stack's signal part is the thread's sigaltstack, armed by
  // this sigreturn and disarmed by the host as each handler starts
  // (SS_AUTODISARM), and re-armed by the handler's sigreturn. So the host
  // never takes the guest's RSP for "already on the alternate stack",
  // wherever it points (into this very stack, say): a trap from guest code
  // (or a host signal during a fast entry) always starts at the stack's
  // top. A fault or kick taken while a handler runs finds it disarmed and
  // lands on the current stack, below the running handler.
  uc.uc_stack.ss_sp = (char*)kstack + kSignalStackBottom;
  uc.uc_stack.ss_size = kKernelStackSize - kSignalStackBottom;
  uc.uc_stack.ss_flags = kSsAutodisarm;
  memcpy(uc.uc_mcontext.gregs, regs, sizeof uc.uc_mcontext.gregs);
  uc.uc_mcontext.gregs[REG_CSGSFS] = 0x33 | (0x2bll << 48);
  // Without an FPU state the host gives the thread a clean one.
  uc.uc_mcontext.fpregs = fpstate ? reinterpret_cast<fpregset_t>(fpbuf) : nullptr;
  reinterpret_cast<uint64_t*>(&uc.uc_sigmask)[0] = guest_mode_mask();
  flatux_sigreturn_to(&uc);
}

}  // namespace flatux
