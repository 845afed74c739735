// A private mount namespace in which only what the command line granted
// exists, each at its own host path: the guest's root folder (read-only
// with --ro; never set-id, never device nodes), the ubd images, the five
// character devices the kernel opens for guests (null, zero, full, random,
// urandom), and an empty tmpfs at /dev/shm for the host FIFOs behind the
// kernel's named pipes. Of the host's /proc only two things: /proc/cpuinfo
// and, at /proc/self/fd, this process's own descriptor folder, whose magic
// links the kernel reopens its descriptors through (every host process of
// a run shares one descriptor table, so the folder is right for all of
// them); the host paths bound besides the root (an OCI bundle's bind
// mounts), each at its host path too; no other process's /proc/PID, no /proc/sys, no /proc/net.
// Everything else of the host's tree is gone: no path leads to a host
// file, a host socket or a device outside the grant, whatever a call
// names. (Landlock can refuse opening, making and removing files, but not
// chmod, chown, utimes, xattrs or connecting to a socket by path; the
// mounts cannot refuse reopening, through /proc/self/fd, a file the
// process was handed, such as a standard input redirected from a host
// file, in a mode it was not given: Landlock does.)
#include "launcher/sandbox/jail_mounts.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000  // linux/fcntl.h, which glibc's fcntl.h does not include
#endif

namespace flatux::launcher {
namespace {

constexpr const char* kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool fail(std::string* why, const std::string& what) {
  *why = what + ": " + strerror(errno);
  return false;
}

// A detached copy of the mount tree at `path` (one file or a folder with
// the mounts below it), with `attrs` set on every mount of it.
bool clone_tree(const std::string& path, bool recursive, uint64_t attrs, Fd* out, std::string* why) {
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
  int fd = open_tree(AT_FDCWD, path.c_str(), flags);
  if (fd < 0) return fail(why, "open_tree " + path);
  *out = Fd(fd);
  if (attrs) {
    mount_attr a{};
    a.attr_set = attrs;
    if (mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof a) != 0)
      return fail(why, "mount_setattr " + path);
  }
  return true;
}

bool new_tmpfs(const char* mode, const char* size, const char* inodes, Fd* out, std::string* why) {
  Fd ctx(fsopen("tmpfs", FSOPEN_CLOEXEC));
  if (ctx.fd < 0) return fail(why, "fsopen tmpfs");
  if (fsconfig(ctx.fd, FSCONFIG_SET_STRING, "mode", mode, 0) != 0 ||
      fsconfig(ctx.fd, FSCONFIG_SET_STRING, "size", size, 0) != 0 ||
      fsconfig(ctx.fd, FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) != 0 ||
      fsconfig(ctx.fd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return fail(why, "tmpfs");
  int m = fsmount(ctx.fd, FSMOUNT_CLOEXEC, 0);
  if (m < 0) return fail(why, "fsmount");
  *out = Fd(m);
  return true;
}

// Makes every folder of `path` (absolute) below `root`; with `file`, the
// last component is an empty file to mount a file on.
bool make_path(int root, const std::string& path, bool file, std::string* why) {
  std::string rel = path.substr(1);
  for (size_t pos = rel.find('/'); pos != std::string::npos; pos = rel.find('/', pos + 1)) {
    std::string dir = rel.substr(0, pos);
    if (mkdirat(root, dir.c_str(), 0755) != 0 && errno != EEXIST) return fail(why, "mkdir " + dir);
  }
  if (rel.empty()) return true;
  if (!file) {
    if (mkdirat(root, rel.c_str(), 0755) != 0 && errno != EEXIST) return fail(why, "mkdir " + rel);
    return true;
  }
  int fd = openat(root, rel.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return fail(why, "creating " + rel);
  close(fd);
  return true;
}

bool place(int root, Fd& tree, const std::string& path, bool file, std::string* why) {
  if (!make_path(root, path, file, why)) return false;
  if (move_mount(tree.fd, "", root, path.c_str() + 1, MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return fail(why, "mounting " + path);
  return true;
}

}  // namespace

bool build_jail_mounts(const SandboxGrant& g, std::string* why) {
  if (g.root == "/" || g.root.compare(0, 6, "/proc/") == 0 || g.root == "/proc") {
    *why = "the root folder " + g.root + " cannot be shown alone";
    return false;
  }
  // Nothing done here may reach the host's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(why, "making mounts private");

  // Copies of what is granted, taken while the host's tree is still in view.
  Fd jail, own_fds, cpuinfo, devices[sizeof kDevices / sizeof kDevices[0]];
  // Device nodes in the root are the host's only when owners pass through
  // (--hostfs-owners=host); otherwise flatux keeps guests' nodes itself.
  uint64_t root_attrs = MOUNT_ATTR_NOSUID | (g.host_owners ? 0 : MOUNT_ATTR_NODEV) |
                        (g.root_readonly ? MOUNT_ATTR_RDONLY : 0);
  if (!clone_tree(g.root, true, root_attrs, &jail, why)) return false;
  constexpr uint64_t kProcAttrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  if (!clone_tree("/proc/self/fd", false, kProcAttrs, &own_fds, why) ||
      !clone_tree("/proc/cpuinfo", false, kProcAttrs | MOUNT_ATTR_RDONLY, &cpuinfo, why))
    return false;
  for (size_t i = 0; i < sizeof kDevices / sizeof kDevices[0]; i++)
    if (!clone_tree(kDevices[i], false, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, &devices[i], why)) return false;
  std::vector<Fd> images;
  for (const SandboxGrant::Image& im : g.images) {
    images.emplace_back();
    uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC | (im.readonly ? MOUNT_ATTR_RDONLY : 0);
    if (!clone_tree(im.path, false, attrs, &images.back(), why)) return false;
  }

  std::vector<Fd> binds;
  for (const SandboxGrant::Bind& b : g.binds) {
    binds.emplace_back();
    uint64_t attrs = MOUNT_ATTR_NOSUID | (g.host_owners ? 0 : MOUNT_ATTR_NODEV) | (b.readonly ? MOUNT_ATTR_RDONLY : 0);
    if (!clone_tree(b.path, b.folder, attrs, &binds.back(), why)) return false;
  }

  // The new root: a small tmpfs holding the copies at their host paths.
  Fd root, shm;
  if (!new_tmpfs("0755", "1m", "4096", &root, why)) return false;
  if (!new_tmpfs("1777", "1m", "65536", &shm, why)) return false;
  if (!place(root.fd, shm, "/dev/shm", false, why) || !make_path(root.fd, "/tmp", false, why) ||
      !place(root.fd, own_fds, "/proc/self/fd", false, why) || !place(root.fd, cpuinfo, "/proc/cpuinfo", true, why))
    return false;
  for (size_t i = 0; i < sizeof kDevices / sizeof kDevices[0]; i++)
    if (!place(root.fd, devices[i], kDevices[i], true, why)) return false;
  // Shorter paths first: a granted path inside another is placed on the
  // copy of its container, not hidden under it.
  struct Placement {
    Fd* tree;
    const std::string* path;
    bool file;
  };
  std::vector<Placement> grants{{&jail, &g.root, false}};
  for (size_t i = 0; i < images.size(); i++) grants.push_back({&images[i], &g.images[i].path, true});
  for (size_t i = 0; i < binds.size(); i++) grants.push_back({&binds[i], &g.binds[i].path, !g.binds[i].folder});
  std::stable_sort(grants.begin(), grants.end(),
                   [](const Placement& a, const Placement& b) { return a.path->size() < b.path->size(); });
  for (Placement& p : grants)
    if (!place(root.fd, *p.tree, *p.path, p.file, why)) return false;
  mount_attr ro{};
  ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  if (mount_setattr(root.fd, "", AT_EMPTY_PATH, &ro, sizeof ro) != 0) return fail(why, "read-only root");

  // Attach it anywhere in our own namespace and make it the root. From
  // here on a failure leaves the process without its paths: fatal.
  const char* at = nullptr;
  struct stat st;
  for (const char* c : {"/tmp", "/mnt", "/var", "/usr"})
    if (stat(c, &st) == 0 && S_ISDIR(st.st_mode)) {
      at = c;
      break;
    }
  if (!at || move_mount(root.fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) != 0 || fchdir(root.fd) != 0 ||
      syscall(SYS_pivot_root, ".", ".") != 0 || umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) {
    fprintf(stderr, "flatux: sandbox: entering the private mount namespace: %s\n", strerror(errno));
    _exit(125);
  }
  return true;
}

bool build_host_mounts(const SandboxGrant& g, bool* own_proc, std::string* why) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(why, "making mounts private");
  // Writable images are copied before the tree turns read-only, and
  // placed back over themselves after.
  std::vector<Fd> images;
  for (const SandboxGrant::Image& im : g.images) {
    images.emplace_back();
    uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC | (im.readonly ? MOUNT_ATTR_RDONLY : 0);
    if (!clone_tree(im.path, false, attrs, &images.back(), why)) return false;
  }
  Fd shm;
  if (g.root_readonly && !new_tmpfs("1777", "1m", "65536", &shm, why)) return false;
  mount_attr a{};
  a.attr_set = MOUNT_ATTR_NOSUID | (g.root_readonly ? MOUNT_ATTR_RDONLY : 0);
  if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &a, sizeof a) != 0) return fail(why, "mount_setattr /");
  if (g.root_readonly && move_mount(shm.fd, "", AT_FDCWD, "/dev/shm", MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return fail(why, "mounting /dev/shm");
  for (size_t i = 0; i < images.size(); i++)
    if (move_mount(images[i].fd, "", AT_FDCWD, g.images[i].path.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
      return fail(why, "mounting " + g.images[i].path);
  // The run's own /proc: the host's shows every host process. Where the
  // host forbids it (a /proc with parts hidden by a container engine),
  // the host's stays.
  if (*own_proc) *own_proc = mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
  return true;
}

}  // namespace flatux::launcher
