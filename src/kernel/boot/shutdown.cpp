// Stopping the machine: reboot(2)'s power-off/halt/restart, a host
// SIGTERM (orderly power-off) and Ctrl-Alt-Del (host SIGINT).
//
// Filesystems: hostfs writes go straight to the host's files, so nothing is
// buffered in the kernel; block devices will flush here when they exist.
#include <cstring>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/boot/boot.h"
#include "kernel/printk.h"
#include "kernel/signal/signal.h"

namespace flatux {
namespace {

const char* halt_message(HaltReason why) {
  switch (why) {
    case HaltReason::kPowerOff: return "<0>reboot: Power down";
    case HaltReason::kRestart: return "<0>reboot: Restarting system";
    case HaltReason::kHalt: return "<0>reboot: System halted";
    default: return nullptr;
  }
}

}  // namespace

// Records why (the first reason wins) and wakes the launcher.
void kernel_stop(Kernel& k, HaltReason why) {
  // A power-off the host asked for stays one, whatever init then requests.
  if (k.shutdown_requested.load() && why == HaltReason::kRestart) why = HaltReason::kPowerOff;
  HaltReason none = HaltReason::kNone;
  if (!k.halt_reason.compare_exchange_strong(none, why)) return;
  if (const char* msg = halt_message(why)) printk(k, msg);
  k.halted.store(1);
  futex_wake(&k.halted, 1 << 30);
}

namespace {

void signal_init(Kernel& k, int sig) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = SI_KERNEL;
  Guard g(k.tasks_lock);
  if (k.init && k.init->state == ProcState::kRunning) send_signal(*k.init, nullptr, sig, si, kFromOutside);
}

}  // namespace

void kernel_halt(Kernel& k, HaltReason why) {
  kernel_stop(k, why);
  // The launcher ends the host process; this thread has nothing left to do.
  for (;;) host::sys(SYS_futex, &k.halted, FUTEX_WAIT, 1, 0, 0, 0);
}

void kernel_request_poweroff(Kernel& k) {
  if (k.shutdown_requested.exchange(true)) return;
  printk(k, "<5>flatux: power-off requested by the host; sending SIGTERM to init");
  signal_init(k, SIGTERM);
}

void kernel_ctrl_alt_del(Kernel& k) {
  if (k.cad_enabled) kernel_stop(k, HaltReason::kRestart);
  else signal_init(k, SIGINT);
}

}  // namespace flatux
