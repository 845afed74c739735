// What the System V IPC families share: the id tables, permissions,
// ipc_perm in and out, and sleeping on an object.
#include "kernel/ipc/ipc.h"
#include "kernel/ipc/mqueue.h"

#include <cstring>
#include <linux/futex.h>
#include <linux/ipc.h>
#include <sys/syscall.h>
#include <asm/ipcbuf.h>

#include "kernel/task/isys.h"
#include "kernel/kernel.h"
#include "kernel/time.h"
#include "kernel/vfs/perm.h"
#include "kernel/task/caps.h"

namespace flatux {

IpcNamespace* ipc_namespace_create(Heap* heap) {
  IpcNamespace* ns = heap->make<IpcNamespace>();
  if (ns && !(ns->mq = mq_table_create(heap))) {
    heap->destroy_obj(ns);
    return nullptr;
  }
  return ns;
}

bool IpcIds::grow(Heap* heap, int need) {
  if (need <= cap_) return true;
  int ncap = cap_ ? cap_ : kIpcMinCycle;
  while (ncap < need) ncap *= 2;
  if (ncap > kIpcMni) ncap = kIpcMni;
  auto** n = static_cast<IpcObject**>(heap->alloc(sizeof(IpcObject*) * (size_t)ncap));
  if (!n) return false;
  if (cap_) memcpy(n, slots_, sizeof(IpcObject*) * (size_t)cap_);
  heap->free(slots_);
  slots_ = n;
  cap_ = ncap;
  return true;
}

// Linux's ipc_idr_alloc: indices are handed out cyclically below
// max(in_use * 3/2, 64), and the sequence number moves on each time the
// cycle wraps, so a removed id is not soon seen again.
long IpcIds::add(Heap* heap, IpcObject* obj, int limit) {
  if (in_use_ >= limit) return -ENOSPC;
  int max = in_use_ * 3 / 2;
  if (max < kIpcMinCycle) max = kIpcMinCycle;
  if (max > kIpcMni) max = kIpcMni;
  if (!grow(heap, max)) return -ENOMEM;
  int idx = -1;
  for (int i = last_idx_ + 1; i < max && idx < 0; i++)
    if (!slots_[i]) idx = i;
  for (int i = 0; i <= last_idx_ && i < max && idx < 0; i++)
    if (!slots_[i]) idx = i;
  if (idx < 0) return -ENOSPC;
  if (idx <= last_idx_) seq_ = (seq_ + 1) % (uint32_t)(0x7fffffff >> kIpcSeqShift);
  last_idx_ = idx;
  slots_[idx] = obj;
  obj->index = idx;
  obj->seq = seq_;
  obj->id = (int)(seq_ << kIpcSeqShift) + idx;
  in_use_++;
  if (idx > max_idx_) max_idx_ = idx;
  return obj->id;
}

void IpcIds::remove(IpcObject* obj) {
  if (obj->removed || obj->index < 0) return;
  slots_[obj->index] = nullptr;
  obj->removed = true;
  in_use_--;
  while (max_idx_ >= 0 && !slots_[max_idx_]) max_idx_--;
}

IpcObject* IpcIds::find_id(int id) const {
  if (id < 0) return nullptr;
  IpcObject* o = at(id & (kIpcMni - 1));
  return o && o->id == id ? o : nullptr;
}

IpcObject* IpcIds::find_key(int32_t key) const {
  for (int i = 0; i <= max_idx_; i++)
    if (slots_[i] && slots_[i]->key == key) return slots_[i];
  return nullptr;
}

long ipc_permitted(Task& t, const IpcObject& obj, int flag) {
  const Creds& c = t.proc->creds;
  int requested = (flag >> 6) | (flag >> 3) | flag;
  uint32_t granted = obj.mode;
  if (c.euid == obj.cuid || c.euid == obj.uid) granted >>= 6;
  else if (in_group(t, obj.cgid) || in_group(t, obj.gid)) granted >>= 3;
  if ((requested & ~(int)granted & 07) && !capable(c, CAP_IPC_OWNER)) return -EACCES;
  return 0;
}

long ipc_may_change(Task& t, const IpcObject& obj) {
  uint32_t euid = t.proc->creds.euid;
  return euid == obj.cuid || euid == obj.uid || capable(t.proc->creds, CAP_SYS_ADMIN) ? 0 : -EPERM;
}

void ipc_init_object(Task& t, IpcObject& obj, int32_t key, int flag) {
  const Creds& c = t.proc->creds;
  obj.key = key;
  obj.uid = obj.cuid = c.euid;
  obj.gid = obj.cgid = c.egid;
  obj.mode = (uint32_t)flag & 0777;
  obj.ctime = ipc_now();
}

void ipc_fill_perm(const IpcObject& obj, ipc64_perm* out) {
  memset(out, 0, sizeof *out);
  out->key = obj.key;
  out->uid = obj.uid;
  out->gid = obj.gid;
  out->cuid = obj.cuid;
  out->cgid = obj.cgid;
  out->mode = obj.mode;
  out->seq = (unsigned short)obj.seq;
}

void ipc_set_perm(IpcObject& obj, const ipc64_perm& in) {
  obj.uid = in.uid;
  obj.gid = in.gid;
  obj.mode = (obj.mode & ~0777u) | (in.mode & 0777u);
  obj.ctime = ipc_now();
}

int64_t ipc_now() { return realtime_now().tv_sec; }

long ipc_wait(Task& t, IpcObject& obj, uint32_t seen, int64_t deadline_ns) {
  timespec ts{};
  if (deadline_ns > 0) {
    ts.tv_sec = deadline_ns / 1000000000;
    ts.tv_nsec = deadline_ns % 1000000000;
  }
  // An absolute CLOCK_MONOTONIC deadline, so a wake-up that finds nothing
  // for us does not restart the timeout.
  long r = isys(t, SYS_futex, &obj.changed, FUTEX_WAIT_BITSET, seen, deadline_ns > 0 ? &ts : nullptr,
                0, FUTEX_BITSET_MATCH_ANY);
  if (r == -EINTR) return -EINTR;
  if (r == -ETIMEDOUT) return -EAGAIN;
  return 0;
}

void ipc_wake(IpcObject& obj) {
  obj.changed.fetch_add(1, std::memory_order_release);
  futex_wake(&obj.changed, 0x7fffffff);
}

}  // namespace flatux
