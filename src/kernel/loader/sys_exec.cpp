// execve / execveat: a new image for the calling process. The new image is
// loaded into a fresh Mm first, so a failed exec leaves the caller intact.
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/syscall.h>

#include "kernel/cgroup/cgroup.h"
#include "kernel/entry/entry.h"
#include "host/raw_syscall.h"
#include "kernel/mm/usercopy.h"
#include "kernel/task/hostproc.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/loader/exec.h"
#include "kernel/loader/exec_move.h"
#include "kernel/mm/mm.h"
#include "kernel/syscalls.h"
#include "kernel/task/exit.h"
#include "kernel/vfs/vfs.h"

namespace flatux {
namespace {

constexpr size_t kMaxStrings = 2ull << 20;  // argv + envp bytes (Linux's ARG_MAX-ish)
constexpr size_t kMaxVec = 65536;

// argv and envp copied out of the old image, which exec is about to drop.
struct ExecArgs {
  Heap* heap;
  char* strings = nullptr;
  size_t used = 0;
  const char** argv = nullptr;
  const char** envp = nullptr;
  ~ExecArgs() { release(); }
  void release() {
    heap->free(strings);
    heap->free(argv);
    heap->free(envp);
    strings = nullptr;
    argv = envp = nullptr;
  }
};

long copy_vector(ExecArgs& ea, uint64_t guest_vec, const char*** out) {
  size_t n = 0;
  if (guest_vec) {
    for (;; n++) {
      if (n >= kMaxVec) return -E2BIG;
      uint64_t p;
      if (get_user(p, (const void*)(guest_vec + 8 * n)) < 0) return -EFAULT;
      if (!p) break;
    }
  }
  const char** v = static_cast<const char**>(ea.heap->alloc(sizeof(char*) * (n + 1)));
  if (!v) return -ENOMEM;
  *out = v;
  for (size_t i = 0; i < n; i++) {
    uint64_t p;
    if (get_user(p, (const void*)(guest_vec + 8 * i)) < 0) return -EFAULT;
    long len = strncpy_from_user(ea.strings + ea.used, (const char*)p, kMaxStrings - ea.used);
    if (len == -ENAMETOOLONG) return -E2BIG;
    if (len < 0) return len;
    v[i] = ea.strings + ea.used;
    ea.used += (size_t)len + 1;
  }
  v[n] = nullptr;
  return 0;
}

// The exec'ing thread becomes the only one (Linux's de_thread).
void kill_other_threads(Task& t) {
  Process& p = *t.proc;
  for (;;) {
    uint32_t seq = p.threads_gone.load();
    {
      Guard g(t.kernel->tasks_lock);
      if (p.nthreads == 1) return;
      Guard s(p.siglock);
      for (Task* o = p.threads; o; o = o->next_thread) {
        if (o == &t) continue;
        o->exit_requested = true;
        o->notify.store(1);
        interrupt_vfork_wait(*o);
        kick_task(*o);
      }
    }
    futex_wait(&p.threads_gone, seq);
  }
}

// What survives exec and what does not (execve(2), "effect on process attributes").
void reset_process_state(Task& t, const ExecResult& res) {
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  if (p.files->refs.load() > 1) {
    if (FdTable* own = p.files->clone()) {
      p.files->refs.fetch_sub(1);
      p.files = own;
    }
  }
  p.files->close_on_exec();
  if (p.sighand->refs.load() > 1) {
    if (SigHand* own = k.heap->make<SigHand>()) {
      memcpy(own->action, p.sighand->action, sizeof own->action);
      p.sighand->refs.fetch_sub(1);
      p.sighand = own;
    }
  }
  for (GuestSigaction& a : p.sighand->action) {
    if (a.handler != (uint64_t)SIG_IGN) a.handler = (uint64_t)SIG_DFL;
    a.flags = 0;
    a.mask = 0;
    a.restorer = 0;
  }
  t.altstack_sp = t.altstack_size = 0;
  t.altstack_flags = SS_DISABLE;
  t.clear_child_tid = 0;
  t.robust_list = t.robust_len = 0;
  t.guest_fs = 0;
  host::sys(SYS_arch_prctl, 0x1002 /*ARCH_SET_FS*/, 0);
  t.tid = p.pid;
  // The new credentials (Linux's commit_creds at exec): a process that
  // gained privileges no longer takes its parent's death signal.
  const Creds& old = p.creds;
  bool gained = res.secure || old.euid != res.creds.euid || old.egid != res.creds.egid;
  if (gained) p.pdeath_signal = 0;
  // Linux's begin_new_exec: dumpable again, unless the ids changed
  // (suid_dumpable, 0 by default).
  p.dumpable = gained ? 0 : 1;
  p.creds = res.creds;
  copy_cstr(p.exe, sizeof p.exe, res.exe);
  copy_cstr(p.comm, sizeof p.comm, res.comm);
}

long do_execveat(Task& t, int dirfd, uint64_t guest_path, uint64_t guest_argv, uint64_t guest_envp,
                 int flags, long nr, SyscallArgs a) {
  if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) return -EINVAL;
  Kernel& k = *t.kernel;
  char path[kPathMax];
  long r = strncpy_from_user(path, (const char*)guest_path, sizeof path);
  if (r < 0) return r;
  if (r == 0 && !(flags & AT_EMPTY_PATH)) return -ENOENT;
  if (path[0] != '/' && (dirfd != AT_FDCWD || r == 0)) {
    // Relative to a directory fd: make it absolute so the loader can reopen it.
    char base[kPathMax];
    File* f = t.proc->files->get(dirfd);
    if (!f) return -EBADF;
    r = k.vfs->file_guest_path(t, *f, base, sizeof base);
    f->put();
    if (r < 0) return r;
    size_t bl = strlen(base), pl = strlen(path);
    if (bl + 1 + pl + 1 > sizeof path) return -ENAMETOOLONG;
    memmove(path + bl + (pl ? 1 : 0), path, pl + 1);
    memcpy(path, base, bl);
    if (pl) path[bl] = '/';
  }
  ExecArgs ea{k.heap};
  ea.strings = static_cast<char*>(k.heap->alloc_uninit(kMaxStrings));
  if (!ea.strings) return -ENOMEM;
  if ((r = copy_vector(ea, guest_argv, &ea.argv)) < 0) return r;
  if ((r = copy_vector(ea, guest_envp, &ea.envp)) < 0) return r;

  Mm* mm = k.heap->make<Mm>(k.heap);
  if (mm) {
    mm->acct = &k.mem;
    mm_set_map_pool(*mm, t.hproc->maps);
  }
  ExecResult* res = k.heap->make<ExecResult>();
  if (!mm || !res) {
    k.heap->destroy_obj(mm);
    k.heap->destroy_obj(res);
    return -ENOMEM;
  }
  r = exec_load(t, *mm, path, ea.argv, ea.envp, res);
  ExecMove* move = nullptr;
  bool elsewhere = r == -ENOEXEC && res->why == kExecRangeBusy;
  if (elsewhere) {
    // Taken here, free in an empty host process: load it there.
    mm_release(*mm);
    r = exec_move_load(t, *mm, path, ea.argv, ea.envp, res, &move);
  }
  if (r < 0) {
    if (elsewhere) mm_forget(k.heap, mm);  // mapped only in the host process that tried
    else mm_release(*mm);
    if (!elsewhere) k.heap->destroy_obj(mm);
    k.heap->destroy_obj(res);
    return r;
  }
  // Past the point of no return: the old image goes.
  strace_result(t, nr, a, 0);
  kill_other_threads(t);
  Mm* old = t.proc->mm;
  t.proc->mm = mm;
  mm_set_rlimits(*mm, t.proc->rlimits);  // from here on; the new image is in
  if (old->refs.fetch_sub(1) == 1) {
    mm_release(*old);
    k.heap->destroy_obj(old);
  }
  {
    Guard g(k.tasks_lock);
    release_vfork_waiter(t);
  }
  reset_process_state(t, *res);
  ea.release();
  if (move) exec_move_commit(t, move);  // the new thread frees res
  greg_t regs[NGREG];
  memcpy(regs, res->regs, sizeof regs);
  k.heap->destroy_obj(res);
  enter_guest(t, regs, nullptr);
}

}  // namespace

long sys_execve(Task& t, SyscallArgs a) {
  return do_execveat(t, AT_FDCWD, a[0], a[1], a[2], 0, __NR_execve, a);
}

long sys_execveat(Task& t, SyscallArgs a) {
  return do_execveat(t, (int)a[0], a[1], a[2], a[3], (int)a[4], __NR_execveat, a);
}

}  // namespace flatux
