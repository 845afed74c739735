// `flatux [OPTIONS] [PARAM...]`: the kernel command line in Linux/UML
// syntax, parsed into the BootConfig the kernel boots from.
#pragma once
#include <string>
#include <vector>

#include "kernel/boot/boot_config.h"
#include "launcher/sandbox/sandbox.h"

namespace flatux::launcher {

struct BootOptions {
  std::string strace;  // "" off, "-" stderr, else a file
  std::string syscall_entry;  // --syscall-entry= or syscall_entry=; "" = the default
  bool help = false;
  SandboxOptions sandbox;
  bool net_none = false;     // --net=none
  bool host_owners = false;  // --hostfs-owners=host
};

// Parses argv[1..]. Returns false with a message in *error.
bool parse_boot_command_line(const std::vector<std::string>& args, BootConfig* boot, BootOptions* opts,
                             std::string* error);

// Parses a mem= size: a number with an optional K, M or G (any case).
bool parse_mem_size(const std::string& s, uint64_t* bytes);

// The --help text of boot mode (parameters and options).
std::string boot_help();

}  // namespace flatux::launcher
