#include "kernel/heap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace flatux;

namespace {

// Each test gets a fresh heap at the fixed kernel address.
class HeapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
  }
  void TearDown() override { heap->destroy(); }
  Heap* heap = nullptr;
};

}  // namespace

TEST_F(HeapTest, LivesAtTheFixedSharedAddress) {
  EXPECT_EQ((uintptr_t)heap, kHeapBase);
  void* p = heap->alloc(100);
  EXPECT_TRUE(in_kernel_heap((uintptr_t)p, 100));
}

TEST_F(HeapTest, AllocationsAreZeroedAlignedAndDisjoint) {
  std::vector<char*> ptrs;
  for (size_t n : {1, 15, 16, 17, 100, 1000, 4096, 5000, 100000}) {
    char* p = static_cast<char*>(heap->alloc(n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ((uintptr_t)p % 16, 0u);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(p[i], 0);
    memset(p, 0xab, n);
    ptrs.push_back(p);
  }
  for (size_t i = 0; i + 1 < ptrs.size(); i++) EXPECT_NE(ptrs[i], ptrs[i + 1]);
}

TEST_F(HeapTest, FreedBlocksAreReusedAndCounted) {
  size_t base = heap->bytes_in_use();
  void* a = heap->alloc(64);
  EXPECT_GT(heap->bytes_in_use(), base);
  heap->free(a);
  EXPECT_EQ(heap->bytes_in_use(), base);
  void* b = heap->alloc(64);
  EXPECT_EQ(a, b);
  void* big = heap->alloc(1 << 20);
  heap->free(big);
  EXPECT_EQ(heap->alloc(1 << 20), big);
}

// A small large request takes a fitting piece of a big free block, not all
// of it (it used to take and zero the whole megabyte), and the best fit.
TEST_F(HeapTest, LargeBlocksAreSplitAndFitBest) {
  void* big = heap->alloc(1 << 20);
  void* mid = heap->alloc(16384);
  heap->free(big);
  heap->free(mid);
  size_t base = heap->bytes_in_use();
  void* a = heap->alloc(12000);
  EXPECT_EQ(a, mid);  // the 16 KiB block fits better than the 1 MiB one
  EXPECT_EQ(heap->bytes_in_use() - base, 16384u);
  void* b = heap->alloc(8192);
  EXPECT_EQ(b, big);  // cut from the front of the megabyte
  EXPECT_EQ(heap->bytes_in_use() - base, 16384u + 8192u);
  void* c = heap->alloc(65536);  // from the rest, past one page
  EXPECT_EQ((uintptr_t)c, (uintptr_t)big + 8192 + 4096);
  memset(c, 0xaa, 65536);
  EXPECT_EQ(static_cast<unsigned char*>(b)[8191], 0);  // neighbours untouched
  for (void* p : {a, b, c}) heap->free(p);
  EXPECT_EQ(heap->bytes_in_use(), base - 0u);
}

TEST_F(HeapTest, DoubleFreeIsIgnoredNotCorrupting) {
  void* a = heap->alloc(32);
  heap->free(a);
  heap->free(a);
  void* b = heap->alloc(32);
  void* c = heap->alloc(32);
  EXPECT_NE(b, c);
}

TEST_F(HeapTest, KernelStacksAreAlignedToTheirSize) {
  void* s1 = heap->alloc_kstack();
  void* s2 = heap->alloc_kstack();
  ASSERT_NE(s1, nullptr);
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ((uintptr_t)s1 % kKernelStackSize, 0u);
  EXPECT_EQ((uintptr_t)s2 % kKernelStackSize, 0u);
  heap->free_kstack(s1);
  EXPECT_EQ(heap->alloc_kstack(), s1);
}

TEST_F(HeapTest, SecondHeapAtTheSameAddressIsRefused) {
  EXPECT_EQ(Heap::create(), nullptr);
}
