#include "kernel/fs/nsfs/nsfs.h"

#include <fcntl.h>
#include <linux/errno.h>
#include <linux/sched.h>
#include <sys/stat.h>

#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/sys/uts.h"
#include "kernel/task/process.h"
#include "kernel/vfs/file.h"
#include "kernel/vfs/mount_ns.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr uint64_t kNsfsDev = 0x4;  // Linux's nsfs is the 4th anonymous device

struct KindInfo {
  const char* name;  // in /proc/PID/ns
  const char* type;  // in the link's text
  int clone_flag;
  uint64_t only_inum;  // of the one namespace of a kind flatux has one of (0: mnt, uts)
};

// Linux's fixed inode numbers of the first namespaces (PROC_*_INIT_INO);
// its first network namespace has a dynamic one: 0xEFFFFFF9 here, below
// the dynamic range the mount namespaces draw from.
constexpr KindInfo kKinds[kNsKinds] = {
    {"cgroup", "cgroup", CLONE_NEWCGROUP, 0xEFFFFFFB},
    {"ipc", "ipc", CLONE_NEWIPC, 0xEFFFFFFF},
    {"mnt", "mnt", CLONE_NEWNS, 0},
    {"net", "net", CLONE_NEWNET, 0xEFFFFFF9},
    {"pid", "pid", CLONE_NEWPID, 0xEFFFFFFC},
    {"pid_for_children", "pid", CLONE_NEWPID, 0xEFFFFFFC},
    {"time", "time", CLONE_NEWTIME, 0xEFFFFFFA},
    {"time_for_children", "time", CLONE_NEWTIME, 0xEFFFFFFA},
    {"user", "user", CLONE_NEWUSER, 0xEFFFFFFD},
    {"uts", "uts", CLONE_NEWUTS, 0},
};

const KindInfo& info(NsKind k) { return kKinds[(int)k]; }

uint64_t inum_locked(Process& p, NsKind kind) {
  if (kind == NsKind::kMnt) return mnt_ns_of(p).id;
  if (kind == NsKind::kUts) return uts_of(p).inum;
  return info(kind).only_inum;
}

// What an open /proc/PID/ns/NAME holds (File::priv).
struct NsHold {
  Kernel* kernel;
  NsKind kind;
  uint64_t inum;
  MountNs* mnt = nullptr;  // a reference, for kMnt
  UtsNames* uts = nullptr;  // a reference, for kUts (nullptr: the kernel's first)
};

NsHold* hold_of(File& f);

long ns_read(Task&, File&, void*, size_t) { return -EINVAL; }
long ns_pread(Task&, File&, void*, size_t, int64_t) { return -EINVAL; }
long ns_write(Task&, File&, const void*, size_t) { return -EINVAL; }
long ns_pwrite(Task&, File&, const void*, size_t, int64_t) { return -EINVAL; }

long ns_stat(Task&, File& f, struct stat* out) {
  synth_stat(out, S_IFREG | 0444, hold_of(f)->inum, 0, kNsfsDev);
  return 0;
}

void ns_release(File& f) {
  auto* h = static_cast<NsHold*>(f.priv);
  if (!h) return;
  if (h->mnt) h->kernel->vfs->put_ns(h->mnt);
  uts_put(h->kernel->heap, h->uts);
  f.heap->destroy_obj(h);
  f.priv = nullptr;
}

const FileOps kNsOps = {
    .read = ns_read,
    .write = ns_write,
    .pread = ns_pread,
    .pwrite = ns_pwrite,
    .lseek = nullptr,
    .stat = ns_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = ns_release,
};

NsHold* hold_of(File& f) { return f.ops == &kNsOps ? static_cast<NsHold*>(f.priv) : nullptr; }

}  // namespace

bool ns_kind_named(std::string_view name, NsKind* out) {
  for (int i = 0; i < kNsKinds; i++)
    if (name == kKinds[i].name) {
      *out = (NsKind)i;
      return true;
    }
  return false;
}

const char* ns_kind_name(NsKind kind) { return info(kind).name; }

int ns_clone_flag(NsKind kind) { return info(kind).clone_flag; }

long ns_link_text_locked(Process& p, NsKind kind, char* out, size_t n) {
  KFmt f(out, n);
  f.str(info(kind).type).str(":[").udec(inum_locked(p, kind)).ch(']');
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  return (long)f.size();
}

void ns_stat_locked(Process& p, NsKind kind, struct stat* out) {
  synth_stat(out, S_IFREG | 0444, inum_locked(p, kind), 0, kNsfsDev);
}

long ns_open_locked(Kernel& k, Process& p, NsKind kind, uint32_t flags, File** out) {
  auto* h = k.heap->make<NsHold>();
  if (!h) return -ENOMEM;
  File* f = file_alloc(k.heap, &kNsOps, flags & ~(uint32_t)(O_CLOEXEC | O_CREAT | O_TRUNC | O_EXCL), -1);
  if (!f) {
    k.heap->destroy_obj(h);
    return -ENOMEM;
  }
  h->kernel = &k;
  h->kind = kind;
  h->inum = inum_locked(p, kind);
  if (kind == NsKind::kMnt) {
    h->mnt = &mnt_ns_of(p);
    h->mnt->refs.fetch_add(1, std::memory_order_relaxed);
  } else if (kind == NsKind::kUts && (h->uts = p.uts)) {
    h->uts->refs.fetch_add(1, std::memory_order_relaxed);
  }
  f->priv = h;
  *out = f;
  return 0;
}

bool ns_file_target(File& f, NsTarget* out) {
  NsHold* h = hold_of(f);
  if (!h) return false;
  out->kind = h->kind;
  out->mnt = h->mnt;
  out->uts = h->uts;
  out->inum = h->inum;
  return true;
}

}  // namespace flatux
