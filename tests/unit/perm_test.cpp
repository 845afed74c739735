// The permission policy (vfs/perm.h) on credentials and modes alone: the
// rules every filesystem shares.
#include "kernel/vfs/perm.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <unistd.h>

using namespace flatux;

namespace {

Creds user(uint32_t uid, uint32_t gid, std::initializer_list<uint32_t> groups = {}) {
  Creds c;
  c.uid = c.euid = c.fsuid = uid;
  c.gid = c.egid = c.fsgid = gid;
  // A user other than root holds no capabilities (Linux's set*id fix-ups).
  if (uid != 0) c.cap_permitted = c.cap_effective = 0;
  for (uint32_t g : groups) c.groups[c.ngroups++] = g;
  return c;
}

const Creds kRoot = user(0, 0);
const Creds kAlice = user(1000, 1000, {50});
const FilePerms kRootDir{S_IFDIR | 0755, 0, 0};
const FilePerms kTmp{S_IFDIR | 01777, 0, 0};
const FilePerms kAlicesFile{S_IFREG | 0644, 1000, 1000};
const FilePerms kRootsFile{S_IFREG | 0666, 0, 0};

}  // namespace

TEST(Permission, OwnerGroupOtherAndRoot) {
  EXPECT_EQ(permission(kAlice, {S_IFREG | 0460, 1000, 7}, W_OK), -EACCES);  // the owner's bits only
  EXPECT_EQ(permission(kAlice, {S_IFREG | 0064, 2, 50}, W_OK), 0);          // a supplementary group
  EXPECT_EQ(permission(kAlice, {S_IFREG | 0604, 2, 3}, R_OK), 0);
  EXPECT_EQ(permission(kRoot, {S_IFREG | 0000, 2, 3}, R_OK | W_OK), 0);
  EXPECT_EQ(permission(kRoot, {S_IFREG | 0644, 2, 3}, X_OK), -EACCES);  // no one may execute it
  EXPECT_EQ(permission(kRoot, {S_IFDIR | 0000, 2, 3}, X_OK), 0);
}

// Root's overrides are its capabilities: each one alone does its part.
TEST(Permission, RootsOverridesAreCapabilities) {
  Creds c = kRoot;
  c.cap_effective &= ~(cap_bit(CAP_DAC_OVERRIDE) | cap_bit(CAP_DAC_READ_SEARCH) | cap_bit(CAP_FOWNER));
  const FilePerms theirs{S_IFREG | 0600, 2, 3};
  EXPECT_EQ(permission(c, theirs, R_OK), -EACCES);
  EXPECT_EQ(permission(c, {S_IFDIR | 0700, 2, 3}, X_OK), -EACCES);
  EXPECT_TRUE(sticky_blocks(c, {S_IFDIR | 01777, 5, 5}, kAlicesFile));  // neither owner: CAP_FOWNER decides
  EXPECT_FALSE(owner_or_root(c, 2));
  EXPECT_FALSE(searches_every_dir(c));
  c.cap_effective |= cap_bit(CAP_DAC_READ_SEARCH);
  EXPECT_EQ(permission(c, theirs, R_OK), 0);
  EXPECT_EQ(permission(c, theirs, W_OK), -EACCES);
  EXPECT_EQ(permission(c, {S_IFDIR | 0700, 2, 3}, R_OK | X_OK), 0);
  EXPECT_EQ(permission(c, {S_IFDIR | 0700, 2, 3}, W_OK | X_OK), -EACCES);
  c.cap_effective |= cap_bit(CAP_DAC_OVERRIDE);
  EXPECT_EQ(permission(c, theirs, R_OK | W_OK), 0);
  EXPECT_FALSE(passes_dac(c));  // CAP_FOWNER is still missing
  c.cap_effective |= cap_bit(CAP_FOWNER);
  EXPECT_TRUE(passes_dac(c));
  EXPECT_TRUE(owner_or_root(c, 2));
}

TEST(Permission, StickyDirectories) {
  EXPECT_EQ(may_delete(kAlice, kTmp, kRootsFile), -EPERM);
  EXPECT_EQ(may_delete(kAlice, kTmp, kAlicesFile), 0);
  EXPECT_EQ(may_delete(kAlice, {S_IFDIR | 01777, 1000, 0}, kRootsFile), 0);  // the folder's owner
  EXPECT_EQ(may_delete(kRoot, kTmp, kAlicesFile), 0);
  EXPECT_EQ(may_delete(kAlice, kRootDir, kAlicesFile), -EACCES);  // write permission comes first
}

TEST(Permission, RenameChecksBothSidesAndAMovingDirectory) {
  FilePerms open_dir{S_IFDIR | 0777, 0, 0}, roots_dir{S_IFDIR | 0755, 0, 0};
  EXPECT_EQ(may_rename(kAlice, open_dir, kAlicesFile, open_dir, nullptr, true, 0), 0);
  EXPECT_EQ(may_rename(kAlice, open_dir, kAlicesFile, kRootDir, nullptr, false, 0), -EACCES);
  EXPECT_EQ(may_rename(kAlice, kTmp, kAlicesFile, kTmp, &kRootsFile, true, 0), -EPERM);
  EXPECT_EQ(may_rename(kAlice, open_dir, roots_dir, open_dir, nullptr, true, 0), 0);
  EXPECT_EQ(may_rename(kAlice, open_dir, roots_dir, kTmp, nullptr, false, 0), -EACCES);
  FilePerms alices_dir{S_IFDIR | 0755, 1000, 1000};
  EXPECT_EQ(may_rename(kAlice, open_dir, alices_dir, kTmp, &roots_dir, false, RENAME_EXCHANGE), -EPERM);
}

TEST(Permission, MayOpen) {
  EXPECT_EQ(may_open(kRoot, kRootDir, O_WRONLY), -EISDIR);
  EXPECT_EQ(may_open(kRoot, kRootDir, O_RDONLY | O_TRUNC), -EISDIR);
  EXPECT_EQ(may_open(kRoot, kRootDir, O_RDONLY | O_CREAT), -EISDIR);
  EXPECT_EQ(may_open(kRoot, kRootDir, O_RDONLY | O_DIRECTORY), 0);
  EXPECT_EQ(may_open(kAlice, kRootDir, O_WRONLY | O_PATH), 0);
  EXPECT_EQ(may_open(kAlice, {S_IFIFO | 0644, 0, 0}, O_RDONLY | O_TRUNC), -EACCES);
  EXPECT_EQ(may_open(kAlice, kRootsFile, O_RDONLY | O_NOATIME), -EPERM);
  EXPECT_EQ(may_open(kAlice, kAlicesFile, O_RDWR | O_NOATIME), 0);
}

TEST(Permission, ProtectedHardlinks) {
  EXPECT_EQ(may_link(kAlice, kRootsFile), 0);  // it may read and write it
  EXPECT_EQ(may_link(kAlice, {S_IFREG | 0644, 0, 0}), -EPERM);
  EXPECT_EQ(may_link(kAlice, {S_IFREG | 04777, 0, 0}), -EPERM);
  EXPECT_EQ(may_link(kAlice, {S_IFCHR | 0666, 0, 0}), -EPERM);
  EXPECT_EQ(may_link(kAlice, {S_IFREG | 0600, 1000, 0}), 0);
}

TEST(Permission, NewNodeOwner) {
  FilePerms sgid_dir{S_IFDIR | 02777, 0, 77};
  FilePerms o = init_owner(kAlice, sgid_dir, S_IFDIR | 0755);
  EXPECT_EQ(o.uid, 1000u);
  EXPECT_EQ(o.gid, 77u);
  EXPECT_EQ(o.mode, (uint32_t)(S_IFDIR | 02755));
  EXPECT_EQ(init_owner(kAlice, sgid_dir, S_IFREG | 02755).mode, (uint32_t)(S_IFREG | 0755));  // not in group 77
  EXPECT_EQ(init_owner(kAlice, {S_IFDIR | 02777, 0, 50}, S_IFREG | 02755).mode, (uint32_t)(S_IFREG | 02755));
  o = init_owner(kAlice, kRootDir, S_IFREG | 02755);
  EXPECT_EQ(o.gid, 1000u);
  EXPECT_EQ(o.mode, (uint32_t)(S_IFREG | 02755));
}
