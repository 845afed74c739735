// reboot(2): power off, halt, restart, and the Ctrl-Alt-Del switch.
#include <linux/errno.h>
#include <linux/reboot.h>

#include "kernel/boot/boot.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"

namespace flatux {

long sys_reboot(Task& t, SyscallArgs a) {
  if (!capable(t.proc->creds, CAP_SYS_BOOT)) return -EPERM;
  uint32_t magic1 = (uint32_t)a[0], magic2 = (uint32_t)a[1], cmd = (uint32_t)a[2];
  if (magic1 != LINUX_REBOOT_MAGIC1 ||
      (magic2 != LINUX_REBOOT_MAGIC2 && magic2 != LINUX_REBOOT_MAGIC2A &&
       magic2 != LINUX_REBOOT_MAGIC2B && magic2 != LINUX_REBOOT_MAGIC2C))
    return -EINVAL;
  Kernel& k = *t.kernel;
  switch (cmd) {
    case LINUX_REBOOT_CMD_CAD_ON: k.cad_enabled = true; return 0;
    case LINUX_REBOOT_CMD_CAD_OFF: k.cad_enabled = false; return 0;
    case LINUX_REBOOT_CMD_RESTART: case LINUX_REBOOT_CMD_RESTART2:
      kernel_halt(k, HaltReason::kRestart);
    case LINUX_REBOOT_CMD_HALT: kernel_halt(k, HaltReason::kHalt);
    case LINUX_REBOOT_CMD_POWER_OFF: kernel_halt(k, HaltReason::kPowerOff);
    default: return -EINVAL;  // no kexec, no hibernation
  }
}

}  // namespace flatux
