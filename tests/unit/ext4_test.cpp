// The ext4 volume layer on real images (mke2fs -d), through the ubd device
// and the foreign-code gate, checked afterwards with e2fsck and debugfs.
#include "kernel/fs/ext4/ext4.h"

#include <gtest/gtest.h>

#include <asm/prctl.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

#include "kernel/block/ubd.h"
#include "../fuzz/ext4_walk.h"
#include "kernel/fs/ext4/ext4_vfs.h"
#include "kernel/kernel.h"
#include "kernel/task/task.h"
#include "kernel/vfs/namei.h"

using namespace flatux;
using ext4::Cred;
using ext4::Volume;

namespace {

// The volume's walk (flatux::Walk is the VFS's).
using Walk = ext4::Walk;

std::string run(const std::string& cmd, bool with_stderr = true) {
  std::string out;
  FILE* p = popen((cmd + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (!p) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  if (st != 0) out += "\n[exit " + std::to_string(WEXITSTATUS(st)) + "]";
  return out;
}

void write_file(const std::string& path, const std::string& data) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  fwrite(data.data(), 1, data.size(), f);
  fclose(f);
}

class Ext4Test : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/flatux-ext4-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    image = dir + "/fs.img";
    tree = dir + "/tree";
    mkdir(tree.c_str(), 0755);
    mkdir((tree + "/etc").c_str(), 0755);
    write_file(tree + "/etc/hostname", "flatux\n");
    write_file(tree + "/hello.txt", "hello, ext4\n");
    symlink("etc/hostname", (tree + "/link").c_str());
    symlink(std::string(100, 'x').c_str(), (tree + "/slowlink").c_str());
    KernelConfig cfg;
    uint64_t fs = 0;
    syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
    cfg.host_fs = fs;  // the gate switches to the TLS we already run on
    k = Kernel::create(cfg);
    ASSERT_NE(k, nullptr);
  }
  void TearDown() override {
    if (vol) vol->unmount();
    ubd_detach_all(*k);
    k->destroy();
    run("rm -rf " + dir);
  }

  void make_image(const std::string& extra = "", const char* size = "64M") {
    std::string out = run("mke2fs -q -F -t ext4 " + extra + " -d " + tree + " " + image + " " + size);
    ASSERT_EQ(out.find("[exit"), std::string::npos) << out;
  }
  void mount_image(bool readonly = false) {
    ASSERT_EQ(ubd_attach(*k, 0, image.c_str(), readonly), 0);
    ASSERT_EQ(Volume::mount(*k, *ubd_lookup(*k, "/dev/ubda"), readonly, &vol), 0);
  }
  void remount() {
    ASSERT_EQ(vol->unmount(), 0);
    vol = nullptr;
    ubd_detach_all(*k);
    mount_image();
  }
  long walk(const char* path, uint32_t* ino, bool follow = true) {
    Walk* w = new Walk{};
    w->target = target_buf;
    w->path = path;
    w->follow = follow;
    long r = vol->walk(*w);
    *ino = w->ino;
    delete w;
    return r;
  }
  uint32_t ino_of(const char* path) {
    uint32_t ino = 0;
    EXPECT_EQ(walk(path, &ino, false), 0) << path;
    return ino;
  }
  std::string read_all(uint32_t ino) {
    ext2glue::Attr a;
    EXPECT_EQ(vol->getattr(ino, &a), 0);
    std::string s(a.size, '\0');
    EXPECT_EQ(vol->read(ino, s.data(), s.size(), 0, true), (long)s.size());
    return s;
  }
  std::vector<std::string> list(uint32_t ino) {
    std::vector<std::string> names;
    vol->readdir(ino, 0, [](void* ctx, const ext2glue::DirEntry& e) {
      static_cast<std::vector<std::string>*>(ctx)->push_back(e.name);
      return true;
    }, &names);
    return names;
  }
  std::string fsck() { return run("e2fsck -fn " + image); }
  std::string debugfs(const std::string& req) { return run("debugfs -R '" + req + "' " + image, false); }

  std::string dir, image, tree;
  Kernel* k = nullptr;
  Volume* vol = nullptr;
  Cred root{0, 0};
  char target_buf[kPathMax];
};

TEST_F(Ext4Test, UbdDevicesAreNamedAndNumberedLikeLinux) {
  make_image();
  ASSERT_EQ(ubd_attach(*k, 1, image.c_str(), true), 0);
  EXPECT_EQ(ubd_attach(*k, 1, image.c_str(), false), -EBUSY);
  EXPECT_EQ(ubd_attach(*k, 16, image.c_str(), false), -EINVAL);
  EXPECT_EQ(ubd_attach(*k, 2, (dir + "/missing").c_str(), false), -ENOENT);
  BlockDevice* d = ubd_lookup(*k, "/dev/ubdb");
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->name, "ubdb");
  EXPECT_EQ(d->major, 98u);
  EXPECT_EQ(d->minor, 16u);
  EXPECT_EQ(ubd_devnum(*d), makedev(98, 16));
  EXPECT_EQ(d->size, 64u << 20);
  EXPECT_EQ(ubd_lookup(*k, "ubda"), nullptr);
  char buf[1024];
  EXPECT_EQ(ubd_read(*d, buf, sizeof buf, 1024), 0);
  EXPECT_EQ(*(uint16_t*)(buf + 0x38), 0xEF53);  // the superblock's magic
  EXPECT_EQ(ubd_write(*d, buf, sizeof buf, 1024), -EROFS);
}

TEST_F(Ext4Test, ReadsTheTreeMke2fsWrote) {
  make_image();
  mount_image(true);
  EXPECT_TRUE(vol->readonly());
  EXPECT_EQ(read_all(ino_of("/etc/hostname")), "flatux\n");
  EXPECT_EQ(read_all(ino_of("/hello.txt")), "hello, ext4\n");
  auto names = list(ino_of("/"));
  std::set<std::string> s(names.begin(), names.end());
  EXPECT_EQ(s, (std::set<std::string>{".", "..", "lost+found", "etc", "hello.txt", "link", "slowlink"}));
  uint32_t ino;
  EXPECT_EQ(walk("/missing", &ino), -ENOENT);
  EXPECT_EQ(walk("/hello.txt/x", &ino), -ENOTDIR);
  EXPECT_EQ(walk(("/" + std::string(256, 'a')).c_str(), &ino), -ENAMETOOLONG);
  char t[256];
  size_t len;
  EXPECT_EQ(vol->readlink(ino_of("/slowlink"), t, sizeof t, &len), 0);
  EXPECT_EQ(std::string(t, len), std::string(100, 'x'));
  ext2glue::Attr a;
  ASSERT_EQ(vol->getattr(ino_of("/hello.txt"), &a), 0);
  struct stat st;
  ASSERT_EQ(stat((tree + "/hello.txt").c_str(), &st), 0);
  EXPECT_EQ(a.mode, st.st_mode);
  EXPECT_EQ(a.size, 12u);
  EXPECT_EQ(a.mtime.sec, st.st_mtim.tv_sec);  // mke2fs -d keeps whole seconds
}

TEST_F(Ext4Test, SymlinksAreRedirectsNotFollowed) {
  make_image();
  mount_image(true);
  Walk* w = new Walk{};
  w->target = target_buf;
  w->path = "/link/more";
  w->follow = true;
  EXPECT_EQ(vol->walk(*w), ext4::kWalkRedirect);
  EXPECT_EQ(std::string(w->path, w->link_len), "/link");
  EXPECT_STREQ(w->target, "etc/hostname");
  EXPECT_STREQ(w->rest, "more");
  w->path = "/link";
  w->follow = false;
  EXPECT_EQ(vol->walk(*w), 0);
  uint32_t link = w->ino;
  ext2glue::Attr a;
  ASSERT_EQ(vol->getattr(link, &a), 0);
  EXPECT_TRUE(S_ISLNK(a.mode));
  delete w;
}

TEST_F(Ext4Test, RepeatedReadsAndLookupsStayInTheKernel) {
  make_image();
  mount_image(true);
  uint32_t ino = ino_of("/etc/hostname");
  read_all(ino);
  uint64_t before = vol->stats().gate_calls;
  for (int i = 0; i < 100; i++) {
    EXPECT_EQ(ino_of("/etc/hostname"), ino);
    EXPECT_EQ(read_all(ino), "flatux\n");
  }
  uint32_t missing;
  walk("/etc/nothing", &missing);
  uint64_t mid = vol->stats().gate_calls;
  walk("/etc/nothing", &missing);
  EXPECT_EQ(vol->stats().gate_calls, mid);  // negative entries are cached too
  EXPECT_EQ(mid, before);  // /etc was read whole: the miss needs no lookup either
}

// The host copy exec and mmap use: made once, shared while the file is
// unchanged, made afresh after a write or a truncate; copies handed out
// before keep what they had.
std::string host_contents(long fd) {
  std::string s(65536, '\0');
  ssize_t n = pread((int)fd, s.data(), s.size(), 0);
  s.resize(n < 0 ? 0 : (size_t)n);
  return s;
}

TEST_F(Ext4Test, SnapshotsForMappingFollowChanges) {
  make_image();
  mount_image();
  uint32_t ino = ino_of("/etc/hostname");
  long first = vol->snapshot_fd(ino);
  ASSERT_GE(first, 0);
  EXPECT_EQ(host_contents(first), "flatux\n");
  uint64_t gate_before = vol->stats().gate_calls;
  long again = vol->snapshot_fd(ino);
  ASSERT_GE(again, 0);
  EXPECT_EQ(vol->stats().gate_calls, gate_before);  // the kept copy, not a new read
  struct stat a{}, b{};
  fstat((int)first, &a);
  fstat((int)again, &b);
  EXPECT_EQ(a.st_ino, b.st_ino);  // one host memfd behind both
  EXPECT_EQ(vol->write(ino, "changed!\n", 9, 0, true), 9);
  long after_write = vol->snapshot_fd(ino);
  ASSERT_GE(after_write, 0);
  EXPECT_EQ(host_contents(after_write), "changed!\n");
  EXPECT_EQ(host_contents(first), "flatux\n");
  ext2glue::SetAttr t{};
  t.mask = ext2glue::kSetSize;
  t.size = 3;
  ext2glue::Attr out;
  ASSERT_EQ(vol->setattr(ino, t, &out), 0);
  long after_truncate = vol->snapshot_fd(ino);
  ASSERT_GE(after_truncate, 0);
  EXPECT_EQ(host_contents(after_truncate), "cha");
  EXPECT_EQ(vol->snapshot_fd(ino_of("/etc")), -ENODEV);
  for (long fd : {first, again, after_write, after_truncate}) close((int)fd);
}

TEST_F(Ext4Test, ChangesSurviveUnmountAndPassFsck) {
  make_image();
  mount_image();
  uint32_t rootino = ino_of("/"), etc = ino_of("/etc");
  ext2glue::Attr a, d;
  ASSERT_EQ(vol->create(root, rootino, "new.txt", S_IFREG | 0640, 0, &a), 0);
  EXPECT_EQ(vol->create(root, rootino, "new.txt", S_IFREG | 0640, 0, &a), -EEXIST);
  std::string big(300000, 'q');
  for (size_t i = 0; i < big.size(); i++) big[i] = char('a' + i % 26);
  EXPECT_EQ(vol->write(a.ino, big.data(), big.size(), 0, true), (long)big.size());
  EXPECT_EQ(vol->write(a.ino, "END", 3, UINT64_MAX, true), 3);  // append
  EXPECT_EQ(read_all(a.ino), big + "END");
  ASSERT_EQ(vol->mkdir(root, rootino, "d", 0750, &d), 0);
  EXPECT_EQ(vol->mkdir(root, rootino, "d", 0750, &d), -EEXIST);
  EXPECT_EQ(vol->link(root, a.ino, d.ino, "hard"), 0);
  EXPECT_EQ(vol->link(root, d.ino, rootino, "dirlink"), -EPERM);
  ext2glue::Attr s1, s2, n;
  ASSERT_EQ(vol->symlink(root, d.ino, "fast", "../new.txt", &s1), 0);
  ASSERT_EQ(vol->symlink(root, d.ino, "slow", std::string(200, 'z').c_str(), &s2), 0);
  ASSERT_EQ(vol->create(root, d.ino, "null", S_IFCHR | 0666, makedev(1, 3), &n), 0);
  ASSERT_EQ(vol->create(root, d.ino, "fifo", S_IFIFO | 0600, 0, &n), 0);
  EXPECT_EQ(vol->rename(root, d.ino, "fifo", etc, "pipe", 0), 0);
  EXPECT_EQ(vol->rename(root, rootino, "hello.txt", etc, "hostname", RENAME_NOREPLACE), -EEXIST);
  EXPECT_EQ(vol->rename(root, rootino, "hello.txt", etc, "hostname", RENAME_EXCHANGE), 0);
  EXPECT_EQ(vol->rename(root, rootino, "d", ino_of("/d"), "inside", 0), -EINVAL);
  EXPECT_EQ(vol->unlink(root, rootino, "d", true), -ENOTEMPTY);
  EXPECT_EQ(vol->unlink(root, rootino, "d", false), -EISDIR);
  EXPECT_EQ(vol->unlink(root, rootino, "new.txt", true), -ENOTDIR);
  EXPECT_EQ(vol->unlink(root, rootino, "new.txt", false), 0);
  ext2glue::Attr after;
  ASSERT_EQ(vol->getattr(a.ino, &after), 0);
  EXPECT_EQ(after.nlink, 1u);
  ext2glue::SetAttr sa{};
  sa.mask = ext2glue::kSetSize | ext2glue::kSetMode | ext2glue::kSetUid | ext2glue::kSetMtime;
  sa.size = 10;
  sa.mode = 0604;
  sa.uid = 1234;
  sa.mtime = {1700000000, 123456789};
  ASSERT_EQ(vol->setattr(a.ino, sa, &after), 0);
  EXPECT_EQ(read_all(a.ino), big.substr(0, 10));
  ASSERT_EQ(vol->fsync(true), 0);
  remount();

  EXPECT_EQ(fsck().find("[exit"), std::string::npos) << fsck();
  EXPECT_EQ(read_all(ino_of("/d/hard")), big.substr(0, 10));
  ASSERT_EQ(vol->getattr(ino_of("/d/hard"), &after), 0);
  EXPECT_EQ(after.mode, (uint32_t)(S_IFREG | 0604));
  EXPECT_EQ(after.uid, 1234u);
  EXPECT_EQ(after.mtime.sec, 1700000000);
  EXPECT_EQ(after.mtime.nsec, 123456789u);
  EXPECT_EQ(read_all(ino_of("/etc/hostname")), "hello, ext4\n");
  EXPECT_EQ(read_all(ino_of("/hello.txt")), "flatux\n");
  ASSERT_EQ(vol->getattr(ino_of("/d/null"), &after), 0);
  EXPECT_EQ(after.rdev, makedev(1, 3));
  ASSERT_EQ(vol->getattr(ino_of("/etc/pipe"), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.mode));
  char t[300];
  size_t len;
  ASSERT_EQ(vol->readlink(ino_of("/d/slow"), t, sizeof t, &len), 0);
  EXPECT_EQ(std::string(t, len), std::string(200, 'z'));
  ASSERT_EQ(vol->unmount(), 0);
  vol = nullptr;
  EXPECT_EQ(debugfs("cat /d/hard"), big.substr(0, 10));
  EXPECT_NE(debugfs("stat /d/fast").find("Fast link dest: \"../new.txt\""), std::string::npos);
  EXPECT_EQ(fsck().find("[exit"), std::string::npos) << fsck();
}

TEST_F(Ext4Test, SparseFilesBeyondFourGiB) {
  make_image();
  mount_image();
  ext2glue::Attr a;
  ASSERT_EQ(vol->create(root, 2, "sparse", S_IFREG | 0644, 0, &a), 0);
  uint64_t off = (5ull << 30) + 123;
  ASSERT_EQ(vol->write(a.ino, "tail", 4, off, true), 4);
  ASSERT_EQ(vol->getattr(a.ino, &a), 0);
  EXPECT_EQ(a.size, off + 4);
  EXPECT_LE(a.blocks512, 64u);  // one data block and the extent tree
  char buf[8];
  EXPECT_EQ(vol->read(a.ino, buf, 8, 1ull << 32, true), 8);
  EXPECT_EQ(std::string(buf, 8), std::string(8, '\0'));
  EXPECT_EQ(vol->read(a.ino, buf, 8, off, true), 4);
  EXPECT_EQ(std::string(buf, 4), "tail");
  remount();
  ASSERT_EQ(vol->getattr(ino_of("/sparse"), &a), 0);
  EXPECT_EQ(a.size, off + 4);
  ASSERT_EQ(vol->unmount(), 0);
  vol = nullptr;
  EXPECT_EQ(fsck().find("[exit"), std::string::npos) << fsck();
}

TEST_F(Ext4Test, ListingIsStableUnderConcurrentUnlink) {
  make_image();
  mount_image();
  ext2glue::Attr d, f;
  ASSERT_EQ(vol->mkdir(root, 2, "many", 0755, &d), 0);
  constexpr int kFiles = 2000;
  for (int i = 0; i < kFiles; i++)
    ASSERT_EQ(vol->create(root, d.ino, ("file-" + std::to_string(i)).c_str(), S_IFREG | 0644, 0, &f), 0) << i;
  // Read a few entries at a time, unlinking every other name seen and
  // some not yet seen; every survivor must come up exactly once.
  struct Batch {
    std::vector<ext2glue::DirEntry> got;
    size_t max;
  };
  std::set<std::string> seen, removed;
  uint64_t pos = 0;
  for (int round = 0;; round++) {
    Batch b{{}, 7};
    ASSERT_EQ(vol->readdir(d.ino, pos, [](void* ctx, const ext2glue::DirEntry& e) {
      Batch* b = static_cast<Batch*>(ctx);
      if (b->got.size() == b->max) return false;
      b->got.push_back(e);
      return true;
    }, &b), 0);
    if (b.got.empty()) break;
    for (auto& e : b.got) {
      EXPECT_TRUE(seen.insert(e.name).second) << "twice: " << e.name;
      EXPECT_EQ(removed.count(e.name), 0u) << "removed but listed: " << e.name;
      pos = e.next;
    }
    std::string ahead = "file-" + std::to_string((round * 13) % kFiles);
    if (!seen.count(ahead) && !removed.count(ahead) && vol->unlink(root, d.ino, ahead.c_str(), false) == 0)
      removed.insert(ahead);
    if (round % 2 == 0 && b.got[0].name[0] == 'f' && vol->unlink(root, d.ino, b.got[0].name, false) == 0)
      removed.insert(b.got[0].name);
  }
  for (int i = 0; i < kFiles; i++) {
    std::string n = "file-" + std::to_string(i);
    EXPECT_TRUE(seen.count(n) || removed.count(n)) << "never listed: " << n;
  }
  ASSERT_EQ(vol->unmount(), 0);
  vol = nullptr;
  EXPECT_EQ(fsck().find("[exit"), std::string::npos) << fsck();
}

TEST_F(Ext4Test, UnlinkedOpenFilesLiveUntilTheLastClose) {
  make_image();
  mount_image();
  ext2glue::Attr a;
  ASSERT_EQ(vol->create(root, 2, "tmp", S_IFREG | 0644, 0, &a), 0);
  ASSERT_EQ(vol->write(a.ino, "still here", 10, 0, true), 10);
  vol->open_ref(a.ino);
  ASSERT_EQ(vol->unlink(root, 2, "tmp", false), 0);
  uint32_t ino;
  EXPECT_EQ(walk("/tmp", &ino), -ENOENT);
  EXPECT_EQ(read_all(a.ino), "still here");
  vol->close_ref(a.ino);
  ASSERT_EQ(vol->unmount(), 0);
  vol = nullptr;
  EXPECT_EQ(fsck().find("[exit"), std::string::npos) << fsck();
}

// A folder removed and its number given to a new folder: a walk started
// at the number with the old folder's generation finds nothing.
TEST_F(Ext4Test, AWalkStartedInAFolderWhoseNumberWasReusedFindsNothing) {
  make_image();
  mount_image();
  ext2glue::Attr gone, again, f;
  ASSERT_EQ(vol->mkdir(root, 2, "gone", 0755, &gone), 0);
  ASSERT_EQ(vol->unlink(root, 2, "gone", true), 0);
  ASSERT_EQ(vol->mkdir(root, 2, "again", 0755, &again), 0);
  ASSERT_EQ(again.ino, gone.ino);  // the lowest free number comes back
  EXPECT_NE(again.generation, gone.generation);
  ASSERT_EQ(vol->create(root, again.ino, "file", S_IFREG | 0644, 0, &f), 0);
  auto start_in = [&](const ext2glue::Attr& dir) -> long {
    Walk* w = new Walk{};
    w->target = target_buf;
    w->path = "/gone/file";
    w->start_ino = dir.ino;
    w->start_generation = dir.generation;
    w->start_at = w->path + strlen("/gone/");
    w->follow = true;
    long r = vol->walk(*w);
    uint32_t ino = w->ino;
    delete w;
    return r == 0 ? (long)ino : r;
  };
  EXPECT_EQ(start_in(gone), -ENOENT);
  EXPECT_EQ(start_in(again), (long)f.ino);
}

TEST_F(Ext4Test, PermissionsFollowTheCallersCredentials) {
  make_image();
  mount_image();
  Cred user{1000, 1000};
  ext2glue::Attr a, d;
  EXPECT_EQ(vol->create(user, 2, "nope", S_IFREG | 0644, 0, &a), -EACCES);
  ASSERT_EQ(vol->mkdir(root, 2, "private", 0700, &d), 0);
  // Search permission on the way is the VFS walk's: the volume's own walk
  // reaches through a folder the user may not search.
  Walk* w = new Walk{};
  w->target = target_buf;
  w->path = "/private/x";
  w->want_parent = true;
  EXPECT_EQ(vol->walk(*w), 0);
  EXPECT_EQ(w->parent, d.ino);
  delete w;
  ASSERT_EQ(vol->mkdir(root, 2, "tmp", 01777, &d), 0);
  ASSERT_EQ(vol->create(root, d.ino, "roots", S_IFREG | 0644, 0, &a), 0);
  ASSERT_EQ(vol->create(user, d.ino, "mine", S_IFREG | 0644, 0, &a), 0);
  EXPECT_EQ(a.uid, 1000u);
  EXPECT_EQ(vol->unlink(user, d.ino, "roots", false), -EPERM);  // sticky
  EXPECT_EQ(vol->unlink(user, d.ino, "mine", false), 0);
}

TEST_F(Ext4Test, NeedsRecoveryIsMountedReadOnly) {
  make_image();
  ASSERT_EQ(debugfs("feature needs_recovery").find("[exit"), std::string::npos);
  run("debugfs -w -R 'feature needs_recovery' " + image);
  mount_image(false);
  EXPECT_TRUE(vol->readonly());
  ext2glue::Attr a;
  EXPECT_EQ(vol->create(root, 2, "x", S_IFREG | 0644, 0, &a), -EROFS);
  EXPECT_EQ(read_all(ino_of("/hello.txt")), "hello, ext4\n");
}

// Damage libext2fs meets on its own (freeing a block number past the end
// of the filesystem) is reported through com_err: it lands in the kernel
// log, never on the host's stderr (a guest's console, often).
TEST_F(Ext4Test, LibraryComplaintsGoToTheKernelLog) {
  std::string out = run("mke2fs -q -F -t ext2 -d " + tree + " " + image + " 16M");
  ASSERT_EQ(out.find("[exit"), std::string::npos) << out;
  run("debugfs -w -R 'set_inode_field /hello.txt block[0] 0x7fffff' " + image);
  mount_image();
  std::string err_path = image + ".stderr";
  int saved = dup(2), err = open(err_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(err, 0);
  dup2(err, 2);
  uint64_t seq = k->log->next_seq;
  vol->unlink(root, ino_of("/"), "hello.txt", false);
  dup2(saved, 2);
  close(saved);
  char buf[1024] = {0};
  pread(err, buf, sizeof buf - 1, 0);
  close(err);
  // The kernel's console may show the record; libext2fs's own line is gone.
  EXPECT_EQ(strstr(buf, "\next2fs_"), nullptr) << buf;
  EXPECT_NE(strncmp(buf, "ext2fs_", 7), 0) << buf;
  bool logged = false;
  for (uint64_t i = seq; i < k->log->next_seq; i++)
    if (strstr(k->log->at(i).text, "Illegal block number")) logged = true;
  EXPECT_TRUE(logged);
}

TEST_F(Ext4Test, Ext2AndExt3ImagesWork) {
  for (const char* type : {"ext2", "ext3"}) {
    std::string out = run(std::string("mke2fs -q -F -t ") + type + " -d " + tree + " " + image + " 16M");
    ASSERT_EQ(out.find("[exit"), std::string::npos) << out;
    mount_image();
    EXPECT_EQ(read_all(ino_of("/etc/hostname")), "flatux\n");
    ext2glue::Attr a;
    ASSERT_EQ(vol->create(root, 2, "added", S_IFREG | 0644, 0, &a), 0);
    ASSERT_EQ(vol->write(a.ino, "data", 4, 0, true), 4);
    ASSERT_EQ(vol->unmount(), 0);
    vol = nullptr;
    ubd_detach_all(*k);
    EXPECT_EQ(fsck().find("[exit"), std::string::npos) << type << fsck();
    EXPECT_EQ(debugfs("cat /added"), "data");
  }
}

// Damage in the superblock, an inode table and a directory block gives an
// error, never a crash.
TEST_F(Ext4Test, CorruptedImagesGiveErrors) {
  make_image("-O metadata_csum");
  std::string clean = image + ".clean";
  run("cp " + image + " " + clean);
  auto number_after = [&](const std::string& req, const std::string& key, int base) {
    std::string out = debugfs(req);
    size_t p = out.find(key);
    return p == std::string::npos ? -1L : strtol(out.c_str() + p + key.size(), nullptr, base);
  };
  long bs = number_after("stats", "Block size:", 10);
  long inode_at = number_after("imap /etc/hostname", "located at block ", 10) * bs +
                  number_after("imap /etc/hostname", "offset 0x", 16);
  long etc_block = number_after("blocks /etc", "", 10);
  uint32_t hostname_ino = (uint32_t)number_after("imap /etc/hostname", "Inode ", 10);
  ASSERT_GT(bs, 0);
  ASSERT_GT(inode_at, 0);
  ASSERT_GT(etc_block, 0);
  auto flip = [&](long off, int n) {
    int fd = open(image.c_str(), O_RDWR);
    for (int i = 0; i < n; i++) {
      unsigned char c;
      pread(fd, &c, 1, off + i);
      c ^= 0x5a;
      pwrite(fd, &c, 1, off + i);
    }
    close(fd);
  };
  flip(1024 + 0x38, 2);  // the superblock's magic
  ASSERT_EQ(ubd_attach(*k, 0, image.c_str(), false), 0);
  long r = Volume::mount(*k, *ubd_lookup(*k, "ubda"), false, &vol);
  EXPECT_TRUE(r == -EUCLEAN || r == -EBADMSG || r == -EINVAL) << r;
  vol = nullptr;
  ubd_detach_all(*k);

  run("cp " + clean + " " + image);
  flip(inode_at + 4, 16);         // /etc/hostname's inode: size and times
  flip(etc_block * bs + 24, 8);    // /etc's directory block
  mount_image(true);
  uint32_t ino;
  r = walk("/etc/hostname", &ino);
  EXPECT_TRUE(r == -EUCLEAN || r == -EBADMSG || r == -EIO) << r;
  ext2glue::Attr a;
  r = vol->getattr(hostname_ino, &a);
  EXPECT_TRUE(r == -EUCLEAN || r == -EBADMSG) << r;
  std::vector<std::string> names;
  r = vol->readdir(ino_of("/etc"), 0, [](void*, const ext2glue::DirEntry&) { return true; }, nullptr);
  EXPECT_TRUE(r == -EUCLEAN || r == -EBADMSG) << r;
  for (uint32_t i = 1; i < 40; i++) {  // whatever each inode holds, no crash
    if (vol->getattr(i, &a) == 0 && S_ISREG(a.mode)) {
      char buf[64];
      vol->read(i, buf, sizeof buf, 0, true);
    }
  }
  EXPECT_EQ(read_all(ino_of("/hello.txt")), "hello, ext4\n");  // the rest still works
}

// A directory whose size says terabytes (found by the corrupt-image walk:
// listing it visited every hole) is damage, reported at once.
TEST_F(Ext4Test, HugeDirectorySizeIsCorruptionNotAHang) {
  make_image();
  run("debugfs -w -R 'set_inode_field /etc size 0x10000000000' " + image);
  mount_image(true);
  uint32_t etc = ino_of("/etc");
  EXPECT_EQ(vol->readdir(etc, 0, [](void*, const ext2glue::DirEntry&) { return true; }, nullptr), -EUCLEAN);
}

// A damaged symlink inode can claim any size (the ext4 fuzzer found one of
// 1.5 GB): that is damage, and the kernel must not allocate and zero as
// much for the target first.
TEST_F(Ext4Test, HugeSymlinkSizeIsCorruptionNotAnAllocation) {
  make_image();
  std::string out = run("debugfs -w -R 'set_inode_field /slowlink size 0x10000000' " + image +
                        " && debugfs -w -R 'set_inode_field /link size 0x10000000000' " + image);
  ASSERT_EQ(out.find("[exit"), std::string::npos) << out;
  mount_image(true);
  uint32_t slow = ino_of("/slowlink"), fast = ino_of("/link");
  ext2glue::Attr a;
  ASSERT_EQ(vol->getattr(slow, &a), 0);
  ASSERT_EQ(a.size, 0x10000000u);  // 256 MiB
  uint64_t before = fuzz::shared_memory_kb();
  char buf[kPathMax];
  size_t n = 0;
  EXPECT_EQ(vol->readlink(slow, buf, sizeof buf, &n), -EUCLEAN);
  EXPECT_EQ(vol->readlink(fast, buf, sizeof buf, &n), -EUCLEAN);
  uint64_t grown = fuzz::shared_memory_kb() - before;
  EXPECT_LT(grown, 16u * 1024) << "the kernel heap grew by " << grown << " KiB for two damaged symlinks";
}

// The volume mounted at /ext4 in the kernel's namespace, and a task (root)
// whose lookups go through the dentry cache as a walk's do.
class Ext4DentryTest : public Ext4Test {
 protected:
  void mount_in_vfs() {
    ASSERT_EQ(ubd_attach(*k, 0, image.c_str(), false), 0);
    ASSERT_EQ(ext4_mount_device(*k, "/dev/ubda", "/ext4", 0), 0);
    mnt = k->vfs->find_exact(k->vfs->init_ns(), "/ext4");
    ASSERT_NE(mnt, nullptr);
    v = static_cast<Volume*>(mnt->fs->priv);
    proc.creds = Creds{};
    task.proc = &proc;
    task.kernel = k;
  }
  void TearDown() override {
    if (mnt) {
      EXPECT_EQ(k->vfs->umount(mnt, true), 0);
      mnt->put();  // the last reference: the volume is written back and freed
    }
    Ext4Test::TearDown();
  }
  ErrorOr<Dentry*> dentry(const char* inner) { return dentry_of(task, *mnt, inner); }
  // The child `name` of dir as a walk ending in dir asks for it.
  ErrorOr<Dentry*> child(Dentry* dir, const char* path, const char* name) {
    Lookup lk(path, false, mnt);
    lk.dir = dir;
    lk.name = name;
    return dentry_of(task, lk);
  }
  uint64_t name_lookups() { return v->stats().name_lookups; }

  Mount* mnt = nullptr;
  Volume* v = nullptr;
  Process proc{};
  Task task{};
};

// A name missing from the dentry cache is asked of its folder alone: one
// lookup in that directory, not a walk from the volume's root; a missing
// name answers ENOENT and is kept as a negative dentry until a name is
// added to the folder.
TEST_F(Ext4DentryTest, ADeepNameIsOneLookupInItsFolder) {
  ASSERT_EQ(system(("mkdir -p " + tree + "/a/b/c/d/e").c_str()), 0);
  write_file(tree + "/a/b/c/d/e/deep.txt", "deep\n");
  make_image();
  mount_in_vfs();
  auto e = dentry("/a/b/c/d/e");
  ASSERT_FALSE(e.is_error()) << e.error();
  uint64_t before = name_lookups();
  auto f = dentry("/a/b/c/d/e/deep.txt");
  ASSERT_FALSE(f.is_error()) << f.error();
  EXPECT_EQ(name_lookups() - before, 1u) << "the folders above were asked again";
  Inode& n = *f.value()->inode;
  ext2glue::Attr a;
  ASSERT_EQ(v->getattr((uint32_t)n.ino, &a), 0);
  EXPECT_EQ(a.size, 5u);  // deep.txt itself
  EXPECT_EQ(n.mode, a.mode);
  EXPECT_TRUE(S_ISREG(n.mode));
  EXPECT_EQ(n.uid, a.uid);
  EXPECT_EQ(n.gid, a.gid);
  EXPECT_EQ(n.generation, a.generation);
  ext2glue::Attr ea;
  ASSERT_EQ(v->getattr((uint32_t)e.value()->inode->ino, &ea), 0);
  EXPECT_EQ(e.value()->inode->generation, ea.generation);
  dput(f.value());

  before = name_lookups();
  auto miss = dentry("/a/b/c/d/e/nothing");
  ASSERT_TRUE(miss.is_error());
  EXPECT_EQ(miss.error(), -ENOENT);
  EXPECT_EQ(name_lookups() - before, 1u);
  Dentry* neg = k->dcache->lookup(*e.value(), "nothing");
  ASSERT_NE(neg, nullptr);
  EXPECT_TRUE(neg->negative());
  dput(neg);
  before = name_lookups();
  EXPECT_EQ(dentry("/a/b/c/d/e/nothing").error(), -ENOENT);
  EXPECT_EQ(dentry("/a/b/c/d/e/nothing/x").error(), -ENOENT);  // a walk failing mid-path
  EXPECT_EQ(name_lookups(), before) << "the negative dentry did not answer";

  // Made behind the cache's back (the volume counts the names it adds):
  // the negative is not believed any more.
  ext2glue::Attr made;
  ASSERT_EQ(v->create(root, (uint32_t)e.value()->inode->ino, "nothing", S_IFREG | 0600, 0, &made), 0);
  auto now = dentry("/a/b/c/d/e/nothing");
  ASSERT_FALSE(now.is_error()) << now.error();
  EXPECT_EQ(now.value()->inode->ino, made.ino);
  EXPECT_EQ(now.value()->inode->mode, S_IFREG | 0600u);
  dput(now.value());
  dput(e.value());
}

// A cached folder removed and its number given to a new folder (here of
// the same name, behind the cache's back): a lookup in the old folder's
// dentry finds nothing, though the path now leads to a folder holding
// the name.
TEST_F(Ext4DentryTest, AFolderWhoseNumberWasReusedAnswersNothing) {
  make_image();
  mount_in_vfs();
  ext2glue::Attr gone, again, f;
  ASSERT_EQ(v->mkdir(root, 2, "gone", 0755, &gone), 0);
  auto d = dentry("/gone");
  ASSERT_FALSE(d.is_error()) << d.error();
  EXPECT_EQ(d.value()->inode->generation, gone.generation);
  ASSERT_EQ(v->unlink(root, 2, "gone", true), 0);
  ASSERT_EQ(v->mkdir(root, 2, "gone", 0755, &again), 0);
  ASSERT_EQ(again.ino, gone.ino);  // the lowest free number comes back
  ASSERT_NE(again.generation, gone.generation);
  ASSERT_EQ(v->create(root, again.ino, "file", S_IFREG | 0644, 0, &f), 0);
  auto stale = child(d.value(), "/gone/file", "file");
  ASSERT_TRUE(stale.is_error()) << "the old folder's dentry found the new folder's file";
  EXPECT_EQ(stale.error(), -ENOENT);
  Inode* n = nullptr;
  EXPECT_EQ(mnt->fs->ops->lookup(task, *mnt->fs, *mnt, *d.value(), "file", &n), -ENOENT);
  dput(d.value());
}

// Damage in a directory block is an error from the lookup, never a crash.
TEST_F(Ext4DentryTest, ALookupInADamagedFolderIsAnError) {
  make_image("-O metadata_csum");
  std::string out = debugfs("blocks /etc");
  long etc_block = strtol(out.c_str(), nullptr, 10);
  long bs = 4096;
  std::string st = debugfs("stats");
  size_t p = st.find("Block size:");
  if (p != std::string::npos) bs = strtol(st.c_str() + p + 11, nullptr, 10);
  ASSERT_GT(etc_block, 0);
  int fd = open(image.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 8; i++) {
    unsigned char c;
    pread(fd, &c, 1, etc_block * bs + 24 + i);
    c ^= 0x5a;
    pwrite(fd, &c, 1, etc_block * bs + 24 + i);
  }
  close(fd);
  mount_in_vfs();
  auto h = dentry("/etc/hostname");
  ASSERT_TRUE(h.is_error());
  EXPECT_TRUE(h.error() == -EUCLEAN || h.error() == -EBADMSG || h.error() == -EIO) << h.error();
  auto hello = dentry("/hello.txt");  // the rest still works
  ASSERT_FALSE(hello.is_error()) << hello.error();
  dput(hello.value());
}

}  // namespace
