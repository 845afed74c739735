// The cgroup v2 hierarchy's rules, on a tree of its own: names, limits on
// the tree, memberships and what they keep alive, subtree_control's rules,
// and the pids controller's charge.
#include <gtest/gtest.h>

#include <linux/errno.h>

#include "kernel/cgroup/cgroup.h"
#include "kernel/cgroup/memcg.h"
#include "kernel/heap.h"
#include "kernel/kernel.h"
#include "kernel/task/task.h"
#include "kernel/vfs/synth.h"

using namespace flatux;

namespace {

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
    k = heap->make<Kernel>();
    k->heap = heap;
    k->cgroups = cgroup_tree_create(heap);
    ASSERT_NE(k->cgroups, nullptr);
  }
  void TearDown() override { heap->destroy(); }

  Process* process(Process* parent) {
    Process* p = heap->make<Process>();
    p->kernel = k;
    p->pid = next_pid++;
    cgroup_process_created_locked(*k, *p, parent);
    add_task(*p);
    return p;
  }
  void add_task(Process& p) {
    p.nthreads++;
    cgroup_task_added_locked(p);
  }
  Cgroup* child(const char* path) { return cgroup_find_locked(*k, path); }
  std::string path_of(const Cgroup& cg) {
    SynthText t(heap);
    cgroup_path(cg, t);
    return std::string(t.view());
  }

  Heap* heap = nullptr;
  Kernel* k = nullptr;
  int next_pid = 1;
};

}  // namespace

TEST_F(CgroupTest, NamesAndTreeLimits) {
  Cgroup& root = k->cgroups->root;
  EXPECT_EQ(cgroup_mkdir_locked(*k, root, "a"), 0);
  EXPECT_EQ(cgroup_mkdir_locked(*k, root, "a"), -EEXIST);
  EXPECT_EQ(cgroup_mkdir_locked(*k, root, "cgroup.procs"), -EEXIST);
  EXPECT_EQ(cgroup_mkdir_locked(*k, root, "pids.new"), -EEXIST);
  EXPECT_EQ(cgroup_mkdir_locked(*k, root, "bad\nname"), -EINVAL);
  Cgroup* a = child("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(path_of(*a), "/a");
  a->max_depth = 1;
  EXPECT_EQ(cgroup_mkdir_locked(*k, *a, "b"), 0);
  EXPECT_EQ(cgroup_mkdir_locked(*k, *child("a/b"), "c"), -EAGAIN);  // a's depth limit holds below it
  root.max_descendants = 2;
  EXPECT_EQ(cgroup_mkdir_locked(*k, root, "d"), -EAGAIN);
  EXPECT_EQ(root.ndescendants, 2);
  EXPECT_EQ(cgroup_rmdir_locked(*k, *a), -EBUSY);  // a child
  EXPECT_EQ(cgroup_rmdir_locked(*k, *child("a/b")), 0);
  EXPECT_EQ(cgroup_rmdir_locked(*k, *a), 0);
  EXPECT_EQ(cgroup_rmdir_locked(*k, root), -EBUSY);
  EXPECT_EQ(k->cgroups->count, 1);
}

TEST_F(CgroupTest, MembershipKeepsWhatItNeeds) {
  Process* init = process(nullptr);
  ASSERT_EQ(cgroup_mkdir_locked(*k, k->cgroups->root, "a"), 0);
  Cgroup* a = child("a");
  ASSERT_EQ(cgroup_move_locked(*k, *init, *a, 0), 0);
  EXPECT_EQ(init->cgroup, a);
  EXPECT_EQ(a->nprocs, 1);
  EXPECT_EQ(k->cgroups->root.populated_below, 1);
  EXPECT_EQ(a->pids_current, 1);
  EXPECT_EQ(k->cgroups->root.pids_current, 1);
  EXPECT_EQ(cgroup_rmdir_locked(*k, *a), -EBUSY);
  // It exits: a zombie populates nothing, and the folder can go; the zombie
  // keeps the cgroup's memory until it is reaped.
  init->nthreads--;
  cgroup_task_removed_locked(*init);
  cgroup_process_exited_locked(*k, *init);
  EXPECT_EQ(a->populated_below, 0);
  EXPECT_EQ(cgroup_rmdir_locked(*k, *a), 0);
  EXPECT_EQ(k->cgroups->count, 2);  // still the zombie's
  SynthText t(heap);
  cgroup_proc_pid(*k, *init, t);
  EXPECT_EQ(std::string(t.view()), "0::/\n");
  cgroup_process_released_locked(*k, *init);
  EXPECT_EQ(k->cgroups->count, 1);
  EXPECT_EQ(k->cgroups->root.pids_current, 0);
}

TEST_F(CgroupTest, SubtreeControlRules) {
  Cgroup& root = k->cgroups->root;
  Process* p = process(nullptr);
  p->state = ProcState::kRunning;
  ASSERT_EQ(cgroup_mkdir_locked(*k, root, "a"), 0);
  Cgroup* a = child("a");
  EXPECT_EQ(cgroup_controllers(*a), 0u);
  EXPECT_EQ(cgroup_set_subtree_control_locked(*a, "+pids"), -EINVAL);  // a does not have it
  EXPECT_EQ(cgroup_set_subtree_control_locked(root, "+cpu"), -EINVAL);  // not served
  EXPECT_EQ(cgroup_set_subtree_control_locked(root, "pids"), -EINVAL);
  EXPECT_EQ(cgroup_set_subtree_control_locked(root, "+pids\n"), 0);  // the root may have processes
  EXPECT_EQ(cgroup_controllers(*a), kCgroupPids);
  ASSERT_EQ(cgroup_move_locked(*k, *p, *a, 0), 0);
  EXPECT_EQ(cgroup_set_subtree_control_locked(*a, "+pids"), -EBUSY);  // no internal processes
  ASSERT_EQ(cgroup_move_locked(*k, *p, root, 0), 0);
  EXPECT_EQ(cgroup_set_subtree_control_locked(*a, "+pids"), 0);
  EXPECT_EQ(cgroup_move_locked(*k, *p, *a, 0), -EBUSY);
  EXPECT_EQ(cgroup_set_subtree_control_locked(root, "-pids"), -EBUSY);  // a hands it on
  EXPECT_EQ(cgroup_set_subtree_control_locked(*a, "-pids"), 0);
  EXPECT_EQ(cgroup_set_subtree_control_locked(root, "-pids"), 0);
}

TEST_F(CgroupTest, PidsMaxRefusesTheTaskPastIt) {
  Cgroup& root = k->cgroups->root;
  Process* p = process(nullptr);
  p->state = ProcState::kRunning;
  ASSERT_EQ(cgroup_mkdir_locked(*k, root, "a"), 0);
  ASSERT_EQ(cgroup_mkdir_locked(*k, *child("a"), "b"), 0);
  Cgroup* a = child("a");
  Cgroup* b = child("a/b");
  ASSERT_EQ(cgroup_move_locked(*k, *p, *b, 0), 0);
  a->pids_max = 2;  // the limit above holds for everything below
  EXPECT_EQ(cgroup_can_add_task_locked(*p), 0);
  add_task(*p);
  EXPECT_EQ(cgroup_can_add_task_locked(*p), -EAGAIN);
  EXPECT_EQ(a->pids_events_max, 1);
  EXPECT_EQ(b->pids_events_max, 0);
  EXPECT_EQ(a->pids_current, 2);
  // A move is never refused by pids.max, and takes every thread along.
  ASSERT_EQ(cgroup_move_locked(*k, *p, root, 0), 0);
  EXPECT_EQ(a->pids_current, 0);
  EXPECT_EQ(root.pids_current, 2);
  Process* c = process(p);  // a fork's child starts in its parent's cgroup
  EXPECT_EQ(c->cgroup, &root);
  EXPECT_EQ(root.pids_current, 3);
}

TEST_F(CgroupTest, ADeepTreeIsWalkedWithoutRecursion) {
  // Deeper than any fixed chain: paths and lookups by id stay whole.
  Cgroup* c = &k->cgroups->root;
  for (int i = 0; i < 300; i++) {
    ASSERT_EQ(cgroup_mkdir_locked(*k, *c, "d"), 0);
    c = c->children;
  }
  std::string want;
  for (int i = 0; i < 300; i++) want += "/d";
  EXPECT_EQ(path_of(*c), want);
  EXPECT_EQ(cgroup_by_id_locked(*k, c->id), c);
  ASSERT_EQ(cgroup_mkdir_locked(*k, k->cgroups->root, "e"), 0);
  EXPECT_EQ(cgroup_by_id_locked(*k, child("e")->id), child("e"));
  EXPECT_EQ(cgroup_by_id_locked(*k, 999999), nullptr);
}

// The memory counters: a charge goes up the chain, a max anywhere above
// refuses (counted where it is), peak and the high crossings are kept, and
// a counter outlives the cgroup that made it while an Mm holds it.
TEST_F(CgroupTest, MemoryLooksCountEventsUpTheChain) {
  Cgroup& root = k->cgroups->root;
  ASSERT_EQ(cgroup_mkdir_locked(*k, root, "a"), 0);
  ASSERT_EQ(cgroup_mkdir_locked(*k, *child("a"), "b"), 0);
  MemCounter& a = child("a")->mem;
  MemCounter& b = child("a/b")->mem;
  a.max = 1 << 20;
  b.high = 256 << 10;
  EXPECT_FALSE(memcg_account_locked(*child("a/b"), 512 << 10));  // past b's high only
  EXPECT_EQ(b.events_high, 1u);
  EXPECT_EQ(a.events_high, 1u);  // memory.events counts what happened below too
  EXPECT_EQ(b.peak, 512 << 10);
  EXPECT_FALSE(memcg_account_locked(*child("a"), 1 << 20));  // at max is not past it
  EXPECT_TRUE(memcg_account_locked(*child("a"), (1 << 20) + 4096));
  EXPECT_EQ(a.events_max, 1u);
  EXPECT_EQ(a.events_oom, 1u);
  EXPECT_EQ(b.events_max, 0u);
  EXPECT_EQ(root.mem.events_max, 1u);
  EXPECT_EQ(a.peak, (1 << 20) + 4096);
  EXPECT_FALSE(memcg_account_locked(*child("a"), 4096));
  EXPECT_EQ(a.peak, (1 << 20) + 4096);  // the most, not the last
}

TEST_F(CgroupTest, OomBadnessWeighsMemoryAndAdjustment) {
  const int64_t limit = 100 << 20;
  EXPECT_GT(memcg_badness(50 << 20, 0, limit), memcg_badness(10 << 20, 0, limit));
  // oom_score_adj moves a process by thousandths of the limit.
  EXPECT_GT(memcg_badness(10 << 20, 500, limit), memcg_badness(50 << 20, 0, limit));
  EXPECT_EQ(memcg_badness(50 << 20, -1000, limit), -1);  // never
  EXPECT_EQ(memcg_badness(0, -999, limit), 1);           // killable, at least
}

TEST_F(CgroupTest, TreeWalkVisitsEveryCgroupOnce) {
  Cgroup& root = k->cgroups->root;
  ASSERT_EQ(cgroup_mkdir_locked(*k, root, "a"), 0);
  ASSERT_EQ(cgroup_mkdir_locked(*k, *child("a"), "b"), 0);
  ASSERT_EQ(cgroup_mkdir_locked(*k, *child("a"), "c"), 0);
  ASSERT_EQ(cgroup_mkdir_locked(*k, root, "d"), 0);
  int n = 0;
  for (Cgroup* c = &root; c; c = cgroup_next_locked(c, nullptr)) n++;
  EXPECT_EQ(n, 5);
  n = 0;
  for (Cgroup* c = child("a"); c; c = cgroup_next_locked(c, child("a"))) n++;
  EXPECT_EQ(n, 3);  // a, b, c: not d
  EXPECT_TRUE(cgroup_contains(*child("a"), child("a/b")));
  EXPECT_FALSE(cgroup_contains(*child("a"), child("d")));
}
