// /proc/PID/mem: the process's memory at the file offset that is its
// address, for whoever ptrace's rule lets in (checked at open, as Linux's
// mem_open). Only what the process owns is there (EIO elsewhere). Writing
// goes to a process in the writer's host process; into another host
// process's private memory it is EPERM (the host boundary gives the
// kernel no way to write it), and a read-only page is not forced open as
// Linux's FOLL_FORCE would (EIO).
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>

#include "kernel/fs/procfs/procfs.h"
#include "kernel/kernel.h"
#include "kernel/mm/usercopy.h"
#include "kernel/task/caps.h"
#include "kernel/task/process.h"
#include "kernel/task/process_vm.h"
#include "kernel/vfs/synth.h"

namespace flatux {
namespace {

constexpr size_t kChunk = 4096;

ProcessRef& target_of(File& f) { return *static_cast<ProcessRef*>(f.priv); }

long mem_io(Task& t, File& f, char* guest, size_t n, int64_t off, bool write) {
  char buf[kChunk];
  size_t done = 0;
  long err = 0;
  while (done < n) {
    size_t len = n - done < kChunk ? n - done : kChunk;
    if (write && copy_from_user(buf, guest + done, len) < 0) {
      err = -EFAULT;
      break;
    }
    long moved = process_mem_move(*t.kernel, target_of(f), (uint64_t)off + done, buf, len, write);
    if (moved < 0) {
      err = moved == -EFAULT ? -EIO : moved;
      break;
    }
    if (!write && copy_to_user(guest + done, buf, (size_t)moved) < 0) {
      err = -EFAULT;
      break;
    }
    done += (size_t)moved;
    if ((size_t)moved < len) break;
  }
  return done ? (long)done : err;
}

long mem_pread(Task& t, File& f, void* buf, size_t n, int64_t off) { return mem_io(t, f, (char*)buf, n, off, false); }
long mem_pwrite(Task& t, File& f, const void* buf, size_t n, int64_t off) {
  return mem_io(t, f, (char*)buf, n, off, true);
}
// Offsets are addresses: any 64-bit value (Linux's FMODE_UNSIGNED_OFFSET).
long mem_lseek(Task&, File& f, int64_t off, int whence) {
  Guard g(f.pos_lock);
  if (whence == SEEK_SET) f.pos = off;
  else if (whence == SEEK_CUR) f.pos = (int64_t)((uint64_t)f.pos + (uint64_t)off);
  else return -EINVAL;
  return f.pos;
}
long mem_stat(Task&, File& f, struct stat* st) {
  synth_stat(st, S_IFREG | 0600, ((uint64_t)target_of(f).pid << 16) | 0xfeed, 0, 0x16);
  return 0;
}
void mem_release(File& f) { f.heap->destroy_obj(&target_of(f)); }

const FileOps kMemOps = {
    .read = file_read_at_pos,
    .write = file_write_at_pos,
    .pread = mem_pread,
    .pwrite = mem_pwrite,
    .lseek = mem_lseek,
    .stat = mem_stat,
    .getdents64 = nullptr,
    .ioctl = nullptr,
    .statfs = nullptr,
    .release = mem_release,
};

}  // namespace

long procfs_open_mem(Task& t, int pid, uint32_t flags, File** out) {
  Kernel& k = *t.kernel;
  ProcessRef* ref = k.heap->make<ProcessRef>();
  if (!ref) return -ENOMEM;
  long r;
  {
    Guard g(k.tasks_lock);
    r = process_ref_locked(k, pid, ref);
    if (r == 0 && !ptrace_may_access(*t.proc, *ref->proc)) r = -EACCES;
  }
  File* f = r == 0 ? file_alloc(k.heap, &kMemOps, flags, -1) : nullptr;
  if (!f) {
    k.heap->destroy_obj(ref);
    return r < 0 ? r : -ENOMEM;
  }
  f->priv = ref;
  *out = f;
  return 0;
}

}  // namespace flatux
