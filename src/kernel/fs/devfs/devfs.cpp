#include "kernel/fs/devfs/devfs.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/block/loop.h"
#include "kernel/block/ubd.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/tmpfs/tmpfs.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/printk_kmsg.h"
#include "kernel/tty/console.h"
#include "kernel/tty/pty.h"
#include "kernel/vfs/new_fs.h"

namespace flatux {
namespace {

// A device the kernel implements itself (console, kmsg).
using KernelDevOpen = long (*)(Task&, int flags, File**);

// What devtmpfs holds when it is made: devices (the host's harmless ones,
// opened directly, and the kernel's own), folders and links.
struct DevNode {
  const char* name;
  const char* host;    // host device opened for it, or nullptr
  const char* target;  // symlink target
  KernelDevOpen kernel_open = nullptr;
  uint64_t rdev = 0;     // for kernel devices (host devices: the host's number)
  uint32_t perm = 0666;
  bool dir = false;      // an (empty) folder: a mount point
  bool vt = false;       // a virtual terminal: only on a console that is a terminal
};

// /dev/tty is the caller's controlling terminal; without one it is the
// host's until the kernel has a console of its own.
long open_tty(Task& t, int flags, File** out) {
  long r = ctty_open(t, flags, out);
  return r == -ENXIO && !t.kernel->console ? -ENOENT : r;
}

long open_tty0(Task& t, int flags, File** out) { return console_vt_open(t, flags, 0, out); }
long open_tty1(Task& t, int flags, File** out) { return console_vt_open(t, flags, 1, out); }

constexpr DevNode kNodes[] = {
    {"null", "/dev/null", nullptr},       {"zero", "/dev/zero", nullptr},
    {"full", "/dev/full", nullptr},       {"random", "/dev/random", nullptr},
    {"urandom", "/dev/urandom", nullptr}, {"tty", "/dev/tty", nullptr, open_tty, (5 << 8) | 0},
    {"console", nullptr, nullptr, console_open, (5 << 8) | 1, 0600},
    // The one virtual terminal, the console's (UML's con0): getty's.
    {"tty0", nullptr, nullptr, open_tty0, (4 << 8) | 0, 0620, false, true},
    {"tty1", nullptr, nullptr, open_tty1, (4 << 8) | 1, 0620, false, true},
    {"kmsg", nullptr, nullptr, kmsg_open, (1 << 8) | 11, 0644},
    {"loop-control", nullptr, nullptr, loop_control_open, kLoopControlRdev, 0660},
    {"ptmx", nullptr, nullptr, ptmx_open, kPtmxRdev, 0666},
    {"pts", nullptr, nullptr, nullptr, 0, 0755, true},
    {"shm", nullptr, nullptr, nullptr, 0, 01777, true},
    {"fd", nullptr, "/proc/self/fd"},     {"stdin", nullptr, "/proc/self/fd/0"},
    {"stdout", nullptr, "/proc/self/fd/1"}, {"stderr", nullptr, "/proc/self/fd/2"},
};

// The device number of node n (a host device's is the host's); 0: none here.
uint64_t rdev_of(const DevNode& n) {
  if (n.rdev || !n.host) return n.rdev;
  struct stat st;
  return host::sys(SYS_newfstatat, AT_FDCWD, n.host, &st, 0) == 0 ? st.st_rdev : 0;
}

// Opens a device node: the kernel's own device, or the host's.
long open_node(Task& t, const DevNode& n, int flags, File** out) {
  if (n.kernel_open) {
    long r = n.kernel_open(t, flags, out);
    if (r != -ENOENT || !n.host) return r;
  }
  long fd = host::sys(SYS_openat, AT_FDCWD, n.host,
                      (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC | O_NOCTTY, 0);
  // tty without a terminal of the kernel's or the host's: as Linux's
  // /dev/tty without a controlling terminal.
  if (fd == -ENOENT && n.kernel_open) return -ENXIO;
  if (fd < 0) return fd;
  File* f = hostfs_adopt_host_fd(t.kernel->heap, (int)fd, (uint32_t)flags & ~O_CLOEXEC);
  if (!f) return -ENOMEM;
  *out = f;
  return 0;
}

void add_block_node(Kernel& k, const BlockDevice& d) {
  tmpfs_kernel_node(*k.devtmpfs, d.name, S_IFBLK | 0660, block_devnum(d), nullptr);
}

long populate(Kernel& k, Filesystem& fs) {
  for (const DevNode& n : kNodes) {
    long r;
    if (n.vt && !console_is_terminal(k)) continue;  // (systemd then starts no getty on it)
    if (n.dir) {
      r = tmpfs_kernel_node(fs, n.name, S_IFDIR | n.perm, 0, nullptr);
    } else if (n.target) {
      r = tmpfs_kernel_node(fs, n.name, S_IFLNK | 0777, 0, n.target);
    } else {
      uint64_t rdev = rdev_of(n);
      if (!rdev) continue;  // a host device the host does not have
      r = tmpfs_kernel_node(fs, n.name, S_IFCHR | n.perm, rdev, nullptr);
    }
    if (r < 0) return r;
  }
  for (int u = 0; u < kMaxUbd; u++)
    if (BlockDevice* b = ubd_by_index(k, u)) add_block_node(k, *b);
  loop_for_each(k, [](void* ctx, const BlockDevice& d) { add_block_node(*static_cast<Kernel*>(ctx), d); }, &k);
  return 0;
}

long devtmpfs_mount(Kernel& k, const char*, unsigned long, const char*, Filesystem** out) {
  return devtmpfs_create(k, out);
}

}  // namespace

long devfs_open_rdev(Task& t, uint64_t rdev, int flags, File** out) {
  if ((rdev >> 8 & 0xfff) == kPtySlaveMajor) {
    uint64_t minor = (rdev & 0xff) | ((rdev >> 12) & ~0xffull);
    return minor < kMaxPtys ? pty_slave_open(t, (int)minor, flags, out) : -ENXIO;
  }
  for (const DevNode& n : kNodes) {
    if (n.target || n.dir) continue;
    if (rdev_of(n) == rdev) return open_node(t, n, flags, out);
  }
  return -ENXIO;
}

long devfs_open_block(Task& t, uint64_t rdev, int flags, File** out) {
  BlockDevice* d = block_get(*t.kernel, rdev);
  if (!d) return -ENXIO;
  long r = block_open(t.kernel->heap, *d, flags, out);
  if (r < 0) block_put(*d);
  return r;
}

long devtmpfs_create(Kernel& k, Filesystem** out) {
  Guard g(k.devtmpfs_lock);
  if (!k.devtmpfs) {
    Filesystem* fs = nullptr;
    long r = tmpfs_new_fs(k, "mode=755", &fs);
    if (r < 0) return r;
    k.devtmpfs = fs;  // before populate: block nodes go in through it
    if ((r = populate(k, *fs)) < 0) return r;  // kept, as far as it got
  }
  *out = k.devtmpfs;
  return 0;
}

void devtmpfs_block_added(Kernel& k, const BlockDevice& d) {
  Guard g(k.devtmpfs_lock);
  if (k.devtmpfs) add_block_node(k, d);
}

long devfs_mount_shm(Kernel& k) {
  return mount_new_fs(k, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
}

namespace {

// What the runtime spec gives every container in /dev besides its mounts
// (config-linux.md, "Default Devices" and "/dev symbolic links"), as runc
// makes it: the kernel's devtmpfs nodes of those names.
constexpr const char* kContainerDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

}  // namespace

long devfs_drop_run_dev(Kernel& k) {
  for (const char* at : {"/dev/shm", "/dev/pts", "/dev"}) {
    Mount* m = k.vfs->find_exact(k.vfs->init_ns(), at);
    if (!m) continue;
    long r = k.vfs->umount(m, false);
    m->put();
    if (r < 0) return r;
  }
  return 0;
}

long devfs_populate_container(Kernel& k, const char* at, bool console) {
  Mount* m = k.vfs->find_exact(k.vfs->init_ns(), at);
  if (!m) return -ENOENT;
  long r = m->type == &kTmpFsType ? 0 : -EINVAL;
  Filesystem& fs = *m->fs;
  for (const DevNode& n : kNodes) {
    bool wanted = false;
    for (const char* name : kContainerDevices) wanted |= strcmp(n.name, name) == 0;
    if (console && strcmp(n.name, "console") == 0) wanted = true;  // the terminal's; runc binds its pty there
    uint64_t rdev = wanted ? rdev_of(n) : 0;
    if (r == 0 && rdev) r = tmpfs_kernel_node(fs, n.name, S_IFCHR | n.perm, rdev, nullptr);
  }
  static const struct {
    const char* name;
    const char* target;
  } kLinks[] = {{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
                {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"}};
  for (const auto& l : kLinks)
    if (r == 0) r = tmpfs_kernel_node(fs, l.name, S_IFLNK | 0777, 0, l.target);
  for (const char* dir : {"pts", "shm", "mqueue"})
    if (r == 0) r = tmpfs_kernel_node(fs, dir, S_IFDIR | 0755, 0, nullptr);
  m->put();
  return r;
}

long devfs_container_mount_point(Kernel& k, const char* at, bool dir) {
  const char* slash = strrchr(at, '/');
  if (!slash || slash == at) return -EINVAL;
  char parent[kPathMax];
  size_t n = (size_t)(slash - at);
  if (n >= sizeof parent) return -ENAMETOOLONG;
  memcpy(parent, at, n);
  parent[n] = 0;
  Mount* m = k.vfs->find_exact(k.vfs->init_ns(), parent);
  if (!m) return -ENOENT;
  long r = m->type != &kTmpFsType ? -ENOENT
                                  : tmpfs_kernel_node(*m->fs, slash + 1, dir ? S_IFDIR | 0755 : S_IFREG | 0644, 0, nullptr);
  m->put();
  return r == -EEXIST ? 0 : r;
}

// One instance for the whole kernel, as Linux's devtmpfs: every mount of
// it shows the same nodes, and it stays when the last mount goes.
const FsType kDevFsType = {
    .name = "devtmpfs",
    .mount = devtmpfs_mount,
    .unmount = nullptr,
    .remount = tmpfs_remount,
    .show_options = tmpfs_options,
};

}  // namespace flatux
