#include "kernel/vfs/vfs.h"

#include <gtest/gtest.h>

#include <string>

using namespace flatux;

namespace {
std::string norm(const char* in) {
  char out[256];
  long r = normalize_path(in, out, sizeof out);
  return r < 0 ? "error " + std::to_string(r) : std::string(out);
}
}  // namespace

TEST(NormalizePath, CollapsesSlashesDotsAndDotDots) {
  EXPECT_EQ(norm("/"), "/");
  EXPECT_EQ(norm("//usr///bin/"), "/usr/bin");
  EXPECT_EQ(norm("/usr/./bin/."), "/usr/bin");
  EXPECT_EQ(norm("/usr/lib/../bin"), "/usr/bin");
  EXPECT_EQ(norm("/a/b/c/../../d"), "/a/d");
}

TEST(NormalizePath, NeverClimbsAboveRoot) {
  EXPECT_EQ(norm("/.."), "/");
  EXPECT_EQ(norm("/../../etc"), "/etc");
  EXPECT_EQ(norm("/a/../../.."), "/");
}

TEST(NormalizePath, RejectsRelativeAndTooLong) {
  char out[8];
  EXPECT_LT(normalize_path("relative", out, sizeof out), 0);
  EXPECT_LT(normalize_path("/abcdefghijkl", out, sizeof out), 0);
  EXPECT_EQ(normalize_path("/abc", out, sizeof out), 4);
}
