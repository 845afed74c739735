// A guest path argument copied into kernel memory.
#pragma once
#include <linux/errno.h>

#include "kernel/mm/usercopy.h"
#include "kernel/task/task.h"

namespace flatux {

// err: EFAULT, ENAMETOOLONG, ENOENT for "" (Linux's getname), else the length.
struct PathArg {
  char buf[kPathMax];
  long err;
  explicit PathArg(uint64_t guest) {
    err = strncpy_from_user(buf, (const char*)guest, sizeof buf);
    if (err == 0) err = -ENOENT;
  }
  bool ok() const { return err > 0; }
};

}  // namespace flatux
