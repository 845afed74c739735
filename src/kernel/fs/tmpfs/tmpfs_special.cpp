// Opening tmpfs FIFOs and device nodes.
//
// A FIFO inode owns a host FIFO: made in the folder the host's sandbox
// gives the kernel for them (KernelConfig::fifo_dir; else /dev/shm or
// /tmp), opened with O_PATH so it counts as neither reader nor writer, and
// unlinked at once, so no name of it remains on the host. Each guest open reopens it through
// /proc/self/fd, which the host treats as opening the named pipe: the
// blocking rules (a reader waits for a writer), ENXIO for a non-blocking
// writer without readers, and EOF once the last writer is gone all come
// from the host. (An anonymous pipe reopened that way would not wait.)
// Character devices open what devfs has under the same number.
#include <fcntl.h>
#include <span>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/task/isys.h"
#include "host/raw_syscall.h"
#include "kernel/fs/devfs/devfs.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/memfd/memfd.h"
#include "kernel/fs/tmpfs/tmpfs.h"
#include "kernel/fs/tmpfs/tmpfs_internal.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/signal/signal.h"
#include "kernel/task/task.h"

namespace flatux {
namespace {

constexpr uint32_t kPassFlags = O_ACCMODE | O_NONBLOCK | O_APPEND | O_NOCTTY;

long wrap(Task& t, long fd, int flags, File** out) {
  if (fd < 0) return fd == -EINTR ? -ERESTARTSYS : fd;
  File* f = hostfs_adopt_host_fd(t.kernel->heap, (int)fd, (uint32_t)flags & ~O_CLOEXEC);
  if (!f) return -ENOMEM;
  *out = f;
  return 0;
}

// The O_PATH descriptor of the inode's host FIFO, made on first use in
// `dir` (the folder the host's confinement lets the kernel make FIFOs in),
// else in /dev/shm or /tmp.
long fifo_handle(Tmpfs& fs, TmpInode& n, const char* dir) {
  Guard g(fs.lock);
  if (n.fifo_fd >= 0) return n.fifo_fd;
  long r = -ENOENT;
  const char* dirs[] = {dir, "/dev/shm", "/tmp"};
  for (const char* d : dir[0] ? std::span(dirs, 1) : std::span(dirs + 1, 2)) {
    char path[kPathMax];
    KFmt p(path, sizeof path);
    p.str(d).str("/.flatux-fifo-").dec(host::sys(SYS_getpid)).ch('-').udec(fs.dev).ch('-').udec(n.ino);
    host::sys(SYS_unlinkat, AT_FDCWD, p.c_str(), 0);  // a leftover of a crashed run with our pid
    r = host::sys(SYS_mknodat, AT_FDCWD, p.c_str(), S_IFIFO | 0600, 0);
    if (r < 0) continue;
    r = host::sys(SYS_openat, AT_FDCWD, p.c_str(), O_PATH | O_CLOEXEC);
    host::sys(SYS_unlinkat, AT_FDCWD, p.c_str(), 0);
    if (r >= 0) break;
  }
  if (r < 0) return r;
  n.fifo_fd = (int)r;
  return r;
}

}  // namespace

long tmpfs_open_special(Task& t, TmpInode& n, int flags, File** out) {
  Tmpfs& fs = *n.fs;
  if (S_ISFIFO(n.mode)) {
    long h = fifo_handle(fs, n, t.kernel->cfg.fifo_dir);  // the caller's reference keeps it open
    if (h < 0) return h;
    char path[48];
    KFmt p(path, sizeof path);
    p.str("/proc/self/fd/").dec(h);
    // May block until the other side opens; a guest signal interrupts it.
    long r = wrap(t, isys(t, SYS_openat, AT_FDCWD, p.c_str(), (flags & kPassFlags) | O_CLOEXEC), flags, out);
    // The pipe buffer, charged as an anonymous pipe's while it is open.
    if (r == 0) host_charge_adopt(**out, t.kernel->mem);
    return r;
  }
  if (!S_ISCHR(n.mode) && !S_ISBLK(n.mode)) return -ENXIO;  // a socket
  long r = S_ISCHR(n.mode) ? devfs_open_rdev(t, n.rdev, flags, out) : devfs_open_block(t, n.rdev, flags, out);
  if (r == 0) (*out)->node_attrs = true;
  return r;
}

}  // namespace flatux
