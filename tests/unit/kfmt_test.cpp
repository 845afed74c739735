#include "kernel/lib/kfmt.h"

#include <gtest/gtest.h>

using flatux::KFmt;

TEST(KFmt, FormatsNumbersAndStrings) {
  char buf[64];
  KFmt f(buf, sizeof buf);
  f.str("x=").dec(-42).ch(' ').hex(0xbeef).ch(' ').oct(0755).ch(' ').udec_padded(7, 3);
  EXPECT_EQ(f.view(), "x=-42 0xbeef 0755   7");
}

TEST(KFmt, TruncatesAtCapacityAndStaysTerminated) {
  char buf[5];
  KFmt f(buf, sizeof buf);
  f.str("abcdefgh");
  EXPECT_TRUE(f.truncated());
  EXPECT_STREQ(f.c_str(), "abcd");
}

TEST(KFmt, Int64Min) {
  char buf[32];
  KFmt f(buf, sizeof buf);
  f.dec(INT64_MIN);
  EXPECT_EQ(f.view(), "-9223372036854775808");
}
