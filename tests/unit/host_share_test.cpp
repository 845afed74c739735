#include "kernel/sys/host_share.h"

#include <gtest/gtest.h>

#include <linux/errno.h>

#include "kernel/heap.h"
#include "kernel/vfs/file.h"

using namespace flatux;

namespace {

constexpr long kLimit = 1000, kSmall = 10;

// Takes one at a time for a holder until refused; returns how many.
long take_all(long& used, long& held) {
  long n = 0;
  while (share_verdict(kLimit, kSmall, used, held, 1) == ShareVerdict::kOk) {
    used++;
    held++;
    n++;
  }
  return n;
}

}  // namespace

TEST(HostShare, ALoneHolderGetsHalf) {
  long used = 0, held = 0;
  EXPECT_EQ(take_all(used, held), kLimit / 2);
}

TEST(HostShare, EmptyingThePoolTakesAQuarterOfItInSmallHoldings) {
  long used = 0;
  int full_holders = 0;
  for (;;) {
    long held = 0;
    take_all(used, held);
    if (held < kSmall) break;
    full_holders++;
  }
  // Big holders stop at three quarters; from there on each takes its small
  // allowance only.
  EXPECT_GE(full_holders, (kLimit / 4) / kSmall);
  EXPECT_EQ(share_verdict(kLimit, kSmall, used, 0, kSmall), ShareVerdict::kPoolFull);
}

TEST(HostShare, ManyHogsLeaveRoomForAnother) {
  long used = 0;
  for (int i = 0; i < 20; i++) {
    long held = 0;
    take_all(used, held);
  }
  // 20 hogs took three quarters and 10 each of the last quarter: a newcomer
  // still gets its small allowance.
  EXPECT_LE(used, kLimit - kSmall);
  long held = 0;
  EXPECT_EQ(take_all(used, held), kSmall);
}

TEST(HostShare, FdChargesAreGivenBackExactly) {
  Heap* heap = Heap::create();
  ASSERT_NE(heap, nullptr);
  HostPool pool;
  pool.limit = 100;
  pool.small = 4;
  FdShare* a = fd_share_make(heap, &pool);
  FdShare* b = fd_share_make(heap, &pool);
  ASSERT_TRUE(a && b);
  long got = 0;
  while (fd_share_charge(*a) == 0) got++;
  EXPECT_EQ(got, 50);
  EXPECT_EQ(fd_share_charge(*a), -EMFILE);
  EXPECT_EQ(fd_share_charge(*b), 0);  // another table still gets some
  fd_share_put(heap, a);              // the table goes; its files live on
  for (long i = 0; i < got; i++) fd_share_uncharge(heap, a);
  fd_share_uncharge(heap, b);
  EXPECT_EQ(pool.used.load(), 0);
  EXPECT_EQ(b->held.load(), 0);
  fd_share_put(heap, b);
  heap->destroy();
}
