// System V IPC: the kernel instance's IPC namespace (shared memory,
// semaphores, message queues), with what the three families share: keys
// and ids, the permission rules, the limits /proc/sys/kernel shows.
//
// Each family keeps its objects in an IpcIds table under one lock, which
// also guards the objects' state. An object is reference counted: the
// table holds one, a task sleeping on it (semop, msgsnd, msgrcv) or a
// mapping of it (shmat) another, so IPC_RMID can take it out of the table
// while someone still looks at it. Sleepers wait on the object's `changed`
// word (a shared futex: the kernel heap is MAP_SHARED, and a guest process
// in another host process waits on the same word).
#pragma once
#include <atomic>
#include <cstdint>

#include <linux/errno.h>
#include <linux/ipc.h>

#include "kernel/mm/usercopy.h"
#include "kernel/lib/error_or.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/sync.h"
#include "kernel/vfs/synth.h"

namespace flatux {

struct Kernel;
struct Task;
struct Process;
struct Mm;
class Heap;
class SynthText;

// Linux's IPCMNI: indices per family; an id is (seq << 15) + index.
constexpr int kIpcMni = 32768;
constexpr int kIpcSeqShift = 15;
constexpr int kIpcMinCycle = 64;  // ipc_min_cycle: indices cycle at least this far

// Defaults of the namespace's limits (Linux's).
constexpr uint64_t kShmMaxDefault = ~0ull - (1ull << 24);
constexpr int kSemMsl = 32000, kSemMns = 1024000000, kSemOpm = 500, kSemMni = 32000;
constexpr int kSemVmx = 32767;
constexpr int kMsgMax = 8192, kMsgMnb = 16384, kMsgMni = 32000;

struct IpcLimits {
  std::atomic<uint64_t> shmmax{kShmMaxDefault};
  std::atomic<uint64_t> shmall{kShmMaxDefault};  // pages
  std::atomic<int> shmmni{4096};
  std::atomic<int> shm_rmid_forced{0};
  std::atomic<int> sem[4] = {kSemMsl, kSemMns, kSemOpm, kSemMni};  // semmsl semmns semopm semmni
  std::atomic<int> msgmax{kMsgMax}, msgmnb{kMsgMnb}, msgmni{kMsgMni};
};

// What every IPC object has: its ipc_perm and its place in the table.
struct IpcObject {
  int32_t key = 0;
  uint32_t uid = 0, gid = 0, cuid = 0, cgid = 0;
  uint32_t mode = 0;      // permission bits; shm keeps SHM_DEST and SHM_LOCKED above them
  uint32_t seq = 0;
  int id = -1;
  int index = -1;
  bool removed = false;   // IPC_RMID done: no longer in the table
  int64_t ctime = 0;      // last change (creation, IPC_SET)
  std::atomic<int> refs{1};
  std::atomic<uint32_t> changed{0};  // bumped (and woken) on every change sleepers wait for

  void get() { refs.fetch_add(1, std::memory_order_relaxed); }
};

// One family's table.
class IpcIds {
 public:
  KMutex lock;

  // Adds obj (not yet in a table), its id made as Linux makes it; ENOSPC
  // past `limit` objects.
  long add(Heap* heap, IpcObject* obj, int limit);
  // Takes obj out of the table (the caller drops the table's reference).
  void remove(IpcObject* obj);
  IpcObject* find_id(int id) const;
  IpcObject* find_key(int32_t key) const;
  IpcObject* at(int index) const { return index >= 0 && index < cap_ ? slots_[index] : nullptr; }
  int in_use() const { return in_use_; }
  int max_index() const { return max_idx_; }  // highest index in use, or -1
  // Calls fn(IpcObject&) for each object in index order (lock held).
  template <typename F>
  void for_each(F&& fn) const {
    for (int i = 0; i <= max_idx_; i++)
      if (slots_[i]) fn(*slots_[i]);
  }

 private:
  bool grow(Heap* heap, int need);
  IpcObject** slots_ = nullptr;
  int cap_ = 0;
  int in_use_ = 0;
  int max_idx_ = -1;
  int last_idx_ = -1;
  uint32_t seq_ = 0;
};

struct ShmSegment;
struct SemSet;
struct MsgQueue;

struct MqTable;

struct IpcNamespace {
  IpcLimits limits;
  MqTable* mq = nullptr;   // POSIX message queues (ipc/mqueue.h)
  IpcIds shm, sem, msg;
  uint64_t shm_pages = 0;  // shm_tot: pages of all segments (under shm.lock)
  int64_t sem_total = 0;   // semaphores in all sets (under sem.lock)
  int64_t msg_bytes = 0, msg_count = 0;  // in all queues (under msg.lock)
};

IpcNamespace* ipc_namespace_create(Heap* heap);

// Linux's ipcperms: may the caller (euid, groups) use `obj` for the
// access bits in flag's low nine (0400-style: any of the three triples
// asks)? 0 or -EACCES; root (CAP_IPC_OWNER) may always.
long ipc_permitted(Task& t, const IpcObject& obj, int flag);
// IPC_SET and IPC_RMID: the creator, the owner or root; else -EPERM.
long ipc_may_change(Task& t, const IpcObject& obj);
// A new object's owner and creator: the caller's euid/egid; mode's low 9 bits.
void ipc_init_object(Task& t, IpcObject& obj, int32_t key, int flag);
void ipc_fill_perm(const IpcObject& obj, struct ipc64_perm* out);
// IPC_SET's owner, group and mode bits.
void ipc_set_perm(IpcObject& obj, const struct ipc64_perm& in);
int64_t ipc_now();

// The get calls' shared walk (Linux's ipcget): a private key makes a new
// object; otherwise the key's object is returned after the flag checks
// (EEXIST, then EACCES, then the family's `check`), or one is made with
// IPC_CREAT (ENOENT without). `make` builds and adds a new object under
// the table's lock and returns its id; `check(obj)` returns 0 or -errno.
template <typename Make, typename Check>
long ipc_get(Task& t, IpcIds& ids, int32_t key, int flag, Make&& make, Check&& check) {
  Guard g(ids.lock);
  if (key == 0) return make();
  IpcObject* obj = ids.find_key(key);
  if (!obj) return (flag & IPC_CREAT) ? make() : -ENOENT;
  if ((flag & IPC_CREAT) && (flag & IPC_EXCL)) return -EEXIST;
  if (long r = ipc_permitted(t, *obj, flag)) return r;
  if (long r = check(*obj)) return r;
  return obj->id;
}

// IPC_STAT (by id), *_STAT (by index, returning the id) and *_STAT_ANY (by
// index, no read permission asked): `fill(obj, &ds)` makes the family's
// struct, copied out once the lock is dropped.
template <typename Obj, typename Ds, typename Fill>
long ipc_stat(Task& t, IpcIds& ids, int id, bool by_index, bool any, uint64_t buf, Fill&& fill) {
  Ds ds;
  long r;
  {
    Guard g(ids.lock);
    IpcObject* o = by_index ? ids.at(id) : ids.find_id(id);
    if (!o) return -EINVAL;
    if (!any && ipc_permitted(t, *o, 0444)) return -EACCES;
    fill(static_cast<Obj&>(*o), &ds);
    r = by_index ? o->id : 0;
  }
  return copy_to_user((void*)buf, &ds, sizeof ds) < 0 ? -EFAULT : r;
}

// IPC_SET and IPC_RMID: the struct copied in (IPC_SET), the object found
// and the caller allowed to change it (EPERM), then act(obj, struct) under
// the table's lock.
template <typename Obj, typename Ds, typename Act>
long ipc_change(Task& t, IpcIds& ids, int id, bool set, uint64_t buf, Act&& act) {
  Ds in;
  if (set && copy_from_user(&in, (const void*)buf, sizeof in) < 0) return -EFAULT;
  Guard g(ids.lock);
  IpcObject* o = ids.find_id(id);
  if (!o) return -EINVAL;
  if (long r = ipc_may_change(t, *o)) return r;
  return act(static_cast<Obj&>(*o), in);
}

// Sleeps until obj->changed moves from `seen`, or the CLOCK_MONOTONIC
// deadline (ns; 0: none) passes (-EAGAIN). -EINTR when a signal is
// pending for t. The caller holds a reference and no lock.
long ipc_wait(Task& t, IpcObject& obj, uint32_t seen, int64_t deadline_ns);
// Bumps obj->changed and wakes every sleeper.
void ipc_wake(IpcObject& obj);

// --- the families' hooks into the rest of the kernel --------------------

// shm.cpp, with mm.lock held: every attachment of mm is dropped (exit,
// exec); attachments whose mappings munmap or MAP_FIXED took away are
// forgotten.
void shm_detach_all(Mm& mm);
void shm_forget_unmapped(Mm& mm);
// A copy of parent's attachments for a child with its own copy of the
// address space (fork into a separate host process): each counts again.
long shm_copy_attachments(const Mm& parent, Mm& child);
// mremap moved [from, from + len) to `to`: an attachment there moves along.
void shm_moved(Mm& mm, uintptr_t from, uintptr_t to, size_t len);
// sem.cpp: a process's SEM_UNDO adjustments, shared by CLONE_SYSVSEM.
struct SemUndoList;
// CLONE_SYSVSEM: the parent's list (made now if it has none), shared.
SemUndoList* sem_undo_share(Heap* heap, Process& parent);
void sem_exit(Kernel& k, Process& p);         // applies and drops p's list

// A /proc/sysvipc file: the header, then line(obj, fmt) for each object.
template <typename Obj, typename Line>
void ipc_proc_show(IpcIds& ids, SynthText& o, const char* header, Line&& line) {
  o.str(header);
  Guard g(ids.lock);
  ids.for_each([&](IpcObject& obj) {
    char buf[256];
    KFmt f(buf, sizeof buf);
    line(static_cast<Obj&>(obj), f);
    o.str(f.view());
  });
}

// /proc/sysvipc/{shm,sem,msg}.
void shm_proc_show(Kernel& k, SynthText& o);
void sem_proc_show(Kernel& k, SynthText& o);
void msg_proc_show(Kernel& k, SynthText& o);

}  // namespace flatux
