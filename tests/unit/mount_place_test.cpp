// A mount's place (mount point and root) as follow_rename moves it: read
// through Mount::with_place (inner_to_guest, is_root), never torn.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "kernel/vfs/namei.h"
#include "kernel/vfs/vfs.h"

using namespace flatux;

namespace {

// Long names of one length: a reader copying while follow_rename writes
// would see a mix of both.
const std::string kLong = "/" + std::string(1500, 'l');
const std::string kOther = "/" + std::string(1500, 'm');

class MountPlaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
    vfs = heap->make<Vfs>(heap);
    outer = heap->make<Filesystem>();
    inner = heap->make<Filesystem>();
    ASSERT_EQ(vfs->mount("/", outer), 0);
    ASSERT_EQ(vfs->mount((kLong + "/mnt").c_str(), inner), 0);
    char point[] = "/";
    Mount* root = vfs->find_exact(vfs->init_ns(), point);
    ASSERT_NE(root, nullptr);
    // A bind mount of a folder below the long one.
    ASSERT_EQ(vfs->bind(vfs->init_ns(), "/bind", *root, (kLong + "/b").c_str(), (kLong + "/b").c_str(), false), 0);
    root->put();
    mnt = vfs->find_exact(vfs->init_ns(), (kLong + "/mnt").c_str());
    bind = vfs->find_exact(vfs->init_ns(), "/bind");
    ASSERT_NE(mnt, nullptr);
    ASSERT_NE(bind, nullptr);
  }
  void TearDown() override {
    if (mnt) mnt->put();
    if (bind) bind->put();
    heap->destroy();  // the table and its mounts live in it
  }
  std::string guest(const Mount& m, const std::string& inner_path) {
    char out[kPathMax];
    long r = inner_to_guest(m, inner_path, out, sizeof out);
    return r < 0 ? "error " + std::to_string(r) : std::string(out);
  }

  Heap* heap = nullptr;
  Vfs* vfs = nullptr;
  Filesystem* outer = nullptr;
  Filesystem* inner = nullptr;
  Mount* mnt = nullptr;
  Mount* bind = nullptr;
};

}  // namespace

TEST_F(MountPlaceTest, InnerToGuestFollowsRenames) {
  EXPECT_EQ(guest(*mnt, "/x"), kLong + "/mnt/x");
  EXPECT_EQ(guest(*mnt, "/"), kLong + "/mnt");
  EXPECT_EQ(guest(*bind, kLong + "/b/y"), "/bind/y");
  EXPECT_TRUE(bind->is_root(kLong + "/b"));
  vfs->follow_rename(outer, kLong, "/s", false);
  EXPECT_EQ(guest(*mnt, "/x"), "/s/mnt/x");
  EXPECT_EQ(guest(*bind, "/s/b/y"), "/bind/y");
  EXPECT_EQ(guest(*bind, kLong + "/b/y"), "error -2");  // no longer what it shows
  EXPECT_TRUE(bind->is_root("/s/b"));
  EXPECT_FALSE(bind->is_root(kLong + "/b"));
  EXPECT_TRUE(mnt->is_root("/"));
  mnt->with_place([](std::string_view point, std::string_view root) {
    EXPECT_EQ(point, "/s/mnt");
    EXPECT_EQ(root, "/");
  });
}

TEST_F(MountPlaceTest, ReadersNeverSeeAHalfRenamedPlace) {
  std::atomic<bool> stop{false};
  std::thread renamer([&] {
    for (int i = 0; i < 4000; i++) {
      vfs->follow_rename(outer, kLong, kOther, false);
      vfs->follow_rename(outer, kOther, kLong, false);
    }
    stop = true;
  });
  const std::string long_x = kLong + "/mnt/x", other_x = kOther + "/mnt/x";
  int reads = 0, torn = 0;
  while (!stop.load()) {
    std::string g = guest(*mnt, "/x");
    if (g != long_x && g != other_x) torn++;
    mnt->with_place([&](std::string_view point, std::string_view) {
      if (point != kLong + "/mnt" && point != kOther + "/mnt") torn++;
    });
    bind->with_place([&](std::string_view, std::string_view root) {
      if (root != kLong + "/b" && root != kOther + "/b") torn++;
    });
    std::string under_bind = guest(*bind, kLong + "/b/y");  // ENOENT while renamed
    if (under_bind != "/bind/y" && under_bind != "error -2") torn++;
    reads++;
  }
  renamer.join();
  EXPECT_EQ(torn, 0) << "of " << reads << " reads";
}
