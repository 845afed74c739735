// Pipes, first cut: a host pipe per guest pipe. The host gives PIPE_BUF
// atomicity, blocking and O_NONBLOCK semantics, and EPIPE (the host's own
// SIGPIPE is ignored; the guest's is raised by the write path). A blocked
// reader blocks its own task's host thread only.
//
// A pipe's capacity is charged to mem= while it exists, as Linux charges
// pipe buffers to their user (pipe-user-pages-soft/hard): a new pipe gets
// Linux's default 16 pages, or its minimum of 2 when that does not fit
// (Linux's answer past the soft limit), and pipe() fails with ENFILE when
// not even those fit (past the hard limit). F_SETPIPE_SZ charges growth
// first (EPERM past the limit, as Linux) and gives back what shrinks.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"
#include "kernel/mm/host_charge.h"
#include "kernel/syscalls.h"

namespace flatux {
namespace {

constexpr uint32_t kPipeDefault = 16 * 4096, kPipeMin = 2 * 4096;  // PIPE_DEF_BUFFERS, PIPE_MIN_DEF_BUFFERS

// The charge of a new host pipe, its capacity cut to kPipeMin when the
// default does not fit; nullptr (ENFILE) when nothing fits or memory is short.
HostCharge* charge_pipe(Kernel& k, int rd, int wr) {
  HostCharge* c = host_charge_new(k.heap, k.mem, rd, ChargeKind::kPipe);
  if (!c) return nullptr;
  long cap = host::sys(SYS_fcntl, wr, F_GETPIPE_SZ);
  if (cap <= 0) cap = kPipeDefault;
  // Not shared yet: no lock needed.
  if (host_charge_grow(*c, (uint64_t)cap)) return c;
  if (cap > kPipeMin && host::sys(SYS_fcntl, wr, F_SETPIPE_SZ, kPipeMin) == kPipeMin &&
      host_charge_grow(*c, kPipeMin))
    return c;
  host_charge_put(c);
  return nullptr;
}

long do_pipe2(Task& t, uint64_t guest_fds, uint64_t flags) {
  if (flags & ~(uint64_t)(O_CLOEXEC | O_NONBLOCK | O_DIRECT)) return -EINVAL;
  if (!access_ok((void*)guest_fds, 2 * sizeof(int))) return -EFAULT;
  int host[2];
  long r = host::sys(SYS_pipe2, host, O_CLOEXEC | (flags & (O_NONBLOCK | O_DIRECT)));
  if (r < 0) return r;
  uint32_t status = (uint32_t)flags & (O_NONBLOCK | O_DIRECT);
  HostCharge* charge = charge_pipe(*t.kernel, host[0], host[1]);
  if (!charge) {
    host::sys(SYS_close, host[0]);
    host::sys(SYS_close, host[1]);
    return -ENFILE;
  }
  File* rd = hostfs_adopt_host_fd(t.kernel->heap, host[0], O_RDONLY | status);
  File* wr = hostfs_adopt_host_fd(t.kernel->heap, host[1], O_WRONLY | status);
  if (!rd || !wr) {
    if (rd) rd->put();
    if (wr) wr->put();
    host_charge_put(charge);
    return -ENOMEM;
  }
  rd->charge = charge;
  host_charge_get(charge);
  wr->charge = charge;
  bool cloexec = flags & O_CLOEXEC;
  int fds[2] = {t.proc->files->install(rd, cloexec), -1};
  if (fds[0] >= 0) fds[1] = t.proc->files->install(wr, cloexec);
  rd->put();
  wr->put();
  if (fds[1] < 0) {
    if (fds[0] >= 0) t.proc->files->close(fds[0]);
    return fds[0] < 0 ? fds[0] : fds[1];
  }
  if (copy_to_user((void*)guest_fds, fds, sizeof fds) < 0) {
    t.proc->files->close(fds[0]);
    t.proc->files->close(fds[1]);
    return -EFAULT;
  }
  return 0;
}

}  // namespace

long sys_pipe(Task& t, SyscallArgs a) { return do_pipe2(t, a[0], 0); }
long sys_pipe2(Task& t, SyscallArgs a) { return do_pipe2(t, a[0], a[1]); }

}  // namespace flatux
