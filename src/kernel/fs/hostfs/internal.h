// hostfs internals shared by its path operations, its open files, the
// guest attributes it keeps (attrs.cpp) and its extended attributes.
#pragma once
#include <atomic>
#include <sys/stat.h>

#include "kernel/vfs/inode.h"
#include "kernel/vfs/vfs.h"

namespace flatux {

struct HostFs {
  Heap* heap;
  int root_fd;
  bool root_is_slash;
  size_t root_len;
  char root[kPathMax];
  // Owners, set-id bits and device nodes go to the host as the guest gives
  // them (--hostfs-owners=host) instead of being kept by flatux.
  bool host_owners;
  // Who owns what this process makes on the host (its fsuid/fsgid).
  uint32_t host_uid, host_gid;
  // Host descriptors held by cached folders (dentries.cpp), and how many
  // may be: past that a folder is reached from the root folder again.
  std::atomic<int> dir_fds{0};
  int dir_fds_max = kDirFdsMax;
  // A cached name checked this recently is not asked again (dentries.cpp),
  // counted in TSC ticks at the rate measured when the mount was made.
  uint64_t trust_ns = kTrustNs;
  // A cached folder's descriptor found inside the root this recently
  // serves without asking again (dentries.cpp, hostfs_dentry_fd).
  uint64_t inside_ns = kInsideNs;
  uint64_t ticks_per_ms = 0;  // 0: none measured, nothing is trusted

  static constexpr int kDirFdsMax = 256;
  static constexpr uint64_t kTrustNs = 100'000'000;  // 100 ms
  static constexpr uint64_t kInsideNs = 10'000'000;  // 10 ms
};

// A hostfs file in the dentry cache (dentries.cpp): a folder keeps an
// O_PATH descriptor of itself (fd; -1 past the cap or for other files),
// and what identified it on the host when it was looked up.
struct HostInode : Inode {
  int fd = -1;
  uint64_t id_ino = 0;
  uint32_t id_type = 0;  // the host's type (a device node is a host symlink)
  bool id_has_btime = false;
  int64_t id_btime_sec = 0;
  uint32_t id_btime_nsec = 0;
  std::atomic<uint64_t> checked_at{0};  // last found at its name (hostfs_ticks)
  std::atomic<uint64_t> inside_at{0};   // fd last found inside the root folder
};

// The clock of the trust window: the TSC (see dentries.cpp), and whether
// `stamp` lies less than h.trust_ns before `now`.
uint64_t hostfs_ticks();
bool hostfs_fresh(const HostFs& h, uint64_t stamp, uint64_t now, uint64_t window_ns);
// The TSC's rate against the host's monotonic clock (spins about 1 ms).
uint64_t hostfs_measure_ticks_per_ms();

// n as a hostfs inode, or nullptr.
HostInode* hostfs_inode(Inode* n);
// The host descriptor of a folder dentry of fs: the root folder's for its
// root, its inode's own, or -1 (not of fs, no descriptor).
int hostfs_dentry_fd(HostFs& h, const Dentry* d);
// FsOps::lookup and FsOps::revalidate (dentries.cpp).
long hostfs_lookup(Task&, Filesystem& fs, Mount&, Dentry& dir, std::string_view name, Inode** out);
bool hostfs_revalidate(Task&, Filesystem& fs, Mount&, Dentry& d);
// FsOps::dir_perms: the folder's guest mode and owner as its last check
// found them, checked again first when that is not recent (a folder the
// walk started in: the cwd, a dirfd).
FilePerms hostfs_dir_perms(Task& t, Filesystem& fs, Mount& m, Dentry& d);
// The guest changed the mode or owner of lk's file: its cached inode is
// checked (and its fields read) again at the next walk through it.
void hostfs_attrs_changed(Task& t, Lookup& lk);

// openat2 of `rel` beneath the folder open as `dir`, following no link.
long hostfs_open_beneath(HostFs& h, int dir, const char* rel, uint64_t flags, uint64_t mode);
// Where the folder open as `fd` is now, as an inner path; -ENOENT when it
// is no longer inside the root folder (a host process moved it out).
long hostfs_inner_path(HostFs& h, int fd, char* out, size_t n);
// The inner path relative to the root folder ("." for the root).
const char* hostfs_relative(const char* inner);

inline HostFs& hostfs_of(Filesystem& fs) { return *static_cast<HostFs*>(fs.priv); }
// The hostfs an open file was opened on; nullptr for other host
// descriptors (pipes, sockets, stdio, devices, a reopened link).
HostFs* hostfs_of_file(const File& f);

extern const FileOps kHostFileOps;
extern const FileOps kMemfdFileOps;  // a memfd's (fs/memfd/memfd.h)

// "/proc/self/fd/N": names an open host descriptor (an O_PATH one too) for
// the host calls that take a path only.
struct FdPath {
  char s[32];
  explicit FdPath(long fd);
};

// ---- guest attributes (attrs.cpp) ------------------------------------------
//
// A file a guest gave an owner, a set-id bit or a type the host must not
// hold keeps the guest's view in flatux's own records; the host file stays
// the invoking user's, never set-id, never a device node.
//
//   regular files, folders   a `user.flatux.attr` extended attribute holding
//                            the guest's mode bits, uid and gid; the host
//                            file then carries the sticky bit (meaningless on
//                            a regular file, harmless on a folder flatux
//                            serves) as the sign to look for it, so files
//                            without one cost nothing extra. A folder's
//                            set-group-ID bit stays on the host, which hands
//                            it on to new folders inside
//   device nodes             a host symlink whose target starts with
//                            kNodeMagic and spells the type, number, mode and
//                            owner; the host never opens it as a device, and
//                            a guest cannot make such a link itself
//   FIFOs, sockets, symlinks owners go to the host (they cannot carry user
//                            extended attributes, and have nothing to run)

constexpr const char kAttrXattr[] = "user.flatux.attr";
constexpr const char kXattrReserved[] = "user.flatux.";  // hidden from guests
constexpr const char kNodeMagic[] = "\177flatux-node:";

// What the guest sees of a host file: its stat with the guest's mode,
// owner and (for a device node) type and number.
struct GuestNode {
  struct stat st;
  bool record = false;  // st carries a user.flatux.attr record
  bool device = false;  // a device node kept as a host symlink
};

// Fills n from host descriptor `fd` (O_PATH or open). `host` is the host's
// fstat of it. Never fails: without a record the host's view is the guest's.
void guest_view(HostFs& h, int fd, const struct stat& host, GuestNode* n);
// The same for `name` in the folder open as `dir` (its statx as `host`).
void guest_view_at(HostFs& h, int dir, const char* name, const struct stat& host, GuestNode* n);

// A symlink target is a device node record: fills st's type, rdev, mode,
// uid and gid.
bool parse_node_link(std::string_view target, struct stat* st);
// Spells a device node as a symlink target.
long format_node_link(uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid, char* out, size_t n);

// Applies the owner and mode parts of `a` to the file behind `fd` (host
// fstat `host`, guest view `n`). Times and size are not touched.
long set_guest_owner_mode(HostFs& h, int fd, const struct stat& host, const GuestNode& n, const Attr& a);

// After the host made a file or folder for a guest whose fsuid/fsgid are
// uid/gid, with the guest's requested mode: what the VFS does not do
// itself (new_file_needs_adoption) is recorded, and the set-id bits are
// taken off the host file.
void adopt_new_file(HostFs& h, int fd, uint32_t mode, uint32_t uid, uint32_t gid);
bool new_file_needs_adoption(const HostFs& h, uint32_t mode, uint32_t uid, uint32_t gid);

// A guest's extended-attribute request on the host file open as `fd` (an
// O_PATH descriptor too): user.* only, flatux's own records hidden.
long hostfs_fd_xattr(Heap* heap, int fd, XattrOp& op);

}  // namespace flatux
