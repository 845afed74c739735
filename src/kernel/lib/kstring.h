// String helpers for kernel code (std::string_view based, no allocation).
#pragma once
#include <cstddef>
#include <cstdint>
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

// string_view::substr throws, which kernel code cannot; these clamp instead.
inline std::string_view head(std::string_view s, size_t n) { return {s.data(), n < s.size() ? n : s.size()}; }
inline std::string_view tail(std::string_view s, size_t pos) {
  return pos < s.size() ? std::string_view(s.data() + pos, s.size() - pos) : std::string_view();
}
inline bool starts_with(std::string_view s, std::string_view p) { return head(s, p.size()) == p; }

// Decimal digits only, at most `max_digits` of them (so no overflow below 19).
inline bool parse_decimal(std::string_view s, size_t max_digits, uint64_t* out) {
  if (s.empty() || s.size() > max_digits) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (uint64_t)(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace flatux
