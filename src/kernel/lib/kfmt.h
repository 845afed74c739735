// A tiny freestanding text formatter: appends to a fixed buffer, never
// allocates, silently truncates at capacity. Used by printk, oops and strace.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flatux {

class KFmt {
 public:
  KFmt(char* buf, size_t cap) : buf_(buf), cap_(cap) {}

  KFmt& str(std::string_view s) {
    for (char c : s) ch(c);
    return *this;
  }
  KFmt& ch(char c) {
    if (len_ + 1 < cap_) buf_[len_++] = c;
    else truncated_ = true;
    return *this;
  }
  KFmt& dec(int64_t v) {
    if (v < 0) { ch('-'); return udec(0 - (uint64_t)v); }
    return udec((uint64_t)v);
  }
  KFmt& udec(uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = char('0' + v % 10); v /= 10; } while (v);
    while (n) ch(tmp[--n]);
    return *this;
  }
  // Lower-case hex with "0x" prefix (strace and Linux style).
  KFmt& hex(uint64_t v) { str("0x"); return hexraw(v); }
  KFmt& hexraw(uint64_t v, int min_digits = 1) {
    char tmp[16];
    int n = 0;
    do { tmp[n++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
    while (n < min_digits && n < 16) tmp[n++] = '0';
    while (n) ch(tmp[--n]);
    return *this;
  }
  KFmt& oct(uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = char('0' + (v & 7)); v >>= 3; } while (v);
    ch('0');
    while (n) ch(tmp[--n]);
    return *this;
  }
  // Right-aligned decimal in a field of `width` characters.
  KFmt& udec_padded(uint64_t v, int width, char pad = ' ') {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = char('0' + v % 10); v /= 10; } while (v);
    for (int i = n; i < width; i++) ch(pad);
    while (n) ch(tmp[--n]);
    return *this;
  }

  // Right-aligned signed decimal ("%*d").
  KFmt& pad_dec(int64_t v, int width) {
    char tmp[24];
    KFmt t(tmp, sizeof tmp);
    t.dec(v);
    for (int i = (int)t.size(); i < width; i++) ch(' ');
    return str(t.view());
  }
  // Right-aligned octal without a prefix ("%*o").
  KFmt& pad_oct(uint64_t v, int width) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = char('0' + (v & 7)); v >>= 3; } while (v);
    for (int i = n; i < width; i++) ch(' ');
    while (n) ch(tmp[--n]);
    return *this;
  }

  size_t size() const { return len_; }
  bool truncated() const { return truncated_; }
  const char* data() const { return buf_; }
  std::string_view view() const { return {buf_, len_}; }
  // NUL-terminates (the buffer always has room: len_ < cap_).
  const char* c_str() { if (cap_) buf_[len_] = 0; return buf_; }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool truncated_ = false;
};

}  // namespace flatux
