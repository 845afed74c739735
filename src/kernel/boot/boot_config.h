// The kernel command line, parsed by the launcher (src/launcher/cmdline.*)
// and handed to the kernel as plain data: what `flatux [PARAM...]` asks the
// boot code to do (src/kernel/boot/boot.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flatux {

// One `ubdN[r]=FILE`: a block device backed by a host file.
struct UbdParam {
  int index;              // N: ubd0 is /dev/ubda
  bool readonly;          // `ubdNr=`
  char path[1024];        // host path as given
};

// One `hostfwd=PROTO::HOSTPORT-:GUESTPORT` (QEMU's spelling): the guest's
// port GUESTPORT is the host's HOSTPORT (guests share the host's network,
// where low ports are not theirs to take).
struct PortForward {
  int type;                // SOCK_STREAM (tcp) or SOCK_DGRAM (udp)
  uint16_t host_port;
  uint16_t guest_port;
};

struct BootConfig {
  bool enabled = false;   // false for `flatux run` (no boot, no console)
  static constexpr int kMaxUbd = 8;
  UbdParam ubd[kMaxUbd]{};
  int nubd = 0;
  char root[256] = "";        // root= ("" = default)
  bool root_readonly = false; // ro / rw (rw is the default, as for UML)
  char rootfstype[32] = "";   // rootfstype=
  char hostfs[1024] = "/";    // hostfs=DIR (canonical host path)
  uint64_t mem_bytes = 0;     // mem=; 0: no limit of our own
  int loglevel = 7;           // console_loglevel: messages below it reach the console
  bool printk_time = true;    // printk.time=
  char console[64] = "";      // console= (only the host terminal exists)
  static constexpr int kMaxForwards = 8;
  PortForward forwards[kMaxForwards]{};  // hostfwd=
  int nforwards = 0;
  char init[256] = "";        // init= ("" = search the defaults)
  // Parameters the kernel does not know, for init: `a=b` words become its
  // environment, the others its arguments. NUL-separated strings.
  char init_args[2048]{};
  size_t init_args_len = 0;
  int init_nargs = 0;
  char init_env[2048]{};
  size_t init_env_len = 0;
  int init_nenv = 0;
  // The command line as typed (for /proc/cmdline and the boot log).
  char cmdline[4096] = "";
};

}  // namespace flatux
