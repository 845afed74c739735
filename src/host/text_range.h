// A range of host addresses [start, end): the kernel's executable code the
// seccomp filter tells apart from guest code, the host mappings a forked
// host process keeps.
#pragma once
#include <cstdint>

namespace flatux {

struct TextRange {
  uintptr_t start, end;
};

}  // namespace flatux
