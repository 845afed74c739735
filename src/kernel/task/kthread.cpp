#include "kernel/task/kthread.h"

#include <linux/errno.h>
#include <sched.h>

#include "kernel/entry/entry.h"
#include "host/kstack.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/task/task.h"

namespace flatux {

long start_kernel_thread(Kernel& k, void (*fn)(void*), void* arg, void** stack) {
  void* base = k.heap->alloc_kstack();
  if (!base) return -EAGAIN;
  auto* h = static_cast<KStackHeader*>(base);
  h->task = nullptr;
  h->magic = kKStackMagic;
  long r = flatux_clone_thread(kCloneKernelThread, (void*)kstack_top(base), nullptr, 0, fn, arg);
  if (r < 0) {
    k.heap->free_kstack(base);
    return r;
  }
  *stack = base;
  return 0;
}

Task* make_kernel_task(Kernel& k, const char* comm) {
  Process* p = k.heap->make<Process>();
  Task* t = p ? k.heap->make<Task>() : nullptr;
  if (!t) {
    k.heap->destroy_obj(p);
    return nullptr;
  }
  p->kernel = &k;
  p->pid = p->pgid = p->sid = 0;
  copy_cstr(p->comm, sizeof p->comm, comm);
  t->kernel = &k;
  t->proc = p;
  t->tid = 0;
  return t;
}

}  // namespace flatux
