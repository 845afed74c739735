// unshare(2): the caller stops sharing what it shares with other
// processes: its descriptor table (CLONE_FILES), root, cwd and umask
// (CLONE_FS), its SEM_UNDO list (CLONE_SYSVSEM), and its UTS namespace
// and mount namespaces (CLONE_NEWUTS, CLONE_NEWNS: copies of their own).
// The namespaces flatux does not have
// yet are refused with EPERM, as a container's policy refuses them, so
// that programs that can do without (systemd's service sandboxing, which
// treats EINVAL as fatal and EPERM as "confined") carry on; CLONE_THREAD,
// CLONE_VM and CLONE_SIGHAND are allowed only when there is nothing to
// unshare.
#include <linux/errno.h>
#include <linux/sched.h>

#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/mm/mm.h"
#include "kernel/sys/uts.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"
#include "kernel/task/exit.h"
#include "kernel/task/process.h"
#include "kernel/vfs/mount_ns.h"

namespace flatux {
namespace {

constexpr uint64_t kNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;
constexpr uint64_t kKnown = kNamespaces | CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_THREAD | CLONE_VM |
                            CLONE_SIGHAND;
constexpr uint64_t kHere = CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_NEWUTS | CLONE_NEWNS | CLONE_THREAD |
                           CLONE_VM | CLONE_SIGHAND;

// Linux's unshare_check: the flags that unshare the thread group itself
// only work when it has nothing to share. Tables, fs info and the UTS
// namespace are a process's here, not a thread's: with other threads
// still using them they are not swapped either (EINVAL).
long check_alone(Process& p, uint64_t flags) {
  constexpr uint64_t kProcessWide = CLONE_FILES | CLONE_FS | CLONE_NEWUTS | CLONE_NEWNS;
  if (!(flags & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | kProcessWide))) return 0;
  if (p.nthreads > 1) return -EINVAL;
  if ((flags & CLONE_SIGHAND) && p.sighand->refs.load() > 1) return -EINVAL;
  if ((flags & CLONE_VM) && p.mm->refs.load() > 1) return -EINVAL;
  return 0;
}

}  // namespace

long sys_unshare(Task& t, SyscallArgs a) {
  uint64_t flags = a[0];
  if (flags & ~kKnown) return -EINVAL;
  // What one flag brings with it (Linux's unshare_check order).
  if (flags & CLONE_VM) flags |= CLONE_SIGHAND;
  if (flags & CLONE_SIGHAND) flags |= CLONE_THREAD;
  if (flags & CLONE_NEWNS) flags |= CLONE_FS;
  if (flags & ~kHere) return -EPERM;  // a namespace not implemented
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  if (long r = check_alone(p, flags)) return r;
  if ((flags & (CLONE_NEWUTS | CLONE_NEWNS)) && !capable(p.creds, CAP_SYS_ADMIN)) return -EPERM;
  FdTable* files = nullptr;
  FsContext* fs = nullptr;
  if ((flags & CLONE_FILES) && p.files->refs.load() > 1 && !(files = p.files->clone())) return -ENOMEM;
  if ((flags & CLONE_FS) && p.fs->refs.load() > 1 && !(fs = copy_fs_context(k, *p.fs))) {
    drop_files(files, k.heap);
    return -ENOMEM;
  }
  if (flags & CLONE_NEWUTS) {
    if (long r = uts_unshare(t, p)) {
      drop_files(files, k.heap);
      drop_fs(fs, k.heap);
      return r;
    }
  }
  if (flags & CLONE_NEWNS) {
    // Last of what can fail: a new namespace is not taken back.
    if (long r = mnt_ns_unshare(p, fs ? *fs : *p.fs)) {
      drop_files(files, k.heap);
      drop_fs(fs, k.heap);
      return r;
    }
  }
  if (files) {
    drop_files(p.files, k.heap);
    p.files = files;
  }
  if (fs) {
    drop_fs(p.fs, k.heap);
    p.fs = fs;
  }
  if (flags & CLONE_SYSVSEM) sem_exit(k, p);
  return 0;
}

}  // namespace flatux
