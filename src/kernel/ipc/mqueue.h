// POSIX message queues (mq_overview(7)): mq_open, mq_unlink,
// mq_timedsend, mq_timedreceive, mq_notify, mq_getsetattr, and the mqueue
// filesystem that shows an IPC namespace's queues (mounted at /dev/mqueue).
//
// A queue lives in its namespace's table while it has a name, and while
// an open file holds it. Messages are copied into the kernel heap
// (charged to mem=) and kept highest priority first, in arrival order
// within a priority. Senders of a full queue and receivers of an empty
// one sleep on the queue's `changed` word (a shared futex, as System V
// IPC's) with CLOCK_REALTIME deadlines. One process at a time may ask to
// be told of a message arriving in an empty queue (SIGEV_SIGNAL or
// SIGEV_NONE; SIGEV_THREAD's netlink cookie is not served).
#pragma once
#include <atomic>
#include <cstdint>

#include "kernel/lib/sync.h"
#include "kernel/vfs/vfs.h"

struct mq_attr;
struct stat;

namespace flatux {

struct MQueue;

// Linux's limits: the defaults and ceilings /proc/sys/fs/mqueue shows.
constexpr int kMqQueuesMaxLimit = 1024;  // table slots (queues_max may be set up to 1024 here)
constexpr int kMqNameMax = 255;

struct MqTable {
  KMutex lock;  // the table and every queue's state
  MQueue* queues[kMqQueuesMaxLimit]{};
  uint64_t next_ino = 2;
  std::atomic<int> queues_max{256}, msg_max{10}, msgsize_max{8192}, msg_default{10}, msgsize_default{8192};
};

MqTable* mq_table_create(Heap* heap);

// mount(2) type "mqueue": the queues of the kernel's IPC namespace.
extern const FsType kMqueueFsType;

// What mqueuefs needs of the queues (mqueue.cpp): a queue's node by name,
// the names, a new queue with the default attributes, removal.
struct MqNode {
  uint32_t mode, uid, gid;
  uint64_t ino;
  timespec atime, mtime, ctime;
};
bool mq_node(Kernel& k, const char* name, MqNode* out);
// A queue's stat (a regular file of mqueuefs's device).
void mq_stat_of(const MqNode& n, struct stat* st);
constexpr uint64_t kMqueueDev = 0x1a;
// fn(name, ino) for each queue, under the table's lock.
template <typename F>
void mq_for_each(Kernel& k, F&& fn);
// Opens queue `name` as mq_open does (flags with O_CREAT, O_EXCL; mode and
// the default attributes for a new one).
long mq_open_name(Task& t, const char* name, int flags, uint32_t mode, File** out);
// As mq_open: with `attr` (nullptr: the defaults) for a new queue.
long mq_open_attr(Task& t, const char* name, int flags, uint32_t mode, const struct mq_attr* attr, File** out);
long mq_unlink_name(Task& t, const char* name);

MqTable& mq_table(Kernel& k);
const char* mq_name_of(const MQueue& q);
uint64_t mq_ino_of(const MQueue& q);

template <typename F>
void mq_for_each(Kernel& k, F&& fn) {
  MqTable& tab = mq_table(k);
  Guard g(tab.lock);
  for (MQueue* q : tab.queues)
    if (q) fn(mq_name_of(*q), mq_ino_of(*q));
}

}  // namespace flatux
