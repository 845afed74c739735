// Looking into other processes without ptrace: process_vm_readv and
// process_vm_writev (another process's memory, under ptrace's permission
// rule), and kcmp (do two processes share a kernel resource?).
//
// The target is found again, by pid and identity, for each piece moved,
// under tasks_lock: it may exit meanwhile (then the transfer stops where it
// got to), and its pid may be taken by a new process, which is not it.
// Only what the target owns is read or written. A target in another host
// process (a forked guest) is read with the host's process_vm_readv;
// writing there is refused (EPERM): the host boundary gives the kernel no
// way to write another host process's private memory.
#include <linux/errno.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/mm/usercopy.h"
#include "kernel/syscalls.h"
#include "kernel/task/caps.h"
#include "kernel/task/hostproc.h"
#include "kernel/task/process.h"
#include "kernel/task/process_vm.h"
#include "kernel/vfs/file.h"

namespace flatux {
namespace {

constexpr size_t kIovMax = 1024;  // UIO_MAXIOV
constexpr size_t kChunk = 4096;

// The target's process if it is still the same live one (tasks_lock held).
Process* find_target_locked(Kernel& k, const ProcessRef& tg, Task** first) {
  Process* p = find_process_locked(k, tg.pid);
  if (!p || p != tg.proc || p->start_ns != tg.start_ns || p->state != ProcState::kRunning || !p->mm || !p->threads)
    return nullptr;
  *first = p->threads;
  return p;
}

bool same_host_process(const Task& x) { return task_host_pid(x) == (int)host::sys(SYS_getpid); }

// A cursor over the caller's iovecs.
struct LocalCursor {
  const iovec* v;
  size_t n, at = 0, off = 0;
  // The next run of the caller's buffers, at most max bytes (0: none left).
  size_t next(char** base, size_t max) {
    while (at < n && off == v[at].iov_len) {
      at++;
      off = 0;
    }
    if (at == n) return 0;
    *base = (char*)v[at].iov_base + off;
    size_t len = v[at].iov_len - off;
    return len < max ? len : max;
  }
  void advance(size_t len) { off += len; }
};

long transfer(Task& t, const ProcessRef& tg, const iovec* local, size_t nlocal, const iovec* remote, size_t nremote,
              bool write) {
  LocalCursor cur{local, nlocal};
  char buf[kChunk];
  long done = 0, err = 0;
  for (size_t i = 0; i < nremote && !err; i++) {
    uintptr_t at = (uintptr_t)remote[i].iov_base, end = at + remote[i].iov_len;
    while (at < end && !err) {
      char* mine;
      size_t n = cur.next(&mine, end - at < kChunk ? end - at : kChunk);
      if (n == 0) return done;  // the caller's buffers are full (or empty)
      if (write && copy_from_user(buf, mine, n) < 0) {
        err = -EFAULT;
        break;
      }
      long moved = process_mem_move(*t.kernel, tg, at, buf, n, write);
      if (moved < 0) {
        err = moved;
        break;
      }
      if (!write && copy_to_user(mine, buf, (size_t)moved) < 0) {
        err = -EFAULT;
        break;
      }
      cur.advance((size_t)moved);
      at += (size_t)moved;
      done += moved;
      if ((size_t)moved < n) err = -EFAULT;  // the target's memory ends here
    }
  }
  return done ? done : err;
}

long copy_iovecs(const void* guest, uint64_t n, iovec* out) {
  if (n > kIovMax) return -EINVAL;
  if (copy_from_user(out, guest, n * sizeof(iovec)) < 0) return -EFAULT;
  for (uint64_t i = 0; i < n; i++)
    if ((ssize_t)out[i].iov_len < 0) return -EINVAL;
  return 0;
}

long process_vm(Task& t, SyscallArgs a, bool write) {
  if (a[5]) return -EINVAL;  // flags
  static_assert(sizeof(iovec) * kIovMax <= 16384);
  iovec local[kIovMax], remote[kIovMax];
  if (long r = copy_iovecs((const void*)a[1], a[2], local)) return r;
  if (long r = copy_iovecs((const void*)a[3], a[4], remote)) return r;
  for (uint64_t i = 0; i < a[2]; i++)
    if (!access_ok(local[i].iov_base, local[i].iov_len)) return -EFAULT;
  ProcessRef tg;
  {
    Kernel& k = *t.kernel;
    Guard g(k.tasks_lock);
    if (long r = process_ref_locked(k, (int)a[0], &tg)) return r;
    if (!ptrace_may_access(*t.proc, *tg.proc)) return -EPERM;
  }
  return transfer(t, tg, local, a[2], remote, a[4], write);
}

// kcmp's answer for two kernel objects: 0 the same, else 1 or 2 by an
// order of the pointers scrambled per type (Linux's kptr_obfuscate), so
// that the order says nothing of where they are.
long order(const Kernel& k, const void* x, const void* y, int type) {
  if (x == y) return 0;
  uint64_t cookie = k.boot_ns * 0x9e3779b97f4a7c15ull + (uint64_t)type * 0xbf58476d1ce4e5b9ull;
  uint64_t a = ((uintptr_t)x ^ cookie) * 0x94d049bb133111ebull, b = ((uintptr_t)y ^ cookie) * 0x94d049bb133111ebull;
  return a < b ? 1 : 2;
}

const void* resource_of(Process& p, int type) {
  switch (type) {
    case KCMP_VM: return p.mm;
    case KCMP_FILES: return p.files;
    case KCMP_FS: return p.fs;
    case KCMP_SIGHAND: return p.sighand;
    case KCMP_SYSVSEM: return p.sem_undo;
    default: return nullptr;
  }
}

}  // namespace

long process_ref_locked(Kernel& k, int pid, ProcessRef* out) {
  Process* p = find_process_locked(k, pid);
  if (!p || p->state != ProcState::kRunning || !p->mm || !p->threads) return -ESRCH;
  *out = ProcessRef{pid, p, p->start_ns};
  return 0;
}

long process_mem_move(Kernel& k, const ProcessRef& tg, uintptr_t remote, char* buf, size_t n, bool write) {
  Guard g(k.tasks_lock);
  Task* first;
  Process* p = find_target_locked(k, tg, &first);
  if (!p) return -ESRCH;
  n = process_owned_extent(*p->mm, (const void*)remote, n);
  if (n == 0) return -EFAULT;
  if (same_host_process(*first)) {
    long r = write ? copy_to_process(*p->mm, (void*)remote, buf, n) : copy_from_process(*p->mm, buf, (const void*)remote, n);
    return r < 0 ? -EFAULT : (long)n;
  }
  if (write) return -EPERM;
  iovec local{buf, n}, far{(void*)remote, n};
  long r = host::sys(SYS_process_vm_readv, task_host_pid(*first), &local, 1, &far, 1, 0);
  return r <= 0 ? -EFAULT : r;
}

long sys_process_vm_readv(Task& t, SyscallArgs a) { return process_vm(t, a, false); }
long sys_process_vm_writev(Task& t, SyscallArgs a) { return process_vm(t, a, true); }

long sys_kcmp(Task& t, SyscallArgs a) {
  Kernel& k = *t.kernel;
  int type = (int)a[2];
  Guard g(k.tasks_lock);
  Task* x1 = find_task_locked(k, (int)a[0]);
  Task* x2 = find_task_locked(k, (int)a[1]);
  if (!x1 || !x2) return -ESRCH;
  Process& p1 = *x1->proc;
  Process& p2 = *x2->proc;
  if (!ptrace_may_access(*t.proc, p1) || !ptrace_may_access(*t.proc, p2)) return -EPERM;
  switch (type) {
    case KCMP_FILE: {
      if (!p1.files || !p2.files) return -EBADF;
      File* f1 = p1.files->get((int)a[3]);
      File* f2 = p2.files->get((int)a[4]);
      long r = f1 && f2 ? order(k, f1, f2, type) : -EBADF;
      if (f1) f1->put();
      if (f2) f2->put();
      return r;
    }
    case KCMP_VM:
    case KCMP_FILES:
    case KCMP_FS:
    case KCMP_SIGHAND:
    case KCMP_SYSVSEM:
      // A process without SEM_UNDO state yet has its own (Linux compares
      // the pointers, NULL equal to NULL: two such processes compare equal).
      return order(k, resource_of(p1, type), resource_of(p2, type), type);
    default:
      return -EINVAL;  // KCMP_IO and KCMP_EPOLL_TFD among them
  }
}

}  // namespace flatux
