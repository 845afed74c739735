#include "kernel/mm/usercopy.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <sys/mman.h>

#include "kernel/entry/entry.h"
#include "kernel/heap.h"

using namespace flatux;

namespace {

// An address that is certainly unmapped: map a page and unmap it.
void* unmapped_page() {
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(p, 4096);
  return p;
}

class UserCopyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(install_host_handlers(), 0); }
};

}  // namespace

TEST_F(UserCopyTest, CopiesGoodMemory) {
  char src[32] = "hello", dst[32] = {};
  EXPECT_EQ(copy_from_user(dst, src, sizeof src), 0);
  EXPECT_STREQ(dst, "hello");
  EXPECT_EQ(copy_to_user(dst, "bye", 4), 0);
  EXPECT_STREQ(dst, "bye");
  EXPECT_EQ(clear_user(dst, 4), 0);
  EXPECT_EQ(dst[0], 0);
}

TEST_F(UserCopyTest, BadPointersAreEfaultNotACrash) {
  char buf[16];
  void* gone = unmapped_page();
  EXPECT_EQ(copy_from_user(buf, nullptr, 4), -EFAULT);
  EXPECT_EQ(copy_from_user(buf, (void*)1, 4), -EFAULT);
  EXPECT_EQ(copy_from_user(buf, gone, 4), -EFAULT);
  EXPECT_EQ(copy_to_user(gone, buf, 4), -EFAULT);
  EXPECT_EQ(clear_user(gone, 4), -EFAULT);
  EXPECT_EQ(strncpy_from_user(buf, (const char*)gone, sizeof buf), -EFAULT);
  // Kernel memory and non-canonical addresses are refused before any access.
  EXPECT_EQ(copy_from_user(buf, (void*)(kHeapBase + 4096), 4), -EFAULT);
  EXPECT_EQ(copy_from_user(buf, (void*)0x800000000000ull, 4), -EFAULT);
  EXPECT_FALSE(access_ok((void*)~0ull, 2));
}

TEST_F(UserCopyTest, EmptyRangesAreFineAnywhereInUserSpace) {
  // Linux's access_ok(NULL, 0) holds: a zero-length transfer touches nothing.
  EXPECT_TRUE(access_ok(nullptr, 0));
  EXPECT_TRUE(access_ok((void*)0x1234, 0));
  EXPECT_FALSE(access_ok((void*)~0ull, 0));
  EXPECT_FALSE(access_ok(nullptr, 1));
}

TEST_F(UserCopyTest, ReadOnlyPageRefusesWrites) {
  char* p = static_cast<char*>(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  char buf[4] = {1, 2, 3, 4};
  EXPECT_EQ(copy_to_user(p, buf, 4), -EFAULT);
  EXPECT_EQ(copy_from_user(buf, p, 4), 0);
  munmap(p, 4096);
}

TEST_F(UserCopyTest, StringCopyStopsAtPageEndAndLimits) {
  // A string that runs into an unmapped page faults rather than overreads.
  char* two = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  munmap(two + 4096, 4096);
  memset(two, 'x', 4096);
  char buf[8192];
  EXPECT_EQ(strncpy_from_user(buf, two + 4000, sizeof buf), -EFAULT);
  two[4095] = 0;
  EXPECT_EQ(strncpy_from_user(buf, two + 4000, sizeof buf), 95);
  EXPECT_EQ(strncpy_from_user(buf, two + 4000, 10), -ENAMETOOLONG);
  munmap(two, 4096);
}

TEST_F(UserCopyTest, CopiesEverySizeExactlyAndFaultsAtAnyShortSize) {
  // Short copies take another path than long ones: both must copy exactly
  // n bytes and stop with EFAULT where the memory ends.
  char* two = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(two, MAP_FAILED);
  munmap(two + 4096, 4096);
  for (size_t n = 0; n <= 300; n++) {
    unsigned char src[320], dst[336], want[336];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 7 + 3);
    for (size_t i = 0; i < sizeof dst; i++) dst[i] = want[i] = 0xee;
    memcpy(want + 8, src + 1, n);
    ASSERT_EQ(copy_from_user(dst + 8, src + 1, n), 0);
    ASSERT_EQ(memcmp(dst, want, sizeof dst), 0) << "n=" << n;
    ASSERT_EQ(copy_to_user(two + 4096 - n, src, n), 0) << "n=" << n;
    ASSERT_EQ(memcmp(two + 4096 - n, src, n), 0) << "n=" << n;
    if (n == 0) continue;
    // One byte past the mapping: nothing past it is touched, EFAULT.
    ASSERT_EQ(copy_to_user(two + 4096 - n + 1, src, n), -EFAULT) << "n=" << n;
    ASSERT_EQ(copy_from_user(dst, two + 4096 - n + 1, n), -EFAULT) << "n=" << n;
  }
  munmap(two, 4096);
}

// A fault in kernel code that is not a guest access is an oops: a message
// with the faulting address, a backtrace and a clean exit.
TEST(KernelOopsDeathTest, FaultInKernelCodeIsReported) {
  EXPECT_EXIT(
      {
        install_host_handlers();
        *(volatile int*)16 = 1;
      },
      ::testing::ExitedWithCode(125), "kernel oops: SIGSEGV at rip=.*fault address=0x10");
}
