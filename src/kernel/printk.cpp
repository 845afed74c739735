#include "kernel/printk.h"

#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/kernel.h"

namespace flatux {

void printk(Kernel& k, std::string_view msg) {
  Guard g(k.log_lock);
  size_t off = 0;
  while (off < msg.size()) {
    long r = host::sys(SYS_write, 2, msg.data() + off, msg.size() - off);
    if (r <= 0) break;
    off += r;
  }
}

}  // namespace flatux
