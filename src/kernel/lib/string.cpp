// The C memory and string functions kernel code uses (and the compiler
// calls on its own for copies and clears), defined here instead of taken
// from the host C library.
//
// Why: kernel code is built with -mgeneral-regs-only, so that a rewritten
// syscall site (host/fast_entry.S) can run it without saving the guest's
// vector and x87 registers, which a real syscall preserves. The host
// library's versions use SSE/AVX (and on AVX-512 machines ymm16-31), which
// would silently corrupt the guest's registers. Everything here touches
// general-purpose registers only: `rep movsb`/`rep stosb` (fast on every
// CPU with ERMS/FSRM) and plain byte loops.
//
// These are the flatux executable's definitions of the standard names, so
// the launcher and the host libraries use them too; they are exact
// implementations of the C semantics. <cstring> is not included: its C++
// overloads of strchr/strrchr would clash with the C definitions.
#include <cstddef>
#include <cstdint>

namespace {

// Unaligned loads and stores (a constant-size builtin is a mov, never a
// call).
inline uint64_t load8(const unsigned char* p) {
  uint64_t v;
  __builtin_memcpy(&v, p, 8);
  return v;
}
inline void store8(unsigned char* p, uint64_t v) { __builtin_memcpy(p, &v, 8); }
inline uint32_t load4(const unsigned char* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}
inline void store4(unsigned char* p, uint32_t v) { __builtin_memcpy(p, &v, 4); }
// Every load above it is done before any store below it.
inline void loads_done() { asm volatile("" ::: "memory"); }

}  // namespace

extern "C" {

void* memcpy(void* dst, const void* src, size_t n) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  // Most of the kernel's copies are names and short paths: `rep movsb`'s
  // start-up costs more than they do. Up to 64 bytes: every byte is loaded
  // before any is stored (chunks from both ends, which may overlap each
  // other), so a copy between overlapping buffers still comes out right,
  // as the forward `rep movsb` made callers expect. No loop, so the
  // compiler cannot turn this back into a call to memcpy.
  if (n > 64) {
    asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
  } else if (n > 32) {
    uint64_t a = load8(s), b = load8(s + 8), c = load8(s + 16), e = load8(s + 24);
    uint64_t w = load8(s + n - 32), x = load8(s + n - 24), y = load8(s + n - 16), z = load8(s + n - 8);
    loads_done();
    store8(d, a), store8(d + 8, b), store8(d + 16, c), store8(d + 24, e);
    store8(d + n - 32, w), store8(d + n - 24, x), store8(d + n - 16, y), store8(d + n - 8, z);
  } else if (n > 16) {
    uint64_t a = load8(s), b = load8(s + 8), y = load8(s + n - 16), z = load8(s + n - 8);
    loads_done();
    store8(d, a), store8(d + 8, b), store8(d + n - 16, y), store8(d + n - 8, z);
  } else if (n >= 8) {
    uint64_t a = load8(s), z = load8(s + n - 8);
    loads_done();
    store8(d, a), store8(d + n - 8, z);
  } else if (n >= 4) {
    uint32_t a = load4(s), z = load4(s + n - 4);
    loads_done();
    store4(d, a), store4(d + n - 4, z);
  } else if (n > 0) {
    unsigned char a = s[0], m = s[n / 2], z = s[n - 1];
    loads_done();
    d[0] = a, d[n / 2] = m, d[n - 1] = z;
  }
  return dst;
}

void* memmove(void* dst, const void* src, size_t n) noexcept {
  auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (d - s >= n) return memcpy(dst, src, n);  // no overlap that a forward copy would clobber
  // Overlapping with dst above src: copy backwards, from the last byte.
  void* last_d = static_cast<char*>(dst) + n - 1;
  const void* last_s = static_cast<const char*>(src) + n - 1;
  asm volatile("std\n\trep movsb\n\tcld" : "+D"(last_d), "+S"(last_s), "+c"(n) : : "memory", "cc");
  return dst;
}

void* memset(void* dst, int c, size_t n) noexcept {
  // Most clears are small objects (a File, a Dentry, a name buffer) that
  // `rep stosb`'s start-up costs more than: up to 256 bytes, 8-byte stores
  // (the last ones may overlap earlier ones), from both ends.
  auto* d = static_cast<unsigned char*>(dst);
  if (n > 256) {
    asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return dst;
  }
  uint64_t v = 0x0101010101010101ull * (unsigned char)c;
  if (n >= 16) {
    // 32 bytes a step; this file is built without loop-to-call
    // distribution, so the loop stays a loop.
    for (size_t i = 0; i + 32 <= n; i += 32)
      store8(d + i, v), store8(d + i + 8, v), store8(d + i + 16, v), store8(d + i + 24, v);
    store8(d + n - 16, v), store8(d + n - 8, v);
    if (n & 16) store8(d + (n & ~size_t{31}), v), store8(d + (n & ~size_t{31}) + 8, v);
  } else if (n >= 8) {
    store8(d, v), store8(d + n - 8, v);
  } else if (n >= 4) {
    store4(d, (uint32_t)v), store4(d + n - 4, (uint32_t)v);
  } else if (n > 0) {
    d[0] = (unsigned char)c, d[n / 2] = (unsigned char)c, d[n - 1] = (unsigned char)c;
  }
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) noexcept {
  auto* p = static_cast<const unsigned char*>(a);
  auto* q = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; i++)
    if (p[i] != q[i]) return p[i] < q[i] ? -1 : 1;
  return 0;
}

void* memchr(const void* s, int c, size_t n) noexcept {
  auto* p = static_cast<const unsigned char*>(s);
  for (size_t i = 0; i < n; i++)
    if (p[i] == (unsigned char)c) return const_cast<unsigned char*>(p + i);
  return nullptr;
}

size_t strlen(const char* s) noexcept {
  const char* p = s;
  while (*p) p++;
  return (size_t)(p - s);
}

size_t strnlen(const char* s, size_t max) noexcept {
  size_t n = 0;
  while (n < max && s[n]) n++;
  return n;
}

int strcmp(const char* a, const char* b) noexcept {
  auto* p = reinterpret_cast<const unsigned char*>(a);
  auto* q = reinterpret_cast<const unsigned char*>(b);
  while (*p && *p == *q) p++, q++;
  return *p == *q ? 0 : (*p < *q ? -1 : 1);
}

int strncmp(const char* a, const char* b, size_t n) noexcept {
  auto* p = reinterpret_cast<const unsigned char*>(a);
  auto* q = reinterpret_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; i++) {
    if (p[i] != q[i]) return p[i] < q[i] ? -1 : 1;
    if (!p[i]) return 0;
  }
  return 0;
}

char* strchr(const char* s, int c) noexcept {
  for (;; s++) {
    if (*s == (char)c) return const_cast<char*>(s);
    if (!*s) return nullptr;
  }
}

char* strrchr(const char* s, int c) noexcept {
  const char* found = nullptr;
  for (;; s++) {
    if (*s == (char)c) found = s;
    if (!*s) return const_cast<char*>(found);
  }
}

}  // extern "C"
