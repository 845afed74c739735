// System V semaphores: semget, semop, semtimedop, semctl.
//
// A semop applies all of its operations or none. One that cannot proceed
// sleeps on the set's `changed` word and tries again whenever the set
// changes (semval moves, IPC_RMID), counting itself in the semncnt or
// semzcnt of the semaphore it waits on. SEM_UNDO adjustments are kept per
// process (shared by CLONE_SYSVSEM) and applied when the last process
// holding them exits; each adjustment is also linked from its set, so
// SETVAL/SETALL can clear them and IPC_RMID can let them go.
#include <cstring>
#include <linux/errno.h>
#include <linux/ipc.h>
#include <linux/sem.h>
#include <linux/time_types.h>

#include "kernel/mm/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/time.h"
#include "kernel/vfs/synth.h"

namespace flatux {

struct Sem {
  int val = 0;
  int pid = 0;   // sempid: the last process to change it
  int ncnt = 0;  // sleepers waiting for it to grow
  int zcnt = 0;  // sleepers waiting for it to reach zero
  int64_t otime = 0;
};

struct SemUndo;

struct SemSet : IpcObject {
  int nsems = 0;
  Sem* sems = nullptr;
  SemUndo* undos = nullptr;  // every process's adjustments to this set
};

// One process's SEM_UNDO adjustments to one set.
struct SemUndo {
  SemSet* set;           // nullptr once the set is gone
  SemUndoList* owner;
  SemUndo* next_in_list;
  SemUndo* next_in_set;
  int nsems;
  short adj[];           // semadj per semaphore
};

struct SemUndoList {
  std::atomic<int> refs{1};
  SemUndo* head = nullptr;  // under the namespace's sem.lock
};

namespace {

constexpr int kSemAem = kSemVmx;  // SEMAEM: the largest adjustment

IpcNamespace& ns_of(Task& t) { return *t.kernel->ipc; }
SemSet* find_id(IpcNamespace& ns, int id) { return static_cast<SemSet*>(ns.sem.find_id(id)); }

void put_set(Heap* heap, SemSet* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  heap->free(s->sems);
  heap->destroy_obj(s);
}

void unlink_from_set(SemUndo* u) {
  if (!u->set) return;
  for (SemUndo** link = &u->set->undos; *link; link = &(*link)->next_in_set)
    if (*link == u) {
      *link = u->next_in_set;
      break;
    }
  u->set = nullptr;
}

// IPC_RMID: out of the table, sleepers woken (they find it removed), the
// adjustments forgotten. sem.lock held.
void remove_locked(Heap* heap, IpcNamespace& ns, SemSet* s) {
  ns.sem.remove(s);
  ns.sem_total -= s->nsems;
  while (SemUndo* u = s->undos) {
    s->undos = u->next_in_set;
    u->set = nullptr;
  }
  ipc_wake(*s);
  put_set(heap, s);
}

long new_set(Task& t, IpcNamespace& ns, int32_t key, int nsems, int flag) {
  Heap* heap = t.kernel->heap;
  if (nsems == 0) return -EINVAL;
  if (ns.sem_total + nsems > ns.limits.sem[1].load()) return -ENOSPC;
  if (ns.sem.in_use() >= ns.limits.sem[3].load()) return -ENOSPC;
  SemSet* s = heap->make<SemSet>();
  Sem* sems = s ? static_cast<Sem*>(heap->alloc(sizeof(Sem) * (size_t)nsems)) : nullptr;
  if (!sems) {
    heap->destroy_obj(s);
    return -ENOMEM;
  }
  ipc_init_object(t, *s, key, flag);
  s->nsems = nsems;
  s->sems = sems;
  long id = ns.sem.add(heap, s, ns.limits.sem[3].load());
  if (id < 0) {
    heap->free(sems);
    heap->destroy_obj(s);
    return id;
  }
  ns.sem_total += nsems;
  return id;
}

// The caller's adjustments to set s, made on first use. sem.lock held.
ErrorOr<SemUndo*> undo_for(Task& t, SemSet* s) {
  Heap* heap = t.kernel->heap;
  Process& p = *t.proc;
  if (!p.sem_undo && !(p.sem_undo = heap->make<SemUndoList>())) return kerr(-ENOMEM);
  for (SemUndo* u = p.sem_undo->head; u; u = u->next_in_list)
    if (u->set == s) return u;
  auto* u = static_cast<SemUndo*>(heap->alloc(sizeof(SemUndo) + sizeof(short) * (size_t)s->nsems));
  if (!u) return kerr(-ENOMEM);
  u->set = s;
  u->owner = p.sem_undo;
  u->nsems = s->nsems;
  u->next_in_list = p.sem_undo->head;
  p.sem_undo->head = u;
  u->next_in_set = s->undos;
  s->undos = u;
  return u;
}

// SETVAL and SETALL: the semaphore's (or, num < 0, every) adjustment in
// every process is cleared.
void clear_adjustments(SemSet& s, int num) {
  for (SemUndo* u = s.undos; u; u = u->next_in_set) {
    if (num >= 0) u->adj[num] = 0;
    else memset(u->adj, 0, sizeof(short) * (size_t)u->nsems);
  }
}

enum class Try { kDone, kBlock, kError };

// Linux's perform_atomic_semop: every operation or none. On kBlock,
// *blocker is the operation that must wait; on kError, *err says why.
Try try_ops(Task& t, SemSet& s, const sembuf* ops, int n, SemUndo* undo, int* blocker, long* err) {
  int i = 0;
  for (; i < n; i++) {
    Sem& sem = s.sems[ops[i].sem_num];
    int result = sem.val + ops[i].sem_op;
    if ((ops[i].sem_op == 0 && sem.val != 0) || result < 0) break;
    if (result > kSemVmx) {
      *err = -ERANGE;
      for (int j = i - 1; j >= 0; j--) s.sems[ops[j].sem_num].val -= ops[j].sem_op;
      return Try::kError;
    }
    if ((ops[i].sem_flg & SEM_UNDO) && undo) {
      int adj = undo->adj[ops[i].sem_num] - ops[i].sem_op;
      if (adj < -kSemAem - 1 || adj > kSemAem) {
        *err = -ERANGE;
        for (int j = i - 1; j >= 0; j--) s.sems[ops[j].sem_num].val -= ops[j].sem_op;
        return Try::kError;
      }
    }
    sem.val = result;
  }
  if (i < n) {
    for (int j = i - 1; j >= 0; j--) s.sems[ops[j].sem_num].val -= ops[j].sem_op;
    if (ops[i].sem_flg & IPC_NOWAIT) {
      *err = -EAGAIN;
      return Try::kError;
    }
    *blocker = i;
    return Try::kBlock;
  }
  int64_t now = ipc_now();
  for (i = 0; i < n; i++) {
    Sem& sem = s.sems[ops[i].sem_num];
    sem.pid = t.proc->pid;
    sem.otime = now;
    if ((ops[i].sem_flg & SEM_UNDO) && undo) undo->adj[ops[i].sem_num] = (short)(undo->adj[ops[i].sem_num] - ops[i].sem_op);
  }
  return Try::kDone;
}

// The set a semop works on, in Linux's order of checks. sem.lock held.
ErrorOr<SemSet*> semop_target(Task& t, IpcNamespace& ns, int id, int max_num, bool alter) {
  SemSet* s = find_id(ns, id);
  if (!s) return kerr(-EINVAL);
  if (max_num >= s->nsems) return kerr(-EFBIG);
  if (ipc_permitted(t, *s, alter ? 0222 : 0444)) return kerr(-EACCES);
  return s;
}

long read_timeout(uint64_t guest, int64_t* deadline) {
  *deadline = 0;
  if (!guest) return 0;
  __kernel_timespec ts;
  if (copy_from_user(&ts, (const void*)guest, sizeof ts) < 0) return -EFAULT;
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return -EINVAL;
  *deadline = (int64_t)monotonic_ns() + ts.tv_sec * 1000000000 + ts.tv_nsec;
  if (*deadline <= 0) *deadline = 1;  // already passed: one try, then EAGAIN
  return 0;
}

long do_semop(Task& t, int id, uint64_t guest_ops, uint64_t nops, uint64_t guest_timeout) {
  IpcNamespace& ns = ns_of(t);
  Heap* heap = t.kernel->heap;
  if ((int64_t)nops < 1 || id < 0) return -EINVAL;
  if (nops > (uint64_t)ns.limits.sem[2].load()) return -E2BIG;
  sembuf small[16];
  sembuf* ops = nops <= 16 ? small : static_cast<sembuf*>(heap->alloc(sizeof(sembuf) * nops));
  if (!ops) return -ENOMEM;
  struct Free {
    Heap* h; sembuf* p; sembuf* small;
    ~Free() { if (p != small) h->free(p); }
  } free_ops{heap, ops, small};
  if (copy_from_user(ops, (const void*)guest_ops, sizeof(sembuf) * nops) < 0) return -EFAULT;
  int64_t deadline;
  TRY_LONG(read_timeout(guest_timeout, &deadline));
  int n = (int)nops, max = 0;
  bool alter = false, undo = false;
  for (int i = 0; i < n; i++) {
    if (ops[i].sem_num > max) max = ops[i].sem_num;
    if (ops[i].sem_op != 0) alter = true;
    if (ops[i].sem_flg & SEM_UNDO) undo = true;
  }
  Guard g(ns.sem.lock);
  TRY(s, semop_target(t, ns, id, max, alter));
  SemUndo* u = nullptr;
  if (undo) {
    TRY(mine, undo_for(t, s));
    u = mine;
  }
  for (;;) {
    int blocker = 0;
    long err = 0;
    switch (try_ops(t, *s, ops, n, u, &blocker, &err)) {
      case Try::kDone:
        if (alter) ipc_wake(*s);
        return 0;
      case Try::kError: return err;
      case Try::kBlock: break;
    }
    Sem& waited = s->sems[ops[blocker].sem_num];
    int* count = ops[blocker].sem_op == 0 ? &waited.zcnt : &waited.ncnt;
    ++*count;
    uint32_t seen = s->changed.load(std::memory_order_acquire);
    s->get();
    ns.sem.lock.unlock();
    long w = ipc_wait(t, *s, seen, deadline);
    ns.sem.lock.lock();
    --*count;
    bool removed = s->removed;
    put_set(heap, s);  // the table still holds it unless removed
    if (removed) return -EIDRM;
    if (w < 0) return w;  // -EINTR (semop is never restarted) or -EAGAIN (timed out)
  }
}

void fill_ds(const SemSet& s, semid64_ds* ds) {
  memset(ds, 0, sizeof *ds);
  ipc_fill_perm(s, &ds->sem_perm);
  for (int i = 0; i < s.nsems; i++)
    if (s.sems[i].otime > ds->sem_otime) ds->sem_otime = s.sems[i].otime;
  ds->sem_ctime = s.ctime;
  ds->sem_nsems = (unsigned long)s.nsems;
}

long info_cmd(IpcNamespace& ns, int cmd, uint64_t buf) {
  seminfo info{};
  info.semmni = ns.limits.sem[3].load();
  info.semmns = ns.limits.sem[1].load();
  info.semmsl = ns.limits.sem[0].load();
  info.semopm = ns.limits.sem[2].load();
  info.semvmx = kSemVmx;
  info.semmap = SEMMAP;
  info.semmnu = SEMMNU;
  info.semume = SEMUME;
  Guard g(ns.sem.lock);
  info.semusz = cmd == SEM_INFO ? ns.sem.in_use() : SEMUSZ;
  info.semaem = cmd == SEM_INFO ? (int)ns.sem_total : kSemAem;
  int max = ns.sem.max_index();
  if (copy_to_user((void*)buf, &info, sizeof info) < 0) return -EFAULT;
  return max < 0 ? 0 : max;
}

// GETVAL, GETPID, GETNCNT, GETZCNT and SETVAL.
long one_sem_cmd(Task& t, IpcNamespace& ns, int id, int num, int cmd, uint64_t arg) {
  int val = (int)arg;
  if (cmd == SETVAL && (val < 0 || val > kSemVmx)) return -ERANGE;
  Guard g(ns.sem.lock);
  SemSet* s = find_id(ns, id);
  if (!s) return -EINVAL;
  bool set = cmd == SETVAL;
  if (!set && ipc_permitted(t, *s, 0444)) return -EACCES;
  if (num < 0 || num >= s->nsems) return -EINVAL;
  if (set && ipc_permitted(t, *s, 0222)) return -EACCES;
  Sem& sem = s->sems[num];
  switch (cmd) {
    case GETVAL: return sem.val;
    case GETPID: return sem.pid;
    case GETNCNT: return sem.ncnt;
    case GETZCNT: return sem.zcnt;
  }
  clear_adjustments(*s, num);
  sem.val = val;
  sem.pid = t.proc->pid;
  s->ctime = ipc_now();
  ipc_wake(*s);
  return 0;
}

// GETALL and SETALL: the values go through a kernel copy, so no guest
// memory is touched with the lock held.
long all_cmd(Task& t, IpcNamespace& ns, int id, int cmd, uint64_t arg) {
  Heap* heap = t.kernel->heap;
  int nsems;
  {
    Guard g(ns.sem.lock);
    SemSet* s = find_id(ns, id);
    if (!s) return -EINVAL;
    if (ipc_permitted(t, *s, cmd == SETALL ? 0222 : 0444)) return -EACCES;
    nsems = s->nsems;
  }
  auto* vals = static_cast<unsigned short*>(heap->alloc(sizeof(unsigned short) * (size_t)nsems));
  if (!vals) return -ENOMEM;
  long r = 0;
  if (cmd == SETALL) {
    if (copy_from_user(vals, (const void*)arg, sizeof(unsigned short) * (size_t)nsems) < 0) r = -EFAULT;
    for (int i = 0; r == 0 && i < nsems; i++)
      if (vals[i] > kSemVmx) r = -ERANGE;
  }
  if (r == 0) {
    Guard g(ns.sem.lock);
    SemSet* s = find_id(ns, id);
    if (!s || s->nsems != nsems) {
      r = -EIDRM;
    } else if (cmd == GETALL) {
      for (int i = 0; i < nsems; i++) vals[i] = (unsigned short)s->sems[i].val;
    } else {
      clear_adjustments(*s, -1);
      for (int i = 0; i < nsems; i++) {
        s->sems[i].val = vals[i];
        s->sems[i].pid = t.proc->pid;
      }
      s->ctime = ipc_now();
      ipc_wake(*s);
    }
  }
  if (r == 0 && cmd == GETALL && copy_to_user((void*)arg, vals, sizeof(unsigned short) * (size_t)nsems) < 0)
    r = -EFAULT;
  heap->free(vals);
  return r;
}

}  // namespace

long sys_semget(Task& t, SyscallArgs a) {
  IpcNamespace& ns = ns_of(t);
  int32_t key = (int32_t)a[0];
  int nsems = (int)a[1], flag = (int)a[2];
  if (nsems < 0 || nsems > ns.limits.sem[0].load()) return -EINVAL;
  return ipc_get(t, ns.sem, key, flag, [&] { return new_set(t, ns, key, nsems, flag); },
                 [&](IpcObject& o) { return static_cast<SemSet&>(o).nsems < nsems ? -EINVAL : 0; });
}

long sys_semop(Task& t, SyscallArgs a) { return do_semop(t, (int)a[0], a[1], a[2], 0); }
long sys_semtimedop(Task& t, SyscallArgs a) { return do_semop(t, (int)a[0], a[1], a[2], a[3]); }

long sys_semctl(Task& t, SyscallArgs a) {
  IpcNamespace& ns = ns_of(t);
  int id = (int)a[0], num = (int)a[1], cmd = (int)a[2];
  if (id < 0 && cmd != IPC_INFO && cmd != SEM_INFO) return -EINVAL;
  switch (cmd) {
    case IPC_INFO: case SEM_INFO: return info_cmd(ns, cmd, a[3]);
    case IPC_STAT: case SEM_STAT: case SEM_STAT_ANY:
      return ipc_stat<SemSet, semid64_ds>(t, ns.sem, id, cmd != IPC_STAT, cmd == SEM_STAT_ANY, a[3], fill_ds);
    case GETVAL: case GETPID: case GETNCNT: case GETZCNT: case SETVAL:
      return one_sem_cmd(t, ns, id, num, cmd, a[3]);
    case GETALL: case SETALL: return all_cmd(t, ns, id, cmd, a[3]);
    case IPC_SET: case IPC_RMID:
      return ipc_change<SemSet, semid64_ds>(t, ns.sem, id, cmd == IPC_SET, a[3], [&](SemSet& s, semid64_ds& in) {
        if (cmd == IPC_SET) ipc_set_perm(s, in.sem_perm);
        else remove_locked(t.kernel->heap, ns, &s);
        return 0L;
      });
    default: return -EINVAL;
  }
}

SemUndoList* sem_undo_share(Heap* heap, Process& parent) {
  IpcNamespace& ns = *parent.kernel->ipc;
  Guard g(ns.sem.lock);
  if (!parent.sem_undo && !(parent.sem_undo = heap->make<SemUndoList>())) return nullptr;
  parent.sem_undo->refs.fetch_add(1, std::memory_order_relaxed);
  return parent.sem_undo;
}

// Linux's exit_sem: the last process holding the adjustments applies
// them, each semaphore kept within [0, SEMVMX].
void sem_exit(Kernel& k, Process& p) {
  SemUndoList* l = p.sem_undo;
  p.sem_undo = nullptr;
  if (!l || l->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  IpcNamespace& ns = *k.ipc;
  Guard g(ns.sem.lock);
  while (SemUndo* u = l->head) {
    l->head = u->next_in_list;
    if (SemSet* s = u->set) {
      bool changed = false;
      for (int i = 0; i < u->nsems; i++) {
        if (!u->adj[i]) continue;
        int v = s->sems[i].val + u->adj[i];
        s->sems[i].val = v < 0 ? 0 : v > kSemVmx ? kSemVmx : v;
        s->sems[i].pid = p.pid;
        changed = true;
      }
      unlink_from_set(u);
      if (changed) ipc_wake(*s);
    }
    k.heap->free(u);
  }
  k.heap->destroy_obj(l);
}

void sem_proc_show(Kernel& k, SynthText& o) {
  const char* header =
      "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n";
  ipc_proc_show<SemSet>(k.ipc->sem, o, header, [](SemSet& s, KFmt& f) {
    semid64_ds ds;
    fill_ds(s, &ds);
    f.pad_dec(s.key, 10).ch(' ').pad_dec(s.id, 10).str("  ").pad_oct(s.mode, 4).ch(' ');
    f.udec_padded((uint32_t)s.nsems, 10).ch(' ').udec_padded(s.uid, 5).ch(' ').udec_padded(s.gid, 5).ch(' ');
    f.udec_padded(s.cuid, 5).ch(' ').udec_padded(s.cgid, 5).ch(' ');
    f.udec_padded((uint64_t)ds.sem_otime, 10).ch(' ').udec_padded((uint64_t)s.ctime, 10).ch('\n');
  });
}

}  // namespace flatux
