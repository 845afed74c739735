// Scheduling calls (raw: musl leaves sched_getscheduler and friends
// unimplemented): nice values (per thread, RLIMIT_NICE), policies and
// parameters, priority ranges, the round-robin interval, and their errnos.
#include "guest_check.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long raw_getprio(int which, int who) { return syscall(SYS_getpriority, which, who); }
static long raw_setprio(int which, int who, int nice) { return syscall(SYS_setpriority, which, who, nice); }
static int nice_of(int tid) { return 20 - (int)raw_getprio(PRIO_PROCESS, tid); }
static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static void priority_ranges(void) {
  printf("priority ranges:\n");
  CHECK(sched_get_priority_max(SCHED_FIFO) == 99 && sched_get_priority_min(SCHED_FIFO) == 1);
  CHECK(sched_get_priority_max(SCHED_RR) == 99 && sched_get_priority_min(SCHED_RR) == 1);
  CHECK(sched_get_priority_max(SCHED_OTHER) == 0 && sched_get_priority_min(SCHED_OTHER) == 0);
  CHECK(sched_get_priority_max(SCHED_BATCH) == 0 && sched_get_priority_min(SCHED_IDLE) == 0);
  CHECK_ERR(syscall(SYS_sched_get_priority_max, 4), EINVAL);
  CHECK_ERR(syscall(SYS_sched_get_priority_min, -1), EINVAL);
  CHECK_ERR(syscall(SYS_sched_get_priority_max, 1000), EINVAL);
}

static void policies(void) {
  printf("policies and parameters:\n");
  CHECK((int)syscall(SYS_sched_getscheduler, 0) == SCHED_OTHER, "policy %d", (int)syscall(SYS_sched_getscheduler, 0));
  struct sched_param p = {.sched_priority = 7};
  CHECK(syscall(SYS_sched_getparam, 0, &p) == 0 && p.sched_priority == 0);
  CHECK_ERR(syscall(SYS_sched_getscheduler, -1), EINVAL);
  CHECK_ERR(syscall(SYS_sched_getparam, -1, &p), EINVAL);
  CHECK_ERR(syscall(SYS_sched_getparam, 0, NULL), EINVAL);
  CHECK_ERR(syscall(SYS_sched_getparam, 0, (void*)8), EFAULT);
  CHECK_ERR(syscall(SYS_sched_getscheduler, 0x7ffffff0), ESRCH);
  p.sched_priority = 0;
  CHECK(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &p) == 0, "%s", strerror(errno));
  CHECK(syscall(SYS_sched_setparam, 0, &p) == 0, "%s", strerror(errno));
  CHECK_ERR(syscall(SYS_sched_setscheduler, -1, SCHED_OTHER, &p), EINVAL);
  CHECK_ERR(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, NULL), EINVAL);
  CHECK_ERR(syscall(SYS_sched_setscheduler, 0, 77, &p), EINVAL);
  p.sched_priority = 5;
  CHECK_ERR(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &p), EINVAL);
  CHECK_ERR(syscall(SYS_sched_setparam, 0, &p), EINVAL);
  p.sched_priority = 100;
  CHECK_ERR(syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p), EINVAL);
  CHECK_ERR(syscall(SYS_sched_setparam, -1, &p), EINVAL);
  p.sched_priority = 0;
  CHECK_ERR(syscall(SYS_sched_setscheduler, 0x7ffffff0, SCHED_OTHER, &p), ESRCH);
  // SCHED_BATCH and back: no privilege needed.
  CHECK(syscall(SYS_sched_setscheduler, 0, SCHED_BATCH, &p) == 0, "%s", strerror(errno));
  CHECK((int)syscall(SYS_sched_getscheduler, 0) == SCHED_BATCH);
  CHECK(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &p) == 0, "%s", strerror(errno));
  CHECK((int)syscall(SYS_sched_getscheduler, 0) == SCHED_OTHER);

  struct timespec ts = {-1, -1};
  CHECK(syscall(SYS_sched_rr_get_interval, 0, &ts) == 0 && ts.tv_sec >= 0 && ts.tv_nsec >= 0 &&
            ts.tv_nsec < 1000000000L,
        "rr interval %ld.%09ld", (long)ts.tv_sec, ts.tv_nsec);
  CHECK_ERR(syscall(SYS_sched_rr_get_interval, -1, &ts), EINVAL);
  CHECK_ERR(syscall(SYS_sched_rr_get_interval, 0x7ffffff0, &ts), ESRCH);
  CHECK_ERR(syscall(SYS_sched_rr_get_interval, 0, (void*)8), EFAULT);
}

static volatile int thread_nice = 99;
static volatile int go_on;
static void* nice_thread(void* arg) {
  (void)arg;
  thread_nice = nice_of(0);
  while (!go_on) usleep(1000);
  return NULL;
}

static void nice_values(void) {
  printf("nice values:\n");
  int base = nice_of(0);
  CHECK(base >= -20 && base <= 19, "nice %d", base);
  CHECK(raw_getprio(PRIO_PROCESS, getpid()) == 20 - base);
  CHECK(raw_getprio(PRIO_PGRP, 0) >= 20 - base);
  CHECK(raw_getprio(PRIO_USER, 0) >= 1);
  CHECK_ERR(raw_getprio(3, 0), EINVAL);
  CHECK_ERR(raw_getprio(-1, 0), EINVAL);
  CHECK_ERR(raw_getprio(PRIO_PROCESS, 0x7ffffff0), ESRCH);
  CHECK_ERR(raw_setprio(3, 0, 0), EINVAL);
  CHECK_ERR(raw_setprio(PRIO_PROCESS, 0x7ffffff0, 1), ESRCH);
  CHECK_ERR(raw_setprio(PRIO_PGRP, 0x7ffffff0, 1), ESRCH);

  // Raising is always allowed; values are clamped to 19.
  if (base < 19) {
    CHECK(raw_setprio(PRIO_PROCESS, 0, base + 1) == 0, "%s", strerror(errno));
    CHECK(nice_of(0) == base + 1, "nice %d after raising", nice_of(0));
  }
  CHECK(raw_setprio(PRIO_PROCESS, 0, 100) == 0);
  CHECK(nice_of(0) == 19, "nice %d after setting 100", nice_of(0));

  // Per thread: a new thread inherits its creator's value; changing the
  // thread's leaves the creator's alone.
  CHECK(raw_setprio(PRIO_PROCESS, 0, 19) == 0);
  pthread_t th;
  go_on = 0;
  REQUIRE(pthread_create(&th, NULL, nice_thread, NULL) == 0);
  while (thread_nice == 99) usleep(1000);
  CHECK(thread_nice == 19, "thread started at %d", thread_nice);
  go_on = 1;
  pthread_join(th, NULL);
}

// As a user without CAP_SYS_NICE: lowering a nice value needs RLIMIT_NICE
// (20 - nice at most), changing someone else's is EPERM. Runs in a child
// started by exec, which gives up root.
static int unprivileged_child(void) {
  guest_name = "sched(unprivileged)";
  REQUIRE(getuid() == 65534);
  struct rlimit rl;
  REQUIRE(getrlimit(RLIMIT_NICE, &rl) == 0);
  int lowest = 20 - (int)rl.rlim_cur;  // the lowest nice value RLIMIT_NICE allows
  printf("unprivileged, RLIMIT_NICE %d:\n", (int)rl.rlim_cur);
  CHECK(nice_of(0) == 10, "started at %d", nice_of(0));
  CHECK(raw_setprio(PRIO_PROCESS, 0, 15) == 0);
  int cur = 15;
  if (lowest < cur) {
    cur = lowest > 5 ? lowest : 5;
    CHECK(raw_setprio(PRIO_PROCESS, 0, cur) == 0, "lowering to %d: %s", cur, strerror(errno));
    CHECK(nice_of(0) == cur);
  }
  int beyond = lowest - 1 < cur - 1 ? lowest - 1 : cur - 1;
  CHECK_ERR(raw_setprio(PRIO_PROCESS, 0, beyond), EACCES);
  CHECK(nice_of(0) == cur, "nice %d after a refused change", nice_of(0));
  CHECK_ERR(raw_setprio(PRIO_PROCESS, getppid(), 19), EPERM);
  struct sched_param p = {0};
  CHECK_ERR(syscall(SYS_sched_setscheduler, getppid(), SCHED_OTHER, &p), EPERM);
  CHECK_ERR(syscall(SYS_sched_setparam, getppid(), &p), EPERM);
  p.sched_priority = 10;
  CHECK_ERR(syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p), EPERM);  // RLIMIT_RTPRIO 0
  return guest_finish();
}

static void unprivileged(const char* self) {
  if (geteuid() != 0) {
    printf("not root: unprivileged checks skipped\n");
    return;
  }
  pid_t pid = vfork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // RLIMIT_NICE 25 where root may raise limits (CAP_SYS_RESOURCE).
    struct rlimit rl = {25, 25};
    setrlimit(RLIMIT_NICE, &rl);
    if (setpriority(PRIO_PROCESS, 0, 10) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    execl(self, self, "unprivileged", (char*)NULL);
    _exit(4);
  }
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
}

// I/O priorities (ioprio_set/ioprio_get): class << 13 | level, per task,
// inherited by fork.
#define IOPRIO(cls, level) ((cls) << 13 | (level))
static long ioprio_get(int which, int who) { return syscall(SYS_ioprio_get, which, who); }
static long ioprio_set(int which, int who, int prio) { return syscall(SYS_ioprio_set, which, who, prio); }

static void io_priorities(void) {
  puts("I/O priorities");
  CHECK(ioprio_get(1, 0) == 0, "none set at first: %ld", ioprio_get(1, 0));
  CHECK_OK(ioprio_set(1, 0, IOPRIO(2, 7)));
  CHECK(ioprio_get(1, 0) == IOPRIO(2, 7), "best effort 7: %ld", ioprio_get(1, 0));
  CHECK_ERR(ioprio_set(1, 0, IOPRIO(0, 1)), EINVAL);  // "none" has no level
  CHECK_ERR(ioprio_set(1, 0, IOPRIO(4, 0)), EINVAL);  // no such class
  CHECK_ERR(ioprio_set(4, 0, IOPRIO(2, 0)), EINVAL);  // no such "which"
  CHECK_ERR(ioprio_get(0, 0), EINVAL);
  CHECK_ERR(ioprio_get(1, 0x3ffffff0), ESRCH);
  fflush(stdout);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Inherited; a group of its own holds only it.
    if (ioprio_get(1, 0) != IOPRIO(2, 7) || setpgid(0, 0) != 0) _exit(1);
    if (ioprio_set(1, 0, IOPRIO(3, 5)) != 0 || ioprio_get(1, 0) != IOPRIO(3, 5)) _exit(2);
    if (ioprio_get(2, 0) != IOPRIO(3, 5)) _exit(3);
    // "none" counts as best effort at the level nice gives: (nice + 20) / 5.
    int level = (getpriority(PRIO_PROCESS, 0) + 20) / 5;
    if (ioprio_set(1, 0, 0) != 0 || ioprio_get(2, 0) != IOPRIO(2, level)) _exit(4);
    // An ordinary user may not touch root's tasks, nor take real-time.
    if (setresuid(65534, 65534, 65534) != 0) _exit(5);
    if (ioprio_set(1, getppid(), IOPRIO(2, 1)) != -1 || errno != EPERM) _exit(6);
    if (ioprio_set(1, 0, IOPRIO(1, 0)) != -1 || errno != EPERM) _exit(7);
    if (ioprio_set(1, 0, IOPRIO(2, 2)) != 0) _exit(8);
    _exit(0);
  }
  int st;
  CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's checks: %#x", st);
  CHECK(ioprio_get(1, 0) == IOPRIO(2, 7), "the parent's own is unchanged");
  CHECK_OK(ioprio_set(1, 0, 0));
}

int main(int argc, char** argv) {
  guest_name = "sched";
  if (argc > 1 && strcmp(argv[1], "unprivileged") == 0) return unprivileged_child();
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_NICE, &rl) == 0);
  printf("RLIMIT_NICE %llu/%llu\n", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
  priority_ranges();
  policies();
  nice_values();
  unprivileged(argv[0]);
  if (geteuid() == 0) io_priorities();
  return guest_finish();
}
