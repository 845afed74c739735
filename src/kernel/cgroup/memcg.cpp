#include "kernel/cgroup/memcg.h"

#include <csignal>

#include "kernel/cgroup/cgroup.h"
#include "kernel/kernel.h"
#include "kernel/mm/resident.h"
#include "kernel/signal/signal.h"
#include "kernel/task/hostproc.h"
#include "kernel/task/process.h"
#include "kernel/timer/timer.h"

namespace flatux {
namespace {

// The live processes of cg and below, one per Mm (a vfork child shares its
// parent's until it execs): f(process, its first thread).
template <typename F>
void for_each_member_mm(Kernel& k, const Cgroup& cg, F&& f) {
  constexpr int kSeen = 64;
  const Mm* seen[kSeen];
  int nseen = 0;
  for (Task* x : k.live_tasks()) {
    if (!x || !first_thread_of_process(*x)) continue;
    Process& p = *x->proc;
    if (p.state != ProcState::kRunning || !p.cgroup_live || !p.mm || !cgroup_contains(cg, p.cgroup)) continue;
    bool shared = p.mm->refs.load(std::memory_order_relaxed) > 1, dup = false;
    for (int i = 0; shared && i < nseen && !dup; i++) dup = seen[i] == p.mm;
    if (dup) continue;
    if (shared && nseen < kSeen) seen[nseen++] = p.mm;
    f(p, *x);
  }
}

bool dying(Process& p) {
  if (p.group_exit) return true;
  Guard g(p.siglock);
  return p.shared_pending.set & sigbit(SIGKILL);
}

void kill_process(Process& p) {
  siginfo_t si{};
  si.si_signo = SIGKILL;
  si.si_code = SI_KERNEL;
  send_signal(p, nullptr, SIGKILL, si, kFromOutside);
}

void count_kill(Cgroup& cg, bool group) {
  for (Cgroup* c = &cg; c; c = c->parent) {
    c->mem.events_oom_kill++;
    if (group) c->mem.events_oom_group_kill++;
  }
}

// The OOM killer's step for cg (over its memory.max): its worst process,
// or with memory.oom.group every one; none while a victim is still dying.
void oom_kill_locked(Kernel& k, Cgroup& cg) {
  Process* worst = nullptr;
  int64_t worst_badness = -1;
  bool one_dying = false;
  for_each_member_mm(k, cg, [&](Process& p, Task& first) {
    if (&p == k.init && !k.cfg.container_init) return;  // as Linux spares the global init (a container's is not)
    if (dying(p)) {
      one_dying = true;
      return;
    }
    Resident r;
    if (task_resident(first, *p.mm, &r) < 0) return;
    int64_t b = memcg_badness((int64_t)r.charged(), p.oom_score_adj, cg.mem.max);
    if (b > worst_badness) {
      worst_badness = b;
      worst = &p;
    }
  });
  if (one_dying || !worst) return;
  if (!cg.mem.oom_group) {
    kill_process(*worst);
    count_kill(cg, false);
    return;
  }
  for_each_member_mm(k, cg, [&](Process& p, Task&) {
    if ((&p == k.init && !k.cfg.container_init) || p.oom_score_adj == -1000) return;
    kill_process(p);
    count_kill(cg, true);
  });
}

bool limited(const Cgroup& cg) { return cg.mem.max != INT64_MAX || cg.mem.high != INT64_MAX; }

}  // namespace

void memcg_usage_locked(Kernel& k, Cgroup& cg, MemUsage* out) {
  *out = MemUsage{};
  for_each_member_mm(k, cg, [&](Process& p, Task& first) {
    Resident r;
    if (task_resident(first, *p.mm, &r) < 0) return;
    out->anon += (int64_t)r.anon;
    out->shmem += (int64_t)r.shmem;
    out->file_mapped += (int64_t)r.file;
  });
  if (out->current() > cg.mem.peak) cg.mem.peak = out->current();
}

bool memcg_account_locked(Cgroup& cg, int64_t usage) {
  if (usage > cg.mem.peak) cg.mem.peak = usage;
  if (usage > cg.mem.high)
    for (Cgroup* c = &cg; c; c = c->parent) c->mem.events_high++;
  if (usage <= cg.mem.max) return false;
  for (Cgroup* c = &cg; c; c = c->parent) {
    c->mem.events_max++;
    c->mem.events_oom++;
  }
  return true;
}

int64_t memcg_badness(int64_t charged, int oom_score_adj, int64_t limit) {
  if (oom_score_adj <= -1000) return -1;
  int64_t b = charged + (int64_t)oom_score_adj * (limit / 1000);
  return b > 1 ? b : 1;  // a process that may be killed weighs at least 1
}

void memcg_limits_changed_locked(Kernel& k) {
  bool any = false;
  for (Cgroup* c = &k.cgroups->root; c && !any; c = cgroup_next_locked(c, nullptr)) any = limited(*c);
  if (any == k.cgroups->memcg_watching) return;
  if (timer_set_tick(k, any ? memcg_watch : nullptr, kMemcgWatchNs) == 0) k.cgroups->memcg_watching = any;
}

void memcg_watch(Kernel& k) {
  Guard g(k.tasks_lock);
  for (Cgroup* c = &k.cgroups->root; c; c = cgroup_next_locked(c, nullptr)) {
    if (!limited(*c) || c->populated_below == 0) continue;
    MemUsage u;
    memcg_usage_locked(k, *c, &u);
    if (memcg_account_locked(*c, u.current())) oom_kill_locked(k, *c);
  }
}

}  // namespace flatux
