// String helpers for kernel code (std::string_view based, no allocation).
#pragma once
#include <cstddef>
#include <cstring>
#include <string_view>

namespace flatux {

// Copies s into dst[cap] with a terminating NUL; false if it did not fit.
inline bool copy_cstr(char* dst, size_t cap, std::string_view s) {
  if (s.size() + 1 > cap) return false;
  memcpy(dst, s.data(), s.size());
  dst[s.size()] = 0;
  return true;
}

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace flatux
