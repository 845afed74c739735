#include "kernel/fs/devfs/devfs.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/block/loop.h"
#include "kernel/block/ubd.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/printk_kmsg.h"
#include "kernel/tty/console.h"
#include "kernel/tty/pty.h"
#include "kernel/vfs/new_fs.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

// A device the kernel implements itself (console, kmsg).
using KernelDevOpen = long (*)(Task&, int flags, File**);

struct DevNode {
  const char* name;
  const char* host;    // host device opened for it, or nullptr
  const char* target;  // symlink target
  KernelDevOpen kernel_open = nullptr;
  uint64_t rdev = 0;   // for kernel devices
  uint32_t perm = 0620;  // for kernel devices
  bool dir = false;      // an (empty) directory: a mount point
};

// /dev/tty is the caller's controlling terminal; without one it is the
// host's until the kernel has a console of its own.
long open_tty(Task& t, int flags, File** out) {
  long r = ctty_open(t, flags, out);
  return r == -ENXIO && !t.kernel->console ? -ENOENT : r;
}

constexpr DevNode kNodes[] = {
    {"null", "/dev/null", nullptr},       {"zero", "/dev/zero", nullptr},
    {"full", "/dev/full", nullptr},       {"random", "/dev/random", nullptr},
    {"urandom", "/dev/urandom", nullptr}, {"tty", "/dev/tty", nullptr, open_tty, (5 << 8) | 0},
    {"console", nullptr, nullptr, console_open, (5 << 8) | 1},
    {"kmsg", nullptr, nullptr, kmsg_open, (1 << 8) | 11},
    {"loop-control", nullptr, nullptr, loop_control_open, kLoopControlRdev, 0600},
    {"ptmx", nullptr, nullptr, ptmx_open, kPtmxRdev, 0666},
    {"pts", nullptr, nullptr, nullptr, 0, 0755, true},
    {"shm", nullptr, nullptr, nullptr, 0, 01777, true},
    {"fd", nullptr, "/proc/self/fd"},     {"stdin", nullptr, "/proc/self/fd/0"},
    {"stdout", nullptr, "/proc/self/fd/1"}, {"stderr", nullptr, "/proc/self/fd/2"},
};
constexpr uint64_t kDevfsDev = 0x5;

// nullptr with *root set for "/", else the node named by the first
// component; *rest is what follows it (a path below a link: /dev/fd/3).
const DevNode* find(const char* path, bool* root, std::string_view* rest) {
  std::string_view p(path);
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  size_t slash = p.find('/');
  *rest = slash == std::string_view::npos ? std::string_view() : tail(p, slash + 1);
  p = head(p, slash);
  *root = p.empty();
  for (const DevNode& n : kNodes)
    if (p == n.name) return &n;
  return nullptr;
}

// The node for lk, or an error: a link to follow becomes a redirect.
long resolve(Lookup& lk, const DevNode** out, bool* root) {
  std::string_view rest;
  const DevNode* n = find(lk.path, root, &rest);
  *out = n;
  if (*root) return 0;
  if (!n) return -ENOENT;
  if (n->target && (lk.follow || !rest.empty()))
    return vfs_make_redirect(lk, lk.path, n->target, rest);
  return rest.empty() ? 0 : n->dir ? -ENOENT : -ENOTDIR;
}

// /dev/ubda..., /dev/loop0... for each block device, opened (block_put).
BlockDevice* block_node(Task& t, const char* path) {
  while (*path == '/') path++;
  if (strncmp(path, "ubd", 3) != 0 && strncmp(path, "loop", 4) != 0) return nullptr;
  return block_get_named(*t.kernel, path);
}

long dev_stat(Task& t, Filesystem&, Lookup& lk, struct stat* out) {
  if (BlockDevice* b = block_node(t, lk.path)) {
    block_stat(*b, out);
    block_put(*b);
    out->st_dev = kDevfsDev;
    return 0;
  }
  bool root;
  const DevNode* n;
  long r = resolve(lk, &n, &root);
  if (r) return r;
  if (root || n->dir) {
    synth_stat(out, S_IFDIR | (root ? 0755 : n->perm), root ? 1 : 2 + (n - kNodes), 0, kDevfsDev);
    return 0;
  }
  if (n->target) {
    synth_stat(out, S_IFLNK | 0777, 2 + (n - kNodes), strlen(n->target), kDevfsDev);
    return 0;
  }
  if (n->kernel_open && (!n->host || t.kernel->console)) {
    synth_stat(out, S_IFCHR | n->perm, 2 + (n - kNodes), 0, kDevfsDev);
    out->st_rdev = n->rdev;
    return 0;
  }
  return host::sys(SYS_newfstatat, AT_FDCWD, n->host, out, 0);
}

// Opens a device node: the kernel's own device, or the host's.
long open_node(Task& t, const DevNode& n, int flags, File** out) {
  if (n.kernel_open) {
    long r = n.kernel_open(t, flags, out);
    if (r != -ENOENT || !n.host) return r;
  }
  long fd = host::sys(SYS_openat, AT_FDCWD, n.host,
                      (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC | O_NOCTTY, 0);
  if (fd < 0) return fd;
  File* f = hostfs_adopt_host_fd(t.kernel->heap, (int)fd, (uint32_t)flags & ~O_CLOEXEC);
  if (!f) return -ENOMEM;
  *out = f;
  return 0;
}

long dev_open(Task& t, Filesystem& fs, Lookup& lk, int flags, int, File** out) {
  bool root;
  const DevNode* n;
  if (BlockDevice* b = block_node(t, lk.path)) {
    long r = block_open(t.kernel->heap, *b, flags, out);
    if (r < 0) block_put(*b);
    else (*out)->fs = &fs;
    return r;
  }
  lk.follow = !(flags & O_NOFOLLOW);
  long r = resolve(lk, &n, &root);
  if (r) return r == -ENOENT && (flags & O_CREAT) ? -EACCES : r;
  if (root) {
    if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
    SynthDirent ents[sizeof kNodes / sizeof kNodes[0] + kMaxUbd + kMaxLoop];
    int i = 0;
    for (const DevNode& d : kNodes) {
      copy_cstr(ents[i].name, sizeof ents[i].name, d.name);
      ents[i].type = d.target ? DT_LNK : d.dir ? DT_DIR : DT_CHR;
      ents[i].ino = 2 + i;
      i++;
    }
    for (int u = 0; u < kMaxUbd; u++)
      if (BlockDevice* b = ubd_by_index(*t.kernel, u)) {
        copy_cstr(ents[i].name, sizeof ents[i].name, b->name);
        ents[i].type = DT_BLK;
        ents[i].ino = 100 + (uint64_t)u;
        i++;
      }
    struct Listing {
      SynthDirent* ents;
      int* n;
    } listing{ents, &i};
    loop_for_each(*t.kernel, [](void* ctx, const BlockDevice& d) {
      Listing& l = *static_cast<Listing*>(ctx);
      SynthDirent& e = l.ents[(*l.n)++];
      copy_cstr(e.name, sizeof e.name, d.name);
      e.type = DT_BLK;
      e.ino = 1000 + (uint64_t)d.index;
    }, &listing);
    File* f = synth_dir_file(t.kernel->heap, ents, i, S_IFDIR | 0755, 1);
    if (!f) return -ENOMEM;
    f->fs = &fs;
    *out = f;
    return 0;
  }
  if (n->target) return (flags & O_PATH) ? -EOPNOTSUPP : -ELOOP;
  if (n->dir) {
    if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
    File* f = synth_dir_file(t.kernel->heap, nullptr, 0, S_IFDIR | 0755, 2 + (n - kNodes));
    if (!f) return -ENOMEM;
    f->fs = &fs;
    *out = f;
    return 0;
  }
  if (flags & O_DIRECTORY) return -ENOTDIR;
  r = open_node(t, *n, flags, out);
  if (r == 0) (*out)->fs = &fs;
  return r;
}

long dev_readlink(Task&, Filesystem&, Lookup& lk, char* buf, size_t n) {
  bool root;
  const DevNode* d;
  long r = resolve(lk, &d, &root);
  if (r) return r;
  if (root || !d->target) return -EINVAL;
  size_t len = strlen(d->target);
  if (len > n) len = n;
  memcpy(buf, d->target, len);
  return (long)len;
}

long dev_access(Task& t, Filesystem& fs, Lookup& lk, int) {
  struct stat st;
  return dev_stat(t, fs, lk, &st);
}

long dev_statfs(Task&, Filesystem&, Lookup&, struct statfs* out) {
  memset(out, 0, sizeof *out);
  out->f_type = 0x1021994;  // TMPFS_MAGIC, as devtmpfs reports
  out->f_bsize = 4096;
  out->f_namelen = 255;
  return 0;
}

const FsOps kDevFsOps = {
    .name = "devtmpfs",
    .open = dev_open,
    .stat = dev_stat,
    .readlink = dev_readlink,
    .access = dev_access,
    .statfs = dev_statfs,
};

}  // namespace

long devfs_open_rdev(Task& t, uint64_t rdev, int flags, File** out) {
  if ((rdev >> 8 & 0xfff) == kPtySlaveMajor) {
    uint64_t minor = (rdev & 0xff) | ((rdev >> 12) & ~0xffull);
    return minor < kMaxPtys ? pty_slave_open(t, (int)minor, flags, out) : -ENXIO;
  }
  for (const DevNode& n : kNodes) {
    if (n.target || n.dir) continue;
    uint64_t r = n.rdev;
    struct stat st;
    if (!r && host::sys(SYS_newfstatat, AT_FDCWD, n.host, &st, 0) == 0) r = st.st_rdev;
    if (r == rdev) return open_node(t, n, flags, out);
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

long devfs_create(Heap* heap, Filesystem** out) {
  Filesystem* fs = heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kDevFsOps;
  fs->dev = kDevfsDev;
  *out = fs;
  return 0;
}

long devfs_mount_shm(Kernel& k) {
  return mount_new_fs(k, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
}

namespace {
long devfs_mount(Kernel& k, const char*, unsigned long, const char*, Filesystem** out) {
  return devfs_create(k.heap, out);
}
}  // namespace

const FsType kDevFsType = {.name = "devtmpfs", .mount = devfs_mount};

}  // namespace flatux
