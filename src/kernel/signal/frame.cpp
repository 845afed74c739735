#include "kernel/signal/frame.h"

#include <cstring>
#include <linux/errno.h>

#include "kernel/entry/entry.h"
#include "kernel/mm/usercopy.h"
#include "kernel/signal/signal.h"

namespace flatux {
namespace {

constexpr uint64_t kUcFpXstate = 0x1, kUcSigcontextSS = 0x2, kUcStrictRestoreSS = 0x4;
constexpr uint64_t kRedZone = 128;
// EFLAGS bits a frame may change (Linux's FIX_EFLAGS).
constexpr uint64_t kFixEflags = 0x40000 | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000;
constexpr uint64_t kUnblockable = (1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1));

bool on_altstack(const Task& t, uint64_t sp) {
  return t.altstack_size && sp > t.altstack_sp && sp - t.altstack_sp <= t.altstack_size;
}

int altstack_flags(const Task& t, uint64_t sp) {
  if (!t.altstack_size || (t.altstack_flags & SS_DISABLE)) return SS_DISABLE;
  return on_altstack(t, sp) ? SS_ONSTACK : 0;
}

// Copies a guest-supplied FPU image over the host frame's, keeping the
// host's own bookkeeping bytes and only state the host can restore: a bad
// image must never make the host's sigreturn fail.
void restore_fpstate(void* host_fp, const uint8_t* guest_img, size_t size) {
  uint8_t* h = static_cast<uint8_t*>(host_fp);
  uint8_t sw_reserved[48];
  memcpy(sw_reserved, h + 464, sizeof sw_reserved);
  uint32_t mxcsr_mask;
  memcpy(&mxcsr_mask, h + 28, 4);
  if (!mxcsr_mask) mxcsr_mask = 0xffbf;
  memcpy(h, guest_img, 464);
  memcpy(h + 28, &mxcsr_mask, 4);
  uint32_t mxcsr;
  memcpy(&mxcsr, h + 24, 4);
  mxcsr &= mxcsr_mask;
  memcpy(h + 24, &mxcsr, 4);
  memcpy(h + 464, sw_reserved, sizeof sw_reserved);
  if (size <= 512) return;
  // XSAVE header and extended components, minus the trailing magic word.
  uint64_t host_features;
  memcpy(&host_features, sw_reserved + 8, 8);
  size_t body = size - 4;
  memcpy(h + 512, guest_img + 512, body - 512);
  uint64_t xstate_bv;
  memcpy(&xstate_bv, h + 512, 8);
  xstate_bv &= host_features;
  memcpy(h + 512, &xstate_bv, 8);
  memset(h + 520, 0, 56);  // xcomp_bv and reserved: standard format only
}

// Handlers start with a clean FPU, as on Linux: default control words and
// every extended component in its initial state.
void reset_fpstate(void* host_fp, size_t size) {
  uint8_t* h = static_cast<uint8_t*>(host_fp);
  uint16_t fcw = 0x37f;
  uint32_t mxcsr = 0x1f80;
  memset(h, 0, 24);        // fcw, fsw, ftw, fop, fip, fdp
  memcpy(h, &fcw, 2);
  memcpy(h + 24, &mxcsr, 4);
  memset(h + 32, 0, 416);  // st0-7, xmm0-15
  if (size > 512) memset(h + 512, 0, 8);  // xstate_bv = 0: all components init
}

}  // namespace

long setup_frame(Task& t, int sig, const siginfo_t& info, const GuestSigaction& act,
                 uint64_t saved_mask) {
  ucontext_t* uc = t.regs;
  greg_t* g = uc->uc_mcontext.gregs;
  uint64_t sp = (uint64_t)g[REG_RSP] - kRedZone;
  if ((act.flags & SA_ONSTACK) && altstack_flags(t, (uint64_t)g[REG_RSP]) == 0)
    sp = t.altstack_sp + t.altstack_size;
  const void* host_fp = uc->uc_mcontext.fpregs;
  size_t fp_size = host_fp ? fpstate_size(host_fp) : 0;
  uint64_t fp_addr = (sp - fp_size) & ~63ull;
  uint64_t frame_addr = ((fp_addr - sizeof(RtSigframe)) & ~15ull) - 8;

  RtSigframe f;
  memset(&f, 0, sizeof f);
  f.pretcode = act.restorer;
  f.uc.uc_flags = kUcSigcontextSS | kUcStrictRestoreSS | (host_fp ? kUcFpXstate : 0);
  f.uc.uc_stack.ss_sp = (void*)t.altstack_sp;
  f.uc.uc_stack.ss_size = t.altstack_size;
  f.uc.uc_stack.ss_flags = altstack_flags(t, (uint64_t)g[REG_RSP]);
  memcpy(f.uc.uc_mcontext.gregs, g, sizeof f.uc.uc_mcontext.gregs);
  f.uc.uc_mcontext.fpregs = host_fp ? reinterpret_cast<fpregset_t>(fp_addr) : nullptr;
  f.uc.uc_sigmask = saved_mask;
  f.info = info;
  if (host_fp && copy_to_user((void*)fp_addr, host_fp, fp_size) < 0) return -EFAULT;
  if (copy_to_user((void*)frame_addr, &f, sizeof f) < 0) return -EFAULT;

  g[REG_RIP] = (greg_t)act.handler;
  g[REG_RSP] = (greg_t)frame_addr;
  g[REG_RDI] = sig;
  g[REG_RSI] = (greg_t)(frame_addr + offsetof(RtSigframe, info));
  g[REG_RDX] = (greg_t)(frame_addr + offsetof(RtSigframe, uc));
  g[REG_RAX] = 0;
  g[REG_EFL] &= ~(greg_t)(0x400 | 0x100 | 0x10000);  // DF, TF, RF
  if (host_fp) reset_fpstate(const_cast<void*>(host_fp), fp_size);
  return 0;
}

long sigreturn(Task& t) {
  greg_t* g = t.regs->uc_mcontext.gregs;
  // The restorer's `ret` popped pretcode: the ucontext is at the stack top.
  uint64_t uc_addr = (uint64_t)g[REG_RSP];
  GuestUcontext guc;
  if (copy_from_user(&guc, (const void*)uc_addr, sizeof guc) < 0) return -EFAULT;
  greg_t csgsfs = g[REG_CSGSFS];
  greg_t eflags = g[REG_EFL];
  memcpy(g, guc.uc_mcontext.gregs, sizeof guc.uc_mcontext.gregs);
  g[REG_CSGSFS] = csgsfs;
  g[REG_EFL] = (eflags & ~(greg_t)kFixEflags) | (guc.uc_mcontext.gregs[REG_EFL] & (greg_t)kFixEflags);
  void* host_fp = t.regs->uc_mcontext.fpregs;
  if (host_fp && guc.uc_mcontext.fpregs) {
    size_t size = fpstate_size(host_fp);
    alignas(64) uint8_t img[16384];
    if (size > sizeof img || copy_from_user(img, guc.uc_mcontext.fpregs, size) < 0) return -EFAULT;
    restore_fpstate(host_fp, img, size);
  }
  set_sigmask(t, guc.uc_sigmask & ~kUnblockable);
  // The saved altstack comes back too (errors ignored, as on Linux).
  if (!(guc.uc_stack.ss_flags & SS_ONSTACK)) {
    t.altstack_sp = (uint64_t)guc.uc_stack.ss_sp;
    t.altstack_size = guc.uc_stack.ss_size;
    t.altstack_flags = guc.uc_stack.ss_flags & SS_DISABLE;
  }
  return kRegsAlreadySet;
}

}  // namespace flatux
