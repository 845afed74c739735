// seccomp for the guest's own use: which actions the kernel has
// (SECCOMP_GET_ACTION_AVAIL), who may install a filter (no_new_privs or
// CAP_SYS_ADMIN), the checks a filter must pass (EINVAL, EFAULT), each
// action (ERRNO with its cap, TRAP's SIGSYS and its siginfo and registers,
// KILL_PROCESS, KILL_THREAD of one thread and of the last one, TRACE with
// no tracer, LOG), which of several filters wins, what a filter sees
// (arch, arguments, BPF_LEN), inheritance over fork and execve, TSYNC and
// its refusals, strict mode, and the Seccomp lines of /proc/PID/status.
//
// Each test runs in a child process: a filter cannot be taken off.
#define _GNU_SOURCE
#include "guest_check.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static const char* self_exe;

#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define IF_NR(nr, action) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, (action))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static long install(unsigned flags, struct sock_filter* insns, unsigned short len) {
  struct sock_fprog prog = {.len = len, .filter = insns};
  return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

// getppid gets `action`; everything else is allowed.
static long install_for_getppid(unsigned flags, uint32_t action) {
  struct sock_filter f[] = {LOAD_NR, IF_NR(SYS_getppid, action), ALLOW};
  return install(flags, f, sizeof f / sizeof f[0]);
}

// Runs fn in a child with no_new_privs set; its wait status.
static int in_child(void (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    guest_failures = 0;  // the parent's count is not the child's
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(100);
    fn();
    fflush(stdout);
    _exit(guest_failures ? 1 : 0);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  return status;
}

static int exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
static int killed_by(int status, int sig) { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }

static long status_field(const char* name) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(name);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, name, n) == 0 && line[n] == ':') sscanf(line + n + 1, "%ld", &v);
  if (f) fclose(f);
  return v;
}

static void test_actions_avail(void) {
  puts("actions available");
  uint32_t actions[] = {SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP, SECCOMP_RET_ERRNO,
                        SECCOMP_RET_TRACE, SECCOMP_RET_LOG, SECCOMP_RET_ALLOW};
  for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
    CHECK(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &actions[i]) == 0, "action %#x: %s", actions[i],
          strerror(errno));
  uint32_t bogus = 0x12340000;
  CHECK_ERR(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &bogus), EOPNOTSUPP);
  CHECK_ERR(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 1, &actions[0]), EINVAL);
  CHECK_ERR(syscall(SYS_seccomp, 99, 0, NULL), EINVAL);
}

static void unprivileged_without_nnp(void) {
  if (geteuid() == 0) REQUIRE(syscall(SYS_setresuid, 65534, 65534, 65534) == 0);
  CHECK_ERR(install_for_getppid(0, SECCOMP_RET_ERRNO | EPERM), EACCES);
  CHECK(prctl(PR_GET_SECCOMP) == 0);
  CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_ERRNO | EPERM));
}

static void test_permission(void) {
  puts("permission");
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    unprivileged_without_nnp();
    _exit(guest_failures ? 1 : 0);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && exited_ok(status), "status %#x", status);
}

static void bad_filters(void) {
  struct sock_filter ok[] = {ALLOW};
  CHECK_ERR(install(0, ok, 0), EINVAL);
  static struct sock_filter many[BPF_MAXINSNS + 1];
  for (int i = 0; i <= BPF_MAXINSNS; i++) many[i] = (struct sock_filter)ALLOW;
  CHECK_ERR(install(0, many, BPF_MAXINSNS + 1), EINVAL);
  CHECK_OK(install(0, many, BPF_MAXINSNS));  // the most one filter may have
  CHECK_ERR(install(0, (struct sock_filter*)8, 1), EFAULT);
  CHECK_ERR(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (void*)8), EFAULT);
  CHECK_ERR(install(1u << 20, ok, 1), EINVAL);
  struct sock_filter past_end[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct seccomp_data)), ALLOW};
  CHECK_ERR(install(0, past_end, 2), EINVAL);
  struct sock_filter unaligned[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2), ALLOW};
  CHECK_ERR(install(0, unaligned, 2), EINVAL);
  struct sock_filter half[] = {BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0), ALLOW};
  CHECK_ERR(install(0, half, 2), EINVAL);
  struct sock_filter no_ret[] = {LOAD_NR};
  CHECK_ERR(install(0, no_ret, 1), EINVAL);
  struct sock_filter far_jump[] = {LOAD_NR, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 5, 0), ALLOW};
  CHECK_ERR(install(0, far_jump, 3), EINVAL);
  struct sock_filter far_ja[] = {BPF_STMT(BPF_JMP | BPF_JA, 1), ALLOW};
  CHECK_ERR(install(0, far_ja, 2), EINVAL);
  struct sock_filter unset_mem[] = {BPF_STMT(BPF_LD | BPF_MEM, 3), ALLOW};
  CHECK_ERR(install(0, unset_mem, 2), EINVAL);
  struct sock_filter mem_range[] = {BPF_STMT(BPF_ST, 16), ALLOW};
  CHECK_ERR(install(0, mem_range, 2), EINVAL);
  struct sock_filter mod[] = {BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 3), ALLOW};
  CHECK_ERR(install(0, mod, 2), EINVAL);
  struct sock_filter div0[] = {BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0), ALLOW};
  CHECK_ERR(install(0, div0, 2), EINVAL);
  struct sock_filter shift[] = {BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32), ALLOW};
  CHECK_ERR(install(0, shift, 2), EINVAL);
  struct sock_filter bad_code[] = {{0xffff, 0, 0, 0}, ALLOW};
  CHECK_ERR(install(0, bad_code, 2), EINVAL);
  // A scratch word written on one branch only is not written.
  struct sock_filter one_branch[] = {
      LOAD_NR, BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1), BPF_STMT(BPF_ST, 0), BPF_STMT(BPF_LD | BPF_MEM, 0), ALLOW};
  CHECK_ERR(install(0, one_branch, 5), EINVAL);
  struct sock_filter both[] = {LOAD_NR, BPF_STMT(BPF_ST, 0), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
                               BPF_STMT(BPF_ST, 0), BPF_STMT(BPF_LD | BPF_MEM, 0), ALLOW};
  CHECK_OK(install(0, both, 6));
  CHECK(prctl(PR_GET_SECCOMP) == 2);
}

static void test_checks(void) {
  puts("filter checks");
  int status = in_child(bad_filters);
  CHECK(exited_ok(status), "status %#x", status);
}

static void errno_actions(void) {
  CHECK(status_field("Seccomp") == 0 && status_field("Seccomp_filters") == 0, "before: %ld %ld",
        status_field("Seccomp"), status_field("Seccomp_filters"));
  pid_t parent = getppid();  // (under flatux its site is rewritten by now)
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_ERRNO | EPERM));
  CHECK_ERR(syscall(SYS_getppid), EPERM);
  for (int i = 0; i < 3; i++) CHECK(getppid() == -1 && errno == EPERM, "libc's getppid, call %d", i);
  CHECK(syscall(SYS_getpid) == getpid(), "other calls go on");
  CHECK(status_field("Seccomp") == 2 && status_field("Seccomp_filters") == 1, "after: %ld %ld",
        status_field("Seccomp"), status_field("Seccomp_filters"));
  // Equal actions: the newest filter's data. ERRNO's data is capped at 4095.
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_ERRNO | ENOENT));
  CHECK_ERR(syscall(SYS_getppid), ENOENT);
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_ERRNO | 0xffff));
  long r = syscall(SYS_getppid);
  CHECK(r == -1 && errno == 4095, "capped errno: %ld %d", r, errno);
  // An older filter's stricter action wins over a newer ALLOW or LOG.
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_LOG));
  CHECK(syscall(SYS_getppid) == -1, "LOG does not undo an older ERRNO");
  CHECK(status_field("Seccomp_filters") == 4);
  (void)parent;
}

static void test_errno(void) {
  puts("ERRNO, precedence, Seccomp lines");
  int status = in_child(errno_actions);
  CHECK(exited_ok(status), "status %#x", status);
}

static volatile int trap_count, trap_code, trap_nr, trap_errno, trap_rax;
static volatile uint32_t trap_arch;
static void* volatile trap_addr;

static void on_sigsys(int sig, siginfo_t* si, void* ctx) {
  ucontext_t* uc = ctx;
  trap_count++;
  trap_code = si->si_code;
  trap_nr = si->si_syscall;
  trap_arch = si->si_arch;
  trap_errno = si->si_errno;
  trap_addr = si->si_call_addr;
  trap_rax = (int)uc->uc_mcontext.gregs[REG_RAX];
  uc->uc_mcontext.gregs[REG_RAX] = 42;  // the emulated call's result
}

static void trap_action(void) {
  struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
  REQUIRE(sigaction(SIGSYS, &sa, NULL) == 0);
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_TRAP | 77));
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_ERRNO | EPERM));  // newer, but TRAP takes precedence
  long r = syscall(SYS_getppid);
  CHECK(r == 42, "the handler's RAX is the result: %ld", r);
  CHECK(trap_count == 1 && trap_code == 1 /* SYS_SECCOMP */, "count %d code %d", trap_count, trap_code);
  CHECK(trap_nr == SYS_getppid && trap_rax == SYS_getppid, "si_syscall %d, RAX in the handler %d", trap_nr,
        trap_rax);
  CHECK(trap_arch == AUDIT_ARCH_X86_64 && trap_errno == 77, "arch %#x data %d", trap_arch, trap_errno);
  CHECK(trap_addr != NULL, "si_call_addr");
  // Blocked SIGSYS is forced through: the default action kills.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGSYS);
  sigprocmask(SIG_BLOCK, &set, NULL);
  signal(SIGSYS, SIG_DFL);
  syscall(SYS_getppid);
  _exit(5);  // not reached
}

static void test_trap(void) {
  puts("TRAP");
  int status = in_child(trap_action);
  CHECK(killed_by(status, SIGSYS), "a blocked SIGSYS still kills: status %#x", status);
}

static void kill_process(void) {
  install_for_getppid(0, SECCOMP_RET_KILL_PROCESS);
  syscall(SYS_getppid);
  _exit(5);
}

static void kill_thread_alone(void) {
  install_for_getppid(0, SECCOMP_RET_KILL_THREAD);
  syscall(SYS_getppid);
  _exit(5);
}

static volatile pid_t killed_tid;

static void* killed_thread(void* arg) {
  killed_tid = (pid_t)syscall(SYS_gettid);
  syscall(SYS_getppid);
  return NULL;  // not reached
}

// (Not pthread_join: musl's waits for what the thread's own exit writes.)
static void kill_one_thread(void) {
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_KILL_THREAD));
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, killed_thread, NULL) == 0);
  int gone = 0;
  for (int i = 0; i < 5000 && !gone; i++) {
    if (killed_tid && syscall(SYS_tgkill, getpid(), killed_tid, 0) == -1 && errno == ESRCH) gone = 1;
    else usleep(1000);
  }
  CHECK(gone, "the thread died in the call (tid %d)", (int)killed_tid);
}

static void trace_and_log(void) {
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_TRACE | 1));
  CHECK_ERR(syscall(SYS_getppid), ENOSYS);  // no tracer
  struct sock_filter log[] = {LOAD_NR, IF_NR(SYS_getpid, SECCOMP_RET_LOG), ALLOW};
  CHECK_OK(install(SECCOMP_FILTER_FLAG_LOG, log, sizeof log / sizeof log[0]));
  CHECK(syscall(SYS_getpid) == getpid());
}

static void test_kills(void) {
  puts("KILL_PROCESS, KILL_THREAD, TRACE, LOG");
  int status = in_child(kill_process);
  CHECK(killed_by(status, SIGSYS), "KILL_PROCESS: status %#x", status);
  status = in_child(kill_thread_alone);
  CHECK(killed_by(status, SIGSYS), "KILL_THREAD of the only thread: status %#x", status);
  status = in_child(kill_one_thread);
  CHECK(exited_ok(status), "KILL_THREAD of one of two: status %#x", status);
  status = in_child(trace_and_log);
  CHECK(exited_ok(status), "status %#x", status);
}

static void what_filters_see(void) {
  // getppid with args[0] == 1234 on x86-64 gets the errno BPF_LEN loads (64).
  struct sock_filter f[] = {
      LOAD_NR,
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 7),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 5),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1234, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
      BPF_STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
      BPF_STMT(BPF_RET | BPF_A, 0),
      ALLOW,
  };
  CHECK_OK(install(0, f, sizeof f / sizeof f[0]));
  CHECK(syscall(SYS_getppid, 0) > 0, "args[0] 0 passes");
  long r = syscall(SYS_getppid, 1234);
  CHECK(r == -1 && errno == 64, "args[0] 1234: BPF_LEN's 64 as the errno (%ld, %d)", r, errno);
  // instruction_pointer and the upper half of an argument.
  struct sock_filter hi[] = {
      LOAD_NR,
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]) + 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 7, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 9),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 10),
  };
  CHECK_OK(install(0, hi, sizeof hi / sizeof hi[0]));
  r = syscall(SYS_getppid, 0, 7ul << 32);
  CHECK(r == -1 && errno == 9, "args[1] >> 32 == 7: %ld %d", r, errno);
  CHECK(syscall(SYS_getpid) == getpid(), "instruction_pointer is a user address (its upper half is not 0)");
}

static void test_data(void) {
  puts("what a filter sees");
  int status = in_child(what_filters_see);
  CHECK(exited_ok(status), "status %#x", status);
}

static void inherited(void) {
  CHECK_OK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &(struct sock_fprog){
      4, (struct sock_filter[]){LOAD_NR, IF_NR(SYS_getppid, SECCOMP_RET_ERRNO | EPERM), ALLOW}}));
  CHECK(prctl(PR_GET_SECCOMP) == 2);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    _exit(syscall(SYS_getppid) == -1 && errno == EPERM ? 0 : 1);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && exited_ok(status), "a fork child keeps the filter: %#x", status);
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    execl(self_exe, self_exe, "--after-exec", (char*)NULL);
    _exit(3);
  }
  CHECK(waitpid(pid, &status, 0) == pid && exited_ok(status), "execve keeps it: %#x", status);
}

static int after_exec(void) {
  guest_name = "seccomp (exec'd)";
  CHECK_ERR(syscall(SYS_getppid), EPERM);
  CHECK(status_field("Seccomp") == 2 && status_field("Seccomp_filters") == 1, "%ld %ld", status_field("Seccomp"),
        status_field("Seccomp_filters"));
  return guest_finish();
}

static void test_inherit(void) {
  puts("fork and execve");
  int status = in_child(inherited);
  CHECK(exited_ok(status), "status %#x", status);
}

static volatile int go, done_thread;
static volatile long thread_result, thread_errno;

static void* sync_thread(void* arg) {
  while (!go) usleep(1000);
  thread_result = syscall(SYS_getppid);
  thread_errno = errno;
  done_thread = 1;
  return NULL;
}

static void* own_filter_thread(void* arg) {
  install_for_getppid(0, SECCOMP_RET_ERRNO | ENOENT);
  done_thread = 1;
  while (!go) usleep(1000);
  return NULL;
}

static void tsync(void) {
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, sync_thread, NULL) == 0);
  CHECK_OK(install_for_getppid(SECCOMP_FILTER_FLAG_TSYNC, SECCOMP_RET_ERRNO | EPERM));
  go = 1;
  pthread_join(th, NULL);
  CHECK(thread_result == -1 && thread_errno == EPERM, "the other thread got it: %ld %ld", thread_result, thread_errno);
  // A thread with a filter of its own cannot be synced: its tid, or ESRCH.
  go = 0;
  done_thread = 0;
  REQUIRE(pthread_create(&th, NULL, own_filter_thread, NULL) == 0);
  while (!done_thread) usleep(1000);
  long r = install_for_getppid(SECCOMP_FILTER_FLAG_TSYNC, SECCOMP_RET_ERRNO | EPERM);
  CHECK(r > 0, "TSYNC names the thread it could not sync: %ld", r);
  CHECK_ERR(install_for_getppid(SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH,
                                SECCOMP_RET_ERRNO | EPERM),
            ESRCH);
  go = 1;
  pthread_join(th, NULL);
}

static void test_tsync(void) {
  puts("TSYNC");
  int status = in_child(tsync);
  CHECK(exited_ok(status), "status %#x", status);
}

static void strict_ok(void) {
  REQUIRE(prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) == 0);
  if (write(1, "", 0) != 0) syscall(SYS_exit, 9);
  syscall(SYS_exit, 0);  // exit, not exit_group: strict mode allows only read, write, exit, sigreturn
}

static void strict_killed(void) {
  REQUIRE(syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 0, NULL) == 0);
  syscall(SYS_getppid);
  syscall(SYS_exit, 5);
}

static void modes_do_not_mix(void) {
  CHECK_ERR(syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 1, NULL), EINVAL);
  CHECK_OK(install_for_getppid(0, SECCOMP_RET_ALLOW));
  CHECK_ERR(syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 0, NULL), EINVAL);
  CHECK_ERR(prctl(PR_SET_SECCOMP, 7, 0, 0, 0), EINVAL);
}

static void test_strict(void) {
  puts("strict mode");
  int status = in_child(strict_ok);
  CHECK(exited_ok(status), "read/write/exit are allowed: status %#x", status);
  status = in_child(strict_killed);
  CHECK(killed_by(status, SIGKILL), "anything else is SIGKILL: status %#x", status);
  status = in_child(modes_do_not_mix);
  CHECK(exited_ok(status), "status %#x", status);
}

int main(int argc, char** argv) {
  guest_name = "seccomp";
  self_exe = argv[0];
  if (argc == 2 && strcmp(argv[1], "--after-exec") == 0) return after_exec();
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    self_exe = exe;
  }
  test_actions_avail();
  test_permission();
  test_checks();
  test_errno();
  test_trap();
  test_kills();
  test_data();
  test_inherit();
  test_tsync();
  test_strict();
  return guest_finish();
}
