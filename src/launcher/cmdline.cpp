#include "launcher/cmdline.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>

namespace flatux::launcher {
namespace {

bool copy_value(char* dst, size_t cap, const std::string& v, const char* name, std::string* error) {
  if (v.size() >= cap) {
    *error = std::string(name) + " is too long";
    return false;
  }
  memcpy(dst, v.c_str(), v.size() + 1);
  return true;
}

bool append_word(char* buf, size_t cap, size_t* len, int* count, const std::string& w, std::string* error) {
  if (*len + w.size() + 1 > cap) {
    *error = "too many parameters for init";
    return false;
  }
  memcpy(buf + *len, w.c_str(), w.size() + 1);
  *len += w.size() + 1;
  (*count)++;
  return true;
}

// `ubdN[r]=FILE`; false if `key` is not a ubd parameter at all.
bool parse_ubd(const std::string& key, const std::string& val, BootConfig* b, std::string* error, bool* ok) {
  if (key.compare(0, 3, "ubd") != 0 || key.size() < 4) return false;
  size_t i = 3;
  int index = 0;
  while (i < key.size() && key[i] >= '0' && key[i] <= '9') index = index * 10 + (key[i++] - '0');
  if (i == 3) return false;
  bool ro = false;
  if (i < key.size() && key[i] == 'r') { ro = true; i++; }
  if (i != key.size()) return false;
  *ok = false;
  if (index >= BootConfig::kMaxUbd) {
    *error = key + ": at most " + std::to_string(BootConfig::kMaxUbd) + " ubd devices (ubd0..ubd" +
             std::to_string(BootConfig::kMaxUbd - 1) + ")";
    return true;
  }
  if (val.empty()) {
    *error = key + "= needs a file";
    return true;
  }
  if (b->nubd >= BootConfig::kMaxUbd) {
    *error = "too many ubd devices";
    return true;
  }
  UbdParam& u = b->ubd[b->nubd];
  u.index = index;
  u.readonly = ro;
  if (!copy_value(u.path, sizeof u.path, val, "ubd file name", error)) return true;
  for (int j = 0; j < b->nubd; j++) {
    if (b->ubd[j].index == index) {  // the later one wins, as in UML
      b->ubd[j] = u;
      *ok = true;
      return true;
    }
  }
  b->nubd++;
  *ok = true;
  return true;
}

bool parse_bool(const std::string& v, bool* out) {
  if (v == "1" || v == "y" || v == "Y" || v == "yes" || v == "on") { *out = true; return true; }
  if (v == "0" || v == "n" || v == "N" || v == "no" || v == "off") { *out = false; return true; }
  return false;
}

bool parse_port(const std::string& s, uint16_t* out) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  unsigned long v = strtoul(s.c_str(), nullptr, 10);
  if (v == 0 || v > 65535) return false;
  *out = (uint16_t)v;
  return true;
}

// hostfwd=tcp::HOSTPORT-:GUESTPORT (or udp), QEMU's spelling without the
// addresses: guests share the host's addresses.
bool parse_hostfwd(const std::string& v, BootConfig* b, std::string* error) {
  PortForward f{};
  size_t c1 = v.find(':'), dash = v.find('-');
  std::string proto = v.substr(0, c1);
  bool ok = c1 != std::string::npos && dash != std::string::npos && dash > c1 && (proto == "tcp" || proto == "udp");
  if (ok) {
    std::string host = v.substr(c1 + 1, dash - c1 - 1), guest = v.substr(dash + 1);
    ok = host.size() > 1 && host[0] == ':' && guest.size() > 1 && guest[0] == ':' &&
         parse_port(host.substr(1), &f.host_port) && parse_port(guest.substr(1), &f.guest_port);
  }
  if (!ok) {
    *error = "hostfwd=" + v + ": want tcp::HOSTPORT-:GUESTPORT or udp::HOSTPORT-:GUESTPORT, e.g. tcp::2222-:22";
    return false;
  }
  if (b->nforwards == BootConfig::kMaxForwards) {
    *error = "hostfwd=" + v + ": at most " + std::to_string(BootConfig::kMaxForwards) + " forwards";
    return false;
  }
  f.type = proto == "tcp" ? SOCK_STREAM : SOCK_DGRAM;
  b->forwards[b->nforwards++] = f;
  return true;
}

// One kernel parameter; unknown ones go to init as Linux passes them.
bool parse_param(const std::string& p, BootConfig* b, std::string* error) {
  size_t eq = p.find('=');
  std::string key = p.substr(0, eq), val = eq == std::string::npos ? "" : p.substr(eq + 1);
  bool has_val = eq != std::string::npos;
  bool ok = true;
  if (parse_ubd(key, val, b, error, &ok)) return ok;
  if (key == "rw" && !has_val) { b->root_readonly = false; return true; }
  if (key == "ro" && !has_val) { b->root_readonly = true; return true; }
  if (key == "quiet" && !has_val) { b->loglevel = 4; return true; }
  if (key == "debug" && !has_val) { b->loglevel = 10; return true; }
  if (key == "root" && has_val) return copy_value(b->root, sizeof b->root, val, "root=", error);
  if (key == "rootfstype" && has_val) return copy_value(b->rootfstype, sizeof b->rootfstype, val, "rootfstype=", error);
  if (key == "init" && has_val) return copy_value(b->init, sizeof b->init, val, "init=", error);
  if (key == "console" && has_val) return copy_value(b->console, sizeof b->console, val, "console=", error);
  if (key == "hostfs" && has_val) return copy_value(b->hostfs, sizeof b->hostfs, val, "hostfs=", error);
  if (key == "hostfwd" && has_val) return parse_hostfwd(val, b, error);
  if (key == "mem" && has_val) {
    if (!parse_mem_size(val, &b->mem_bytes) || b->mem_bytes < (4u << 20)) {
      *error = "mem=" + val + ": want a size of at least 4M, e.g. 64M or 1G";
      return false;
    }
    return true;
  }
  if (key == "loglevel" && has_val) {
    char* end;
    long v = strtol(val.c_str(), &end, 10);
    if (val.empty() || *end || v < 0 || v > 15) {
      *error = "loglevel=" + val + ": want a number from 0 to 15";
      return false;
    }
    b->loglevel = (int)v;
    return true;
  }
  if (key == "printk.time" && has_val) {
    if (!parse_bool(val, &b->printk_time)) {
      *error = "printk.time=" + val + ": want 0 or 1";
      return false;
    }
    return true;
  }
  // Module parameters ("a.b=c") are the kernel's even when unknown.
  size_t dot = p.find('.');
  if (dot != std::string::npos && dot < eq) return true;
  if (has_val) return append_word(b->init_env, sizeof b->init_env, &b->init_env_len, &b->init_nenv, p, error);
  return append_word(b->init_args, sizeof b->init_args, &b->init_args_len, &b->init_nargs, p, error);
}

}  // namespace

bool parse_mem_size(const std::string& s, uint64_t* bytes) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  char* end;
  errno = 0;
  unsigned long long v = strtoull(s.c_str(), &end, 0);
  if (errno) return false;
  int shift = 0;
  switch (*end) {
    case 0: break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: return false;
  }
  if (*end || v > (ULLONG_MAX >> shift)) return false;
  *bytes = (uint64_t)v << shift;
  return true;
}

bool parse_boot_command_line(const std::vector<std::string>& args, BootConfig* b, BootOptions* opts,
                             std::string* error) {
  b->enabled = true;
  std::string cmdline;
  bool to_init = false;  // after "--" every word is init's
  for (const std::string& a : args) {
    // /proc/cmdline is the kernel's command line: flatux's own options
    // (before "--") are the launcher's, not the kernel's.
    bool own_option = !to_init && a.size() > 1 && a[0] == '-' && a != "--";
    if (!own_option) {
      if (!cmdline.empty()) cmdline += ' ';
      cmdline += a;
    }
    if (to_init) {
      if (!append_word(b->init_args, sizeof b->init_args, &b->init_args_len, &b->init_nargs, a, error))
        return false;
      continue;
    }
    if (a == "--") { to_init = true; continue; }
    if (a == "-h" || a == "--help") { opts->help = true; continue; }
    if (a == "--strace") { opts->strace = "-"; continue; }
    if (a.compare(0, 9, "--strace=") == 0) { opts->strace = a.substr(9); continue; }
    if (a.compare(0, 16, "--syscall-entry=") == 0) { opts->syscall_entry = a.substr(16); continue; }
    if (a.compare(0, 14, "syscall_entry=") == 0) { opts->syscall_entry = a.substr(14); continue; }
    SandboxGrant g;
    g.net_none = opts->net_none;
    g.host_owners = opts->host_owners;
    if (sandbox_parse_option(a, &opts->sandbox, &g, error)) {
      if (!error->empty()) return false;
      opts->net_none = g.net_none;
      opts->host_owners = g.host_owners;
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      *error = "unknown option " + a + " (kernel parameters have no leading '-'; see --help)";
      return false;
    }
    if (!parse_param(a, b, error)) return false;
  }
  return copy_value(b->cmdline, sizeof b->cmdline, cmdline, "the command line", error);
}

std::string boot_help() {
  return R"(flatux: a user-mode no-MMU Linux kernel for unmodified x86_64 programs

Usage: flatux [OPTIONS] [PARAM...] [-- INIT-ARGS...]   boot a system, Linux/UML style
       flatux run [--root DIR] [--ro] [--strace[=FILE]] [--syscall-entry=MODE] [--] PROG [ARGS...]
       flatux mkimage SRC -o IMAGE [--size SIZE] [--label LABEL]

Boot parameters (as on Linux and UML):
  ubdN[r]=FILE     block device N backed by FILE (r: read-only); ubd0 is /dev/ubda
  root=DEV         root filesystem: /dev/ubda.. (default when ubd0 is given), or
                   /dev/root with rootfstype=hostfs (the default otherwise)
  rootfstype=TYPE  filesystem type of root= (hostfs)
  hostfs=DIR       host folder used as the hostfs root (default /)
  rw | ro          mount the root read-write (default) or read-only
  hostfwd=tcp::HOSTPORT-:GUESTPORT  (or udp::) the guest's port GUESTPORT is the
                   host's HOSTPORT: a server the guest binds there is reached
                   on the host's; the guest sees its own port (repeatable)
  mem=SIZE         guest memory (K, M or G suffix); allocations beyond it fail
                   with ENOMEM (default: no limit of flatux's own)
  loglevel=N       console log level: messages below N are shown (default 7)
  quiet            loglevel=4
  printk.time=0|1  timestamps on kernel messages (default 1)
  init=PATH        program run as PID 1 (default: /sbin/init, /etc/init,
                   /bin/init, /bin/sh, the first that exists)
  console=NAME     accepted for compatibility; the console is the host terminal
  syscall_entry=MODE  how guest syscalls enter the kernel (as --syscall-entry)
Anything else goes to init: NAME=VALUE in its environment, other words (and
everything after --) as its arguments. Module parameters (a.b=c) are ignored.

Options:
  -h, --help       this text
  --strace[=FILE]  one line per guest syscall (to FILE, default stderr)
  --syscall-entry=MODE  auto (default: rewrite where the host allows, else
                   trap), trap (SIGSYS every call), rewrite (each syscall site
                   rewritten at its first trap to jump into the kernel),
                   rewrite-page0 (also zpoline's call *%rax; needs page 0).
                   The default comes from $FLATUX_SYSCALL_ENTRY when set.
  --net=none|host  none: no IPv4/IPv6 sockets, a network namespace of its own;
                   host (default): the host's network
  --hostfs-owners=guest|host
                   guest (default): owners, set-id bits and device nodes a guest
                   gives hostfs files are kept by flatux, not the host; host:
                   they go to the host files as they are (trusted guests)
  --security       print what confines the host process
  --require-sandbox  refuse to run when the host cannot confine flatux to
                   what the command line grants (the images, hostfs=)
  --no-sandbox     do not confine the host process (trusted guests only)
  --keep-root      started by root: keep root's host capabilities
  --sandbox-without=LAYER[,LAYER]
                   leave out identity, processes, network, mounts, landlock
                   or allowlist (each is then reported missing; to see what
                   each one holds)

Exit status: 0 after power-off or halt, 3 after a restart request (reboot -r,
Ctrl-Alt-Del), 125 when the kernel panics (e.g. init exited).
On a terminal the host terminal is raw while the guest runs; the kernel's
line discipline provides ^C, ^Z, ^\, line editing and job control.
SIGTERM to flatux powers the guest off in order (init gets SIGTERM first).
)";
}

}  // namespace flatux::launcher
