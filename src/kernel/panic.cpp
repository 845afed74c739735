#include "kernel/panic.h"

#include <csignal>
#include <sys/syscall.h>

#include "host/kstack.h"
#include "host/raw_syscall.h"
#include "kernel/heap.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/task/task.h"

namespace flatux {

bool in_kernel_text(const Kernel* k, uintptr_t ip) {
  for (int i = 0; i < k->cfg.ntext; i++)
    if (ip >= k->cfg.text[i].start && ip < k->cfg.text[i].end) return true;
  return false;
}

namespace {

void write_stderr(std::string_view s) { host::sys(SYS_write, 2, s.data(), s.size()); }

const char* signal_abbrev(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal";
  }
}

// Walks the frame-pointer chain; kernel code keeps frame pointers.
void print_backtrace(KFmt& f, uintptr_t rbp, uintptr_t lo, uintptr_t hi, uintptr_t image) {
  for (int depth = 0; depth < 32 && rbp >= lo && rbp + 16 <= hi && (rbp & 7) == 0; depth++) {
    uintptr_t next = reinterpret_cast<uintptr_t*>(rbp)[0];
    uintptr_t ret = reinterpret_cast<uintptr_t*>(rbp)[1];
    f.str("  #").udec(depth).ch(' ').hex(ret);
    if (image && ret > image) f.str(" (flatux+").hex(ret - image).ch(')');
    f.ch('\n');
    if (next <= rbp) break;
    rbp = next;
  }
}

}  // namespace

void oops(Kernel* k, KStackHeader* h, int sig, const siginfo_t* si, const ucontext_t* uc) {
  char buf[2048];
  KFmt f(buf, sizeof buf);
  const greg_t* g = uc->uc_mcontext.gregs;
  // Off a kernel stack (the launcher's or the timer's thread) there is no
  // task to find the kernel by; the heap's fixed address still has it.
  // (A process with no kernel heap at all, as a unit test's, has none.)
  unsigned char resident;
  if (!k && host::sys(SYS_mincore, kHeapBase, 4096, &resident) == 0)
    k = static_cast<Kernel*>(Heap::root_of_this_process());
  uintptr_t image = k ? k->cfg.image_base : 0;
  uintptr_t rip = g[REG_RIP];
  f.str("flatux: kernel oops: ").str(signal_abbrev(sig)).str(" at rip=").hex(rip);
  if (image && rip > image && in_kernel_text(k, rip)) f.str(" (flatux+").hex(rip - image).ch(')');
  for (int i = 0; k && i < k->cfg.ntext; i++)
    if (rip >= k->cfg.text[i].start && rip < k->cfg.text[i].end)
      f.str(" (text range ").hex(k->cfg.text[i].start).str("+").hex(rip - k->cfg.text[i].start).ch(')');
  f.str(" fault address=").hex((uintptr_t)si->si_addr).str(" rsp=").hex(g[REG_RSP]);
  f.str(" host thread ").dec(host::sys(SYS_gettid));
  if (h && h->task) f.str(" task=").dec(h->task->tid);
  f.str("\nbacktrace:\n");
  if (h) {
    uintptr_t lo = (uintptr_t)h + kFastStackBottom;
    print_backtrace(f, g[REG_RBP], lo, (uintptr_t)h + kKernelStackSize, image);
  } else {
    // No frame pointers to follow in host libraries: the code addresses
    // among the words above the stack pointer show the way it came.
    f.str("  (not on a kernel stack; code addresses on the stack:)\n");
    const uintptr_t* sp = reinterpret_cast<const uintptr_t*>(g[REG_RSP]);
    for (int i = 0, shown = 0; k && i < 256 && shown < 16; i++) {
      uintptr_t w = sp[i];
      for (int j = 0; j < k->cfg.ntext; j++)
        if (w >= k->cfg.text[j].start && w < k->cfg.text[j].end) {
          f.str("  [rsp+").hex(8 * i).str("] ").hex(w).str(" (text range ").hex(k->cfg.text[j].start)
              .str("+").hex(w - k->cfg.text[j].start).str(")\n");
          shown++;
        }
    }
  }
  f.str("flatux: halting.\n");
  write_stderr(f.view());
  host::sys(SYS_exit_group, 125);
  __builtin_unreachable();
}

void kernel_panic(Kernel* k, const char* msg) {
  char buf[512];
  KFmt f(buf, sizeof buf);
  f.str("flatux: kernel panic: ").str(msg).ch('\n');
  write_stderr(f.view());
  host::sys(SYS_exit_group, 125);
  __builtin_unreachable();
}

}  // namespace flatux
