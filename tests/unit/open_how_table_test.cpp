// The sealed table of open_how entries openat2 is held to, and the filter
// rules that lean on it (openat2, S_ISGID through the sealed ".").
#include "host/open_how_table.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/seccomp.h"

using namespace flatux;

namespace {

constexpr uint64_t kTmpfile = 020000000;

const open_how* entry(uint64_t flags, host::Beneath how = host::Beneath::kNoLinks) {
  return static_cast<const open_how*>(open_how_entry_for(flags, how));
}

// A folder with a file in it, made before the filter goes on.
struct Scratch {
  std::string dir, file;
  Scratch() {
    char tmpl[] = "/tmp/flatux-openhow.XXXXXX";
    dir = mkdtemp(tmpl);
    file = dir + "/f";
    close(open(file.c_str(), O_CREAT | O_WRONLY, 0644));
  }
  ~Scratch() {
    unlink(file.c_str());
    rmdir(dir.c_str());
  }
};

// Runs `probe` in a forked child under the allowlist, this binary and libc
// counting as the kernel's code; 0: it went as expected.
int under_allowlist(int (*probe)(const Scratch&), const Scratch& s) {
  pid_t pid = fork();
  if (pid == 0) {
    uintptr_t self = (uintptr_t)&under_allowlist, libc = (uintptr_t)&syscall;
    const TextRange kernel[] = {{self - (64u << 20), self + (64u << 20)}, {libc - (64u << 20), libc + (64u << 20)}};
    HostAllowlistOptions o{.own_pid = (uint32_t)getpid()};
    if (install_syscall_filter(kernel, 2, &o) != 0) _exit(100);
    _exit(probe(s));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

class OpenHowTableTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(open_how_table_make(), OpenHowState::kAbsent); }
};

}  // namespace

TEST_F(OpenHowTableTest, NoEntryCreatesAnything) {
  for (uint32_t i = 0; i < kOpenHowEntries; i++) {
    auto* e = reinterpret_cast<const open_how*>(kOpenHowTable + i * kOpenHowEntry);
    EXPECT_EQ(e->flags & (O_CREAT | kTmpfile), 0u) << i;
    EXPECT_EQ(e->mode, 0u) << i;
    EXPECT_NE(e->resolve & RESOLVE_BENEATH, 0u) << i;
  }
  EXPECT_STREQ(sealed_dot(), ".");
}

TEST_F(OpenHowTableTest, EveryOpeningHasItsEntry) {
  const uint64_t indexed[] = {O_TRUNC, O_NONBLOCK, O_DSYNC, O_SYNC, O_DIRECTORY, O_NOFOLLOW, O_APPEND};
  for (uint64_t acc : {O_RDONLY, O_WRONLY, O_RDWR})
    for (uint32_t bits = 0; bits < 128; bits++) {
      uint64_t f = acc;
      for (int b = 0; b < 7; b++)
        if (bits & (1u << b)) f |= indexed[b];
      const open_how* e = entry(f | O_NOATIME | O_CLOEXEC);
      ASSERT_NE(e, nullptr) << std::hex << f;
      EXPECT_EQ(e->flags, f | O_CLOEXEC | O_NOCTTY) << std::hex << f;  // O_NOATIME comes after the open
      EXPECT_EQ(e->resolve, (uint64_t)(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    }
  EXPECT_EQ(entry(O_PATH | O_NOFOLLOW)->flags, (uint64_t)(O_PATH | O_NOFOLLOW | O_CLOEXEC));
  EXPECT_EQ(entry(O_PATH | O_DIRECTORY, host::Beneath::kMount)->resolve,
            (uint64_t)(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS));
  EXPECT_EQ(entry(O_CREAT | O_WRONLY), nullptr);
  EXPECT_EQ(entry(O_TMPFILE | O_RDWR), nullptr);
  EXPECT_EQ(entry(O_PATH | O_TRUNC), nullptr);
  EXPECT_EQ(host::openat2_listed(AT_FDCWD, "x", O_CREAT | O_WRONLY), -EINVAL);
}

TEST_F(OpenHowTableTest, OpensAsOpenWould) {
  Scratch s;
  int dir = open(s.dir.c_str(), O_PATH | O_DIRECTORY);
  long fd = host::openat2_listed(dir, "f", O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  EXPECT_NE(fcntl((int)fd, F_GETFL) & O_APPEND, 0);
  EXPECT_NE(fcntl((int)fd, F_GETFD) & FD_CLOEXEC, 0);
  close((int)fd);
  EXPECT_EQ(host::openat2_listed(dir, "../etc", O_RDONLY), -EXDEV);
  close(dir);
}

TEST_F(OpenHowTableTest, IsSealed) {
  if (open_how_table_make() != OpenHowState::kSealed) GTEST_SKIP() << "no mseal on this host";
  void* t = reinterpret_cast<void*>(kOpenHowTable);
  EXPECT_EQ(mprotect(t, 4096, PROT_READ | PROT_WRITE), -1);
  EXPECT_EQ(munmap(t, 4096), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(mmap(t, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), MAP_FAILED);
  EXPECT_EQ(madvise(t, 4096, MADV_REMOVE), -1);
  int mem = open("/proc/self/mem", O_RDWR);
  ASSERT_GE(mem, 0);
  uint64_t creating = O_CREAT | O_WRONLY;
  EXPECT_EQ(pwrite(mem, &creating, sizeof creating, (off_t)kOpenHowTable), -1);  // no forced write into it
  close(mem);
  EXPECT_EQ(reinterpret_cast<const open_how*>(kOpenHowTable)->flags & O_CREAT, 0u);
}

TEST_F(OpenHowTableTest, FilterTakesOnlyItsEntries) {
  Scratch s;
  EXPECT_EQ(under_allowlist(
                [](const Scratch& s) {
                  int dir = open(s.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
                  if (host::openat2_listed(dir, "f", O_RDONLY) < 0) return 1;
                  open_how own{};
                  own.flags = O_RDONLY;
                  if (syscall(SYS_openat2, dir, "f", &own, sizeof own) != -1 || errno != EPERM) return 2;
                  own = {O_CREAT | O_WRONLY, 04755, 0};
                  if (syscall(SYS_openat2, dir, "g", &own, sizeof own) != -1 || errno != EPERM) return 3;
                  // Inside an entry, past the table, a larger size: refused.
                  if (syscall(SYS_openat2, dir, "f", kOpenHowTable + 8, 24) != -1 || errno != EPERM) return 4;
                  if (syscall(SYS_openat2, dir, "f", kOpenHowTable + kOpenHowEntries * kOpenHowEntry, 24) != -1 ||
                      errno != EPERM)
                    return 5;
                  if (syscall(SYS_openat2, dir, "f", kOpenHowTable, 32) != -1 || errno != EPERM) return 6;
                  return 0;
                },
                s),
            0);
}

TEST_F(OpenHowTableTest, SetGroupIdOnlyThroughTheSealedDot) {
  Scratch s;
  EXPECT_EQ(under_allowlist(
                [](const Scratch& s) {
                  int dir = open(s.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
                  int file = open(s.file.c_str(), O_PATH | O_CLOEXEC);
                  if (syscall(SYS_fchmodat, dir, sealed_dot(), 02755) != 0) return 1;  // a folder
                  if (syscall(SYS_fchmodat, file, sealed_dot(), 02755) != -1 || errno != ENOTDIR) return 2;
                  if (syscall(SYS_fchmodat, dir, ".", 02755) != -1 || errno != EPERM) return 3;  // another "."
                  if (syscall(SYS_fchmodat, AT_FDCWD, s.file.c_str(), 02755) != -1 || errno != EPERM) return 4;
                  if (syscall(SYS_fchmodat, dir, sealed_dot(), 04755) != -1 || errno != EPERM) return 5;
                  int rw = open(s.file.c_str(), O_RDONLY | O_CLOEXEC);
                  if (syscall(SYS_fchmod, rw, 02755) != -1 || errno != EPERM) return 6;
                  if (syscall(SYS_mkdirat, dir, "d", 02755) != -1 || errno != EPERM) return 7;
                  return 0;
                },
                s),
            0);
  struct stat st;
  ASSERT_EQ(stat(s.file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u);
}
