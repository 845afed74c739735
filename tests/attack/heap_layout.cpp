// Prints where the fields a heap-rewriting attacker goes for lie in the
// kernel's objects, as "name:offset,...", for attacker.c's ATTACK_LAYOUT.
// Built from the kernel's own headers, so the attack follows the layout as
// it changes.
#include <cstddef>
#include <cstdio>

#include "kernel/fs/hostfs/internal.h"
#include "kernel/kernel.h"
#include "kernel/task/task.h"

#pragma GCC diagnostic ignored "-Winvalid-offsetof"

using namespace flatux;

int main() {
  static_assert(offsetof(Kernel, heap) == 0, "attacker.c finds the kernel by its first field");
  static_assert(offsetof(Creds, uid) == 0 && offsetof(Creds, fsgid) == 28, "eight ids first");
  static_assert(offsetof(Creds, cap_effective) == offsetof(Creds, cap_permitted) + 8 &&
                    offsetof(Creds, cap_bset) == offsetof(Creds, cap_effective) + 8,
                "permitted, effective and bounding sets in a row");
  std::printf(
      "k_cfg:%zu,cfg_root:%zu,cfg_net_none:%zu,k_init:%zu,p_creds:%zu,p_pid:%zu,p_children:%zu,"
      "p_sibling:%zu,h_heap:%zu,h_root_fd:%zu,h_root_is_slash:%zu,h_root_len:%zu,h_root:%zu,c_caps:%zu\n",
      offsetof(Kernel, cfg), offsetof(KernelConfig, root), offsetof(KernelConfig, net_none),
      offsetof(Kernel, init), offsetof(Process, creds), offsetof(Process, pid), offsetof(Process, children),
      offsetof(Process, sibling), offsetof(HostFs, heap), offsetof(HostFs, root_fd),
      offsetof(HostFs, root_is_slash), offsetof(HostFs, root_len), offsetof(HostFs, root),
      offsetof(Creds, cap_permitted));
  return 0;
}
