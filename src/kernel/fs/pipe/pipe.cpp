// Pipes, first cut: a host pipe per guest pipe. The host gives PIPE_BUF
// atomicity, blocking and O_NONBLOCK semantics, and EPIPE (the host's own
// SIGPIPE is ignored; the guest's is raised by the write path). A blocked
// reader blocks its own task's host thread only.
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "host/usercopy.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/kernel.h"
#include "kernel/syscalls.h"

namespace flatux {
namespace {

long do_pipe2(Task& t, uint64_t guest_fds, uint64_t flags) {
  if (flags & ~(uint64_t)(O_CLOEXEC | O_NONBLOCK | O_DIRECT)) return -EINVAL;
  if (!access_ok((void*)guest_fds, 2 * sizeof(int))) return -EFAULT;
  int host[2];
  long r = host::sys(SYS_pipe2, host, O_CLOEXEC | (flags & (O_NONBLOCK | O_DIRECT)));
  if (r < 0) return r;
  uint32_t status = (uint32_t)flags & (O_NONBLOCK | O_DIRECT);
  File* rd = hostfs_adopt_host_fd(t.kernel->heap, host[0], O_RDONLY | status);
  File* wr = hostfs_adopt_host_fd(t.kernel->heap, host[1], O_WRONLY | status);
  if (!rd || !wr) {
    if (rd) rd->put();
    if (wr) wr->put();
    return -ENOMEM;
  }
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
