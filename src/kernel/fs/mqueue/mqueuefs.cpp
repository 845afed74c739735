// The mqueue filesystem: the IPC namespace's POSIX message queues as one
// folder (mounted at /dev/mqueue), as Linux's ipc/mqueue.c shows them. A
// queue opens as the file mq_open gives (reading it shows its state);
// open(O_CREAT) makes one with the default attributes; unlink removes its
// name. Nothing else can be made there.
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "kernel/ipc/mqueue.h"
#include "kernel/kernel.h"
#include "kernel/lib/kstring.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr long kMqueueMagic = 0x19800202;

// "" for the folder, else the queue's name (one component), or nullptr.
const char* parse(const char* path) {
  while (*path == '/') path++;
  size_t n = strlen(path);
  while (n && path[n - 1] == '/') n--;
  if (n == 0) return "";
  return memchr(path, '/', n) ? nullptr : path;
}

// A queue's name without trailing slashes, in buf.
const char* name_of(const char* path, char* buf, size_t cap) {
  const char* p = parse(path);
  if (!p || !*p) return p;
  size_t n = strlen(p);
  while (n && p[n - 1] == '/') n--;
  if (n >= cap) return nullptr;
  memcpy(buf, p, n);
  buf[n] = 0;
  return buf;
}

long mqfs_stat(Task& t, Filesystem&, Lookup& lk, struct stat* out) {
  char buf[kMqNameMax + 1];
  const char* name = name_of(lk.path, buf, sizeof buf);
  if (!name) return -ENOENT;
  if (!*name) {
    synth_stat(out, S_IFDIR | 01777, 1, 0, kMqueueDev);
    return 0;
  }
  MqNode n;
  if (!mq_node(*t.kernel, name, &n)) return -ENOENT;
  mq_stat_of(n, out);
  return 0;
}

long mqfs_open(Task& t, Filesystem& fs, Lookup& lk, int flags, int mode, File** out) {
  char buf[kMqNameMax + 1];
  const char* name = name_of(lk.path, buf, sizeof buf);
  if (!name) return -ENOENT;
  if (*name) {
    if (flags & O_DIRECTORY) return -ENOTDIR;
    long r = mq_open_name(t, name, flags & (O_ACCMODE | O_CREAT | O_EXCL | O_NONBLOCK), (uint32_t)mode, out);
    if (r == 0) (*out)->fs = &fs;
    return r;
  }
  if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
  SynthDirent* ents = static_cast<SynthDirent*>(t.kernel->heap->alloc(sizeof(SynthDirent) * kMqQueuesMaxLimit));
  if (!ents) return -ENOMEM;
  int n = 0;
  mq_for_each(*t.kernel, [&](const char* qname, uint64_t ino) {
    if (n == kMqQueuesMaxLimit || strlen(qname) >= sizeof ents[n].name) return;  // (a longer name: stat and open it)
    copy_cstr(ents[n].name, sizeof ents[n].name, qname);
    ents[n].type = DT_REG;
    ents[n].ino = ino;
    n++;
  });
  File* dir = synth_dir_file(t.kernel->heap, ents, n, S_IFDIR | 01777, 1, kMqueueDev);
  t.kernel->heap->free(ents);
  if (!dir) return -ENOMEM;
  dir->fs = &fs;
  *out = dir;
  return 0;
}

long mqfs_readlink(Task& t, Filesystem& fs, Lookup& lk, char*, size_t) {
  struct stat st;
  long r = mqfs_stat(t, fs, lk, &st);
  return r < 0 ? r : -EINVAL;
}

long mqfs_access(Task& t, Filesystem& fs, Lookup& lk, int) {
  struct stat st;
  return mqfs_stat(t, fs, lk, &st);
}

long mqfs_statfs(Task&, Filesystem&, Lookup&, struct statfs* out) {
  synth_statfs(out, kMqueueMagic);
  return 0;
}

long mqfs_unlink(Task& t, Filesystem&, Lookup& lk) {
  char buf[kMqNameMax + 1];
  const char* name = name_of(lk.path, buf, sizeof buf);
  if (!name) return -ENOENT;
  if (!*name) return -EBUSY;
  return mq_unlink_name(t, name);
}

// Only queues live here (Linux's mqueue_dir_inode_operations: no mkdir,
// mknod, symlink or link).
long mqfs_no(Task& t, Filesystem& fs, Lookup& lk) {
  struct stat st;
  return mqfs_stat(t, fs, lk, &st) == 0 ? -EEXIST : -EPERM;
}
long mqfs_mkdir(Task& t, Filesystem& fs, Lookup& lk, int) { return mqfs_no(t, fs, lk); }
long mqfs_mknod(Task& t, Filesystem& fs, Lookup& lk, int, uint64_t) { return mqfs_no(t, fs, lk); }
long mqfs_symlink(Task& t, Filesystem& fs, Lookup& lk, const char*) { return mqfs_no(t, fs, lk); }
long mqfs_rmdir(Task& t, Filesystem& fs, Lookup& lk) {
  struct stat st;
  long r = mqfs_stat(t, fs, lk, &st);
  return r < 0 ? r : S_ISDIR(st.st_mode) ? -EBUSY : -ENOTDIR;
}

const FsOps kMqueueOps = {
    .name = "mqueue",
    .open = mqfs_open,
    .stat = mqfs_stat,
    .readlink = mqfs_readlink,
    .access = mqfs_access,
    .statfs = mqfs_statfs,
    .mkdir = mqfs_mkdir,
    .mknod = mqfs_mknod,
    .unlink = mqfs_unlink,
    .rmdir = mqfs_rmdir,
    .symlink = mqfs_symlink,
    .dcache_drop_unused = true,
};

long mqueue_mount(Kernel& k, const char*, unsigned long, const char*, Filesystem** out) {
  Filesystem* fs = k.heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kMqueueOps;
  fs->dev = kMqueueDev;
  *out = fs;
  return 0;
}

}  // namespace

const FsType kMqueueFsType = {.name = "mqueue", .mount = mqueue_mount};

}  // namespace flatux
