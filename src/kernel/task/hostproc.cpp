#include "kernel/task/hostproc.h"

#include <algorithm>
#include <csignal>
#include <linux/errno.h>
#include <linux/futex.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "kernel/entry/entry.h"
#include "kernel/foreign_gate.h"
#include "host/kstack.h"
#include "host/open_how_table.h"
#include "host/raw_syscall.h"
#include "kernel/kernel.h"
#include "kernel/mm/syscall_sites.h"
#include "kernel/time.h"
#include "kernel/timer/timer.h"

extern "C" long flatux_clone_process(unsigned long flags, void* stack_top, int* pidfd,
                                     void (*fn)(void*), void* arg);

namespace flatux {

struct RetiredStack {
  void* kstack;
  HostProc* hp;
  std::atomic<uint32_t> tid;
  RetiredStack* next;
};

namespace {

// The top of the host's user address space (47-bit): what a forked host
// process does not keep is unmapped up to here.
constexpr uintptr_t kUserTop = 0x7ffffffff000ull;

constexpr uint64_t sig_bit(int sig) { return 1ull << (sig - 1); }
// Faults cannot be blocked usefully; everything else is, in a keeper.
constexpr uint64_t kAllButFaults =
    ~(sig_bit(SIGSEGV) | sig_bit(SIGBUS) | sig_bit(SIGFPE) | sig_bit(SIGILL) | sig_bit(SIGTRAP));

struct Keep {
  uintptr_t start, end;
};

// The child of a fork keeps the host's own mappings from boot (flatux, its
// libraries, the vDSO), the kernel heap, the sealed open_how table, its
// guest process's regions and the stub areas its rewritten syscall sites
// jump to; everything else it
// inherited (the other guests' memory, the launcher's later allocations)
// is unmapped, so it holds no copy of them.
void drop_inherited_memory(Kernel& k, const Mm& own) {
  if (k.cfg.nhost_maps == 0) return;  // the boot mappings were not all recorded
  size_t areas = syscall_sites_areas(own, nullptr, 0);
  size_t n = (size_t)k.cfg.nhost_maps + 2 + areas;
  for (const Region* r = own.regions.first(); r; r = r->next) n++;
  Keep* keep = static_cast<Keep*>(k.heap->alloc(n * sizeof(Keep)));
  auto* area = static_cast<uintptr_t(*)[2]>(k.heap->alloc((areas ? areas : 1) * sizeof(uintptr_t[2])));
  if (!keep || !area) {
    k.heap->free(keep);
    k.heap->free(area);
    return;
  }
  size_t i = 0;
  for (int m = 0; m < k.cfg.nhost_maps; m++) keep[i++] = {k.cfg.host_maps[m].start, k.cfg.host_maps[m].end};
  keep[i++] = {kHeapBase, kHeapBase + kHeapReserve};
  keep[i++] = {kOpenHowTable, kOpenHowTable + kOpenHowSize};  // sealed: it could not go anyway
  for (const Region* r = own.regions.first(); r; r = r->next) keep[i++] = {r->start, r->end};
  syscall_sites_areas(own, area, areas);
  for (size_t a = 0; a < areas; a++) keep[i++] = {area[a][0], area[a][1]};
  k.heap->free(area);
  std::sort(keep, keep + i, [](const Keep& a, const Keep& b) { return a.start < b.start; });
  uintptr_t cursor = 0;
  for (size_t j = 0; j < i && cursor < kUserTop; j++) {
    uintptr_t gap_end = keep[j].start < kUserTop ? keep[j].start : kUserTop;
    if (gap_end > cursor) host::sys(SYS_munmap, cursor, gap_end - cursor);
    if (keep[j].end > cursor) cursor = keep[j].end;
  }
  if (cursor < kUserTop) host::sys(SYS_munmap, cursor, kUserTop - cursor);
  k.heap->free(keep);
}

// Sleeps until the last task has left the host process, or the first host
// process (the launcher) is gone, then ends this host process.
// A count of resident memory asked of this host process (task_resident).
void serve_measure(HostProc& hp) {
  uint32_t asked = hp.measure_asked.load(std::memory_order_acquire);
  if (asked == hp.measure_done.load(std::memory_order_relaxed)) return;
  hp.measure_result = mm_resident_here(*hp.measure_mm, hp.measure_out);
  hp.measure_done.store(asked, std::memory_order_release);
  futex_wake(&hp.measure_done, 1);
}

[[noreturn]] void keep_until_empty(Kernel& k, HostProc& hp) {
  const uint64_t wait_mask = kAllButFaults & ~sig_bit(kKickSignal);
  for (;;) {
    serve_measure(hp);
    // The kick stays blocked between this check and ppoll, which lets it in:
    // a task leaving in between is not missed.
    if (hp.ntasks.load() == 0) host::sys(SYS_exit_group, 0);
    pollfd p{k.launcher_pidfd, POLLIN, 0};
    long r = host::sys(SYS_ppoll, &p, 1, nullptr, &wait_mask, 8);
    if (r > 0 || (r < 0 && r != -EINTR)) host::sys(SYS_exit_group, 0);
  }
}

// The first thread of a forked host process. It runs on its own stack in
// the kernel heap; the parent task's kernel stack is shared memory the
// parent goes on using, so nothing here may touch it.
void keeper_main(void* arg) {
  HostProc& hp = *static_cast<HostProc*>(arg);
  Kernel& k = *hp.kernel;
  // The clone copied the parent thread's alternate signal stack: its
  // kernel stack. Signals were blocked across the clone; turn it off first.
  stack_t ss{};
  ss.ss_flags = SS_DISABLE;
  host::sys(SYS_sigaltstack, &ss, nullptr);
  uint64_t mask = kAllButFaults;
  host::sys(SYS_rt_sigprocmask, SIG_SETMASK, &mask, nullptr, 8);
  hp.pid = (int)host::sys(SYS_getpid);
  hp.keeper_tid.store((uint32_t)host::sys(SYS_gettid));
  drop_inherited_memory(k, *hp.keep_mm);
  long r = hp.start_fn ? hp.start_fn(hp.start_arg) : start_task_thread(*hp.first);
  hp.start_result = r;
  hp.started.store(1);
  futex_wake(&hp.started, 1);
  if (r < 0) host::sys(SYS_exit_group, 0);
  keep_until_empty(k, hp);
}

// What forked host processes rely on, set up by the first fork (which the
// first host process makes, as every other host process descends from it).
long prepare_forking_locked(Kernel& k) {
  if (k.forking_ready) return 0;
  long fd = host::sys(SYS_pidfd_open, k.host_pid, 0);
  if (fd < 0) return fd;
  // The timers and foreign calls are served here, by threads that must
  // outlive any forked host process.
  long r = timers_start(k);
  if (r == 0) r = foreign_gate_start_server(k);
  if (r < 0) {
    host::sys(SYS_close, fd);
    return r;
  }
  k.launcher_pidfd = (int)fd;
  // Host processes whose parent ends come here and, with SIGCHLD ignored,
  // leave no zombie behind (forked ones inherit the disposition).
  host::sys(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  struct {
    void* handler;
    unsigned long flags;
    void* restorer;
    uint64_t mask;
  } ign{(void*)SIG_IGN, 0, nullptr, 0};
  host::sys(SYS_rt_sigaction, SIGCHLD, &ign, nullptr, 8);
  k.forking_ready = true;
  return 0;
}

bool pidfd_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return host::sys(SYS_poll, &p, 1, 0) > 0;
}

}  // namespace

int task_host_pid(const Task& t) { return t.hproc ? t.hproc->pid : t.kernel->host_pid; }

namespace {

struct MeasureCall {
  Mm* mm;
  Resident* out;
};

long measure_here(void* arg) {
  auto* c = static_cast<MeasureCall*>(arg);
  return mm_resident_here(*c->mm, c->out);
}

// Asks hp's keeper to count (it wakes on the kick) and waits, at most a
// second: a keeper that does not answer is a host process on its way out.
long ask_keeper(HostProc& hp, Mm& mm, Resident* out) {
  Guard g(hp.measure_lock);
  uint32_t keeper = hp.keeper_tid.load();
  if (!keeper || hp.gone) return -ESRCH;
  hp.measure_mm = &mm;
  hp.measure_out = out;
  uint32_t asked = hp.measure_asked.load(std::memory_order_relaxed) + 1;
  hp.measure_asked.store(asked, std::memory_order_release);
  if (host::sys(SYS_tgkill, hp.pid, keeper, kKickSignal) < 0) return -ESRCH;
  uint64_t deadline = monotonic_ns() + 1000000000ull;
  for (;;) {
    uint32_t done = hp.measure_done.load(std::memory_order_acquire);
    if (done == asked) return hp.measure_result;
    uint64_t now = monotonic_ns();
    if (now >= deadline) return -ETIMEDOUT;
    uint64_t left = deadline - now;
    timespec rel{(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    host::sys(SYS_futex, &hp.measure_done, FUTEX_WAIT, done, &rel, 0, 0);
  }
}

}  // namespace

long task_resident(Task& t, Mm& mm, Resident* out) {
  Kernel& k = *t.kernel;
  int where = task_host_pid(t);
  long r = mm_resident_pagemap(mm, where, out);
  if (r == 0) return 0;
  if (where == (int)host::sys(SYS_getpid)) return mm_resident_here(mm, out);
  if (!t.hproc || t.hproc == k.hproc0) {
    MeasureCall c{&mm, out};
    return foreign_call(k, measure_here, &c);
  }
  return ask_keeper(*t.hproc, mm, out);
}

bool is_kernel_host_pid(Kernel& k, int pid) {
  if (pid == k.host_pid) return true;
  Guard g(k.tasks_lock);
  for (HostProc* hp = k.hprocs; hp; hp = hp->next)
    if (hp->pid == pid && !hp->gone) return true;
  return false;
}

HostProc* hostproc_new_locked(Kernel& k) {
  if (prepare_forking_locked(k) < 0) return nullptr;
  HostProc* hp = k.heap->make<HostProc>();
  if (!hp) return nullptr;
  if (!(hp->maps = host_pool_make(k.heap, k.host_map_limit, kSmallMaps))) {
    k.heap->destroy_obj(hp);
    return nullptr;
  }
  hp->kernel = &k;
  hp->next = k.hprocs;
  k.hprocs = hp;
  return hp;
}

long fork_host_process(Task& caller, HostProc& hp) {
  Kernel& k = *caller.kernel;
  hp.keeper_stack = k.heap->alloc_kstack();
  if (!hp.keeper_stack) {
    hp.making.store(false);
    return -EAGAIN;
  }
  auto* h = static_cast<KStackHeader*>(hp.keeper_stack);
  h->task = nullptr;  // a kernel thread: kicks that reach it are ignored
  h->magic = kKStackMagic;
  // The child starts with this thread's signal mask and alternate stack (our
  // kernel stack): nothing may be delivered there before the keeper has
  // turned that off, so everything is blocked across the clone.
  uint64_t all = kAllButFaults, old;
  host::sys(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, 8);
  int pidfd = -1;
  long r = flatux_clone_process(kCloneHostProcess,
                                (void*)kstack_top(hp.keeper_stack), &pidfd, keeper_main, &hp);
  host::sys(SYS_rt_sigprocmask, SIG_SETMASK, &old, nullptr, 8);
  if (r >= 0) {
    hp.pid = (int)r;
    hp.pidfd = pidfd;
  }
  hp.making.store(false);
  if (r < 0) return r;
  // Wait for the child task's thread to start (or the host process to die).
  while (hp.started.load() == 0) {
    timespec tick{0, 50 * 1000 * 1000};
    host::sys(SYS_futex, &hp.started, FUTEX_WAIT, 0, &tick, 0, 0);
    if (hp.started.load() == 0 && pidfd_readable(pidfd)) return -EAGAIN;
  }
  return hp.start_result;
}

void hostproc_abandon(HostProc* hp) {
  if (hp) hp->making.store(false);
}

void hostproc_task_left(Kernel& k, HostProc* hp) {
  if (!hp) return;
  if (hp->ntasks.fetch_sub(1) == 1 && hp != k.hproc0) {
    uint32_t keeper = hp->keeper_tid.load();
    if (keeper) host::sys(SYS_tgkill, hp->pid, keeper, kKickSignal);
  }
}

void hostprocs_mark_gone_locked(Kernel& k) {
  for (HostProc* hp = k.hprocs; hp; hp = hp->next)
    if (!hp->making.load() && !hp->gone && hp->ntasks.load() == 0 && (hp->pidfd < 0 || pidfd_readable(hp->pidfd)))
      hp->gone = true;
}

std::atomic<uint32_t>* retire_kstack_locked(Kernel& k, void* kstack, HostProc* hp, uint32_t tid) {
  RetiredStack* r = k.heap->make<RetiredStack>();
  if (!r) return nullptr;
  r->kstack = kstack;
  r->hp = hp;
  r->tid.store(tid);
  r->next = k.retired_stacks;
  k.retired_stacks = r;
  return &r->tid;
}

void hostprocs_free_gone_locked(Kernel& k) {
  for (RetiredStack** link = &k.retired_stacks; RetiredStack* r = *link;) {
    if (r->tid.load() != 0 && !r->hp->gone) {
      link = &r->next;
      continue;
    }
    *link = r->next;
    kstack_unguard(r->kstack);
    k.heap->free_kstack(r->kstack);
    k.heap->destroy_obj(r);
  }
  HostProc** link = &k.hprocs;
  while (HostProc* hp = *link) {
    if (!hp->gone) {
      link = &hp->next;
      continue;
    }
    *link = hp->next;
    if (hp->pidfd >= 0) host::sys(SYS_close, hp->pidfd);
    if (hp->keeper_stack) k.heap->free_kstack(hp->keeper_stack);
    host_pool_put(k.heap, hp->maps);
    k.heap->destroy_obj(hp);
  }
}

void hostprocs_kill_all(Kernel& k) {
  Guard g(k.tasks_lock);
  for (HostProc* hp = k.hprocs; hp; hp = hp->next)
    if (!hp->gone && hp->pidfd >= 0) host::sys(SYS_pidfd_send_signal, hp->pidfd, SIGKILL, 0, 0);
}

}  // namespace flatux
