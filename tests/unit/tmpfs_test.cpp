// tmpfs internals: page trees, limits, names, rename rules, redirects.
#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "kernel/fs/tmpfs/tmpfs.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/task/task.h"

using namespace flatux;

namespace {

class TmpfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
    proc.creds = Creds{};
    task.proc = &proc;
    ASSERT_EQ(tmpfs_new(heap, "size=64k,nr_inodes=32", 7, nullptr, &fs), 0);
  }
  void TearDown() override {
    tmpfs_unmount(*fs);
    heap->destroy();
  }

  // A path operation with its own Lookup (and redirect buffer).
  struct P {
    std::string path;
    Lookup lk;
    P(const std::string& s, bool follow = true) : path(s) {
      lk.path = path.c_str();
      lk.follow = follow;
      lk.mount = nullptr;
    }
  };

  long mkdir(const std::string& p, uint32_t mode = 0755) {
    P x(p);
    return tmp_mknod(task, *fs, x.lk, S_IFDIR | mode, 0);
  }
  long create(const std::string& p, uint32_t mode = 0644) {
    P x(p);
    TmpInode* n = nullptr;
    long r = tmp_open_inode(task, *fs, x.lk, O_CREAT | O_RDWR, mode, &n);
    if (r == 0) tmpfs_release_inode(*n);
    return r;
  }
  TmpInode* open(const std::string& p, int flags = O_RDWR) {
    P x(p);
    TmpInode* n = nullptr;
    return tmp_open_inode(task, *fs, x.lk, flags, 0, &n) == 0 ? n : nullptr;
  }
  long stat(const std::string& p, struct stat* st, bool follow = true) {
    P x(p, follow);
    return tmp_stat_path(task, *fs, x.lk, st);
  }
  long rename(const std::string& a, const std::string& b, unsigned flags = 0) {
    P x(a, false), y(b, false);
    return tmp_rename(task, *fs, x.lk, y.lk, flags);
  }
  long unlink(const std::string& p, bool dir = false) {
    P x(p, false);
    return tmp_unlink(task, *fs, x.lk, dir);
  }

  Heap* heap = nullptr;
  Process proc{};
  Task task{};
  Tmpfs* fs = nullptr;
};

}  // namespace

TEST_F(TmpfsTest, SparseWritesReadBackWithZeroHoles) {
  ASSERT_EQ(create("/f"), 0);
  TmpInode* n = open("/f");
  ASSERT_NE(n, nullptr);
  {
    Guard g(fs->lock);
    ASSERT_EQ(tmp_write_kernel(*fs, *n, "hello", 5, 3 * kTmpPage + 10), 5);
    EXPECT_EQ(n->size, (int64_t)(3 * kTmpPage + 15));
    EXPECT_EQ(n->blocks, 1u);  // only the written page exists
    char buf[16];
    ASSERT_EQ(tmp_read_kernel(*n, buf, sizeof buf, 3 * kTmpPage + 5), 10);
    EXPECT_EQ(std::string(buf, 10), std::string("\0\0\0\0\0hello", 10));
    EXPECT_EQ(tmp_seek_data(*n, 0, true), (long)(3 * kTmpPage));
    EXPECT_EQ(tmp_seek_data(*n, 0, false), 0);
    EXPECT_EQ(tmp_seek_data(*n, 3 * kTmpPage + 1, false), (long)n->size);
    EXPECT_EQ(tmp_seek_data(*n, n->size, true), -ENXIO);
  }
  tmpfs_release_inode(*n);
}

TEST_F(TmpfsTest, FarOffsetsGrowTheTreeAndTruncateFreesPages) {
  ASSERT_EQ(create("/big"), 0);
  TmpInode* n = open("/big");
  {
  Guard g(fs->lock);
  int64_t far = (int64_t)1 << 40;
  ASSERT_EQ(tmp_write_kernel(*fs, *n, "x", 1, far), 1);
  ASSERT_EQ(tmp_write_kernel(*fs, *n, "y", 1, 0), 1);
  EXPECT_EQ(fs->used_pages, 2u);
  char c = 0;
  EXPECT_EQ(tmp_read_kernel(*n, &c, 1, far), 1);
  EXPECT_EQ(c, 'x');
  EXPECT_EQ(tmp_seek_data(*n, 1, true), 1);  // inside the first page
  EXPECT_EQ(tmp_seek_data(*n, kTmpPage, true), far);
  ASSERT_EQ(tmp_truncate(*fs, *n, 1), 0);
  EXPECT_EQ(fs->used_pages, 1u);
  ASSERT_EQ(tmp_truncate(*fs, *n, 0), 0);
  EXPECT_EQ(fs->used_pages, 0u);
  EXPECT_EQ(n->pages.height, 0);
  }
  tmpfs_release_inode(*n);
}

TEST_F(TmpfsTest, TruncateZeroesTheTailOfThePartialPage) {
  ASSERT_EQ(create("/t"), 0);
  TmpInode* n = open("/t");
  {
    Guard g(fs->lock);
    ASSERT_EQ(tmp_write_kernel(*fs, *n, "abcdef", 6, 0), 6);
    ASSERT_EQ(tmp_truncate(*fs, *n, 2), 0);
    ASSERT_EQ(tmp_truncate(*fs, *n, 6), 0);
    char buf[6];
    ASSERT_EQ(tmp_read_kernel(*n, buf, 6, 0), 6);
    EXPECT_EQ(std::string(buf, 6), std::string("ab\0\0\0\0", 6));
  }
  tmpfs_release_inode(*n);
}

TEST_F(TmpfsTest, SizeLimitGivesEnospcAndPunchHoleGivesPagesBack) {
  ASSERT_EQ(create("/full"), 0);
  TmpInode* n = open("/full");
  {
    Guard g(fs->lock);
    std::vector<char> data(80 * 1024, 'z');
    // 64k = 16 pages: a short write, then ENOSPC.
    EXPECT_EQ(tmp_write_kernel(*fs, *n, data.data(), data.size(), 0), 64 * 1024);
    EXPECT_EQ(tmp_write_kernel(*fs, *n, data.data(), 1, 64 * 1024), -ENOSPC);
    EXPECT_EQ(tmp_fallocate(*fs, *n, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 3 * kTmpPage), 0);
    EXPECT_EQ(fs->used_pages, 14u);  // pages 1 and 2 went; 0 and 3 were partly zeroed
    char c;
    ASSERT_EQ(tmp_read_kernel(*n, &c, 1, 99), 1);
    EXPECT_EQ(c, 'z');
    ASSERT_EQ(tmp_read_kernel(*n, &c, 1, 100), 1);
    EXPECT_EQ(c, 0);
    EXPECT_EQ(tmp_fallocate(*fs, *n, 0, 64 * 1024, 3 * kTmpPage), -ENOSPC);  // all or nothing
    EXPECT_EQ(fs->used_pages, 14u);
  }
  tmpfs_release_inode(*n);
}

TEST_F(TmpfsTest, InodeLimit) {
  int made = 0;
  long r = 0;
  while ((r = create("/n" + std::to_string(made))) == 0) made++;
  EXPECT_EQ(r, -ENOSPC);
  EXPECT_EQ(made, 31);  // the root is one of the 32
  ASSERT_EQ(unlink("/n0"), 0);
  EXPECT_EQ(create("/again"), 0);
}

TEST_F(TmpfsTest, NamespaceErrors) {
  ASSERT_EQ(mkdir("/d"), 0);
  EXPECT_EQ(mkdir("/d"), -EEXIST);
  ASSERT_EQ(create("/d/f"), 0);
  EXPECT_EQ(mkdir("/d/f/x"), -ENOTDIR);
  EXPECT_EQ(mkdir("/nope/x"), -ENOENT);
  EXPECT_EQ(unlink("/d"), -EISDIR);
  EXPECT_EQ(unlink("/d/f", true), -ENOTDIR);
  EXPECT_EQ(unlink("/d", true), -ENOTEMPTY);
  EXPECT_EQ(unlink("/", true), -EBUSY);
  EXPECT_EQ(create("/" + std::string(256, 'a')), -ENAMETOOLONG);
  EXPECT_EQ(create("/" + std::string(255, 'a')), 0);
  struct stat st;
  ASSERT_EQ(stat("/d", &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  ASSERT_EQ(mkdir("/d/sub"), 0);
  ASSERT_EQ(stat("/d", &st), 0);
  EXPECT_EQ(st.st_nlink, 3u);
  EXPECT_EQ(st.st_dev, 7u);
}

TEST_F(TmpfsTest, SymlinksBecomeRedirects) {
  ASSERT_EQ(mkdir("/a"), 0);
  ASSERT_EQ(mkdir("/a/b"), 0);
  P rel("/a/l");
  ASSERT_EQ(tmp_symlink(task, *fs, rel.lk, "b/../c"), 0);
  P abs("/a/m");
  ASSERT_EQ(tmp_symlink(task, *fs, abs.lk, "/etc"), 0);

  P mid("/a/l/x/y");
  struct stat st;
  ASSERT_EQ(tmp_stat_path(task, *fs, mid.lk, &st), kRedirect);
  EXPECT_STREQ(mid.lk.redirect, "/a/b/../c/x/y");
  EXPECT_FALSE(mid.lk.redirect_absolute);

  P last("/a/m");
  ASSERT_EQ(tmp_stat_path(task, *fs, last.lk, &st), kRedirect);
  EXPECT_STREQ(last.lk.redirect, "/etc");
  EXPECT_TRUE(last.lk.redirect_absolute);

  P nofollow("/a/m", false);
  ASSERT_EQ(tmp_stat_path(task, *fs, nofollow.lk, &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(st.st_size, 4);
  char buf[16];
  EXPECT_EQ(tmp_readlink(task, *fs, nofollow.lk, buf, sizeof buf), 4);
}

TEST_F(TmpfsTest, RenameRules) {
  ASSERT_EQ(mkdir("/a"), 0);
  ASSERT_EQ(mkdir("/a/b"), 0);
  ASSERT_EQ(mkdir("/c"), 0);
  ASSERT_EQ(create("/f"), 0);
  ASSERT_EQ(create("/g"), 0);
  EXPECT_EQ(rename("/a", "/a/b/x"), -EINVAL);
  EXPECT_EQ(rename("/a/b", "/a"), -ENOTEMPTY);
  EXPECT_EQ(rename("/a", "/f"), -ENOTDIR);
  EXPECT_EQ(rename("/f", "/c"), -EISDIR);
  EXPECT_EQ(rename("/f", "/g", RENAME_NOREPLACE), -EEXIST);
  EXPECT_EQ(rename("/f", "/none", RENAME_EXCHANGE), -ENOENT);
  EXPECT_EQ(rename("/x", "/y"), -ENOENT);

  struct stat st;
  ASSERT_EQ(rename("/a/b", "/c/b"), 0);
  ASSERT_EQ(stat("/a", &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  ASSERT_EQ(stat("/c", &st), 0);
  EXPECT_EQ(st.st_nlink, 3u);
  ASSERT_EQ(stat("/c/b", &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);

  // Exchange a file and a directory across parents.
  ASSERT_EQ(rename("/f", "/c/b", RENAME_EXCHANGE), 0);
  ASSERT_EQ(stat("/f", &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(stat("/c/b", &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  ASSERT_EQ(stat("/c", &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  ASSERT_EQ(stat("/", &st), 0);
  EXPECT_EQ(st.st_nlink, 5u);  // 2 + the subdirectories a, c and f (a directory now)

  // Replacing a file drops the old one.
  uint64_t before = fs->used_inodes;
  ASSERT_EQ(rename("/g", "/c/b"), 0);
  EXPECT_EQ(fs->used_inodes, before - 1);
  EXPECT_EQ(stat("/g", &st), -ENOENT);
}

TEST_F(TmpfsTest, UnlinkedOpenFilesLiveUntilReleased) {
  ASSERT_EQ(create("/f"), 0);
  TmpInode* n = open("/f");
  uint64_t before = fs->used_inodes;
  ASSERT_EQ(unlink("/f"), 0);
  EXPECT_EQ(fs->used_inodes, before);
  {
    Guard g(fs->lock);
    EXPECT_EQ(tmp_write_kernel(*fs, *n, "data", 4, 0), 4);
    EXPECT_EQ(n->nlink, 0u);
  }
  tmpfs_release_inode(*n);
  EXPECT_EQ(fs->used_inodes, before - 1);
  EXPECT_EQ(fs->used_pages, 0u);
}

TEST_F(TmpfsTest, TmpfileLinksOnlyWhenLinkable) {
  P dir("/");
  TmpInode* n = nullptr;
  ASSERT_EQ(tmp_open_inode(task, *fs, dir.lk, O_TMPFILE | O_RDWR, 0600, &n), 0);
  EXPECT_EQ(n->nlink, 0u);
  P name("/named");
  {
    Guard g(fs->lock);
    ASSERT_EQ(tmp_link_inode(task, *fs, n, name.lk), 0);
  }
  EXPECT_EQ(n->nlink, 1u);
  tmpfs_release_inode(*n);

  P dir2("/");
  ASSERT_EQ(tmp_open_inode(task, *fs, dir2.lk, O_TMPFILE | O_RDWR | O_EXCL, 0600, &n), 0);
  P name2("/never");
  {
    Guard g(fs->lock);
    EXPECT_EQ(tmp_link_inode(task, *fs, n, name2.lk), -ENOENT);
  }
  tmpfs_release_inode(*n);
}

TEST_F(TmpfsTest, PermissionsAndStickyDirectories) {
  ASSERT_EQ(mkdir("/sticky", 01777), 0);
  ASSERT_EQ(create("/sticky/roots"), 0);
  ASSERT_EQ(mkdir("/private", 0700), 0);
  proc.creds.fsuid = proc.creds.uid = 1000;
  proc.creds.cap_permitted = proc.creds.cap_effective = 0;  // no longer root: no capabilities
  proc.creds.fsgid = proc.creds.gid = 1000;
  EXPECT_EQ(create("/private/x"), -EACCES);
  EXPECT_EQ(unlink("/sticky/roots"), -EPERM);
  ASSERT_EQ(create("/sticky/mine"), 0);
  struct stat st;
  ASSERT_EQ(stat("/sticky/mine", &st), 0);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(open("/sticky/roots", O_WRONLY), nullptr);
  EXPECT_EQ(unlink("/sticky/mine"), 0);
}

TEST_F(TmpfsTest, GetdentsCursorSurvivesRemoval) {
  // The cursor is a cookie: removing entries before or at it never makes
  // later entries vanish from a listing in progress.
  for (int i = 0; i < 5; i++) ASSERT_EQ(create("/e" + std::to_string(i)), 0);
  TmpInode* root = fs->root;
  uint64_t cookie2 = root->first->next->next->cookie;  // "e2"
  ASSERT_EQ(unlink("/e1"), 0);
  ASSERT_EQ(unlink("/e2"), 0);
  TmpDirent* d = root->first;
  while (d && d->cookie < cookie2) d = d->next;
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->name, "e3");
}

TEST_F(TmpfsTest, OptionsParseAndShow) {
  Tmpfs* other = nullptr;
  EXPECT_EQ(tmpfs_new(heap, "size=1m,mode=755,uid=5,gid=6,nr_inodes=1k", 9, nullptr, &other), 0);
  char buf[128];
  KFmt out(buf, sizeof buf);
  tmpfs_show_options(*other, out);
  EXPECT_STREQ(out.c_str(), ",size=1024k,nr_inodes=1024,mode=755,uid=5,gid=6");
  EXPECT_EQ(tmpfs_reconfigure(*other, "size=2m"), 0);
  EXPECT_EQ(other->limits.max_pages, 512u);
  tmpfs_unmount(*other);
  EXPECT_EQ(tmpfs_new(heap, "size=lots", 9, nullptr, &other), -EINVAL);
  EXPECT_EQ(tmpfs_new(heap, "bogus=1", 9, nullptr, &other), -EINVAL);
  EXPECT_EQ(tmpfs_new(heap, "mode=9", 9, nullptr, &other), -EINVAL);
}

TEST_F(TmpfsTest, SharedMappingMovesDataIntoAMemfd) {
  ASSERT_EQ(create("/shm"), 0);
  TmpInode* n = open("/shm");
  {
    Guard g(fs->lock);
    ASSERT_EQ(tmp_write_kernel(*fs, *n, "front", 5, 0), 5);
    ASSERT_EQ(tmp_write_kernel(*fs, *n, "back", 4, 5 * kTmpPage), 4);
    ASSERT_GE(shm_promote(task, *fs, *n), 0);
    EXPECT_EQ(n->pages.root, nullptr);
    EXPECT_EQ(fs->used_pages, 2u);  // the memfd holds the same two pages
    char buf[8] = {0};
    ASSERT_EQ(tmp_read_kernel(*n, buf, 5, 0), 5);
    EXPECT_EQ(std::string(buf, 5), "front");
    ASSERT_EQ(tmp_read_kernel(*n, buf, 4, 5 * kTmpPage), 4);
    EXPECT_EQ(std::string(buf, 4), "back");
    EXPECT_EQ(tmp_seek_data(*n, kTmpPage, true), (long)(5 * kTmpPage));
    EXPECT_EQ(tmp_seek_data(*n, 0, false), (long)kTmpPage);
    // The limit holds: 16 pages in all, 2 used.
    std::vector<char> data(20 * kTmpPage, 'q');
    EXPECT_EQ(tmp_write_kernel(*fs, *n, data.data(), data.size(), 6 * kTmpPage), (long)(14 * kTmpPage));
    EXPECT_EQ(fs->used_pages, 16u);
    ASSERT_EQ(tmp_truncate(*fs, *n, 3), 0);
    EXPECT_EQ(fs->used_pages, 1u);
  }
  tmpfs_release_inode(*n);
  EXPECT_EQ(fs->used_pages, 1u);
  ASSERT_EQ(unlink("/shm"), 0);
  EXPECT_EQ(fs->used_pages, 0u);
}

TEST_F(TmpfsTest, DataPagesAreChargedToMemAndStopAtItsLimit) {
  MemAccount mem;
  mem.limit = 8 * kTmpPage;
  mem.used = 5 * kTmpPage;  // the guest's own memory
  Tmpfs* small = nullptr;
  ASSERT_EQ(tmpfs_new(heap, nullptr, 9, &mem, &small), 0);
  EXPECT_EQ(small->limits.max_pages, 4u);  // half of mem= by default
  Lookup lk;
  lk.path = "/f";
  lk.follow = true;
  lk.mount = nullptr;
  TmpInode* n = nullptr;
  ASSERT_EQ(tmp_open_inode(task, *small, lk, O_CREAT | O_RDWR, 0644, &n), 0);
  {
    Guard g(small->lock);
    std::vector<char> data(4 * kTmpPage, 'm');
    // 3 pages fit under mem= (5 + 3 = 8), the fourth is ENOMEM.
    EXPECT_EQ(tmp_write_kernel(*small, *n, data.data(), data.size(), 0), (long)(3 * kTmpPage));
    EXPECT_EQ(mem.used.load(), 8 * kTmpPage);
    EXPECT_EQ(tmp_write_kernel(*small, *n, data.data(), 1, 3 * kTmpPage), -ENOMEM);
    ASSERT_EQ(tmp_truncate(*small, *n, 0), 0);
    EXPECT_EQ(mem.used.load(), 5 * kTmpPage);
  }
  tmpfs_release_inode(*n);
  tmpfs_unmount(*small);
}
