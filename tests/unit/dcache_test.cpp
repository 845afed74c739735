#include "kernel/vfs/dcache.h"
#include "kernel/vfs/vfs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace flatux;

namespace {

struct TestInode : Inode {
  std::atomic<int>* released = nullptr;  // inodes go on whichever thread drops the last reference
};

void release_test_inode(Inode* n) {
  auto* t = static_cast<TestInode*>(n);
  (*t->released)++;
  reinterpret_cast<Heap*>(kHeapBase)->destroy_obj(t);
}

class DcacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
    cache = heap->make<Dcache>(heap, 64);
    root = cache->make_root(fs, inode(1));
  }
  void TearDown() override {
    cache->shrink_fs(fs);
    dput(root);
    EXPECT_EQ(cache->count(), 0u);
    EXPECT_EQ(released, made);
    heap->destroy_obj(cache);
    heap->destroy();
  }
  Inode* inode(uint64_t ino) {
    TestInode* n = heap->make<TestInode>();
    n->ino = ino;
    n->released = &released;
    n->release = release_test_inode;
    made++;
    return n;
  }
  // A positive child, findable, with the caller's reference.
  Dentry* child(Dentry* dir, const char* name, uint64_t ino) {
    Dentry* d = cache->alloc(*dir, name);
    return cache->add(d, ino ? inode(ino) : nullptr);
  }
  std::string path(Dentry* d, bool* deleted = nullptr) {
    char buf[256];
    long r = cache->path_in_fs(d, buf, sizeof buf, deleted);
    return r < 0 ? "error" : std::string(buf, (size_t)r);
  }

  Heap* heap = nullptr;
  Dcache* cache = nullptr;
  // The cache reads the filesystem's ops (dcache_drop_unused): a real one.
  FsOps ops{.name = "test", .open = nullptr, .stat = nullptr, .readlink = nullptr, .access = nullptr,
            .statfs = nullptr};
  Filesystem fs_obj{&ops};
  Filesystem* fs = &fs_obj;
  Dentry* root = nullptr;
  int made = 0;
  std::atomic<int> released{0};
};

}  // namespace

TEST_F(DcacheTest, FindsWhatWasAddedByParentAndName) {
  Dentry* a = child(root, "a", 2);
  Dentry* b = child(a, "b", 3);
  Dentry* found = cache->lookup(*a, "b");
  EXPECT_EQ(found, b);
  EXPECT_EQ(cache->lookup(*root, "b"), nullptr);  // same name, other parent
  EXPECT_EQ(cache->lookup(*a, "bb"), nullptr);
  EXPECT_EQ(path(b), "/a/b");
  EXPECT_EQ(path(root), "/");
  dput(found);
  dput(b);
  dput(a);
}

TEST_F(DcacheTest, NegativeEntriesAreFoundAndCanBeInstantiated) {
  Dentry* n = child(root, "missing", 0);
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(n->negative());
  dput(n);
  Dentry* again = cache->lookup(*root, "missing");
  ASSERT_EQ(again, n);
  EXPECT_TRUE(again->negative());
  cache->instantiate(*again, inode(7));
  dput(again);
  Dentry* now = cache->lookup(*root, "missing");
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->inode->ino, 7u);
  dput(now);
}

TEST_F(DcacheTest, ConcurrentAddOfOneNameKeepsTheFirst) {
  Dentry* first = cache->alloc(*root, "x");
  Dentry* second = cache->alloc(*root, "x");
  Dentry* a = cache->add(first, inode(2));
  Dentry* b = cache->add(second, inode(3));  // loses: its inode goes
  EXPECT_EQ(a, b);
  EXPECT_EQ(b->inode->ino, 2u);
  EXPECT_EQ(released, 1);
  dput(a);
  dput(b);
}

TEST_F(DcacheTest, RenameMovesAHeldDentryAndItsChildren) {
  Dentry* a = child(root, "a", 2);
  Dentry* b = child(a, "b", 3);
  Dentry* c = child(b, "c", 4);  // held, as a cwd would be
  Dentry* other = child(root, "other", 5);
  Dentry* target = child(other, "moved", 0);
  uint32_t seq = cache->rename_seq();
  ASSERT_EQ(cache->move(*b, *target, false), 0);
  EXPECT_EQ(cache->rename_seq(), seq + 2);
  EXPECT_EQ(path(c), "/other/moved/c");
  EXPECT_EQ(cache->lookup(*a, "b"), nullptr);
  Dentry* m = cache->lookup(*other, "moved");
  EXPECT_EQ(m, b);
  EXPECT_TRUE(cache->is_subdir(c, other));
  EXPECT_FALSE(cache->is_subdir(c, a));
  dput(m);
  dput(target);
  dput(c);
  dput(b);
  dput(a);
  dput(other);
}

TEST_F(DcacheTest, RenameOverAnExistingNameMarksItDeleted) {
  Dentry* a = child(root, "a", 2);
  Dentry* victim = child(root, "v", 3);
  ASSERT_EQ(cache->move(*a, *victim, false), 0);
  bool deleted = false;
  EXPECT_EQ(path(victim, &deleted), "/v");
  EXPECT_TRUE(deleted);
  EXPECT_EQ(path(a, &deleted), "/v");
  EXPECT_FALSE(deleted);
  dput(victim);  // unhashed and unused: freed with its inode
  EXPECT_EQ(released, 1);
  dput(a);
}

TEST_F(DcacheTest, ExchangeSwapsBothNames) {
  Dentry* d1 = child(root, "one", 2);
  Dentry* sub = child(root, "sub", 3);
  Dentry* d2 = child(sub, "two", 4);
  ASSERT_EQ(cache->move(*d1, *d2, true), 0);
  EXPECT_EQ(path(d1), "/sub/two");
  EXPECT_EQ(path(d2), "/one");
  Dentry* f = cache->lookup(*root, "one");
  EXPECT_EQ(f, d2);
  dput(f);
  dput(d1);
  dput(d2);
  dput(sub);
}

TEST_F(DcacheTest, LongNamesLiveOnTheHeapAndFollowRenames) {
  std::string longname(200, 'L');
  Dentry* a = child(root, longname.c_str(), 2);
  EXPECT_EQ(path(a), "/" + longname);
  Dentry* t = child(root, "short", 0);
  size_t before = cache->bytes();
  ASSERT_EQ(cache->move(*a, *t, false), 0);
  EXPECT_EQ(path(a), "/short");
  EXPECT_LT(cache->bytes(), before);  // the long name's buffer was given back
  dput(t);
  dput(a);
  EXPECT_EQ(cache->alloc(*root, std::string(256, 'x')), nullptr);  // over NAME_MAX
}

TEST_F(DcacheTest, UnlinkOfAHeldDentryMarksItDeletedElseLeavesANegativeName) {
  Dentry* cwd = child(root, "cwd", 2);
  Dentry* mine = cache->lookup(*root, "cwd");  // the unlinker's reference
  cache->remove(*mine);
  bool deleted = false;
  EXPECT_EQ(path(cwd, &deleted), "/cwd");
  EXPECT_TRUE(deleted);
  EXPECT_EQ(cache->lookup(*root, "cwd"), nullptr);
  dput(mine);
  dput(cwd);
  EXPECT_EQ(released, 1);

  Dentry* f = child(root, "file", 3);
  cache->remove(*f);  // only the caller holds it: a negative name stays
  EXPECT_TRUE(f->negative());
  dput(f);
  Dentry* n = cache->lookup(*root, "file");
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(n->negative());
  dput(n);
}

TEST_F(DcacheTest, UnusedDentriesAreEvictedOldestFirstAtTheBound) {
  for (int i = 0; i < 200; i++) dput(child(root, ("f" + std::to_string(i)).c_str(), 100 + i));
  EXPECT_LE(cache->count(), 64u + 1);
  Dentry* newest = cache->lookup(*root, "f199");
  EXPECT_NE(newest, nullptr);
  dput(newest);
  EXPECT_EQ(cache->lookup(*root, "f0"), nullptr);
}

TEST_F(DcacheTest, HeldDentriesAndTheirAncestorsAreNeverEvicted) {
  Dentry* a = child(root, "a", 2);
  Dentry* b = child(a, "b", 3);
  dput(a);  // b holds a
  for (int i = 0; i < 300; i++) dput(child(root, ("g" + std::to_string(i)).c_str(), 0));
  EXPECT_EQ(path(b), "/a/b");
  Dentry* again = cache->lookup(*root, "a");
  EXPECT_EQ(again, a);
  dput(again);
  dput(b);
  cache->set_max(0);
  EXPECT_EQ(cache->count(), 1u);  // the root alone
}

TEST_F(DcacheTest, MemoryIsChargedAndGivenBack) {
  size_t base = cache->bytes();
  size_t heap_base = heap->bytes_in_use();
  std::vector<Dentry*> held;
  for (int i = 0; i < 32; i++) held.push_back(child(root, ("h" + std::to_string(i)).c_str(), 10 + i));
  EXPECT_GE(cache->bytes(), base + 32 * sizeof(Dentry));
  EXPECT_GT(heap->bytes_in_use(), heap_base);
  for (Dentry* d : held) dput(d);
  cache->shrink_fs(fs);
  EXPECT_EQ(cache->bytes(), base);
}

TEST_F(DcacheTest, LookupsRacingRenamesSeeTheOldOrTheNewName) {
  Dentry* dir = child(root, "d", 2);
  Dentry* x = child(dir, "x", 3);
  Dentry* y = child(dir, "y", 0);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> walkers;
  for (int w = 0; w < 4; w++)
    walkers.emplace_back([&] {
      while (!stop.load()) {
        Dentry* a = cache->lookup(*dir, "x");
        Dentry* b = cache->lookup(*dir, "y");
        for (Dentry* d : {a, b})
          if (d && d->inode && d->inode->ino != 3) bad++;
        dput(a);
        dput(b);
      }
    });
  for (int i = 0; i < 2000; i++) {
    Dentry* from = (i & 1) ? y : x;
    Dentry* to = (i & 1) ? x : y;
    ASSERT_EQ(cache->move(*from, *to, true), 0);
  }
  stop = true;
  for (auto& t : walkers) t.join();
  EXPECT_EQ(bad.load(), 0);
  dput(x);
  dput(y);
  dput(dir);
}

// A cached dentry's last reference goes without the lock while it is
// hashed and listed; lookups, releases, removals and evictions racing over
// a few names must leave every count right: at the end each inode is
// released exactly once (TearDown) and nothing stays cached.
TEST_F(DcacheTest, LastReleasesWithoutTheLockRaceEvictionAndRemoval) {
  constexpr int kNames = 8;
  const char* names[kNames] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (int i = 0; i < kNames; i++) dput(child(root, names[i], 10 + i));
  std::atomic<bool> stop{false};
  std::vector<std::thread> users;
  for (int u = 0; u < 4; u++) {
    users.emplace_back([&, u] {
      for (int n = 0; !stop.load(); n++) {
        Dentry* d = cache->lookup(*root, names[(n + u) % kNames]);
        if (!d) continue;
        Dentry* again = dget(d);  // a second holder: its release is never the last
        dput(again);
        dput(d);
      }
    });
  }
  // Names removed (unhashed while held) and made again, and the bound
  // squeezed so eviction runs under the users' feet.
  for (int round = 0; round < 20000; round++) {
    const char* name = names[round % kNames];
    if (Dentry* d = cache->lookup(*root, name)) {
      Dentry* other = dget(d);
      cache->remove(*d);  // held twice: unhashed, marked deleted
      dput(other);
      dput(d);
    }
    if (Dentry* fresh = cache->alloc(*root, name)) dput(cache->add(fresh, inode(100 + round)));
    if (round % 16 == 0) {
      cache->set_max(2);
      cache->set_max(64);
    }
  }
  stop = true;
  for (auto& t : users) t.join();
  EXPECT_LE(cache->count(), 1u + kNames);
}

TEST(NameSeqsTest, AnAddedNameChangesItsDirectorysCountAndFewOthers) {
  NameSeqs seqs;
  uint64_t before[1000];
  for (uint64_t ino = 0; ino < 1000; ino++) before[ino] = seqs.now(ino);
  seqs.added(42);
  EXPECT_NE(seqs.now(42), before[42]);
  // Per directory up to a hash: most other directories keep their count.
  int changed = 0;
  for (uint64_t ino = 0; ino < 1000; ino++)
    if (ino != 42 && seqs.now(ino) != before[ino]) changed++;
  EXPECT_LT(changed, 1000 / 16);
  // Never the count a dentry that must be asked again carries.
  for (uint64_t ino = 0; ino < 1000; ino++) EXPECT_NE(seqs.now(ino), NameSeqs::kNone);
}

TEST(NameSeqsTest, CountsOnlyGrowUnderConcurrentAdds) {
  NameSeqs seqs;
  uint64_t start = seqs.now(7);
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; i++)
    ts.emplace_back([&] {
      for (int k = 0; k < 10000; k++) seqs.added(7);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(seqs.now(7), start + 40000);
}

TEST_F(DcacheTest, ANegativeMadeByUnlinkIsNotToBeBelieved) {
  Dentry* f = child(root, "file", 3);
  f->seq.store(5);
  cache->remove(*f);  // a negative the cache made: the name may be back already
  EXPECT_TRUE(f->negative());
  EXPECT_EQ(f->seq.load(), NameSeqs::kNone);
  dput(f);
  Dentry* fresh = cache->alloc(*root, "other");
  EXPECT_EQ(fresh->seq.load(), NameSeqs::kNone);  // nor one not yet told what its directory counted
  dput(fresh);
}

TEST_F(DcacheTest, NegativesCountAgainstTheBoundAndAreEvictedFirstWhenOldest) {
  for (int i = 0; i < 200; i++) dput(child(root, ("n" + std::to_string(i)).c_str(), 0));
  EXPECT_LE(cache->count(), 64u + 1);
  Dentry* newest = cache->lookup(*root, "n199");
  ASSERT_NE(newest, nullptr);
  EXPECT_TRUE(newest->negative());
  dput(newest);
  EXPECT_EQ(cache->lookup(*root, "n0"), nullptr);
}

TEST_F(DcacheTest, NegativesUnderARemovedFolderAreNotFoundUnderItsSuccessor) {
  Dentry* dir = child(root, "dir", 2);
  dput(child(dir, "missing", 0));  // held by its negative child: dir stays
  Dentry* mine = cache->lookup(*root, "dir");
  cache->remove(*mine);  // rmdir: out of the hash, not made negative in place
  dput(mine);
  EXPECT_EQ(cache->lookup(*root, "dir"), nullptr);
  Dentry* again = child(root, "dir", 9);  // mkdir of the same name
  EXPECT_NE(again, dir);
  EXPECT_EQ(cache->lookup(*again, "missing"), nullptr);
  dput(again);
  dput(dir);
}

TEST_F(DcacheTest, NegativesUnderAFolderRenamedOverFollowTheOldFolder) {
  Dentry* target = child(root, "dir", 2);
  dput(child(target, "missing", 0));
  Dentry* other = child(root, "other", 3);
  Dentry* hit = child(other, "missing", 4);
  EXPECT_EQ(cache->move(*other, *target, false), 0);  // rename("other", "dir")
  Dentry* now = cache->lookup(*root, "dir");
  ASSERT_EQ(now, other);
  Dentry* m = cache->lookup(*now, "missing");
  ASSERT_EQ(m, hit);
  EXPECT_FALSE(m->negative());
  dput(m);
  dput(now);
  dput(hit);
  dput(other);
  dput(target);
}

TEST_F(DcacheTest, AMountPointIsCountedInItsFolderFollowsRenamesAndSurvivesDrop) {
  Dentry* a = child(root, "a", 2);
  Dentry* m = child(a, "m", 3);
  Dentry* other = child(root, "other", 4);
  Dentry* none = child(a, "none", 0);  // a name the folder lacks, mounted on too
  EXPECT_FALSE(cache->mounted(*a, "m"));
  cache->mount_on(*m);
  cache->mount_on(*m);  // a second mount (a peer's copy) on the same dentry
  cache->mount_on(*none);
  EXPECT_EQ(a->mounted_children.load(), 2);
  EXPECT_TRUE(cache->mounted(*a, "m"));
  EXPECT_TRUE(cache->mounted(*a, "none"));
  EXPECT_FALSE(cache->mounted(*root, "a"));
  // What the filesystem says meanwhile does not unhash a mount point,
  // nor the folder holding one.
  cache->drop(*m);
  cache->drop(*none);
  cache->drop(*a);
  Dentry* found = cache->lookup(*a, "m");
  EXPECT_EQ(found, m);
  dput(found);
  found = cache->lookup(*root, "a");
  EXPECT_EQ(found, a);
  dput(found);
  // A rename takes the count to the new folder.
  Dentry* target = child(other, "moved", 0);
  ASSERT_EQ(cache->move(*m, *target, false), 0);
  EXPECT_EQ(a->mounted_children.load(), 1);
  EXPECT_EQ(other->mounted_children.load(), 1);
  EXPECT_TRUE(cache->mounted(*other, "moved"));
  cache->unmount_from(*m);
  EXPECT_EQ(other->mounted_children.load(), 1);
  cache->unmount_from(*m);
  EXPECT_EQ(other->mounted_children.load(), 0);
  cache->unmount_from(*none);
  EXPECT_EQ(a->mounted_children.load(), 0);
  dput(target);
  dput(none);
  dput(m);
  dput(other);
  dput(a);
}
