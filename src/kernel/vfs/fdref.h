// A counted reference to the File behind a guest descriptor, for the
// duration of one syscall (so a concurrent close cannot free it under us).
#pragma once
#include "kernel/task/task.h"
#include "kernel/vfs/file.h"

namespace flatux {

class FdRef {
 public:
  FdRef(Task& t, uint64_t fd) : f_(fd > (uint64_t)FdTable::kMaxFds ? nullptr : t.proc->files->get((int)fd)) {}
  ~FdRef() { if (f_) f_->put(); }
  FdRef(const FdRef&) = delete;
  FdRef& operator=(const FdRef&) = delete;
  explicit operator bool() const { return f_ != nullptr; }
  File* operator->() const { return f_; }
  File& operator*() const { return *f_; }
  File* get() const { return f_; }

 private:
  File* f_;
};

}  // namespace flatux
