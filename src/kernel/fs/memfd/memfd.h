// memfd_create: a host memfd per guest memfd (seals, shared mappings and
// sizes are the host's), whose pages are charged to mem= like a tmpfs
// file's (Linux's shmem accounting): growth by write, fallocate and
// copies into it is checked first (ENOSPC when it does not fit), and the
// pages it holds are measured after every change and when it is mapped.
// A sparse size costs nothing. Pages dirtied through a shared mapping are
// charged with the mapping while it lasts and to the memfd at its next
// measure.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>

namespace flatux {

struct File;
struct MemAccount;
struct Task;
struct Attr;

// The operations a memfd's file has besides the host file's (hostfs/
// file.cpp makes kMemfdFileOps of them).
long memfd_write(Task& t, File& f, const void* buf, size_t n);
long memfd_pwrite(Task& t, File& f, const void* buf, size_t n, int64_t off);
long memfd_writev(Task& t, File& f, const struct iovec* iov, int cnt, int64_t off, int flags);
long memfd_fallocate(Task& t, File& f, int mode, int64_t off, int64_t len);
long memfd_setattr(Task& t, File& f, const Attr& a);

// Charges what the memfd behind `f` holds now (no-op for other files).
void memfd_measure(File& f);

// A copy into `out` by the host (sendfile, copy_file_range, splice):
// `count` is cut to what fits under mem=, which stays reserved until
// settle() charges what the memfd really holds. Other files: no change.
class MemfdCopy {
 public:
  // 0, or ENOSPC when not even one page fits.
  long reserve(File& out, size_t* count);
  ~MemfdCopy();

 private:
  File* out_ = nullptr;
  uint64_t reserved_ = 0;
};

// A file the kernel just made for a host descriptor it did not open (a
// reopened /proc/PID/fd link, a descriptor received over a socket, an
// opened named pipe): if it is a charged pipe or memfd, the file shares
// that charge (and a memfd's file gets the operations that keep it); a
// pipe or memfd charged nowhere (a FIFO's first opener, or its last holder
// gone while it was in flight) is charged anew, with what it holds.
void host_charge_adopt(File& f, MemAccount& acct);

}  // namespace flatux
