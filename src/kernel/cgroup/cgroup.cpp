#include "kernel/cgroup/cgroup.h"

#include <csignal>
#include <cstring>
#include <linux/errno.h>

#include "kernel/cgroup/memcg.h"
#include "kernel/entry/entry.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/signal/signal.h"
#include "kernel/task/process.h"
#include "kernel/timer/timer.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr struct {
  const char* name;
  uint32_t bit;
} kControllers[] = {{"memory", kCgroupMemory}, {"pids", kCgroupPids}};  // Linux's order

void put(Kernel& k, Cgroup* cg) {
  if (--cg->refs == 0) {
    k.cgroups->count--;
    k.heap->destroy_obj(cg);
  }
}

// Adds `n` live processes to cg's count and its ancestors' "populated".
void count_procs(Cgroup* cg, int n) {
  cg->nprocs += n;
  for (Cgroup* c = cg; c; c = c->parent) c->populated_below += n;
}

void charge_tasks(Cgroup* cg, int64_t n) {
  for (Cgroup* c = cg; c; c = c->parent) c->pids_current += n;
}

bool freezing(const Cgroup* cg) {
  for (; cg; cg = cg->parent)
    if (cg->freeze) return true;
  return false;
}

bool in_subtree(const Cgroup* c, const Cgroup& top) { return cgroup_contains(top, c); }

// p's frozen state follows its cgroup's: its threads are sent to the
// freezer (the flag first: recalc_notify_locked keeps their notify word
// set while it holds), or woken out of it.
void refreeze_locked(Process& p) {
  bool want = freezing(p.cgroup);
  if (p.frozen.load() == want) return;
  p.frozen.store(want);
  if (want) {
    for (Task* o = p.threads; o; o = o->next_thread) {
      o->notify.store(1);
      kick_task(*o);
    }
  } else {
    p.thaw_seq.fetch_add(1);
    futex_wake(&p.thaw_seq, 1 << 30);
  }
}

bool is_control_file_name(std::string_view name) {
  return starts_with(name, "cgroup.") || starts_with(name, "pids.") || starts_with(name, "memory.") ||
         starts_with(name, "cpu.");
}

}  // namespace

CgroupTree* cgroup_tree_create(Heap* heap) {
  CgroupTree* t = heap->make<CgroupTree>();
  if (!t) return nullptr;
  t->root.id = 1;
  t->root.name[0] = 0;
  return t;
}

void cgroup_process_created_locked(Kernel& k, Process& p, Process* parent) {
  Cgroup* cg = parent && parent->cgroup ? parent->cgroup : &k.cgroups->root;
  p.cgroup = cg;
  p.cgroup_live = true;
  p.frozen.store(freezing(cg));
  cg->refs++;
  count_procs(cg, 1);
}

void cgroup_process_exited_locked(Kernel&, Process& p) {
  if (p.cgroup && p.cgroup_live) {
    count_procs(p.cgroup, -1);
    for (Cgroup* c = p.cgroup; c; c = c->parent) {  // its threads' times are all in p.cpu_ns now
      c->cpu_gone_ns += p.cpu_ns;
      c->cpu_gone_user_ns += p.cpu_user_ns;
    }
  }
  p.cgroup_live = false;
}

void cgroup_process_released_locked(Kernel& k, Process& p) {
  cgroup_process_exited_locked(k, p);
  if (Cgroup* cg = p.cgroup) {
    p.cgroup = nullptr;
    put(k, cg);
  }
}

long cgroup_can_add_task_locked(Process& p) {
  for (Cgroup* c = p.cgroup; c; c = c->parent)
    if (c->pids_current + 1 > c->pids_max) {
      // Linux counts the refusal where the limit is (pids.events "max").
      c->pids_events_max++;
      return -EAGAIN;
    }
  return 0;
}

void cgroup_task_added_locked(Process& p) {
  if (p.cgroup) charge_tasks(p.cgroup, 1);
}

void cgroup_task_removed_locked(Process& p) {
  if (p.cgroup) charge_tasks(p.cgroup, -1);
}

Cgroup* cgroup_find_locked(Kernel& k, std::string_view path) {
  Cgroup* cg = &k.cgroups->root;
  while (!path.empty()) {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    if (path.empty()) break;
    size_t slash = path.find('/');
    std::string_view name = head(path, slash);
    path = slash == std::string_view::npos ? std::string_view() : tail(path, slash);
    Cgroup* c = cg->children;
    while (c && name != c->name) c = c->sibling;
    if (!c) return nullptr;
    cg = c;
  }
  return cg;
}

int cgroup_depth(const Cgroup& cg) {
  int d = 0;
  for (const Cgroup* c = cg.parent; c; c = c->parent) d++;
  return d;
}

long cgroup_mkdir_locked(Kernel& k, Cgroup& parent, std::string_view name) {
  if (name.empty() || name.size() >= sizeof parent.name || name.find('\n') != std::string_view::npos)
    return -EINVAL;
  if (is_control_file_name(name)) return -EEXIST;  // a file's name, or one cgroupfs keeps for its files
  for (Cgroup* c = parent.children; c; c = c->sibling)
    if (name == c->name) return -EEXIST;
  // Linux's cgroup_check_hierarchy_limits: every ancestor's limits.
  int depth = cgroup_depth(parent) + 1;
  for (Cgroup* a = &parent; a; a = a->parent) {
    if (a->ndescendants >= a->max_descendants) return -EAGAIN;
    if (depth - cgroup_depth(*a) > a->max_depth) return -EAGAIN;
  }
  Cgroup* cg = k.heap->make<Cgroup>();
  if (!cg) return -ENOMEM;
  memcpy(cg->name, name.data(), name.size());
  cg->name[name.size()] = 0;
  cg->id = k.cgroups->next_id++;
  cg->parent = &parent;
  cg->sibling = parent.children;
  parent.children = cg;
  parent.refs++;
  for (Cgroup* a = &parent; a; a = a->parent) a->ndescendants++;
  k.cgroups->count++;
  return 0;
}

long cgroup_rmdir_locked(Kernel& k, Cgroup& cg) {
  if (!cg.parent) return -EBUSY;  // the root
  if (cg.children || cg.populated_below > 0) return -EBUSY;
  Cgroup* parent = cg.parent;
  Cgroup** link = &parent->children;
  while (*link && *link != &cg) link = &(*link)->sibling;
  if (*link) *link = cg.sibling;
  for (Cgroup* a = parent; a; a = a->parent) a->ndescendants--;
  cg.removed = true;
  cg.parent = nullptr;  // a zombie still in it shows the root's path
  put(k, parent);
  put(k, &cg);
  memcg_limits_changed_locked(k);  // its limits no longer count
  return 0;
}

long cgroup_move_locked(Kernel& k, Process& caller, Cgroup& cg, int pid) {
  Process* p = pid == 0 ? &caller : find_process_locked(k, pid);
  if (!p || p->state != ProcState::kRunning || !p->cgroup_live) return -ESRCH;
  if (cg.parent && cg.subtree_control) return -EBUSY;  // no internal processes
  Cgroup* from = p->cgroup;
  if (from == &cg) return 0;
  count_procs(from, -1);
  charge_tasks(from, -p->nthreads);
  count_procs(&cg, 1);
  charge_tasks(&cg, p->nthreads);  // a move is never refused by pids.max (as Linux)
  cg.refs++;
  p->cgroup = &cg;
  put(k, from);
  refreeze_locked(*p);
  return 0;
}

void cgroup_set_freeze_locked(Kernel& k, Cgroup& cg, bool on) {
  cg.freeze = on;
  for (Task* x : k.live_tasks())
    if (x && first_thread_of_process(*x) && x->proc->state == ProcState::kRunning && in_subtree(x->proc->cgroup, cg))
      refreeze_locked(*x->proc);
}

void cgroup_cpu_ns_locked(Kernel& k, const Cgroup& cg, uint64_t* all, uint64_t* user) {
  *all = cg.cpu_gone_ns;
  *user = cg.cpu_gone_user_ns;
  for (Task* x : k.live_tasks()) {
    if (!x || !first_thread_of_process(*x) || !x->proc->cgroup_live || !in_subtree(x->proc->cgroup, cg)) continue;
    *all += process_cpu_ns_locked(*x->proc, kCpuProf);
    *user += process_cpu_ns_locked(*x->proc, kCpuVirtual);
  }
  if (*user > *all) *user = *all;
}

bool cgroup_frozen_locked(Kernel& k, const Cgroup& cg) {
  if (!freezing(&cg)) return false;
  for (Task* x : k.live_tasks())
    if (x && x->proc->state == ProcState::kRunning && in_subtree(x->proc->cgroup, cg) && !x->in_freezer.load())
      return false;
  return true;
}

void cgroup_delegate_root(Kernel& k, int64_t memory_max, int64_t pids_max) {
  Guard g(k.tasks_lock);
  Cgroup& root = k.cgroups->root;
  root.delegated_root = true;
  if (memory_max > 0) {
    root.mem.max = memory_max;
    k.mem.shown_total = (uint64_t)memory_max;
  }
  if (pids_max > 0) root.pids_max = pids_max;
  memcg_limits_changed_locked(k);
}

uint32_t cgroup_controllers(const Cgroup& cg) {
  return cg.parent ? cg.parent->subtree_control : kCgroupAllControllers;
}

long cgroup_set_subtree_control_locked(Cgroup& cg, std::string_view spec) {
  uint32_t enable = 0, disable = 0;
  while (!spec.empty()) {
    while (!spec.empty() && (spec.front() == ' ' || spec.front() == '\n' || spec.front() == '\t'))
      spec.remove_prefix(1);
    if (spec.empty()) break;
    size_t end = 0;
    while (end < spec.size() && spec[end] != ' ' && spec[end] != '\n' && spec[end] != '\t') end++;
    std::string_view tok = head(spec, end);
    spec.remove_prefix(end);
    if (tok.size() < 2 || (tok[0] != '+' && tok[0] != '-')) return -EINVAL;
    uint32_t bit = 0;
    for (const auto& c : kControllers)
      if (tail(tok, 1) == c.name) bit = c.bit;
    if (!bit || !(cgroup_controllers(cg) & bit)) return -EINVAL;
    if (tok[0] == '+') {
      enable |= bit;
      disable &= ~bit;
    } else {
      disable |= bit;
      enable &= ~bit;
    }
  }
  enable &= ~cg.subtree_control;
  disable &= cg.subtree_control;
  if (enable && cg.parent && cg.nprocs > 0) return -EBUSY;
  for (Cgroup* c = cg.children; c; c = c->sibling)
    if (c->subtree_control & disable) return -EBUSY;
  cg.subtree_control = (cg.subtree_control | enable) & ~disable;
  return 0;
}

int cgroup_kill_locked(Kernel& k, Cgroup& cg, Process& caller) {
  int n = 0;
  for (Task* x : k.live_tasks()) {
    if (!x || !first_thread_of_process(*x) || x->proc->state != ProcState::kRunning || !x->proc->cgroup_live) continue;
    bool inside = false;
    for (Cgroup* c = x->proc->cgroup; c && !inside; c = c->parent) inside = c == &cg;
    if (!inside) continue;
    siginfo_t si{};
    si.si_signo = SIGKILL;
    si.si_code = SI_KERNEL;
    send_signal(*x->proc, nullptr, SIGKILL, si, sent_by(caller));
    n++;
  }
  return n;
}

Cgroup* cgroup_by_id_locked(Kernel& k, uint64_t id) {
  for (Cgroup* c = &k.cgroups->root; c; c = cgroup_next_locked(c, nullptr))
    if (c->id == id) return c;
  return nullptr;
}

Cgroup* cgroup_next_locked(Cgroup* c, Cgroup* top) {
  if (c->children) return c->children;
  while (c != top && !c->sibling) c = c->parent;
  return c && c != top ? c->sibling : nullptr;
}

bool cgroup_contains(const Cgroup& top, const Cgroup* c) {
  for (; c; c = c->parent)
    if (c == &top) return true;
  return false;
}

void cgroup_path(const Cgroup& cg, SynthText& out) {
  // Built from the end, as Linux's kernfs_path; a path longer than
  // PATH_MAX keeps its last part (Linux would refuse it with ENAMETOOLONG).
  char buf[4096];
  size_t at = sizeof buf;
  for (const Cgroup* c = &cg; c && c->parent; c = c->parent) {
    size_t len = strlen(c->name);
    if (len + 1 > at) break;
    at -= len;
    memcpy(buf + at, c->name, len);
    buf[--at] = '/';
  }
  if (at == sizeof buf) buf[--at] = '/';
  out.str(std::string_view(buf + at, sizeof buf - at));
}

void cgroup_show_controllers(uint32_t bits, SynthText& out) {
  bool first = true;
  for (const auto& c : kControllers)
    if (bits & c.bit) {
      if (!first) out.ch(' ');
      out.str(c.name);
      first = false;
    }
  out.ch('\n');
}

void cgroup_proc_pid(Kernel& k, Process& p, SynthText& out) {
  out.str("0::");
  cgroup_path(p.cgroup && !p.cgroup->removed ? *p.cgroup : k.cgroups->root, out);
  out.ch('\n');
}

void cgroup_proc_cgroups(Kernel& k, SynthText& out) {
  out.str("#subsys_name\thierarchy\tnum_cgroups\tenabled\n");
  for (const auto& c : kControllers) out.str(c.name).str("\t0\t").dec(k.cgroups->count).str("\t1\n");
}

}  // namespace flatux
