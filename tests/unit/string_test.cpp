// The kernel's own C string functions (src/kernel/lib/string.cpp), which
// kernel code must use instead of the host library's vector-register ones.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

// The definitions by name, as other code links to them (C++'s <cstring>
// overloads and the compiler's builtins would not call them).
template <typename F>
F named(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// The flatux image (and this test binary) define memcpy & co; a host
// library's definition winning would put vector code back into the kernel.
TEST(StringTest, KernelDefinesTheStringFunctions) {
  for (const char* name : {"memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen",
                           "strcmp", "strncmp", "strchr", "strrchr"}) {
    Dl_info info{};
    void* sym = dlsym(RTLD_DEFAULT, name);
    ASSERT_NE(sym, nullptr) << name;
    ASSERT_NE(dladdr(sym, &info), 0) << name;
    EXPECT_EQ(std::string(info.dli_fname).find("libc."), std::string::npos) << name << " from " << info.dli_fname;
  }
}

TEST(StringTest, MemmoveOverlapsBothWays) {
  for (size_t n : {0u, 1u, 7u, 64u, 1000u}) {
    for (int shift : {-5, -1, 1, 3, 17}) {
      std::vector<unsigned char> buf(n + 64), want;
      for (size_t i = 0; i < buf.size(); i++) buf[i] = (unsigned char)(i * 7 + 1);
      want = buf;
      size_t src = 24, dst = src + shift;
      for (size_t i = 0; i < n; i++) want[dst + i] = buf[src + i];
      auto mm = named<void* (*)(void*, const void*, size_t)>("memmove");
      EXPECT_EQ(mm(buf.data() + dst, buf.data() + src, n), buf.data() + dst);
      EXPECT_EQ(buf, want) << "n=" << n << " shift=" << shift;
    }
  }
}

// Short copies take moves from both ends: every size up to past the
// `rep movsb` threshold, at every alignment, copies exactly its bytes.
TEST(StringTest, MemcpyCopiesEverySizeAndAlignmentExactly) {
  auto cp = named<void* (*)(void*, const void*, size_t)>("memcpy");
  for (size_t n = 0; n <= 80; n++) {
    for (size_t src_off = 0; src_off < 8; src_off++) {
      for (size_t dst_off = 0; dst_off < 8; dst_off++) {
        unsigned char src[128], dst[128], want[128];
        for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 13 + 5);
        for (size_t i = 0; i < sizeof dst; i++) dst[i] = want[i] = (unsigned char)(0xee - i);
        for (size_t i = 0; i < n; i++) want[dst_off + 16 + i] = src[src_off + i];
        ASSERT_EQ(cp(dst + dst_off + 16, src + src_off, n), dst + dst_off + 16);
        ASSERT_EQ(std::memcmp(dst, want, sizeof dst), 0) << "n=" << n << " src+" << src_off << " dst+" << dst_off;
      }
    }
  }
}

TEST(StringTest, MemsetFillsEverySizeAndAlignmentExactly) {
  auto fill = named<void* (*)(void*, int, size_t)>("memset");
  for (size_t n = 0; n <= 300; n++) {
    for (size_t off = 0; off < 8; off++) {
      unsigned char buf[336], want[336];
      for (size_t i = 0; i < sizeof buf; i++) buf[i] = want[i] = (unsigned char)(0xee - i);
      for (size_t i = 0; i < n; i++) want[off + 16 + i] = 0xa5;
      ASSERT_EQ(fill(buf + off + 16, 0x1a5, n), buf + off + 16);  // only the low byte counts
      ASSERT_EQ(std::memcmp(buf, want, sizeof buf), 0) << "n=" << n << " off=" << off;
    }
  }
}

// Callers have relied on a forward copy between overlapping buffers
// (shifting a buffer's tail down); short copies load every byte first, so
// they stay right in both directions.
TEST(StringTest, ShortMemcpyBetweenOverlappingBuffersCopiesTheSourceAsItWas) {
  auto cp = named<void* (*)(void*, const void*, size_t)>("memcpy");
  for (size_t n = 1; n <= 64; n++) {
    for (int shift : {-9, -1, 1, 7}) {
      unsigned char buf[160], want[160];
      for (size_t i = 0; i < sizeof buf; i++) buf[i] = want[i] = (unsigned char)(i * 3 + 1);
      size_t src = 40, dst = src + shift;
      for (size_t i = 0; i < n; i++) want[dst + i] = buf[src + i];
      cp(buf + dst, buf + src, n);
      ASSERT_EQ(std::memcmp(buf, want, sizeof buf), 0) << "n=" << n << " shift=" << shift;
    }
  }
}

TEST(StringTest, CopyFillCompare) {
  auto cp = named<void* (*)(void*, const void*, size_t)>("memcpy");
  auto fill = named<void* (*)(void*, int, size_t)>("memset");
  auto cmp = named<int (*)(const void*, const void*, size_t)>("memcmp");
  char a[100], b[100];
  fill(a, 0x5a, sizeof a);
  for (char c : a) EXPECT_EQ(c, 0x5a);
  cp(b, a, sizeof a);
  EXPECT_EQ(cmp(a, b, sizeof a), 0);
  b[50] = (char)0x80;  // compares as unsigned
  EXPECT_LT(cmp(a, b, sizeof a), 0);
  EXPECT_GT(cmp(b, a, sizeof a), 0);
  EXPECT_EQ(cmp(a, b, 50), 0);
  auto chr = named<void* (*)(const void*, int, size_t)>("memchr");
  EXPECT_EQ(chr(b, 0x80, sizeof b), b + 50);
  EXPECT_EQ(chr(b, 0x80, 50), nullptr);
}

TEST(StringTest, StringFunctions) {
  auto len = named<size_t (*)(const char*)>("strlen");
  auto nlen = named<size_t (*)(const char*, size_t)>("strnlen");
  auto sc = named<int (*)(const char*, const char*)>("strcmp");
  auto snc = named<int (*)(const char*, const char*, size_t)>("strncmp");
  EXPECT_EQ(len(""), 0u);
  EXPECT_EQ(len("abc"), 3u);
  EXPECT_EQ(nlen("abcdef", 4), 4u);
  EXPECT_EQ(nlen("ab", 4), 2u);
  EXPECT_EQ(sc("abc", "abc"), 0);
  EXPECT_LT(sc("ab", "abc"), 0);
  EXPECT_GT(sc("b", "abc"), 0);
  EXPECT_GT(sc("\x80", "a"), 0);
  EXPECT_EQ(snc("abcx", "abcy", 3), 0);
  EXPECT_LT(snc("abcx", "abcy", 4), 0);
  EXPECT_EQ(snc("ab", "ab", 10), 0);
  const char* s = "a/b/c";
  auto ch = named<const char* (*)(const char*, int)>("strchr");
  auto rch = named<const char* (*)(const char*, int)>("strrchr");
  EXPECT_EQ(ch(s, '/'), s + 1);
  EXPECT_EQ(rch(s, '/'), s + 3);
  EXPECT_EQ(ch(s, 0), s + 5);
  EXPECT_EQ(rch(s, 0), s + 5);
  EXPECT_EQ(ch(s, 'x'), nullptr);
}

}  // namespace
