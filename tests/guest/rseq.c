// Restartable sequences. Natively: registration (glibc registers each
// thread itself; with musl the test registers its own area), the errnos,
// cpu_id kept up to date, and a critical section aborted by a signal.
//
// Under flatux rseq is not implemented (ENOSYS, as on a kernel built
// without CONFIG_RSEQ): a guest thread is a host thread, and only the host
// kernel can abort a critical section on preemption, but the host kills the
// whole host process -- every guest -- when the area or the descriptor it
// points to is bad, which any guest can arrange in its own memory. glibc
// then runs without (sched_getcpu asks getcpu). What both must survive: a
// child that registers an area and breaks it dies alone, natively of
// SIGSEGV; under flatux its registration is refused.
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
#include <sys/utsname.h>
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

static int under_flatux(void) {
  struct utsname u;
  return uname(&u) == 0 && strstr(u.release, "flatux") != NULL;
}

enum { kRefused = 4 };  // the child's exit status when rseq said ENOSYS

// Runs breaker in a vfork child that has registered `page` as its rseq
// area, then signals itself: the delivery makes the kernel look at the
// area. Natively the child dies of SIGSEGV; under flatux the registration
// is refused (and flatux, with every other guest, lives).
static void broken_area(const char* what, void (*breaker)(char* page)) {
  printf("%s:\n", what);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
  char* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  memset(page, 0, 4096);
  pid_t pid = vfork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // a new thread of execution: no rseq registered yet
    if (syscall(SYS_rseq, page, 32, 0, RSEQ_SIG) != 0) _exit(errno == ENOSYS ? kRefused : 3);
    breaker(page);
    syscall(SYS_kill, syscall(SYS_getpid), SIGUSR1);
    _exit(0);
  }
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  if (under_flatux()) {
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == kRefused, "child status 0x%x", st);
    printf("  the registration was refused\n");
  } else {
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "child status 0x%x", st);
    printf("  the child died of SIGSEGV\n");
  }
  munmap(page, 4096);
}

static void unmap_it(char* page) { syscall(SYS_munmap, page, 4096); }

// A descriptor whose every field is wrong (version, ranges, signature).
static void garbage_descriptor(char* page) {
  memset(page + 64, 0xff, 64);
  ((struct rseq*)page)->rseq_cs = (uint64_t)(uintptr_t)(page + 64);
}

static void unreadable_descriptor(char* page) {
  ((struct rseq*)page)->rseq_cs = 0x10;  // nothing is mapped there
}

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

// Under flatux: every form is ENOSYS, and glibc registered nothing.
static void refused(void) {
  printf("rseq is not implemented:\n");
  CHECK(!&__rseq_size || __rseq_size == 0, "glibc registered %u bytes", &__rseq_size ? __rseq_size : 0);
  CHECK_ERR(sys_rseq(&own_area, 32, 0, RSEQ_SIG), ENOSYS);
  CHECK_ERR(sys_rseq(&own_area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG), ENOSYS);
  CHECK_ERR(sys_rseq((void*)(uintptr_t)32, 32, 0, RSEQ_SIG), ENOSYS);
  CHECK(sched_getcpu() >= 0, "sched_getcpu: %s", strerror(errno));
}

static void broken_areas(void) {
  broken_area("unmapping a registered area", unmap_it);
  broken_area("a descriptor of garbage", garbage_descriptor);
  broken_area("a descriptor pointer to nothing", unreadable_descriptor);
}

int main(void) {
  guest_name = "rseq";
  if (under_flatux()) {
    refused();
    broken_areas();
    return guest_finish();
  }
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
  broken_areas();
  return guest_finish();
}
