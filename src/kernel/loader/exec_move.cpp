#include "kernel/loader/exec_move.h"

#include <cstring>
#include <linux/errno.h>
#include <linux/sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "kernel/entry/entry.h"
#include "kernel/task/hostproc.h"
#include "host/kstack.h"
#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/mm/mm.h"

extern "C" {
long flatux_clone_thread(unsigned long flags, void* stack_top, void* ctid, unsigned long tls,
                         void (*fn)(void*), void* arg);
void flatux_exit_thread() __attribute__((noreturn));
}

namespace flatux {

// Shared by the two threads of the task during the move (kernel heap; the
// new thread frees it once told whether to go on).
struct ExecMove {
  Task* task = nullptr;
  Mm* mm = nullptr;
  const char* path = nullptr;
  const char* const* argv = nullptr;
  const char* const* envp = nullptr;
  ExecResult* res = nullptr;
  HostProc* hp = nullptr;
  void* kstack = nullptr;             // the new thread's kernel stack
  long load_result = 0;
  std::atomic<uint32_t> loaded{0};    // new thread -> caller: load_result is set
  std::atomic<uint32_t> go{0};        // caller -> new thread: 1 go on, 2 give up
  std::atomic<uint32_t> new_tid{0};   // the new thread's host tid
};

namespace {

constexpr uint32_t kGo = 1, kGiveUp = 2;

// The task's thread in the new host process.
void moved_thread_main(void* arg) {
  ExecMove* m = static_cast<ExecMove*>(arg);
  Task& t = *m->task;
  Kernel& k = *t.kernel;
  // Its guard pages, in this host process's page tables. No sigaltstack
  // yet: enter_guest arms it (SS_AUTODISARM), as for any new thread.
  kstack_guard(m->kstack);
  kstack_thread_start(k, m->kstack);
  m->load_result = exec_load(t, *m->mm, m->path, m->argv, m->envp, m->res);
  m->loaded.store(1);
  futex_wake(&m->loaded, 1);
  while (m->go.load() == 0) futex_wait(&m->go, 0);
  bool go_on = m->go.load() == kGo;
  HostProc* hp = m->hp;
  ExecResult* res = m->res;
  // From here on the host clears the task's tid word when this thread ends
  // (the caller has already pointed its own thread elsewhere), and nothing
  // refers to the shared record any more.
  host::sys(SYS_set_tid_address, go_on ? (void*)&t.host_tid : nullptr);
  k.heap->destroy_obj(m);
  if (!go_on) {
    hostproc_task_left(k, hp);
    flatux_exit_thread();
  }
  greg_t regs[NGREG];
  memcpy(regs, res->regs, sizeof regs);
  k.heap->destroy_obj(res);
  enter_guest(t, regs, nullptr);
}

// Run by the new host process's keeper, once it has dropped what it inherited.
long start_moved_thread(void* arg) {
  ExecMove* m = static_cast<ExecMove*>(arg);
  long r = flatux_clone_thread(kCloneMovedThread, (void*)kstack_top(m->kstack), &m->new_tid, 0, moved_thread_main, m);
  if (r > 0) m->new_tid.store((uint32_t)r);
  return r < 0 ? r : 0;
}

}  // namespace

long exec_move_load(Task& t, Mm& mm, const char* path, const char* const* argv,
                    const char* const* envp, ExecResult* res, ExecMove** out) {
  Kernel& k = *t.kernel;
  ExecMove* m = k.heap->make<ExecMove>();
  void* stack = m ? k.heap->alloc_kstack() : nullptr;
  if (!stack) {
    k.heap->destroy_obj(m);
    return -ENOMEM;
  }
  kstack_header_init(stack, t);
  m->task = &t;
  m->mm = &mm;
  m->path = path;
  m->argv = argv;
  m->envp = envp;
  m->res = res;
  m->kstack = stack;
  HostProc* hp;
  {
    Guard g(k.tasks_lock);
    hp = hostproc_new_locked(k);
    if (hp) hp->ntasks.fetch_add(1);  // the new thread, until it gives up or the task leaves
  }
  if (!hp) {
    k.heap->free_kstack(stack);
    k.heap->destroy_obj(m);
    return -EAGAIN;
  }
  m->hp = hp;
  hp->keep_mm = &mm;
  mm_set_map_pool(mm, hp->maps);  // its memory will be that host process's
  hp->start_fn = start_moved_thread;
  hp->start_arg = m;
  long r = fork_host_process(t, *hp);
  if (r < 0) {
    hostproc_task_left(k, hp);
    {
      Guard g(k.tasks_lock);
      retire_kstack_locked(k, stack, hp, 0);
    }
    k.heap->destroy_obj(m);
    return r == -ENOMEM ? r : -EAGAIN;
  }
  while (m->loaded.load() == 0) futex_wait(&m->loaded, 0);
  if (m->load_result < 0) {
    r = m->load_result;
    {
      Guard g(k.tasks_lock);
      retire_kstack_locked(k, stack, hp, 1);  // freed once that host process is gone
    }
    m->go.store(kGiveUp);
    futex_wake(&m->go, 1);
    return r;
  }
  *out = m;
  return 0;
}

namespace {

// The task is the new thread's from here on (its host process, kernel
// stack and tid), and that thread goes on; the old host process loses it.
// With `retire`, the old kernel stack, which no thread ever ran on, goes
// under the same lock.
void hand_over(Task& t, ExecMove* m, bool retire) {
  Kernel& k = *t.kernel;
  HostProc* old_hp = t.hproc;
  {
    Guard g(k.tasks_lock);
    if (retire) retire_kstack_locked(k, t.kstack, old_hp, 0);
    t.hproc = m->hp;
    t.kstack = m->kstack;
    t.host_tid.store(m->new_tid.load());
  }
  m->go.store(kGo);
  futex_wake(&m->go, 1);
  hostproc_task_left(k, old_hp);
}

}  // namespace

void exec_move_start(Task& t, ExecMove* m) { hand_over(t, m, true); }

void exec_move_commit(Task& t, ExecMove* m) {
  Kernel& k = *t.kernel;
  HostProc* old_hp = t.hproc;
  uint32_t my_tid = (uint32_t)host::sys(SYS_gettid);
  std::atomic<uint32_t>* my_word = nullptr;
  {
    Guard g(k.tasks_lock);
    // This thread's kernel stack is freed once the host has cleared the
    // record's word (the thread is gone) or its host process is.
    my_word = retire_kstack_locked(k, t.kstack, old_hp, my_tid);
  }
  host::sys(SYS_set_tid_address, my_word);
  hand_over(t, m, false);
  flatux_exit_thread();
}

}  // namespace flatux
