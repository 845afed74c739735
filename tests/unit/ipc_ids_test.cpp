#include "kernel/ipc/ipc.h"

#include <gtest/gtest.h>

#include "kernel/heap.h"
#include "kernel/mm/regions.h"

using namespace flatux;

namespace {

class IpcIdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
    ids = heap->make<IpcIds>();
  }
  void TearDown() override { heap->destroy(); }
  IpcObject* make() { return heap->make<IpcObject>(); }
  Heap* heap = nullptr;
  IpcIds* ids = nullptr;
};

}  // namespace

// Linux's ipc_idr_alloc in a fresh namespace: ids 0, 1, 2... and after
// the cycle wraps the sequence number moves on, so a reused index gets a
// new id (seq << 15 | index).
TEST_F(IpcIdsTest, IdsCycleAndTheSequenceMovesOnAtTheWrap) {
  IpcObject* first = make();
  EXPECT_EQ(ids->add(heap, first, 100), 0);
  IpcObject* second = make();
  EXPECT_EQ(ids->add(heap, second, 100), 1);
  ids->remove(first);
  ids->remove(second);
  // Index 0 is free again, but the cycle goes on from index 2, up to 63
  // (with few in use, indices cycle below 64).
  for (int i = 2; i < kIpcMinCycle; i++) {
    IpcObject* o = make();
    ASSERT_EQ(ids->add(heap, o, 100), i);
    ids->remove(o);
  }
  // The cycle wraps to index 0, with the next sequence number.
  IpcObject* wrapped = make();
  EXPECT_EQ(ids->add(heap, wrapped, 100), (1 << kIpcSeqShift) | 0);
  EXPECT_EQ(ids->find_id(0), nullptr) << "the old id names nothing now";
  EXPECT_EQ(ids->find_id(1 << kIpcSeqShift), wrapped);
  EXPECT_EQ(ids->at(0), wrapped);
}

TEST_F(IpcIdsTest, LimitsAndLookups) {
  IpcObject* a = make();
  a->key = 1234;
  EXPECT_EQ(ids->add(heap, a, 1), 0);
  EXPECT_EQ(ids->add(heap, make(), 1), -ENOSPC) << "past the namespace's limit";
  EXPECT_EQ(ids->find_key(1234), a);
  EXPECT_EQ(ids->find_key(99), nullptr);
  EXPECT_EQ(ids->find_id(-1), nullptr);
  EXPECT_EQ(ids->find_id(5), nullptr);
  EXPECT_EQ(ids->in_use(), 1);
  EXPECT_EQ(ids->max_index(), 0);
  ids->remove(a);
  EXPECT_TRUE(a->removed);
  EXPECT_EQ(ids->in_use(), 0);
  EXPECT_EQ(ids->max_index(), -1);
  ids->remove(a);  // twice is harmless
  EXPECT_EQ(ids->in_use(), 0);
}

// A split region keeps its file (one more reference) and its offset.
TEST(RegionAttrsTest, SplitsShareTheNameAndShiftTheOffset) {
  Heap* heap = Heap::create();
  ASSERT_NE(heap, nullptr);
  auto* list = heap->make<RegionList>(heap);
  RegionAttrs attrs;
  attrs.offset = 0x1000;
  attrs.name = region_name_make(heap, "/some/file", 0x801, 42);
  ASSERT_TRUE(list->add(0x10000, 0x14000, 3, kRegionFile, kRegionShared, attrs));
  region_name_put(heap, attrs.name);  // the list holds its own
  ASSERT_TRUE(list->set_prot(0x11000, 0x12000, 1));
  EXPECT_EQ(list->count(), 3);
  const Region* mid = list->find(0x11000);
  ASSERT_NE(mid, nullptr);
  EXPECT_EQ(mid->attrs.offset, 0x2000u);
  EXPECT_TRUE(mid->flags & kRegionShared);
  EXPECT_EQ(mid->attrs.name, list->first()->attrs.name);
  EXPECT_EQ(mid->attrs.name->refs.load(), 3);
  EXPECT_TRUE(list->splits(0x12800, 0x13000));   // a hole in [0x12000, 0x14000)
  EXPECT_FALSE(list->splits(0x12000, 0x13000));  // its head: no region more
  ASSERT_TRUE(list->set_locked(0x10000, 0x12000, true));
  EXPECT_EQ(list->locked_bytes(), 0x2000u);
  list->clear();
  EXPECT_EQ(list->count(), 0);
  heap->destroy();
}
