// hostfs in the dentry cache: per-folder descriptors, lookup, revalidation,
// and operations that take (folder descriptor, name) from the walk.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "host/open_how_table.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/hostfs/internal.h"
#include "kernel/kernel.h"
#include "kernel/task/task.h"
#include "kernel/vfs/dcache.h"

using namespace flatux;

namespace {

void release_plain(Inode* n) { reinterpret_cast<Heap*>(kHeapBase)->destroy_obj(n); }

class HostfsDentryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(open_how_table_make(), OpenHowState::kAbsent);  // as Kernel::create does
    heap = Heap::create();
    ASSERT_NE(heap, nullptr);
    char tmpl[] = "/tmp/flatux-hostfsd.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    top = tmpl;
    root = top + "/root";
    ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
    k = heap->make<Kernel>();
    k->heap = heap;
    k->dcache = heap->make<Dcache>(heap, 1024);
    proc.creds = Creds{};
    task.proc = &proc;
    task.kernel = k;
    ASSERT_EQ(hostfs_create(*k, root.c_str(), &fs), 0);
    mnt.fs = fs;
    Inode* ri = heap->make<Inode>();
    ri->fs = fs;
    ri->release = release_plain;
    ri->mode = S_IFDIR | 0755;
    rootd = k->dcache->make_root(fs, ri);
    ASSERT_NE(rootd, nullptr);
  }
  void TearDown() override {
    k->dcache->shrink_fs(fs);
    dput(rootd);
    EXPECT_EQ(h().dir_fds.load(), 0) << "a folder descriptor outlived its inode";
    kHostFsType.unmount(*fs);
    heap->destroy_obj(k->dcache);
    heap->destroy_obj(k);
    heap->destroy();
    std::string cmd = "rm -rf '" + top + "'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  HostFs& h() { return hostfs_of(*fs); }
  std::string host(const std::string& rel) { return root + "/" + rel; }

  // The cached child `name` of dir, looked up by hostfs (nullptr: error).
  Dentry* child(Dentry* dir, const char* name, long* err = nullptr) {
    Inode* n = nullptr;
    long r = fs->ops->lookup(task, *fs, mnt, *dir, name, &n);
    if (err) *err = r;
    if (r < 0) return nullptr;
    return k->dcache->add(k->dcache->alloc(*dir, name), n);
  }
  // A Lookup as the walk fills it: the whole path, and the parent's
  // dentry with the last name.
  struct L {
    std::string path, name;
    Lookup lk;
    L(Mount* m, const std::string& p, Dentry* dir, const std::string& n, bool follow = false)
        : path(p), name(n), lk(path.c_str(), follow, m) {
      lk.dir = dir;
      lk.name = name;
    }
  };

  Heap* heap = nullptr;
  Kernel* k = nullptr;
  Process proc{};
  Task task{};
  Filesystem* fs = nullptr;
  Mount mnt;
  Dentry* rootd = nullptr;
  std::string top, root;
};

TEST_F(HostfsDentryTest, FolderGetsDescriptorFileDoesNot) {
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  ASSERT_EQ(close(creat(host("a/f").c_str(), 0644)), 0);
  Dentry* a = child(rootd, "a");
  ASSERT_NE(a, nullptr);
  HostInode* an = hostfs_inode(a->inode);
  ASSERT_NE(an, nullptr);
  EXPECT_GE(an->fd, 0);
  EXPECT_TRUE(S_ISDIR(an->mode));
  struct stat st;
  ASSERT_EQ(stat(host("a").c_str(), &st), 0);
  EXPECT_EQ(an->ino, st.st_ino);
  Dentry* f = child(a, "f");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(hostfs_inode(f->inode)->fd, -1);
  EXPECT_EQ(h().dir_fds.load(), 1);
  long err = 0;
  EXPECT_EQ(child(a, "missing", &err), nullptr);
  EXPECT_EQ(err, -ENOENT);
  dput(f);
  dput(a);
}

TEST_F(HostfsDentryTest, RefusesNamesThatAreNotOneComponent) {
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  for (const char* bad : {"..", ".", "", "a/..", "../root", "a/"}) {
    long err = 0;
    EXPECT_EQ(child(rootd, bad, &err), nullptr) << bad;
    EXPECT_EQ(err, -ENOENT) << bad;
  }
  // An operation given such a name from the walk takes the path instead.
  L up(&mnt, "/a", rootd, "..");
  struct stat st;
  EXPECT_EQ(fs->ops->stat(task, *fs, up.lk, &st), 0);  // "/a" by its path
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST_F(HostfsDentryTest, CapOnDescriptors) {
  h().dir_fds_max = 1;
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(host("b").c_str(), 0755), 0);
  ASSERT_EQ(close(creat(host("b/f").c_str(), 0644)), 0);
  Dentry* a = child(rootd, "a");
  Dentry* b = child(rootd, "b");
  ASSERT_TRUE(a && b);
  EXPECT_GE(hostfs_inode(a->inode)->fd, 0);
  EXPECT_EQ(hostfs_inode(b->inode)->fd, -1);
  EXPECT_EQ(h().dir_fds.load(), 1);
  // Below a folder without one, lookups take the path from the root.
  Dentry* f = child(b, "f");
  ASSERT_NE(f, nullptr);
  dput(f);
  dput(a);
  k->dcache->shrink_fs(fs);
  EXPECT_EQ(h().dir_fds.load(), 0);
  dput(b);
}

TEST_F(HostfsDentryTest, OperationsUseTheFolderDescriptor) {
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  ASSERT_EQ(close(creat(host("a/f").c_str(), 0644)), 0);
  Dentry* a = child(rootd, "a");
  ASSERT_NE(a, nullptr);
  // The host renames a/ within the root: the descriptor follows it, the
  // stale path "/a/f" would not.
  ASSERT_EQ(rename(host("a").c_str(), host("b").c_str()), 0);
  L f(&mnt, "/a/f", a, "f");
  struct stat st, want;
  ASSERT_EQ(stat(host("b/f").c_str(), &want), 0);
  ASSERT_EQ(fs->ops->stat(task, *fs, f.lk, &st), 0);
  EXPECT_EQ(st.st_ino, want.st_ino);
  L g(&mnt, "/a/g", a, "g");
  ASSERT_EQ(fs->ops->mkdir(task, *fs, g.lk, 0755), 0);
  EXPECT_EQ(access(host("b/g").c_str(), F_OK), 0);
  L g2(&mnt, "/a/g2", a, "g2");
  ASSERT_EQ(fs->ops->rename(task, *fs, g.lk, g2.lk, 0), 0);
  EXPECT_EQ(access(host("b/g2").c_str(), F_OK), 0);
  ASSERT_EQ(fs->ops->rmdir(task, *fs, g2.lk), 0);
  EXPECT_NE(access(host("b/g2").c_str(), F_OK), 0);
  File* file = nullptr;
  ASSERT_EQ(fs->ops->open(task, *fs, f.lk, O_RDONLY, 0, &file), 0);
  struct stat fst;
  ASSERT_EQ(fstat(file->host_fd, &fst), 0);
  EXPECT_EQ(fst.st_ino, want.st_ino);
  file->put();
  L s(&mnt, "/a/s", a, "s");
  ASSERT_EQ(fs->ops->symlink(task, *fs, s.lk, "f"), 0);
  char buf[16];
  EXPECT_EQ(fs->ops->readlink(task, *fs, s.lk, buf, sizeof buf), 1);
  ASSERT_EQ(fs->ops->unlink(task, *fs, s.lk), 0);
  // Without the walk's folder, the path from the root: /a is gone.
  L nodir(&mnt, "/a/f", nullptr, "f");
  EXPECT_EQ(fs->ops->stat(task, *fs, nodir.lk, &st), -ENOENT);
  dput(a);
}

TEST_F(HostfsDentryTest, SymlinkLastIsRedirected) {
  ASSERT_EQ(symlink("/", host("l").c_str()), 0);
  ASSERT_EQ(symlink("../../..", host("up").c_str()), 0);
  struct stat st;
  L l(&mnt, "/l", rootd, "l", true);
  EXPECT_EQ(fs->ops->stat(task, *fs, l.lk, &st), kRedirect);
  EXPECT_STREQ(l.lk.redirect, "/");
  L lnof(&mnt, "/l", rootd, "l", false);
  ASSERT_EQ(fs->ops->stat(task, *fs, lnof.lk, &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  L up(&mnt, "/up", rootd, "up", true);
  File* file = nullptr;
  EXPECT_EQ(fs->ops->open(task, *fs, up.lk, O_RDONLY, 0, &file), kRedirect);
  // As the path from the root says it (the VFS resolves and clamps it).
  L slow(&mnt, "/up", nullptr, "up", true);
  EXPECT_EQ(fs->ops->open(task, *fs, slow.lk, O_RDONLY, 0, &file), kRedirect);
  EXPECT_STREQ(up.lk.redirect, slow.lk.redirect);
  EXPECT_EQ(up.lk.redirect_absolute, slow.lk.redirect_absolute);
  L upn(&mnt, "/up", rootd, "up", false);
  EXPECT_EQ(fs->ops->open(task, *fs, upn.lk, O_RDONLY | O_NOFOLLOW, 0, &file), -ELOOP);
}

TEST_F(HostfsDentryTest, RevalidateSeesHostChanges) {
  h().trust_ns = 0;  // every check asks the host
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  Dentry* a = child(rootd, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(fs->ops->revalidate(task, *fs, mnt, *a));
  ASSERT_EQ(chmod(host("a").c_str(), 0700), 0);
  EXPECT_TRUE(fs->ops->revalidate(task, *fs, mnt, *a));
  EXPECT_EQ(a->inode->mode & 07777, 0700u) << "the inode's mode is kept current";
  // Removed and made again (maybe with the same inode number): another folder.
  for (int i = 0; i < 5; i++) {
    ASSERT_EQ(rmdir(host("a").c_str()), 0);
    ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
    EXPECT_FALSE(fs->ops->revalidate(task, *fs, mnt, *a)) << "round " << i;
  }
  // Replaced by a link to "/".
  Dentry* b = nullptr;
  ASSERT_EQ(::mkdir(host("b").c_str(), 0755), 0);
  b = child(rootd, "b");
  ASSERT_EQ(rmdir(host("b").c_str()), 0);
  ASSERT_EQ(symlink("/", host("b").c_str()), 0);
  EXPECT_FALSE(fs->ops->revalidate(task, *fs, mnt, *b));
  dput(b);
  dput(a);
}

TEST_F(HostfsDentryTest, TrustWindow) {
  h().trust_ns = 60ull * 1000000000;  // a minute: nothing is asked again here
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  Dentry* a = child(rootd, "a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(rmdir(host("a").c_str()), 0);
  EXPECT_TRUE(fs->ops->revalidate(task, *fs, mnt, *a)) << "a folder checked just now is trusted";
  h().trust_ns = 0;
  EXPECT_FALSE(fs->ops->revalidate(task, *fs, mnt, *a));
  dput(a);
}

TEST_F(HostfsDentryTest, FolderMovedOutOfTheRootServesNoMore) {
  h().trust_ns = 0;
  h().inside_ns = 0;
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  Dentry* a = child(rootd, "a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(rename(host("a").c_str(), (top + "/outside").c_str()), 0);
  ASSERT_EQ(close(creat((top + "/outside/secret").c_str(), 0644)), 0);
  struct stat st;
  L s(&mnt, "/a/secret", a, "secret");
  EXPECT_EQ(fs->ops->stat(task, *fs, s.lk, &st), -ENOENT);
  File* file = nullptr;
  EXPECT_EQ(fs->ops->open(task, *fs, s.lk, O_RDONLY, 0, &file), -ENOENT);
  L m(&mnt, "/a/made", a, "made");
  EXPECT_EQ(fs->ops->mkdir(task, *fs, m.lk, 0755), -ENOENT);
  EXPECT_NE(access((top + "/outside/made").c_str(), F_OK), 0);
  long err = 0;
  EXPECT_EQ(child(a, "secret", &err), nullptr);
  EXPECT_EQ(err, -ENOENT);
  EXPECT_FALSE(fs->ops->revalidate(task, *fs, mnt, *a));
  dput(a);
}

TEST_F(HostfsDentryTest, GuestChmodIsSeenAtTheNextWalk) {
  h().trust_ns = 60ull * 1000000000;
  ASSERT_EQ(::mkdir(host("a").c_str(), 0755), 0);
  Dentry* a = child(rootd, "a");
  ASSERT_NE(a, nullptr);
  L l(&mnt, "/a", rootd, "a");
  Attr at;
  at.mask = kAttrMode;
  at.mode = 0700;
  ASSERT_EQ(fs->ops->setattr(task, *fs, l.lk, at), 0);
  EXPECT_TRUE(fs->ops->revalidate(task, *fs, mnt, *a));
  EXPECT_EQ(a->inode->mode & 07777, 0700u);
  dput(a);
}

}  // namespace
