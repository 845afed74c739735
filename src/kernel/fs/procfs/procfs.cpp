// procfs: per-process directories and the global files programs read.
// Contents are generated at open (synthetic files), links resolve to guest
// paths, and nothing of the host's own /proc is shown.
#include "kernel/fs/procfs/procfs.h"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "host/raw_syscall.h"
#include "kernel/fs/hostfs/hostfs.h"
#include "kernel/fs/nsfs/nsfs.h"
#include "kernel/fs/procfs/procfs_gen.h"
#include "kernel/fs/memfd/memfd.h"
#include "kernel/kernel.h"
#include "kernel/lib/kfmt.h"
#include "kernel/lib/kstring.h"
#include "kernel/mm/usercopy.h"
#include "kernel/sys/sysctl.h"
#include "kernel/task/process.h"
#include "kernel/vfs/namei.h"
#include "kernel/vfs/path_ops.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr uint64_t kProcDev = 0x16;

enum class Node {
  kNone, kRoot, kSelfLink, kPidDir, kExe, kCwd, kRootLink, kFdDir, kFdLink, kTaskDir, kTaskEntry,
  kPidFile, kGlobalFile, kSysctlDir, kSysctlFile, kSysvipcDir, kFdInfoDir, kFdInfo, kNsDir, kNsLink,
};

struct ProcLookup {
  Node node = Node::kNone;
  int pid = 0;     // the process (or task) the path is about
  bool thread_self = false;  // /proc/thread-self: pid is the caller's thread
  int fd = -1;
  ProcFile file = ProcFile::kNone;
  std::string_view rest;  // components after a link (/proc/self/cwd/x)
  std::string_view sub;   // a /proc/sys directory's path below /proc/sys
  int sysctl = -1;        // a /proc/sys file (sys/sysctl.h)
  NsKind ns = NsKind::kCgroup;  // a /proc/PID/ns link (fs/nsfs)
};

bool parse_int(std::string_view s, int* out) {
  uint64_t v;
  if (!parse_decimal(s, 9, &v)) return false;
  *out = (int)v;
  return true;
}

// Splits off the next path component.
std::string_view next(std::string_view* p) {
  while (!p->empty() && p->front() == '/') p->remove_prefix(1);
  size_t slash = p->find('/');
  std::string_view c = head(*p, slash);
  *p = slash == std::string_view::npos ? std::string_view() : tail(*p, slash);
  return c;
}

ProcLookup lookup_pid_path(Task& t, int pid, std::string_view rest) {
  ProcLookup l;
  l.pid = pid;
  std::string_view c = next(&rest);
  if (c.empty()) { l.node = Node::kPidDir; return l; }
  std::string_view c2 = next(&rest);
  if (c == "exe" || c == "cwd" || c == "root") {
    l.node = c == "exe" ? Node::kExe : c == "cwd" ? Node::kCwd : Node::kRootLink;
    if (!c2.empty()) l.rest = rest.empty() ? c2 : std::string_view(c2.data(), rest.data() + rest.size() - c2.data());
  }
  else if (c == "fd" && c2.empty()) l.node = Node::kFdDir;
  else if (c == "fdinfo" && c2.empty()) l.node = Node::kFdInfoDir;
  else if (c == "fdinfo" && rest.empty() && parse_int(c2, &l.fd)) l.node = Node::kFdInfo;
  else if (c == "fd" && parse_int(c2, &l.fd)) {
    l.node = Node::kFdLink;
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    l.rest = rest;
  }
  else if (c == "ns" && c2.empty()) l.node = Node::kNsDir;
  else if (c == "ns" && rest.empty() && ns_kind_named(c2, &l.ns)) l.node = Node::kNsLink;
  else if (c == "task" && c2.empty()) l.node = Node::kTaskDir;
  else if (c == "task" && parse_int(c2, &l.pid)) return lookup_pid_path(t, l.pid, rest);
  else if (c2.empty() && (l.file = proc_file_named(c, true)) != ProcFile::kNone) l.node = Node::kPidFile;
  return l;
}

ProcLookup lookup(Task& t, const char* path) {
  std::string_view p(path);
  std::string_view c = next(&p);
  ProcLookup l;
  if (c.empty()) { l.node = Node::kRoot; return l; }
  int pid;
  if (c == "self" || c == "thread-self") {
    l.thread_self = c == "thread-self";
    l.pid = l.thread_self ? t.tid : t.proc->pid;
    if (p.find_first_not_of('/') == std::string_view::npos) { l.node = Node::kSelfLink; return l; }
    return lookup_pid_path(t, l.pid, p);
  }
  if (parse_int(c, &pid)) return lookup_pid_path(t, pid, p);
  if (c == "sys") {
    SysctlNode n = sysctl_lookup(p, &l.sysctl);
    l.node = n == SysctlNode::kDir ? Node::kSysctlDir : n == SysctlNode::kFile ? Node::kSysctlFile : Node::kNone;
    l.sub = p;
    while (!l.sub.empty() && l.sub.front() == '/') l.sub.remove_prefix(1);
    while (!l.sub.empty() && l.sub.back() == '/') l.sub.remove_suffix(1);
    return l;
  }
  if (c == "sysvipc") {
    std::string_view c2 = next(&p);
    if (c2.empty()) { l.node = Node::kSysvipcDir; return l; }
    if (next(&p).empty() && (l.file = proc_sysvipc_file(c2)) != ProcFile::kNone) l.node = Node::kGlobalFile;
    return l;
  }
  if (next(&p).empty() && (l.file = proc_file_named(c, false)) != ProcFile::kNone) l.node = Node::kGlobalFile;
  return l;
}

// The process (or thread's process) a lookup names, if alive.
Process* target(Kernel& k, int pid) {
  Task* x = find_task_locked(k, pid);
  return x && x->proc->state == ProcState::kRunning ? x->proc : nullptr;
}

bool exists_locked(Kernel& k, const ProcLookup& l) {
  switch (l.node) {
    case Node::kNone: return false;
    case Node::kRoot: case Node::kGlobalFile: case Node::kSysctlDir: case Node::kSysctlFile:
    case Node::kSysvipcDir:
      return true;
    case Node::kFdLink: case Node::kFdInfo: {
      Process* p = target(k, l.pid);
      if (!p || !p->files) return false;
      File* f = p->files->get(l.fd);
      if (f) f->put();
      return f != nullptr;
    }
    default: return target(k, l.pid) != nullptr;
  }
}

uint64_t ino_of(const ProcLookup& l) {
  if (l.node == Node::kSysctlFile) return 0x5c000 + (uint64_t)l.sysctl;
  return ((uint64_t)l.pid << 16) + ((uint64_t)l.node << 8) + (uint64_t)l.file + (uint64_t)l.ns +
         (l.fd >= 0 ? l.fd << 20 : 0);
}

// Linux's d_path: a path as the reader's root sees it (one not below that
// root whole), with " (deleted)" after a removed one.
long seen_path(const char* reader_root, std::string_view path, bool deleted, char* out, size_t n) {
  KFmt f(out, n);
  f.str(strip_root(reader_root, path)).str(deleted ? " (deleted)" : "");
  if (f.truncated()) return -ENAMETOOLONG;
  f.c_str();
  return (long)f.size();
}

long link_target(Task& t, const ProcLookup& l, char* out, size_t n) {
  Kernel& k = *t.kernel;
  // Taken first: the reader may be the process read. A removed root
  // still sees paths from where it was.
  char reader_root[kPathMax];
  bool root_removed = false;
  if (l.node != Node::kSelfLink) {
    if (long r = fs_root_path(t, reader_root, sizeof reader_root, &root_removed); r < 0) return r;
  }
  char path[kPathMax];
  bool deleted = false;
  if (l.node == Node::kFdLink) {
    File* file = nullptr;
    {
      Guard g(k.tasks_lock);
      Process* p = target(k, l.pid);
      if (!p) return -ENOENT;
      file = p->files ? p->files->get(l.fd) : nullptr;
    }
    if (!file) return -ENOENT;
    long r = vfs_of(t).file_guest_path(t, *file, path, sizeof path, &deleted);
    file->put();
    if (r < 0) return r;
    return seen_path(reader_root, path, deleted, out, n);
  }
  Guard g(k.tasks_lock);
  Process* p = target(k, l.pid);
  if (!p) return -ENOENT;
  switch (l.node) {
    case Node::kSelfLink: {  // "PID", or "PID/task/TID" for thread-self
      KFmt f(out, n);
      f.dec(p->pid);
      if (l.thread_self) f.str("/task/").dec(l.pid);
      f.c_str();
      return (long)f.size();
    }
    case Node::kExe: return seen_path(reader_root, p->exe, false, out, n);
    case Node::kNsLink: return ns_link_text_locked(*p, l.ns, out, n);
    case Node::kCwd: {
      if (!p->fs) return -ENOENT;
      Guard c(p->fs->lock);
      // Not yet resolved: the kernel's start folder.
      if (!p->fs->cwd) return seen_path(reader_root, k.cfg.cwd, false, out, n);
      if (guest_path_of(p->fs->cwd, path, sizeof path, &deleted) < 0) return -ENOENT;
      return seen_path(reader_root, path, deleted, out, n);
    }
    case Node::kRootLink: {
      if (!p->fs) return -ENOENT;
      Guard c(p->fs->lock);
      if (fs_root_path(*p->fs, path, sizeof path, &deleted) < 0) return -ENOENT;
      return seen_path(reader_root, path, deleted, out, n);
    }
    default: return -EINVAL;
  }
}

long proc_readlink(Task& t, Filesystem&, Lookup& lk, char* buf, size_t n) {
  ProcLookup l = lookup(t, lk.path);
  switch (l.node) {
    case Node::kSelfLink: case Node::kExe: case Node::kCwd: case Node::kRootLink: case Node::kFdLink:
    case Node::kNsLink: {
      if (!l.rest.empty()) return -ENOTDIR;
      char tmp[kPathMax];
      long len = link_target(t, l, tmp, sizeof tmp);
      if (len < 0) return len;
      size_t c = (size_t)len < n ? (size_t)len : n;
      memcpy(buf, tmp, c);
      return (long)c;
    }
    case Node::kNone: return -ENOENT;
    default: return -EINVAL;
  }
}

bool is_link(Node n) {
  return n == Node::kSelfLink || n == Node::kExe || n == Node::kCwd || n == Node::kRootLink || n == Node::kFdLink ||
         n == Node::kNsLink;
}
bool is_dir(Node n) {
  return n == Node::kRoot || n == Node::kPidDir || n == Node::kFdDir || n == Node::kFdInfoDir ||
         n == Node::kTaskDir || n == Node::kSysctlDir || n == Node::kSysvipcDir || n == Node::kNsDir;
}

// A link whose target is a guest path (exe, cwd, root, an fd opened by
// path) is followed by the VFS: hand it back as a redirect.
long redirect_link(Task& t, const ProcLookup& l, Lookup& lk) {
  char tgt[kPathMax];
  long len = link_target(t, l, tgt, sizeof tgt);
  if (len < 0) return len;
  if (tgt[0] != '/') return l.rest.empty() ? 0 : -ENOTDIR;  // pipe:[..]: no path to follow
  return vfs_make_redirect(lk, lk.path, std::string_view(tgt, (size_t)len), l.rest);
}

// The open file behind /proc/PID/fd/N, with a reference.
File* fd_file(Task& t, const ProcLookup& l) {
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Process* p = target(k, l.pid);
  return p && p->files ? p->files->get(l.fd) : nullptr;
}

long proc_stat(Task& t, Filesystem&, Lookup& lk, struct stat* out) {
  ProcLookup l = lookup(t, lk.path);
  {
    Guard g(t.kernel->tasks_lock);
    if (!exists_locked(*t.kernel, l)) return -ENOENT;
  }
  if (is_link(l.node) && (lk.follow || !l.rest.empty())) {
    if (l.node == Node::kSelfLink) {
      synth_stat(out, S_IFDIR | 0555, ino_of(l), 0, kProcDev);
      return 0;
    }
    if (l.node == Node::kNsLink) {  // the namespace's nsfs inode
      Guard g(t.kernel->tasks_lock);
      Process* p = target(*t.kernel, l.pid);
      if (!p) return -ENOENT;
      ns_stat_locked(*p, l.ns, out);
      return 0;
    }
    if (l.node == Node::kFdLink && l.rest.empty()) {  // the open file itself, as Linux
      File* f = fd_file(t, l);
      if (!f) return -ENOENT;
      long r = f->ops->stat ? f->ops->stat(t, *f, out) : -EINVAL;
      f->put();
      return r;
    }
    long r = redirect_link(t, l, lk);
    if (r) return r;
    synth_stat(out, S_IFIFO | 0600, ino_of(l), 0, kProcDev);
    return 0;
  }
  uint32_t mode = is_link(l.node) ? (S_IFLNK | 0777) : is_dir(l.node) ? (S_IFDIR | 0555)
                  : l.node == Node::kSysctlFile ? (S_IFREG | sysctl_mode(l.sysctl))
                  : l.node == Node::kFdInfo ? (S_IFREG | 0444)
                  : (S_IFREG | proc_file_mode(l.file));
  synth_stat(out, mode, ino_of(l), 0, kProcDev);
  return 0;
}

File* list_dir(Task& t, const ProcLookup& l) {
  Kernel& k = *t.kernel;
  Heap* h = k.heap;
  int cap = 512;
  auto* ents = static_cast<SynthDirent*>(h->alloc(sizeof(SynthDirent) * cap));
  if (!ents) return nullptr;
  int n = 0;
  auto add = [&](std::string_view name, uint8_t type, uint64_t ino) {
    if (n >= cap) return;
    copy_cstr(ents[n].name, sizeof ents[n].name, name);
    ents[n].type = type;
    ents[n].ino = ino;
    n++;
  };
  auto add_num = [&](int v, uint8_t type) {
    char b[16];
    KFmt f(b, sizeof b);
    f.dec(v);
    add(f.view(), type, 0x10000 + (uint64_t)v);  // never 0: readdir skips d_ino 0
  };
  {
    Guard g(k.tasks_lock);
    if (l.node == Node::kRoot) {
      add("self", DT_LNK, 2);
      add("thread-self", DT_LNK, 3);
      for (int i = 0; i < proc_global_count(); i++) add(proc_global_name(i), DT_REG, 100 + i);
      add("sys", DT_DIR, 4);
      add("sysvipc", DT_DIR, 7);
      for (Task* x : k.live_tasks())
        if (x && first_thread_of_process(*x) && x->proc->state == ProcState::kRunning) add_num(x->proc->pid, DT_DIR);
    } else if (l.node == Node::kPidDir) {
      for (const char* name : {"exe", "cwd", "root"}) add(name, DT_LNK, 10);
      add("fd", DT_DIR, 11);
      add("fdinfo", DT_DIR, 12);
      add("task", DT_DIR, 13);
      add("ns", DT_DIR, 14);
      for (int i = 0; i < proc_pid_file_count(); i++) add(proc_pid_file_name(i), DT_REG, 20 + i);
    } else if (l.node == Node::kFdDir || l.node == Node::kFdInfoDir) {
      Process* p = target(k, l.pid);
      // The listing is made at open, before its own descriptor exists: a
      // process listing its own fds also sees the one this open will get.
      int own = p && p == t.proc && p->files ? p->files->lowest_free() : -1;
      for (int fd = 0; p && p->files && fd < FdTable::kMaxFds; fd++) {
        File* f = p->files->get(fd);
        if (f) f->put();
        if (f || fd == own) add_num(fd, l.node == Node::kFdDir ? DT_LNK : DT_REG);
      }
    } else if (l.node == Node::kTaskDir) {
      Process* p = target(k, l.pid);
      for (Task* x = p ? p->threads : nullptr; x; x = x->next_thread) add_num(x->tid, DT_DIR);
    } else if (l.node == Node::kSysctlDir) {
      sysctl_list(l.sub, [&](std::string_view name, bool dir) { add(name, dir ? DT_DIR : DT_REG, 6); });
    } else if (l.node == Node::kNsDir) {
      for (int i = 0; i < kNsKinds; i++) add(ns_kind_name((NsKind)i), DT_LNK, 30 + i);
    } else if (l.node == Node::kSysvipcDir) {
      for (const char* name : {"msg", "sem", "shm"}) add(name, DT_REG, 8);
    }
  }
  File* f = synth_dir_file(h, ents, n, S_IFDIR | 0555, ino_of(l), kProcDev);
  h->free(ents);
  return f;
}

// /proc/PID/ns/NAME opened: a descriptor of the namespace (setns joins it).
long open_ns_link(Task& t, Filesystem& fs, const ProcLookup& l, int flags, File** out) {
  if ((flags & O_ACCMODE) != O_RDONLY) return -EACCES;  // nsfs files are 0444
  if (flags & O_DIRECTORY) return -ENOTDIR;
  Kernel& k = *t.kernel;
  Guard g(k.tasks_lock);
  Process* p = target(k, l.pid);
  if (!p) return -ENOENT;
  long r = ns_open_locked(k, *p, l.ns, (uint32_t)flags, out);
  if (r == 0) (*out)->fs = &fs;
  return r;
}

// /proc/PID/fd/N opened: the same open file, reopened through the host
// like Linux's reopen of the magic link (pipes included).
long open_fd_link(Task& t, const ProcLookup& l, int flags, File** out) {
  Kernel& k = *t.kernel;
  File* f;
  {
    Guard g(k.tasks_lock);
    Process* p = target(k, l.pid);
    f = p && p->files ? p->files->get(l.fd) : nullptr;
  }
  if (!f) return -ENOENT;
  if (f->host_fd < 0) {
    // A kernel-made file opened by path (ext4, tmpfs, a device) is opened
    // anew with the new flags, as Linux does; one without a path (a
    // socket, an eventfd) or whose name is gone shares its description.
    bool deleted = true;
    char path[kPathMax];
    if (f->mount && vfs_of(t).file_guest_path(t, *f, path, sizeof path, &deleted) >= 0 && !deleted) {
      long r = vfs_reopen(t, *f, flags, out);
      f->put();
      return r;
    }
    *out = f;
    return 0;
  }
  char path[48];
  KFmt pf(path, sizeof path);
  pf.str("/proc/self/fd/").dec(f->host_fd);
  long fd = host::sys(SYS_open, pf.c_str(), (flags & ~O_CREAT) | O_CLOEXEC | O_NOCTTY, 0);
  File* nf = fd >= 0 ? hostfs_adopt_host_fd(k.heap, (int)fd, (uint32_t)flags & ~O_CLOEXEC) : nullptr;
  if (nf) {
    nf->fs = f->fs;
    nf->set_origin(f->mount, f->path ? f->path : "/");
    host_charge_adopt(*nf, k.mem);  // the same pipe or memfd: the same charge
  }
  f->put();
  if (fd < 0) return fd;
  if (!nf) return -ENOMEM;
  *out = nf;
  return 0;
}

// A writable per-process file opened for writing (oom_score_adj): each
// write is stored whole, as Linux's; reads show the value as it is now.
// priv_word: the pid << 8 | the ProcFile.
int store_pid(const File& f) { return (int)(f.priv_word >> 8); }
ProcFile store_file(const File& f) { return (ProcFile)(f.priv_word & 0xff); }

long store_pread(Task& t, File& f, void* buf, size_t n, int64_t off) {
  SynthText text(t.kernel->heap);
  TRY_LONG(proc_generate(t, store_file(f), store_pid(f), text));  // the value as it is now
  return text.pread_to_user(buf, n, off);
}

long store_pwrite(Task& t, File& f, const void* buf, size_t n, int64_t off) {
  if (off < 0) return -EINVAL;
  char tmp[64];
  if (n >= sizeof tmp) return -EINVAL;
  if (copy_from_user(tmp, buf, n) < 0) return -EFAULT;
  long r = proc_store(t, store_file(f), store_pid(f), std::string_view(tmp, n));
  return r < 0 ? r : (long)n;
}

long store_lseek(Task&, File& f, int64_t off, int whence) { return file_seek_kept(f, off, whence, -1); }

long store_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFREG | proc_file_mode(store_file(f)), ((uint64_t)store_pid(f) << 16) + (uint64_t)store_file(f), 0,
             kProcDev);
  return 0;
}

const FileOps kStoreOps = {
    .read = file_read_at_pos,
    .write = file_write_at_pos,
    .pread = store_pread,
    .pwrite = store_pwrite,
    .lseek = store_lseek,
    .stat = store_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = nullptr,
};

long open_store(Task& t, Filesystem& fs, const ProcLookup& l, int flags, File** out) {
  if (flags & O_DIRECTORY) return -ENOTDIR;
  File* f = file_alloc(t.kernel->heap, &kStoreOps, (uint32_t)flags & ~(O_CLOEXEC | O_CREAT | O_TRUNC), -1);
  if (!f) return -ENOMEM;
  f->priv_word = ((uint64_t)l.pid << 8) | (uint64_t)l.file;
  f->fs = &fs;
  *out = f;
  return 0;
}

// /proc/PID/fdinfo/N: Linux's common lines (position, the open flags with
// close-on-exec from the descriptor, the mount it was opened through, the
// inode). Kinds of file with lines of their own (eventfd, inotify, epoll)
// show only these.
long fdinfo_text(Task& t, const ProcLookup& l, SynthText& text) {
  Kernel& k = *t.kernel;
  File* f;
  bool cloexec;
  {
    Guard g(k.tasks_lock);
    Process* p = target(k, l.pid);
    f = p && p->files ? p->files->get(l.fd) : nullptr;
    cloexec = f && p->files->cloexec(l.fd);
  }
  if (!f) return -ENOENT;
  int64_t pos = 0;
  if (f->ops->lseek && !(f->flags & O_PATH)) {
    long r = f->ops->lseek(t, *f, 0, SEEK_CUR);
    if (r > 0) pos = r;
  }
  struct stat st;
  if (!f->ops->stat || f->ops->stat(t, *f, &st) < 0) st.st_ino = 0;
  uint32_t flags = f->flags | (cloexec ? O_CLOEXEC : 0);
  text.str("pos:\t").dec(pos).str("\nflags:\t0").oct(flags).str("\nmnt_id:\t")
      .dec(f->mount ? f->mount->id : 0).str("\nino:\t").udec(st.st_ino).ch('\n');
  f->put();
  return text.ok() ? 0 : -ENOMEM;
}

// A link opened with O_PATH | O_NOFOLLOW: a descriptor of the link itself
// (fstat shows it; readlinkat(fd, "") reads it through its path).
long open_link_itself(Task& t, Filesystem& fs, const ProcLookup& l, int flags, File** out) {
  SynthText none(t.kernel->heap);
  File* f = none.to_file((uint32_t)flags & ~O_CLOEXEC, S_IFLNK | 0777, ino_of(l), kProcDev);
  if (!f) return -ENOMEM;
  f->fs = &fs;
  *out = f;
  return 0;
}

namespace {
// A mount list sought back to its start after the table changed.
long regen_mounts(Task& t, uint64_t ctx, SynthText& out) {
  return proc_generate(t, static_cast<ProcFile>(ctx & 0xffff), (int)(ctx >> 16), out);
}
}  // namespace

long proc_open(Task& t, Filesystem& fs, Lookup& lk, int flags, int mode, File** out) {
  ProcLookup l = lookup(t, lk.path);
  {
    Guard g(t.kernel->tasks_lock);
    if (!exists_locked(*t.kernel, l)) return -ENOENT;
  }
  if (is_link(l.node) && l.rest.empty() && (flags & O_NOFOLLOW)) {
    if (!(flags & O_PATH)) return -ELOOP;
    return open_link_itself(t, fs, l, flags, out);
  }
  if (is_link(l.node) && l.node != Node::kSelfLink) {
    if (l.node == Node::kFdLink && l.rest.empty()) return open_fd_link(t, l, flags, out);
    if (l.node == Node::kNsLink) return open_ns_link(t, fs, l, flags, out);
    long r = redirect_link(t, l, lk);
    return r ? r : -ENOENT;
  }
  if (l.node == Node::kSelfLink) l.node = Node::kPidDir;  // the caller's own directory
  if (is_dir(l.node)) {
    if ((flags & O_ACCMODE) != O_RDONLY) return -EISDIR;
    File* f = list_dir(t, l);
    if (!f) return -ENOMEM;
    f->fs = &fs;
    *out = f;
    return 0;
  }
  if (l.node == Node::kSysctlFile) {
    long r = sysctl_open(t, l.sysctl, flags, ino_of(l), out);
    if (r == 0) (*out)->fs = &fs;
    return r;
  }
  if ((flags & O_ACCMODE) != O_RDONLY && !proc_file_writable(l.file)) return -EACCES;
  if ((flags & O_ACCMODE) != O_RDONLY && l.file == ProcFile::kOomScoreAdj) return open_store(t, fs, l, flags, out);
  if (l.file == ProcFile::kPagemap || l.file == ProcFile::kMem) {
    long r = (l.file == ProcFile::kMem ? procfs_open_mem : procfs_open_pagemap)(t, l.pid, (uint32_t)flags & ~O_CLOEXEC, out);
    if (r == 0) (*out)->fs = &fs;
    return r;
  }
  if (flags & O_DIRECTORY) return -ENOTDIR;
  SynthText text(t.kernel->heap);
  if (l.file == ProcFile::kMounts || l.file == ProcFile::kMountinfo || l.file == ProcFile::kGlobalMounts)
    text.watch(t.kernel->vfs->mount_events(), regen_mounts, (uint64_t)(uint32_t)l.pid << 16 | (uint64_t)l.file);
  long r = l.node == Node::kFdInfo ? fdinfo_text(t, l, text) : proc_generate(t, l.file, l.pid, text);
  if (r < 0) return r;
  File* f = text.to_file((uint32_t)flags & ~O_CLOEXEC, S_IFREG | 0444, ino_of(l), kProcDev);
  if (!f) return -ENOMEM;
  f->fs = &fs;
  *out = f;
  return 0;
}

long proc_magic_file(Task& t, Filesystem&, Lookup& lk, File** out) {
  ProcLookup l = lookup(t, lk.path);
  if (l.node != Node::kFdLink || !l.rest.empty()) return -ENOENT;
  File* f = fd_file(t, l);
  if (!f) return -ENOENT;
  *out = f;
  return 0;
}

long proc_access(Task& t, Filesystem& fs, Lookup& lk, int mode) {
  struct stat st;
  long r = proc_stat(t, fs, lk, &st);
  if (r) return r;
  if ((mode & W_OK) && !(st.st_mode & 0200)) return -EACCES;
  if ((mode & X_OK) && !(st.st_mode & 0111)) return -EACCES;
  return 0;
}

long proc_statfs(Task& t, Filesystem& fs, Lookup& lk, struct statfs* out) {
  struct stat st;
  long r = proc_stat(t, fs, lk, &st);
  if (r) return r;
  memset(out, 0, sizeof *out);
  out->f_type = 0x9fa0;  // PROC_SUPER_MAGIC
  out->f_bsize = 4096;
  out->f_namelen = 255;
  out->f_frsize = 4096;
  return 0;
}

// Nothing can be created in /proc: a name that is not there is ENOENT,
// as Linux's proc lookup answers before the create is tried.
long proc_no_create(Task& t, Filesystem& fs, Lookup& lk) {
  struct stat st;
  long r = proc_stat(t, fs, lk, &st);
  return r == 0 ? -EEXIST : r;
}
long proc_mkdir(Task& t, Filesystem& fs, Lookup& lk, int) { return proc_no_create(t, fs, lk); }
long proc_mknod(Task& t, Filesystem& fs, Lookup& lk, int, uint64_t) { return proc_no_create(t, fs, lk); }
long proc_symlink(Task& t, Filesystem& fs, Lookup& lk, const char*) { return proc_no_create(t, fs, lk); }
long proc_unlink(Task& t, Filesystem& fs, Lookup& lk) {
  long r = proc_no_create(t, fs, lk);
  return r == -EEXIST ? -EACCES : r;
}

// chmod, chown, utimes and truncate through /proc/PID/fd/N change the open
// file itself, as Linux's magic links do (glibc's fchmodat with
// AT_SYMLINK_NOFOLLOW relies on it). The VFS has checked the policy
// against the file's own attributes. An O_PATH descriptor cannot change
// its file, so its file's filesystem is asked by name, where the file is
// now.
long change_by_name(Task& t, File& f, const Attr& a) {
  if (!f.mount || !f.path) return -EPERM;
  Filesystem& fs = *f.mount->fs;
  if (!fs.ops->setattr) return -EPERM;
  char inner[kPathMax];
  const char* at = f.path;
  if (fs.ops->dir_path && fs.ops->dir_path(t, fs, f, inner, sizeof inner) == 0) at = inner;
  Lookup lk(at, false, f.mount);
  long r = fs.ops->setattr(t, fs, lk, a);
  return r == kRedirect ? -ENOENT : r;
}

long proc_setattr(Task& t, Filesystem&, Lookup& lk, const Attr& a) {
  ProcLookup l = lookup(t, lk.path);
  if (l.node != Node::kFdLink || !l.rest.empty()) return -EPERM;
  File* f = fd_file(t, l);
  if (!f) return -ENOENT;
  long r;
  if (f->mount && f->mount->readonly()) r = -EROFS;
  else if (!(f->flags & O_PATH) && f->ops->setattr) r = f->ops->setattr(t, *f, a);
  else r = change_by_name(t, *f, a);
  f->put();
  return r;
}

const FsOps kProcFsOps = {
    .name = "proc",
    .open = proc_open,
    .stat = proc_stat,
    .readlink = proc_readlink,
    .access = proc_access,
    .statfs = proc_statfs,
    .mkdir = proc_mkdir,
    .mknod = proc_mknod,
    .unlink = proc_unlink,
    .rmdir = proc_unlink,
    .symlink = proc_symlink,
    .setattr = proc_setattr,
    .magic_file = proc_magic_file,
    .dcache_drop_unused = true,
};

}  // namespace

int procfs_dir_pid(const File& f) {
  if (!f.fs || f.fs->ops != &kProcFsOps || !f.path) return 0;
  std::string_view p(f.path);
  std::string_view c = next(&p);
  int pid;
  if (!parse_int(c, &pid) || !next(&p).empty()) return 0;
  return pid;
}

long procfs_create(Heap* heap, Filesystem** out) {
  Filesystem* fs = heap->make<Filesystem>();
  if (!fs) return -ENOMEM;
  fs->ops = &kProcFsOps;
  fs->dev = kProcDev;
  *out = fs;
  return 0;
}

namespace {
long procfs_mount(Kernel& k, const char*, unsigned long, const char*, Filesystem** out) {
  return procfs_create(k.heap, out);
}
}  // namespace

const FsType kProcFsType = {.name = "proc", .mount = procfs_mount};

}  // namespace flatux
