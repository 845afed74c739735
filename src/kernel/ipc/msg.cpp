// System V message queues: msgget, msgsnd, msgrcv, msgctl.
//
// Messages are copied into the kernel heap (charged to mem= while they
// wait) and kept in arrival order. A full queue (msg_qbytes bytes, or as
// many messages) makes a sender sleep, an empty one a receiver, on the
// queue's `changed` word; both wake on every change and look again.
#include <climits>
#include <cstring>
#include <linux/errno.h>
#include <linux/ipc.h>
#include <linux/msg.h>

#include "kernel/mm/usercopy.h"
#include "kernel/ipc/ipc.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/mm/mm.h"
#include "kernel/signal/signal.h"
#include "kernel/syscalls.h"
#include "kernel/vfs/synth.h"
#include "kernel/task/caps.h"

namespace flatux {

struct Msg {
  Msg* next;
  long type;
  size_t size;
  char text[];
};

struct MsgQueue : IpcObject {
  Msg* head = nullptr;
  Msg** tail = &head;
  uint64_t qbytes = 0, cbytes = 0, qnum = 0;
  int lspid = 0, lrpid = 0;
  int64_t stime = 0, rtime = 0;
};

namespace {

IpcNamespace& ns_of(Task& t) { return *t.kernel->ipc; }
MsgQueue* find_id(IpcNamespace& ns, int id) { return static_cast<MsgQueue*>(ns.msg.find_id(id)); }

void free_msg(Kernel& k, Msg* m) {
  mem_uncharge(k.mem, sizeof(Msg) + m->size);
  k.heap->free(m);
}

void put_queue(Kernel& k, MsgQueue* q) {
  if (q->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  while (Msg* m = q->head) {
    q->head = m->next;
    free_msg(k, m);
  }
  k.heap->destroy_obj(q);
}

long new_queue(Task& t, IpcNamespace& ns, int32_t key, int flag) {
  Kernel& k = *t.kernel;
  if (ns.msg.in_use() >= ns.limits.msgmni.load()) return -ENOSPC;
  MsgQueue* q = k.heap->make<MsgQueue>();
  if (!q) return -ENOMEM;
  ipc_init_object(t, *q, key, flag);
  q->qbytes = (uint64_t)ns.limits.msgmnb.load();
  long id = ns.msg.add(k.heap, q, ns.limits.msgmni.load());
  if (id < 0) k.heap->destroy_obj(q);
  return id;
}

// Sleeps on q with msg.lock held on entry and on return (unless the
// queue went away: then -EIDRM). Signals: -ERESTARTNOHAND, as Linux.
long sleep_on(Task& t, IpcNamespace& ns, MsgQueue* q, uint32_t seen) {
  q->get();
  ns.msg.lock.unlock();
  long w = ipc_wait(t, *q, seen, 0);
  ns.msg.lock.lock();
  bool removed = q->removed;
  put_queue(*t.kernel, q);
  if (removed) return -EIDRM;
  return w == -EINTR ? -ERESTARTNOHAND : 0;
}

long do_msgsnd(Task& t, int id, uint64_t guest_msg, uint64_t size, int flag) {
  Kernel& k = *t.kernel;
  IpcNamespace& ns = ns_of(t);
  long type;
  if (get_user(type, (const void*)guest_msg) < 0) return -EFAULT;
  if (size > (uint64_t)ns.limits.msgmax.load() || id < 0) return -EINVAL;
  if (type < 1) return -EINVAL;
  if (!mem_charge(k.mem, sizeof(Msg) + size)) return -ENOMEM;
  auto* m = static_cast<Msg*>(k.heap->alloc(sizeof(Msg) + size));
  if (!m) {
    mem_uncharge(k.mem, sizeof(Msg) + size);
    return -ENOMEM;
  }
  m->type = type;
  m->size = size;
  m->next = nullptr;
  if (copy_from_user(m->text, (const char*)guest_msg + sizeof(long), size) < 0) {
    free_msg(k, m);
    return -EFAULT;
  }
  Guard g(ns.msg.lock);
  MsgQueue* q = find_id(ns, id);
  long r = q ? 0 : -EINVAL;
  while (r == 0) {
    if (ipc_permitted(t, *q, 0222)) {
      r = -EACCES;
      break;
    }
    if (q->cbytes + size <= q->qbytes && q->qnum + 1 <= q->qbytes) break;
    if (flag & IPC_NOWAIT) {
      r = -EAGAIN;
      break;
    }
    r = sleep_on(t, ns, q, q->changed.load(std::memory_order_acquire));
  }
  if (r < 0) {
    free_msg(k, m);
    return r;
  }
  *q->tail = m;
  q->tail = &m->next;
  q->qnum++;
  q->cbytes += size;
  q->lspid = t.proc->pid;
  q->stime = ipc_now();
  ns.msg_bytes += (int64_t)size;
  ns.msg_count++;
  ipc_wake(*q);
  return 0;
}

// The message msgrcv's msgtyp and flags select, and the link to it.
Msg** select_msg(MsgQueue& q, long type, int flag) {
  if (flag & MSG_COPY) {  // the type-th message, counted from 0
    Msg** link = &q.head;
    for (long i = 0; *link && i < type; i++) link = &(*link)->next;
    return *link ? link : nullptr;
  }
  Msg** best = nullptr;
  long limit = type == LONG_MIN ? LONG_MAX : -type;  // type < 0: the lowest type <= |type|
  for (Msg** link = &q.head; *link; link = &(*link)->next) {
    long mt = (*link)->type;
    if (type == 0) return link;
    if (type > 0) {
      if ((flag & MSG_EXCEPT) ? mt != type : mt == type) return link;
    } else if (mt <= limit && (!best || mt < (*best)->type)) {
      best = link;
      if (mt == 1) break;
    }
  }
  return best;
}

long do_msgrcv(Task& t, int id, uint64_t guest_msg, uint64_t size, long type, int flag) {
  Kernel& k = *t.kernel;
  IpcNamespace& ns = ns_of(t);
  if (id < 0 || (int64_t)size < 0) return -EINVAL;
  if ((flag & MSG_COPY) && ((flag & MSG_EXCEPT) || !(flag & IPC_NOWAIT))) return -EINVAL;
  Msg* m = nullptr;
  {
    Guard g(ns.msg.lock);
    MsgQueue* q = find_id(ns, id);
    if (!q) return -EINVAL;
    for (;;) {
      if (ipc_permitted(t, *q, 0444)) return -EACCES;
      Msg** link = select_msg(*q, type, flag);
      if (link) {
        Msg* found = *link;
        if (size < found->size && !(flag & MSG_NOERROR)) return -E2BIG;
        if (flag & MSG_COPY) {
          // A copy stays queued; the caller gets its own.
          m = static_cast<Msg*>(k.heap->alloc(sizeof(Msg) + found->size));
          if (!m) return -ENOMEM;
          memcpy(m, found, sizeof(Msg) + found->size);
          break;
        }
        *link = found->next;
        if (q->tail == &found->next) q->tail = link;
        q->qnum--;
        q->cbytes -= found->size;
        q->lrpid = t.proc->pid;
        q->rtime = ipc_now();
        ns.msg_bytes -= (int64_t)found->size;
        ns.msg_count--;
        ipc_wake(*q);
        m = found;
        break;
      }
      if (flag & IPC_NOWAIT) return -ENOMSG;
      long r = sleep_on(t, ns, q, q->changed.load(std::memory_order_acquire));
      if (r < 0) return r;
    }
  }
  size_t n = m->size < size ? m->size : size;
  long r = put_user((void*)guest_msg, m->type);
  if (r == 0 && n) r = copy_to_user((char*)guest_msg + sizeof(long), m->text, n);
  if (flag & MSG_COPY) k.heap->free(m);
  else free_msg(k, m);
  return r < 0 ? r : (long)n;
}

void fill_ds(const MsgQueue& q, msqid64_ds* ds) {
  memset(ds, 0, sizeof *ds);
  ipc_fill_perm(q, &ds->msg_perm);
  ds->msg_stime = q.stime;
  ds->msg_rtime = q.rtime;
  ds->msg_ctime = q.ctime;
  ds->msg_cbytes = q.cbytes;
  ds->msg_qnum = q.qnum;
  ds->msg_qbytes = q.qbytes;
  ds->msg_lspid = q.lspid;
  ds->msg_lrpid = q.lrpid;
}

long info_cmd(IpcNamespace& ns, int cmd, uint64_t buf) {
  msginfo info{};
  info.msgmax = ns.limits.msgmax.load();
  info.msgmnb = ns.limits.msgmnb.load();
  info.msgmni = ns.limits.msgmni.load();
  info.msgssz = MSGSSZ;
  info.msgseg = MSGSEG;
  Guard g(ns.msg.lock);
  if (cmd == MSG_INFO) {
    info.msgpool = ns.msg.in_use();
    info.msgmap = (int)ns.msg_count;
    info.msgtql = (int)ns.msg_bytes;
  } else {
    info.msgpool = MSGPOOL;
    info.msgmap = MSGMAP;
    info.msgtql = MSGTQL;
  }
  int max = ns.msg.max_index();
  if (copy_to_user((void*)buf, &info, sizeof info) < 0) return -EFAULT;
  return max < 0 ? 0 : max;
}

// IPC_SET (a queue larger than msgmnb is root's) and IPC_RMID (sleepers
// find it removed: EIDRM). msg.lock held.
long change(Task& t, IpcNamespace& ns, MsgQueue& q, int cmd, const msqid64_ds& in) {
  if (cmd == IPC_SET) {
    if (in.msg_qbytes > (unsigned long)ns.limits.msgmnb.load() && !capable(t.proc->creds, CAP_SYS_RESOURCE)) return -EPERM;
    q.qbytes = in.msg_qbytes;
    ipc_set_perm(q, in.msg_perm);
    ipc_wake(q);  // a larger queue may take a waiting sender's message
    return 0;
  }
  ns.msg.remove(&q);
  ns.msg_bytes -= (int64_t)q.cbytes;
  ns.msg_count -= (int64_t)q.qnum;
  ipc_wake(q);
  put_queue(*t.kernel, &q);  // the table's reference; sleepers hold theirs
  return 0;
}

}  // namespace

long sys_msgget(Task& t, SyscallArgs a) {
  IpcNamespace& ns = ns_of(t);
  int32_t key = (int32_t)a[0];
  int flag = (int)a[1];
  return ipc_get(t, ns.msg, key, flag, [&] { return new_queue(t, ns, key, flag); },
                 [](IpcObject&) { return 0L; });
}

long sys_msgsnd(Task& t, SyscallArgs a) { return do_msgsnd(t, (int)a[0], a[1], a[2], (int)a[3]); }
long sys_msgrcv(Task& t, SyscallArgs a) { return do_msgrcv(t, (int)a[0], a[1], a[2], (long)a[3], (int)a[4]); }

long sys_msgctl(Task& t, SyscallArgs a) {
  IpcNamespace& ns = ns_of(t);
  int id = (int)a[0], cmd = (int)a[1];
  if (id < 0 && cmd != IPC_INFO && cmd != MSG_INFO) return -EINVAL;
  switch (cmd) {
    case IPC_INFO: case MSG_INFO: return info_cmd(ns, cmd, a[2]);
    case IPC_STAT: case MSG_STAT: case MSG_STAT_ANY:
      return ipc_stat<MsgQueue, msqid64_ds>(t, ns.msg, id, cmd != IPC_STAT, cmd == MSG_STAT_ANY, a[2], fill_ds);
    case IPC_SET: case IPC_RMID:
      return ipc_change<MsgQueue, msqid64_ds>(t, ns.msg, id, cmd == IPC_SET, a[2],
                                              [&](MsgQueue& q, msqid64_ds& in) { return change(t, ns, q, cmd, in); });
    default: return -EINVAL;
  }
}

void msg_proc_show(Kernel& k, SynthText& o) {
  const char* header = "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid"
                       "      stime      rtime      ctime\n";
  ipc_proc_show<MsgQueue>(k.ipc->msg, o, header, [](MsgQueue& q, KFmt& f) {
    f.pad_dec(q.key, 10).ch(' ').pad_dec(q.id, 10).str("  ").pad_oct(q.mode, 4).str("  ");
    f.udec_padded(q.cbytes, 10).ch(' ').udec_padded(q.qnum, 10).ch(' ');
    f.udec_padded((uint32_t)q.lspid, 5).ch(' ').udec_padded((uint32_t)q.lrpid, 5).ch(' ');
    f.udec_padded(q.uid, 5).ch(' ').udec_padded(q.gid, 5).ch(' ').udec_padded(q.cuid, 5).ch(' ');
    f.udec_padded(q.cgid, 5).ch(' ').udec_padded((uint64_t)q.stime, 10).ch(' ');
    f.udec_padded((uint64_t)q.rtime, 10).ch(' ').udec_padded((uint64_t)q.ctime, 10).ch('\n');
  });
}

}  // namespace flatux
