// The loop ioctls on /dev/loopN (LOOP_SET_FD, LOOP_CONFIGURE,
// LOOP_{GET,SET}_STATUS{,64}, LOOP_CLR_FD, ...) and /dev/loop-control,
// with Linux's errors: EBUSY to bind a bound device, ENXIO to ask or
// change an unbound one.
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <linux/errno.h>
#include <sys/stat.h>

#include "kernel/mm/usercopy.h"
#include "kernel/block/loop_internal.h"
#include "kernel/kernel.h"
#include "kernel/task/task.h"
#include "kernel/vfs/file.h"
#include "kernel/task/caps.h"

namespace flatux {
namespace {

long get_status(Task& t, LoopDevice& lo, loop_info64* out) {
  memset(out, 0, sizeof *out);
  Guard g(lo.lock);
  if (lo.state != LoopState::kBound) return -ENXIO;
  struct stat st;
  long r = lo.backing->ops->stat(t, *lo.backing, &st);
  if (r < 0) return r;
  out->lo_device = st.st_dev;
  out->lo_inode = st.st_ino;
  out->lo_rdevice = st.st_rdev;
  out->lo_offset = lo.offset;
  out->lo_sizelimit = lo.sizelimit;
  out->lo_number = (uint32_t)lo.index;
  out->lo_flags = lo.flags;
  memcpy(out->lo_file_name, lo.file_name, LO_NAME_SIZE);
  memcpy(out->lo_crypt_name, lo.crypt_name, LO_NAME_SIZE);
  return 0;
}

long set_status(LoopDevice& lo, const loop_info64& in) {
  if (in.lo_offset > INT64_MAX || in.lo_sizelimit > INT64_MAX) return -EOVERFLOW;
  if (in.lo_encrypt_type || in.lo_encrypt_key_size) return -EINVAL;  // no cryptoloop
  Guard g(lo.lock);
  if (lo.state != LoopState::kBound) return -ENXIO;
  // Only AUTOCLEAR and PARTSCAN change here, and only AUTOCLEAR goes away.
  uint32_t flags = in.lo_flags & LOOP_SET_STATUS_SETTABLE_FLAGS;
  flags |= lo.flags & ~LOOP_SET_STATUS_SETTABLE_FLAGS;
  flags |= lo.flags & ~LOOP_SET_STATUS_CLEARABLE_FLAGS;
  lo.flags = flags;
  memcpy(lo.file_name, in.lo_file_name, LO_NAME_SIZE);
  memcpy(lo.crypt_name, in.lo_crypt_name, LO_NAME_SIZE);
  lo.file_name[LO_NAME_SIZE - 1] = lo.crypt_name[LO_NAME_SIZE - 1] = 0;
  if (lo.offset == in.lo_offset && lo.sizelimit == in.lo_sizelimit) return 0;
  lo.offset = in.lo_offset;
  lo.sizelimit = in.lo_sizelimit;
  return loop_update_size_locked(lo);
}

// The old struct loop_info, as loop_info64_{to,from}_old convert it.
long to_old(const loop_info64& in, loop_info* out) {
  memset(out, 0, sizeof *out);
  out->lo_number = (int)in.lo_number;
  out->lo_device = (__kernel_old_dev_t)in.lo_device;
  out->lo_inode = (unsigned long)in.lo_inode;
  out->lo_rdevice = (__kernel_old_dev_t)in.lo_rdevice;
  out->lo_offset = (int)in.lo_offset;
  out->lo_flags = (int)in.lo_flags;
  memcpy(out->lo_name, in.lo_file_name, LO_NAME_SIZE);
  if (out->lo_device != in.lo_device || out->lo_rdevice != in.lo_rdevice || out->lo_inode != in.lo_inode ||
      (uint64_t)(int64_t)out->lo_offset != in.lo_offset)
    return -EOVERFLOW;
  return 0;
}

void from_old(const loop_info& in, loop_info64* out) {
  memset(out, 0, sizeof *out);
  out->lo_number = (uint32_t)in.lo_number;
  out->lo_offset = (uint64_t)(uint32_t)in.lo_offset;
  out->lo_encrypt_type = (uint32_t)in.lo_encrypt_type;
  out->lo_encrypt_key_size = (uint32_t)in.lo_encrypt_key_size;
  out->lo_flags = (uint32_t)in.lo_flags;
  memcpy(out->lo_file_name, in.lo_name, LO_NAME_SIZE);
}

long configure(Task& t, LoopDevice& lo, File& f, uint64_t arg) {
  loop_config c;
  if (copy_from_user(&c, reinterpret_cast<void*>(arg), sizeof c) < 0) return -EFAULT;
  if (c.info.lo_flags & ~LOOP_CONFIGURE_SETTABLE_FLAGS) return -EINVAL;
  return loop_bind(t, lo, f, (int)c.fd, c.info, c.block_size);
}

long set_block_size(LoopDevice& lo, uint64_t bs) {
  Guard g(lo.lock);
  if (lo.state != LoopState::kBound) return -ENXIO;
  if (bs < 512 || bs > 4096 || (bs & (bs - 1))) return -EINVAL;
  lo.block_size = (uint32_t)bs;
  return 0;
}

long set_capacity(LoopDevice& lo) {
  Guard g(lo.lock);
  if (lo.state != LoopState::kBound) return -ENXIO;
  return loop_update_size_locked(lo);
}

long set_direct_io(LoopDevice& lo, uint64_t on) {
  Guard g(lo.lock);
  if (lo.state != LoopState::kBound) return -ENXIO;
  return on ? -EINVAL : 0;  // no backing file here takes O_DIRECT I/O
}

// What changes a device needs it opened for writing, or CAP_SYS_ADMIN.
bool may_change(Task& t, File& f) { return (f.flags & O_ACCMODE) != O_RDONLY || capable(t.proc->creds, CAP_SYS_ADMIN); }

long loop_control_ioctl(Task& t, File&, unsigned cmd, uint64_t arg) {
  Kernel& k = *t.kernel;
  switch (cmd) {
    case LOOP_CTL_ADD: return loop_add(k, (int)arg);
    case LOOP_CTL_REMOVE: return loop_remove(k, (int)arg);
    case LOOP_CTL_GET_FREE: return loop_get_free(k);
    default: return -ENOSYS;  // as loop_control_ioctl
  }
}

long loop_control_stat(Task&, File&, struct stat* st) {
  memset(st, 0, sizeof *st);
  st->st_mode = S_IFCHR | 0600;
  st->st_nlink = 1;
  st->st_rdev = kLoopControlRdev;
  st->st_blksize = 4096;
  return 0;
}

const FileOps kLoopControlOps = {
    .read = nullptr,
    .write = nullptr,
    .pread = nullptr,
    .pwrite = nullptr,
    .lseek = nullptr,
    .stat = loop_control_stat,
    .getdents64 = nullptr,
    .ioctl = loop_control_ioctl,
    .statfs = nullptr,
    .release = nullptr,
};

}  // namespace

long loop_ioctl(Task& t, BlockDevice& d, File& f, unsigned cmd, uint64_t arg) {
  LoopDevice& lo = loop_of(d);
  void* guest = reinterpret_cast<void*>(arg);
  bool changes = cmd == LOOP_SET_FD || cmd == LOOP_CONFIGURE || cmd == LOOP_CHANGE_FD || cmd == LOOP_CLR_FD ||
                 cmd == LOOP_SET_STATUS || cmd == LOOP_SET_STATUS64 || cmd == LOOP_SET_CAPACITY ||
                 cmd == LOOP_SET_DIRECT_IO || cmd == LOOP_SET_BLOCK_SIZE;
  if (changes && !may_change(t, f)) return -EPERM;
  loop_info64 info;
  switch (cmd) {
    case LOOP_SET_FD:
      memset(&info, 0, sizeof info);
      return loop_bind(t, lo, f, (int)arg, info, 0);
    case LOOP_CONFIGURE: return configure(t, lo, f, arg);
    case LOOP_CHANGE_FD: return loop_change_fd(t, lo, (int)arg);
    case LOOP_CLR_FD: return loop_clear_on_close(lo);
    case LOOP_SET_STATUS64:
      if (copy_from_user(&info, guest, sizeof info) < 0) return -EFAULT;
      return set_status(lo, info);
    case LOOP_SET_STATUS: {
      loop_info old;
      if (copy_from_user(&old, guest, sizeof old) < 0) return -EFAULT;
      from_old(old, &info);
      return set_status(lo, info);
    }
    case LOOP_GET_STATUS64: {
      if (!guest) return -EINVAL;
      long r = get_status(t, lo, &info);
      return r < 0 ? r : copy_to_user(guest, &info, sizeof info);
    }
    case LOOP_GET_STATUS: {
      if (!guest) return -EINVAL;
      loop_info old;
      long r = get_status(t, lo, &info);
      if (r == 0) r = to_old(info, &old);
      return r < 0 ? r : copy_to_user(guest, &old, sizeof old);
    }
    case LOOP_SET_CAPACITY: return set_capacity(lo);
    case LOOP_SET_DIRECT_IO: return set_direct_io(lo, arg);
    case LOOP_SET_BLOCK_SIZE: return set_block_size(lo, arg);
    default: return -ENOTTY;
  }
}

long loop_control_open(Task& t, int flags, File** out) {
  File* f = file_alloc(t.kernel->heap, &kLoopControlOps, (uint32_t)flags & (O_ACCMODE | O_NONBLOCK), -1);
  if (!f) return -ENOMEM;
  *out = f;
  return 0;
}

}  // namespace flatux
