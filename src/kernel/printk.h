// Kernel messages to the host's stderr (the console), Linux-style.
#pragma once
#include <string_view>

#include "kernel/lib/kfmt.h"

namespace flatux {

struct Kernel;

// Writes one already-formatted message (should end in '\n') atomically.
void printk(Kernel& k, std::string_view msg);

// Convenience: build a message with KFmt and print it.
template <typename F>
void printkf(Kernel& k, F&& build) {
  char buf[1024];
  KFmt f(buf, sizeof buf);
  build(f);
  printk(k, f.view());
}

}  // namespace flatux
