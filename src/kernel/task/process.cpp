#include "kernel/task/process.h"

#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "host/entry.h"
#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/lib/kstring.h"
#include "kernel/loader/exec.h"
#include "kernel/mm/mm.h"

extern "C" void flatux_exit_thread() __attribute__((noreturn));

namespace flatux {
namespace {

void default_rlimits(Process& p) {
  for (auto& r : p.rlimits) r[0] = r[1] = RLIM_INFINITY;
  p.rlimits[RLIMIT_STACK][0] = 8ull << 20;
  p.rlimits[RLIMIT_NOFILE][0] = 1024;
  p.rlimits[RLIMIT_NOFILE][1] = FdTable::kMaxFds;
  p.rlimits[RLIMIT_CORE][0] = 0;
  p.rlimits[RLIMIT_NPROC][0] = p.rlimits[RLIMIT_NPROC][1] = kMaxTasks;
}

long install_stdio(Kernel& k, Process& p) {
  for (int fd = 0; fd < 3; fd++) {
    // The guest sees the host streams with their real access modes.
    long fl = host::sys(SYS_fcntl, fd, F_GETFL);
    if (fl < 0) continue;  // a closed host stdio stream stays closed in the guest
    File* f = hostfs_wrap_host_fd(k.heap, fd, (uint32_t)fl & (O_ACCMODE | O_APPEND | O_NONBLOCK));
    if (!f) continue;  // a closed host stdio stream stays closed in the guest
    p.files->install_at(fd, f, false);
    f->put();
  }
  return 0;
}

}  // namespace

Process* process_create(Kernel& k, int ppid) {
  Heap* h = k.heap;
  Process* p = h->make<Process>();
  if (!p) return nullptr;
  p->kernel = &k;
  p->mm = h->make<Mm>(h);
  p->files = h->make<FdTable>(h);
  p->fs = h->make<FsContext>();
  if (!p->mm || !p->files || !p->fs) {
    h->destroy_obj(p->mm);
    h->destroy_obj(p->files);
    h->destroy_obj(p->fs);
    h->destroy_obj(p);
    return nullptr;
  }
  {
    Guard g(k.tasks_lock);
    p->pid = k.next_pid++;
  }
  p->ppid = ppid;
  p->pgid = p->sid = p->pid;
  default_rlimits(*p);
  return p;
}

Task* task_create(Kernel& k, Process* proc) {
  Task* t = k.heap->make<Task>();
  if (!t) return nullptr;
  t->kernel = &k;
  t->proc = proc;
  t->tid = proc->pid;
  if (!kstack_setup(*t)) {
    k.heap->destroy_obj(t);
    return nullptr;
  }
  Guard g(k.tasks_lock);
  for (Task*& slot : k.tasks) {
    if (!slot) {
      slot = t;
      proc->nthreads++;
      return t;
    }
  }
  return t;
}

long spawn_init(Kernel& k, const char* path, const char* const* argv, const char* const* envp,
                const char** why) {
  Process* p = process_create(k, 0);
  if (!p) return -ENOMEM;
  install_stdio(k, *p);
  Task* t = task_create(k, p);
  if (!t) return -ENOMEM;
  k.init = p;
  ExecResult* res = k.heap->make<ExecResult>();
  if (!res) return -ENOMEM;
  // The loader runs on the launcher's thread here, before any guest code.
  long r = exec_load(*t, *p->mm, path, argv, envp, res);
  if (r < 0) {
    *why = res->why;
    k.heap->destroy_obj(res);
    mm_release(*p->mm);
    return r;
  }
  copy_cstr(p->exe, sizeof p->exe, res->exe);
  copy_cstr(p->comm, sizeof p->comm, res->comm);
  r = start_task_thread(*t, res->regs);
  k.heap->destroy_obj(res);
  return r;
}

void process_exit(Task& t, int wait_status) {
  Kernel& k = *t.kernel;
  Process& p = *t.proc;
  // The process's memory and files go now; task structures stay until
  // their host threads are gone (the kernel stack is in use until then).
  p.files->close_all();
  mm_release(*p.mm);
  if (&p == k.init) {
    k.exit_wait_status = wait_status;
    k.halted.store(1);
    futex_wake(&k.halted, 1 << 30);
  }
  flatux_exit_thread();
}

}  // namespace flatux
