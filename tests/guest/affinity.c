// sched_getaffinity/sched_setaffinity on the caller, its threads' ids and
// another process (the parent), with their error cases.
#include "guest_check.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  guest_name = "affinity";
  cpu_set_t all, one, got;
  CPU_ZERO(&all);
  long n = syscall(SYS_sched_getaffinity, 0, sizeof all, &all);
  REQUIRE(n > 0, "sched_getaffinity(0): %s", strerror(errno));
  int first = -1;
  for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
    if (CPU_ISSET(i, &all)) first = i;
  REQUIRE(first >= 0);
  CPU_ZERO(&got);
  CHECK(syscall(SYS_sched_getaffinity, getppid(), sizeof got, &got) > 0, "parent: %s", strerror(errno));
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  CHECK_OK(syscall(SYS_sched_setaffinity, 0, sizeof one, &one));
  CPU_ZERO(&got);
  CHECK(syscall(SYS_sched_getaffinity, syscall(SYS_gettid), sizeof got, &got) > 0);
  CHECK(CPU_EQUAL(&got, &one), "mask after set: %d cpus", CPU_COUNT(&got));
  CHECK_OK(syscall(SYS_sched_setaffinity, 0, sizeof all, &all));
  CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 7, &got), EINVAL);
  CHECK_ERR(syscall(SYS_sched_getaffinity, 0x7ffffff0, sizeof got, &got), ESRCH);
  CHECK_ERR(syscall(SYS_sched_setaffinity, 0x7ffffff0, sizeof one, &one), ESRCH);
  CHECK_ERR(syscall(SYS_sched_getaffinity, 0, sizeof got, (void*)8), EFAULT);
  return guest_finish();
}
