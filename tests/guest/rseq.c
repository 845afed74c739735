// Restartable sequences: registration (glibc registers each thread itself;
// with musl the test registers its own area), the errnos, cpu_id kept up to
// date, and a critical section aborted by a signal.
#include "guest_check.h"

#include <linux/rseq.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/time.h>
#include <unistd.h>

#define RSEQ_SIG 0x53053053u

// glibc 2.35+ says where it registered the thread's area (absent in musl).
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static __thread struct rseq own_area __attribute__((aligned(32)));
static struct rseq spare_area __attribute__((aligned(32)));

static long sys_rseq(void* area, unsigned len, int flags, unsigned sig) {
  return syscall(SYS_rseq, area, len, flags, sig);
}

static void on_alarm(int sig) { (void)sig; }

// Spins in a critical section that never commits; only an abort (a signal
// arriving while inside it) gets out, through the abort handler.
static int spin_until_aborted(struct rseq* rs) {
  int aborted;
  __asm__ volatile(
      ".pushsection .data.rseq_cs, \"aw\"\n"
      ".balign 32\n"
      "3:\n"
      ".long 0, 0\n"
      ".quad 1f, 2f - 1f, 4f\n"
      ".popsection\n"
      "leaq 3b(%%rip), %%rax\n"
      "movq %%rax, %[cs]\n"
      "1:\n"
      "jmp 1b\n"
      "2:\n"
      "movl $0, %[res]\n"
      "jmp 5f\n"
      ".long 0x53053053\n"
      "4:\n"
      "movl $1, %[res]\n"
      "5:\n"
      : [res] "=r"(aborted), [cs] "=m"(rs->rseq_cs)
      :
      : "rax", "memory");
  rs->rseq_cs = 0;
  return aborted;
}

static void check_cpu_id(struct rseq* rs) {
  int ok = 0;
  for (int i = 0; i < 100 && !ok; i++) {
    int cpu = sched_getcpu();
    ok = (int)rs->cpu_id >= 0 && rs->cpu_id == (unsigned)cpu && rs->cpu_id_start == (unsigned)cpu;
  }
  CHECK(ok, "cpu_id %d cpu_id_start %u, sched_getcpu %d", (int)rs->cpu_id, rs->cpu_id_start, sched_getcpu());
}

static void check_abort(struct rseq* rs) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
  struct itimerval it = {{0, 0}, {0, 20000}};
  REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
  CHECK(spin_until_aborted(rs) == 1);
  printf("  critical section aborted by SIGALRM\n");
}

// A thread that unmaps its own registered area dies of SIGSEGV (the next
// signal delivery finds it gone), and only that process: the kernel lives.
static void unmapped_area(void) {
  printf("unmapping a registered area:\n");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
  char* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  pid_t pid = vfork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // a new thread of execution: no rseq registered yet
    if (syscall(SYS_rseq, page, 32, 0, RSEQ_SIG) != 0) _exit(3);
    syscall(SYS_munmap, page, 4096);
    syscall(SYS_kill, syscall(SYS_getpid), SIGUSR1);
    _exit(0);
  }
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "child status 0x%x", st);
  printf("  the child died of SIGSEGV\n");
}

int main(void) {
  guest_name = "rseq";
  struct rseq* rs;
  int own = 0;
  if (&__rseq_size && __rseq_size > 0) {
    rs = (struct rseq*)((char*)__builtin_thread_pointer() + __rseq_offset);
    printf("glibc registered %u bytes at tp%+ld\n", __rseq_size, (long)__rseq_offset);
    CHECK_ERR(sys_rseq(rs, 32, 0, RSEQ_SIG), EBUSY);
    CHECK_ERR(sys_rseq(rs, 32, 0, RSEQ_SIG + 1), EPERM);
    CHECK_ERR(sys_rseq(&spare_area, 32, 0, RSEQ_SIG), EINVAL);
  } else {
    REQUIRE(&__rseq_size == NULL, "glibc did not register rseq (the kernel refused it)");
    rs = &own_area;
    own = 1;
    CHECK_ERR(sys_rseq((char*)rs + 8, 32, 0, RSEQ_SIG), EINVAL);  // misaligned
    CHECK_ERR(sys_rseq(rs, 16, 0, RSEQ_SIG), EINVAL);             // too short
    CHECK_ERR(sys_rseq(rs, 32, 2, RSEQ_SIG), EINVAL);             // unknown flag
    CHECK_ERR(sys_rseq(rs, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG), EINVAL);  // nothing registered
    CHECK_ERR(sys_rseq((void*)(uintptr_t)32, 32, 0, RSEQ_SIG), EFAULT);
    REQUIRE(sys_rseq(rs, 32, 0, RSEQ_SIG) == 0, "register: %s", strerror(errno));
    CHECK_ERR(sys_rseq(rs, 32, 0, RSEQ_SIG), EBUSY);
  }
  check_cpu_id(rs);
  check_abort(rs);
  check_cpu_id(rs);
  if (own) {
    CHECK_ERR(sys_rseq(rs, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG + 1), EPERM);
    CHECK(sys_rseq(rs, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG) == 0);
    CHECK_ERR(sys_rseq(rs, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG), EINVAL);
  }
  unmapped_area();
  return guest_finish();
}
