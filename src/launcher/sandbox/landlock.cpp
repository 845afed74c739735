// Landlock: what the host process may open, make, remove and connect to,
// as the running kernel's Landlock version allows saying it.
//
//   the root folder    read and write (read with --ro): files, folders,
//                      sockets, FIFOs, links, rename across folders, truncate
//   ubd images         read (and write, truncate for ubdN=)
//   null zero full random urandom   read and write
//   /proc/cpuinfo      read (the guest's copy is generated from it)
//   the FIFO folder    make, open and remove FIFOs (tmpfs named pipes)
//   TCP                no bind, no connect with --net=none (ABI 4)
//   scopes             no signal and no abstract-socket connection to a
//                      process outside this one and its children (ABI 6)
//
// Opening through /proc/self/fd/N is checked against the file reopened, so
// the kernel's magic-link reopens need no rule of their own.
#include "launcher/sandbox/landlock.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

// The uapi of linux/landlock.h, spelled out: build hosts may carry headers
// older than the kernel flatux runs on.
enum : uint64_t {
  kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2, kReadDir = 1ull << 3,
  kRemoveDir = 1ull << 4, kRemoveFile = 1ull << 5, kMakeChar = 1ull << 6, kMakeDir = 1ull << 7,
  kMakeReg = 1ull << 8, kMakeSock = 1ull << 9, kMakeFifo = 1ull << 10, kMakeBlock = 1ull << 11,
  kMakeSym = 1ull << 12, kRefer = 1ull << 13, kTruncate = 1ull << 14,
};
enum : uint64_t { kNetBindTcp = 1ull << 0, kNetConnectTcp = 1ull << 1 };
enum : uint64_t { kScopeAbstractUnix = 1ull << 0, kScopeSignal = 1ull << 1 };
constexpr int kRulePathBeneath = 1;
constexpr unsigned kCreateRulesetVersion = 1u << 0;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

// File rights each ABI knows (ABI 5's ioctl right is left unhandled: the
// host-call allowlist already limits ioctl commands).
uint64_t fs_rights(int abi) {
  uint64_t r = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir |
               kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) r |= kRefer;
  if (abi >= 3) r |= kTruncate;
  return r;
}

constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate;

class Ruleset {
 public:
  Ruleset(int fd, uint64_t handled) : fd_(fd), handled_(handled) {}
  ~Ruleset() { close(fd_); }
  int fd() const { return fd_; }
  // Allows `rights` (of those handled) beneath `path`; a file takes only
  // file rights. A path that is not there is left out and noted.
  bool allow(const std::string& path, uint64_t rights, std::string* why) {
    int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      *why = path + ": " + strerror(errno);
      return false;
    }
    struct stat st;
    bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    PathBeneathAttr a{rights & handled_ & (dir ? ~0ull : kFileRights), fd};
    long r = a.allowed_access ? syscall(SYS_landlock_add_rule, fd_, kRulePathBeneath, &a, 0) : 0;
    int e = errno;
    close(fd);
    if (r != 0) {
      *why = path + ": landlock_add_rule: " + strerror(e);
      return false;
    }
    return true;
  }

 private:
  int fd_;
  uint64_t handled_;
};

// What a guest may do beneath a granted folder, and with a granted file.
uint64_t folder_rights(bool readonly, bool host_owners) {
  if (readonly) return kReadFile | kReadDir;
  return kReadFile | kWriteFile | kReadDir | kRemoveDir | kRemoveFile | kMakeDir | kMakeReg | kMakeSock | kMakeFifo |
         kMakeSym | kRefer | kTruncate | (host_owners ? kMakeChar | kMakeBlock : 0);
}

uint64_t file_rights(bool readonly) { return readonly ? kReadFile : kReadFile | kWriteFile | kTruncate; }

}  // namespace

int landlock_abi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? 0 : (int)abi;
}

bool apply_landlock(const SandboxGrant& g, const std::string& fifo_dir, bool mounts_hold_files, LandlockApplied* out,
                    std::string* why) {
  int abi = landlock_abi();
  out->abi = abi;
  if (abi < 1) {
    *why = errno == EOPNOTSUPP ? "disabled in this kernel" : "not in this kernel";
    return false;
  }
  // The whole host read-write leaves nothing for file rules to refuse
  // (executing is the allowlist's, device nodes the capabilities'), nor do
  // private mounts that hold every file, and a domain handling no file
  // access stays out of every open, which would otherwise walk the path up
  // to a rule (0.65 us plus 0.35 us a level on this machine) and, even
  // for rights it does not handle, keep per-layer books (about 0.1 us).
  bool whole_host = g.root == "/" && !g.root_readonly;
  RulesetAttr attr{whole_host || mounts_hold_files ? 0 : fs_rights(abi), 0, 0};
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    size = 2 * sizeof(uint64_t);
    if (g.net_none) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  }
  if (abi >= 6) {
    size = sizeof attr;
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
  }
  if (!attr.handled_access_fs && !attr.handled_access_net && !attr.scoped) return true;  // nothing to refuse
  long fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (fd < 0) {
    *why = std::string("landlock_create_ruleset: ") + strerror(errno);
    return false;
  }
  Ruleset rs((int)fd, attr.handled_access_fs);
  if (!rs.allow(g.root, folder_rights(g.root_readonly, g.host_owners), why)) return false;
  for (const SandboxGrant::Image& im : g.images)
    if (!rs.allow(im.path, file_rights(im.readonly), why)) return false;
  for (const SandboxGrant::Bind& b : g.binds)
    if (!rs.allow(b.path, b.folder ? folder_rights(b.readonly, g.host_owners) : file_rights(b.readonly), why))
      return false;
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
    if (!rs.allow(dev, kReadFile | kWriteFile, why)) return false;
  if (!rs.allow("/proc/cpuinfo", kReadFile, why)) return false;
  if (!fifo_dir.empty() && !rs.allow(fifo_dir, kMakeFifo | kRemoveFile | kReadFile | kWriteFile, why)) return false;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, rs.fd(), 0) != 0) {
    *why = std::string("landlock_restrict_self: ") + strerror(errno);
    return false;
  }
  out->files = attr.handled_access_fs != 0;
  out->net = attr.handled_access_net != 0;
  out->scopes = attr.scoped != 0;
  return true;
}

}  // namespace flatux::launcher
