#include "kernel/mm/regions.h"

#include <gtest/gtest.h>

#include "kernel/heap.h"

using namespace flatux;

namespace {

class RegionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
    list = heap->make<RegionList>(heap);
  }
  void TearDown() override { heap->destroy(); }
  int count() const {
    int n = 0;
    for (const Region* r = list->first(); r; r = r->next) n++;
    return n;
  }
  Heap* heap = nullptr;
  RegionList* list = nullptr;
};

constexpr uintptr_t P = 4096;

}  // namespace

TEST_F(RegionsTest, AddKeepsSortedAndCovers) {
  ASSERT_TRUE(list->add(10 * P, 20 * P, 3, kRegionAnon));
  ASSERT_TRUE(list->add(2 * P, 5 * P, 1, kRegionAnon));
  EXPECT_EQ(list->first()->start, 2 * P);
  EXPECT_TRUE(list->covers(10 * P, 20 * P));
  EXPECT_FALSE(list->covers(4 * P, 11 * P));  // gap between them
  EXPECT_TRUE(list->overlaps(4 * P, 11 * P));
  EXPECT_FALSE(list->overlaps(5 * P, 10 * P));
  EXPECT_EQ(list->total_bytes(), 13 * P);
}

TEST_F(RegionsTest, AdjacentRegionsCoverTogether) {
  list->add(0x100 * P, 0x110 * P, 3, kRegionAnon);
  list->add(0x110 * P, 0x120 * P, 1, kRegionFile);
  EXPECT_TRUE(list->covers(0x108 * P, 0x118 * P));
}

TEST_F(RegionsTest, RemoveSplitsInTheMiddle) {
  list->add(10 * P, 20 * P, 3, kRegionAnon);
  ASSERT_TRUE(list->remove(12 * P, 14 * P));
  EXPECT_EQ(count(), 2);
  EXPECT_TRUE(list->covers(10 * P, 12 * P));
  EXPECT_TRUE(list->covers(14 * P, 20 * P));
  EXPECT_FALSE(list->overlaps(12 * P, 14 * P));
}

TEST_F(RegionsTest, SetProtSplitsAndFinds) {
  list->add(10 * P, 20 * P, 3, kRegionAnon);
  ASSERT_TRUE(list->set_prot(15 * P, 16 * P, 1));
  EXPECT_EQ(count(), 3);
  EXPECT_EQ(list->find(15 * P)->prot, 1);
  EXPECT_EQ(list->find(16 * P)->prot, 3);
  EXPECT_EQ(list->find(21 * P), nullptr);
}

TEST_F(RegionsTest, AddReplacesOverlap) {
  list->add(10 * P, 20 * P, 3, kRegionAnon);
  list->add(12 * P, 25 * P, 1, kRegionFile);
  EXPECT_EQ(list->find(11 * P)->kind, kRegionAnon);
  EXPECT_EQ(list->find(12 * P)->kind, kRegionFile);
  EXPECT_EQ(list->total_bytes(), 15 * P);
  list->clear();
  EXPECT_EQ(list->first(), nullptr);
}

TEST_F(RegionsTest, ExtentFromAnswersRightAcrossChangesToRegionsItAskedBefore) {
  // extent_from remembers the regions it last started in; every change
  // must make it look again.
  ASSERT_TRUE(list->add(1 * P, 2 * P, 3, kRegionAnon));
  ASSERT_TRUE(list->add(4 * P, 6 * P, 3, kRegionAnon));
  ASSERT_TRUE(list->add(8 * P, 9 * P, 3, kRegionAnon));
  for (int round = 0; round < 3; round++) {  // again and again: answered from what it remembers
    EXPECT_EQ(list->extent_from(1 * P + 10, 100), 100u);
    EXPECT_EQ(list->extent_from(5 * P, 3 * P), P);
    EXPECT_EQ(list->extent_from(8 * P + 1, 2 * P), P - 1);
    EXPECT_EQ(list->extent_from(3 * P, 10), 0u);
  }
  ASSERT_TRUE(list->set_prot(5 * P, 6 * P, 1));  // 4-6 becomes 4-5 and 5-6
  EXPECT_EQ(list->extent_from(5 * P + 1, 10), 10u);  // remembers 5-6
  ASSERT_TRUE(list->remove(5 * P, 6 * P));           // frees it
  EXPECT_EQ(list->extent_from(5 * P + 1, 10), 0u);
  EXPECT_EQ(list->extent_from(5 * P, 3 * P), 0u);
  EXPECT_EQ(list->extent_from(4 * P, 3 * P), P);
  ASSERT_TRUE(list->add(6 * P, 8 * P, 3, kRegionAnon));
  EXPECT_EQ(list->extent_from(6 * P, 8 * P), 3 * P);  // 6-8 and 8-9 together
  list->clear();
  EXPECT_EQ(list->extent_from(1 * P + 10, 100), 0u);
}

TEST_F(RegionsTest, AForkCopyLeavesOutWhatIsMarkedDontFork) {
  list->add(10 * P, 20 * P, 3, kRegionAnon);
  list->add(30 * P, 32 * P, 3, kRegionAnon, kRegionShared);
  ASSERT_TRUE(list->set_flag(12 * P, 14 * P, kRegionDontFork, true));
  EXPECT_EQ(count(), 4);  // 10-12, 12-14 (marked), 14-20, 30-32
  ASSERT_TRUE(list->set_flag(13 * P, 14 * P, kRegionDontFork, false));
  RegionList* copy = heap->make<RegionList>(heap);
  ASSERT_TRUE(copy->copy_from(*list));
  EXPECT_TRUE(copy->covers(10 * P, 12 * P));
  EXPECT_FALSE(copy->overlaps(12 * P, 13 * P));
  EXPECT_TRUE(copy->covers(13 * P, 20 * P));
  EXPECT_EQ(copy->find(30 * P)->flags, kRegionShared | kRegionUncharged);
  EXPECT_TRUE(list->covers(10 * P, 20 * P));  // the parent keeps all of it
  copy->clear();
  heap->destroy_obj(copy);
}
