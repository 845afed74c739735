// System calls made from the same site again and again: under flatux the
// first call from a `mov $NR,%eax; syscall` site may rewrite it so later
// calls jump into the kernel (--syscall-entry=rewrite). Whatever the entry,
// a program must see Linux: results, preserved registers (and the red
// zone below RSP), signals arriving during the calls with the context a
// handler sees, restarts, code that changes under the sites, vfork+exec.
//
//   syscall_sites [native|rewritten|page0|trapping]
//
// With an argument, also checks what the sites' bytes became (flatux only):
// a jump (0xe9) where the mov was, or still the mov (0xb8); with page0 also
// `call *%rax` (ff d0) where a site's number comes in a register. native,
// rewritten and page0 also make calls with EFLAGS.AC set.
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "guest_check.h"

extern char** environ;

// Each site is its own function: `nop; mov $NR,%eax; syscall; ret`, the
// shape libc wrappers have. The nop keeps the byte before the mov plain.
#define SITE(name, nr)                                                        \
  __asm__(".text\n.p2align 4\n.globl " #name "\n.type " #name ",@function\n" #name \
          ":\n\tnop\n\tmov $" #nr ", %eax\n\tsyscall\n\tret\n.size " #name ", .-" #name "\n"); \
  long name(long, long, long)

SITE(site_getpid, 39);
SITE(site_read, 0);
SITE(site_nanosleep, 35);
SITE(site_execve, 59);
SITE(site_getppid, 110);
SITE(site_getuid, 102);

static char want_state;  // 'r' rewritten, 'p' page0, 't' trapping, 'n' native, 0: not checked

static void check_site(const char* name, const void* fn) {
  unsigned char b = ((const unsigned char*)fn)[1];
  if (want_state == 'r' || want_state == 'p')
    CHECK(b == 0xe9, "%s: the mov is still there (%#x), not a jump", name, b);
  if (want_state == 't') CHECK(b == 0xb8, "%s: the mov became %#x", name, b);
}

// --- the red zone and preserved registers ---
//
// A leaf function keeps data below RSP across the syscall (the red zone,
// which the ABI lets it use and the syscall instruction never touches)
// and expects every register but RAX, RCX and R11 back unchanged.
// Returns 0, or which check failed.
__asm__(".text\n.p2align 4\n.globl redzone_leaf\n.type redzone_leaf,@function\nredzone_leaf:\n"
        "\tmovabs $0x1122334455667788, %rax\n"
        "\tmov %rax, -8(%rsp)\n"
        "\tmov %rax, -64(%rsp)\n"
        "\tmov %rax, -128(%rsp)\n"
        "\tmov $0xd1d1, %edi\n\tmov $0x5151, %esi\n\tmov $0xdddd, %edx\n"
        "\tmov $0xa0a0, %r10d\n\tmov $0x8888, %r8d\n\tmov $0x9999, %r9d\n"
        "\tnop\n"
        "\tmov $39, %eax\n"
        "\tsyscall\n"
        "\tmovabs $0x1122334455667788, %rax\n"
        "\tcmp %rax, -8(%rsp)\n\tjne 1f\n"
        "\tcmp %rax, -64(%rsp)\n\tjne 1f\n"
        "\tcmp %rax, -128(%rsp)\n\tjne 1f\n"
        "\tcmp $0xd1d1, %rdi\n\tjne 2f\n\tcmp $0x5151, %rsi\n\tjne 2f\n\tcmp $0xdddd, %rdx\n\tjne 2f\n"
        "\tcmp $0xa0a0, %r10\n\tjne 2f\n\tcmp $0x8888, %r8\n\tjne 2f\n\tcmp $0x9999, %r9\n\tjne 2f\n"
        "\txor %eax, %eax\n\tret\n"
        "1:\tmov $1, %eax\n\tret\n"
        "2:\tmov $2, %eax\n\tret\n"
        ".size redzone_leaf, .-redzone_leaf\n");
long redzone_leaf(void);

static void red_zone(void) {
  printf("the red zone and the preserved registers across a syscall site:\n");
  for (int i = 0; i < 4; i++) {
    long r = redzone_leaf();
    CHECK(r != 1, "call %d: data below RSP was overwritten", i);
    CHECK(r != 2, "call %d: an argument register changed", i);
  }
  printf("  4 calls: the red zone and rdi/rsi/rdx/r10/r8/r9 intact\n");
}

// --- 8 threads on one site while it is first rewritten ---

enum { kThreads = 8, kCalls = 20000 };
static pthread_barrier_t start_line;
static long expected_pid;

static void* hammer(void* arg) {
  long bad = 0;
  pthread_barrier_wait(&start_line);
  for (int i = 0; i < kCalls; i++)
    if (site_getpid(0, 0, 0) != expected_pid) bad++;
  return (void*)bad;
}

static void threads_on_one_site(void) {
  printf("%d threads calling one site %d times each, from the very first call:\n", kThreads, kCalls);
  expected_pid = getpid();
  pthread_t th[kThreads];
  REQUIRE(pthread_barrier_init(&start_line, NULL, kThreads) == 0);
  for (int i = 0; i < kThreads; i++) REQUIRE(pthread_create(&th[i], NULL, hammer, NULL) == 0);
  long bad = 0;
  for (int i = 0; i < kThreads; i++) {
    void* r;
    pthread_join(th[i], &r);
    bad += (long)r;
  }
  CHECK(bad == 0, "%ld calls returned something other than the pid", bad);
  check_site("site_getpid", site_getpid);
  printf("  every call returned the pid\n");
}

// --- a handler's view of a signal that arrives during a call ---
//
// kill() of ourselves from a site: the signal is delivered as the call
// returns, so the handler's context is the state right after the syscall
// instruction: RIP and RCX point after it, R11 holds the flags it was
// executed with, RAX the result, the other registers what the code had.
static volatile unsigned long seen_rip, seen_rcx, seen_r11, seen_efl, seen_rax, seen_r8, seen_rdx;
volatile unsigned long flags_before;  // written by kill_site
extern char kill_site_nop[], kill_site_after[];
__asm__(".text\n.p2align 4\n.globl kill_site\n.type kill_site,@function\nkill_site:\n"
        "\tpush %rbx\n"
        "\tmov $0x8888, %r8d\n\tmov $0xdddd, %edx\n"
        "\txor %eax, %eax\n\tcmp $1, %eax\n"  // CF and SF set, ZF clear: flags worth comparing
        "\tpushfq\n\tpop %rbx\n\tmov %rbx, flags_before(%rip)\n"
        ".globl kill_site_nop\nkill_site_nop:\n"
        "\tnop\n\tmov $62, %eax\n\tsyscall\n"
        ".globl kill_site_after\nkill_site_after:\n"
        "\tpop %rbx\n\tret\n"
        ".size kill_site, .-kill_site\n");
long kill_site(long pid, long sig);

static void on_usr1(int sig, siginfo_t* si, void* ctx) {
  ucontext_t* uc = ctx;
  greg_t* g = uc->uc_mcontext.gregs;
  seen_rip = g[REG_RIP], seen_rcx = g[REG_RCX], seen_r11 = g[REG_R11], seen_efl = g[REG_EFL];
  seen_rax = g[REG_RAX], seen_r8 = g[REG_R8], seen_rdx = g[REG_RDX];
}

static void handler_context(void) {
  printf("a signal delivered as a call from a site returns:\n");
  struct sigaction sa = {.sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO};
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
  const unsigned long kArith = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x400 | 0x800;  // CF PF AF ZF SF DF OF
  for (int i = 0; i < 3; i++) {
    seen_rip = 0;
    long r = kill_site(getpid(), SIGUSR1);
    CHECK(r == 0, "call %d: kill returned %ld", i, r);
    CHECK(seen_rip == (unsigned long)kill_site_after, "call %d: RIP %#lx, want %p", i, seen_rip,
          (void*)kill_site_after);
    CHECK(seen_rcx == (unsigned long)kill_site_after, "call %d: RCX %#lx, want %p", i, seen_rcx,
          (void*)kill_site_after);
    CHECK((seen_r11 & kArith) == (flags_before & kArith), "call %d: R11 %#lx, flags were %#lx", i,
          seen_r11, flags_before);
    CHECK((seen_efl & kArith) == (flags_before & kArith), "call %d: EFL %#lx, flags were %#lx", i,
          seen_efl, flags_before);
    CHECK(seen_rax == 0 && seen_r8 == 0x8888 && seen_rdx == 0xdddd,
          "call %d: RAX %#lx R8 %#lx RDX %#lx", i, seen_rax, seen_r8, seen_rdx);
  }
  check_site("kill_site", kill_site_nop);
  signal(SIGUSR1, SIG_DFL);
  printf("  RIP = RCX = after the syscall, R11 = the flags, RAX = 0, r8/rdx kept (3 calls)\n");
}

// --- signals interrupting a blocking call: SA_RESTART, EINTR ---

static int pipefd[2];
static volatile int feed;

static void on_alarm(int sig) {
  if (feed) (void)!write(pipefd[1], "x", 1);
}

static void arm(long ms) {
  struct itimerval it = {{0, ms * 1000}, {0, ms * 1000}};
  REQUIRE(setitimer(ITIMER_REAL, &it, NULL) == 0);
}

static void disarm(void) {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

static void on_alarm_flags(int flags) {
  struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = flags};
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
}

static void interrupted_reads(void) {
  printf("a blocking read from a site, interrupted by SIGALRM:\n");
  REQUIRE(pipe(pipefd) == 0);
  char c = 0;
  // Warm the site up with data already there (under flatux: rewritten now).
  for (int i = 0; i < 3; i++) {
    REQUIRE(write(pipefd[1], "w", 1) == 1);
    CHECK(site_read(pipefd[0], (long)&c, 1) == 1 && c == 'w', "warm-up read %d", i);
  }
  check_site("site_read", site_read);
  on_alarm_flags(0);
  feed = 0;
  arm(40);
  long r = site_read(pipefd[0], (long)&c, 1);
  disarm();
  CHECK(r == -EINTR, "without SA_RESTART: %ld, want -EINTR", r);
  on_alarm_flags(SA_RESTART);
  feed = 1;
  c = 0;
  arm(40);
  r = site_read(pipefd[0], (long)&c, 1);
  disarm();
  feed = 0;
  CHECK(r == 1 && c == 'x', "with SA_RESTART: %ld '%c', want 1 'x'", r, c);
  signal(SIGALRM, SIG_DFL);
  close(pipefd[0]);
  close(pipefd[1]);
  printf("  -EINTR without SA_RESTART, restarted and served with it\n");
}

// --- nanosleep: EINTR with the time left, restart_syscall after a stop ---

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

static void on_usr2(int sig) {}

static void sleeps(const char* self) {
  printf("nanosleep from a site:\n");
  struct timespec t = {0, 1000000}, rem = {0, 0};
  for (int i = 0; i < 3; i++) CHECK(site_nanosleep((long)&t, 0, 0) == 0, "short sleep %d", i);
  check_site("site_nanosleep", site_nanosleep);

  // A handler runs: -EINTR and the time that was left.
  struct sigaction sa = {.sa_handler = on_usr2, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
  struct itimerval once = {{0, 0}, {0, 50000}};
  REQUIRE(setitimer(ITIMER_REAL, &once, NULL) == 0);
  t = (struct timespec){2, 0};
  long r = site_nanosleep((long)&t, (long)&rem, 0);
  CHECK(r == -EINTR, "interrupted by a handler: %ld, want -EINTR (even with SA_RESTART)", r);
  CHECK(rem.tv_sec == 1 || (rem.tv_sec == 0 && rem.tv_nsec > 0), "time left %ld.%09ld",
        (long)rem.tv_sec, rem.tv_nsec);
  signal(SIGALRM, SIG_DFL);

  // Stopped and continued by another process, no handler: the sleep goes
  // on for the rest of its time (restart_syscall) and returns 0.
  char pid[32];
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  char* argv[] = {(char*)self, "stop-and-continue", pid, NULL};
  pid_t helper;
  REQUIRE(posix_spawn(&helper, self, NULL, NULL, argv, environ) == 0);
  t = (struct timespec){1, 0};
  long long t0 = now_ms();
  r = site_nanosleep((long)&t, 0, 0);
  long long took = now_ms() - t0;
  int status;
  REQUIRE(waitpid(helper, &status, 0) == helper);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "helper status %#x", status);
  CHECK(r == 0, "stopped and continued: %ld, want 0", r);
  CHECK(took >= 990, "slept %lld ms of 1000", took);
  printf("  -EINTR with the time left; after SIGSTOP+SIGCONT it slept on (%lld ms)\n", took);
}

static int stop_and_continue(pid_t pid) {
  struct timespec t = {0, 100 * 1000000};
  nanosleep(&t, NULL);
  if (kill(pid, SIGSTOP) != 0) return 1;
  nanosleep(&t, NULL);
  return kill(pid, SIGCONT) != 0;
}

// --- code that changes under a rewritten site ---

static const unsigned char kGetpid[] = {0x90, 0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0xc3};   // nop; getpid; ret
static const unsigned char kGetppid[] = {0x90, 0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xc3}; // nop; getppid; ret

static long run_code(void* code) { return ((long (*)(void))code)(); }

static void* map_code(void* at, const unsigned char* code, size_t n, int extra_flags) {
  void* p = mmap(at, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  REQUIRE(p != MAP_FAILED, "mmap: %s", strerror(errno));
  memcpy((char*)p + 64, code, n);
  REQUIRE(mprotect(p, 4096, PROT_READ | PROT_EXEC) == 0);
  return p;
}

static void changing_code(void) {
  printf("code that changes under a site:\n");
  long pid = getpid(), ppid = getppid();
  unsigned char* page = map_code(NULL, kGetpid, sizeof kGetpid, 0);
  for (int i = 0; i < 3; i++) CHECK(run_code(page + 64) == pid, "getpid code, call %d", i);
  check_site("generated getpid", page + 64);

  // A JIT writing a new call over the site, W^X style: it must find its
  // own bytes when it makes the page writable, and run what it wrote.
  REQUIRE(mprotect(page, 4096, PROT_READ | PROT_WRITE) == 0);
  CHECK(memcmp(page + 64, kGetpid, sizeof kGetpid) == 0,
        "writable again, the code is not what was written: %02x %02x", page[65], page[66]);
  memcpy(page + 64, kGetppid, sizeof kGetppid);
  REQUIRE(mprotect(page, 4096, PROT_READ | PROT_EXEC) == 0);
  for (int i = 0; i < 3; i++) CHECK(run_code(page + 64) == ppid, "rewritten to getppid, call %d", i);
  check_site("generated getppid", page + 64);
  printf("  made writable: its own bytes back; a new call written over the site runs\n");

  // Unmapped, and new code mapped at the same address.
  REQUIRE(munmap(page, 4096) == 0);
  unsigned char* again = map_code(page, kGetpid, sizeof kGetpid, MAP_FIXED_NOREPLACE);
  CHECK(again == page, "could not map at the same address");
  for (int i = 0; i < 3; i++) CHECK(run_code(again + 64) == pid, "new code, call %d", i);
  munmap(again, 4096);

  // Replaced in place with MAP_FIXED (dlclose + dlopen at the same place).
  page = map_code(NULL, kGetppid, sizeof kGetppid, 0);
  for (int i = 0; i < 3; i++) CHECK(run_code(page + 64) == ppid, "getppid code, call %d", i);
  again = map_code(page, kGetpid, sizeof kGetpid, MAP_FIXED);
  for (int i = 0; i < 3; i++) CHECK(run_code(again + 64) == pid, "after MAP_FIXED, call %d", i);
  munmap(again, 4096);

  // Code the guest can write (RWX) runs from the bytes it writes.
  page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(page != MAP_FAILED);
  memcpy(page + 64, kGetpid, sizeof kGetpid);
  for (int i = 0; i < 3; i++) CHECK(run_code(page + 64) == pid, "RWX getpid, call %d", i);
  CHECK(page[65] == 0xb8, "writable code was changed under the program: %#x", page[65]);
  page[66] = 110;  // the immediate only: now getppid
  for (int i = 0; i < 3; i++) CHECK(run_code(page + 64) == ppid, "RWX getppid, call %d", i);
  munmap(page, 4096);
  printf("  unmapped and mapped anew, MAP_FIXED over it, RWX code: each runs its own call\n");
}

// --- fork: the child's copy of rewritten code ---
//
// The child (under flatux a host process of its own) inherits the sites
// the parent rewrote and runs them; what it rewrites or puts back in its
// copy leaves the parent's alone, and the other way round.
static void forked(void) {
  printf("fork, with sites rewritten before and after:\n");
  long parent = getpid(), uid = getuid();
  unsigned char* page = map_code(NULL, kGetpid, sizeof kGetpid, 0);
  for (int i = 0; i < 3; i++) CHECK(run_code(page + 64) == parent, "parent's code, call %d", i);
  CHECK(site_getpid(0, 0, 0) == parent);
  pid_t child = fork();
  REQUIRE(child >= 0, "fork: %s", strerror(errno));
  if (child == 0) {
    long me = getpid();
    int bad = 0;
    for (int i = 0; i < 3; i++) {
      bad |= (site_getpid(0, 0, 0) != me) << 0;     // rewritten by the parent
      bad |= (run_code(page + 64) != me) << 1;
      bad |= (site_getuid(0, 0, 0) != uid) << 2;    // first called here
    }
    if (mprotect(page, 4096, PROT_READ | PROT_WRITE) != 0 || memcmp(page + 64, kGetpid, sizeof kGetpid))
      bad |= 1 << 3;  // the child's own bytes back
    memcpy(page + 64, kGetppid, sizeof kGetppid);
    if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) bad |= 1 << 4;
    for (int i = 0; i < 3; i++) bad |= (run_code(page + 64) != parent) << 5;
    _exit(bad);
  }
  int status;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %#x (failed checks: bits of the exit status)",
        status);
  // The child's changes were its own.
  CHECK(memcmp(page + 65, kGetpid + 1, 1) == 0 || page[65] == 0xe9, "the parent's code changed: %#x", page[65]);
  for (int i = 0; i < 3; i++) CHECK(run_code(page + 64) == parent, "parent's code after the fork, call %d", i);
  if (want_state == 'r' || want_state == 'p') {
    CHECK(((unsigned char*)site_getuid)[1] == 0xb8, "the child's rewrite showed in the parent");
    CHECK(site_getuid(0, 0, 0) == uid && site_getuid(0, 0, 0) == uid);
    check_site("site_getuid", site_getuid);
  }
  munmap(page, 4096);
  printf("  the child ran the parent's rewritten sites and changed only its own copy\n");
}

// --- vfork + execve from a site ---

static void vfork_exec(const char* self) {
  printf("vfork, then execve from a site in the child:\n");
  char* none[] = {"/nonexistent/program", NULL};
  for (int i = 0; i < 2; i++)
    CHECK(site_execve((long)none[0], (long)none, (long)environ) == -ENOENT, "execve of a missing file");
  check_site("site_execve", site_execve);
  for (int round = 0; round < 2; round++) {
    char* argv[] = {(char*)self, "exit-with", "42", NULL};
    pid_t child = vfork();
    if (child == 0) {
      site_execve((long)self, (long)argv, (long)environ);
      _exit(127);
    }
    REQUIRE(child > 0, "vfork: %s", strerror(errno));
    int status;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42, "child status %#x", status);
  }
  CHECK(site_getppid(0, 0, 0) == getppid(), "the parent goes on using sites");
  printf("  the child ran the new program (exit 42), twice\n");
}

// --- a site whose number comes in a register (syscall(2)'s shape) ---
//
// Only rewrite-page0 rewrites it (`call *%rax` into page 0's sled), so the
// numbers a sled does not cover, a null function pointer (which lands in
// page 0 too) and the same site serving different calls are checked here.
extern char generic_site_syscall[];
__asm__(".text\n.p2align 4\n.globl generic_site\n.type generic_site,@function\ngeneric_site:\n"
        "\tmov %rdi, %rax\n\tmov %rsi, %rdi\n"
        ".globl generic_site_syscall\ngeneric_site_syscall:\n"
        "\tsyscall\n\tret\n.size generic_site, .-generic_site\n");
long generic_site(long nr, long a1);

static sigjmp_buf null_jump;
static volatile unsigned long null_rip = 1, null_addr = 1;

static void on_segv(int sig, siginfo_t* si, void* ctx) {
  null_rip = ((ucontext_t*)ctx)->uc_mcontext.gregs[REG_RIP];
  null_addr = (unsigned long)si->si_addr;
  siglongjmp(null_jump, 1);
}

static void register_numbers(void) {
  printf("one site, the number in a register:\n");
  long pid = getpid(), ppid = getppid();
  for (int i = 0; i < 3; i++) {
    CHECK(generic_site(39, 0) == pid, "getpid through it, call %d", i);
    CHECK(generic_site(110, 0) == ppid, "getppid through it, call %d", i);
  }
  unsigned char b = (unsigned char)generic_site_syscall[0];
  if (want_state == 'p') CHECK(b == 0xff, "the syscall became %#x, not call *%%rax", b);
  if (want_state == 'r' || want_state == 't') CHECK(b == 0x0f, "the syscall became %#x", b);
  static const long unknown[] = {512, 4089, 4090, 4091, 4092, 4095, 4096, 5000, -1, -4096};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    long r = generic_site(unknown[i], 0);
    CHECK(r == -ENOSYS, "number %ld: %ld, want -ENOSYS", unknown[i], r);
  }
  CHECK(generic_site(39, 0) == pid, "getpid after the unknown numbers");
  printf("  getpid and getppid through one site; unknown numbers are ENOSYS\n");

  struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER};
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
  void (*volatile null_fn)(void) = NULL;
  if (sigsetjmp(null_jump, 1) == 0) {
    null_fn();
    CHECK(0, "a call through a null pointer returned");
  }
  CHECK(null_rip == 0 && null_addr == 0, "call through a null pointer: RIP %#lx, address %#lx",
        null_rip, null_addr);
  signal(SIGSEGV, SIG_DFL);
  printf("  a call through a null pointer is SIGSEGV at 0\n");
}

// --- a guest running with EFLAGS.AC (alignment checks) set ---
//
// Linux serves the call as usual; kernel code must not run with the
// guest's AC (a misaligned access of its own would fault), and the flag is
// the guest's again afterwards. Checked natively and where the site is
// rewritten (rewritten, page0): this is about the fast entry.
static long site_with_ac(long set_ac, long* flags_after) {
  long r, fl;
  __asm__ volatile("test %2, %2\n\tjz 1f\n\tpushfq\n\torq $0x40000, (%%rsp)\n\tpopfq\n"
                   "1:\tnop\n\tmov $39, %%eax\n\tsyscall\n"
                   "\tpushfq\n\tpop %1\n\tpushfq\n\tandq $~0x40000, (%%rsp)\n\tpopfq"
                   : "=a"(r), "=r"(fl) : "r"(set_ac) : "rcx", "r11", "memory", "cc");
  *flags_after = fl;
  return r;
}

static void alignment_checks(void) {
  if (want_state != 'r' && want_state != 'p' && want_state != 'n') return;
  printf("a call made with EFLAGS.AC set:\n");
  long fl, pid = getpid();
  CHECK(site_with_ac(0, &fl) == pid, "warm-up call");
  for (int i = 0; i < 3; i++) {
    CHECK(site_with_ac(1, &fl) == pid, "call %d with AC set", i);
    CHECK(fl & 0x40000, "call %d: AC was not the guest's again afterwards", i);
  }
  printf("  served, and AC set again when it returned\n");
}


// --- a hostile guest entering the fast entry by itself ---
//
// A rewritten site jumps to a stub, which jumps through a word to the
// kernel's fast entry. A guest can read both and jump there itself, with
// any registers: it must get what a `syscall` instruction gets (the call
// served by flatux's own table, its result in RAX) or a signal of its own,
// and the kernel must go on serving it. Also: a guest that changed its GS
// base (wrgsbase, where the CPU lets it), which the entry reaches the
// kernel stack through.
static uintptr_t stub_of(const void* fn) {
  const unsigned char* jmp = (const unsigned char*)fn + 1;
  int32_t rel;
  memcpy(&rel, jmp + 1, 4);
  return (uintptr_t)(jmp + 5 + rel);
}

static long enter_with(uintptr_t entry, long nr, long a1) {
  long r;
  __asm__ volatile("lea 1f(%%rip), %%rcx\n\tjmp *%[e]\n1:"
                   : "=a"(r) : [e] "r"(entry), "a"(nr), "D"(a1) : "rcx", "r11", "memory", "cc");
  return r;
}

// Every register garbage, RSP not even canonical, and RCX (where the
// entry returns to) unmapped: the call is served (RAX = its result) and
// the return faults in the guest, which the handler sees as RIP = RCX.
// (The handler runs on a sigaltstack and jumps back: every register the
// caller keeps comes back from the jump buffer.)
__asm__(".text\n.p2align 4\n.globl enter_garbage\n.type enter_garbage,@function\nenter_garbage:\n"
        "\tmov %rdi, %r11\n\tmov %rsi, %rax\n"
        "\tmovabs $0xdeadbeefdeadbeef, %rbx\n"
        "\tmov %rbx, %rbp\n\tmov %rbx, %r12\n\tmov %rbx, %r13\n\tmov %rbx, %r14\n\tmov %rbx, %r15\n"
        "\tmov %rbx, %rdi\n\tmov %rbx, %rsi\n\tmov %rbx, %rdx\n\tmov %rbx, %r8\n\tmov %rbx, %r9\n"
        "\tmov %rbx, %r10\n\tmov %rbx, %rsp\n\tmov $0x1000, %ecx\n"
        "\tjmp *%r11\n"
        ".size enter_garbage, .-enter_garbage\n");
void enter_garbage(uintptr_t entry, long nr);

static sigjmp_buf hostile_jump;
static volatile unsigned long hostile_rip, hostile_rsp, hostile_rax, hostile_rbx;
static volatile int hostile_sig;

static void on_hostile(int sig, siginfo_t* si, void* ctx) {
  greg_t* g = ((ucontext_t*)ctx)->uc_mcontext.gregs;
  hostile_sig = sig;
  hostile_rip = g[REG_RIP], hostile_rsp = g[REG_RSP], hostile_rax = g[REG_RAX], hostile_rbx = g[REG_RBX];
  siglongjmp(hostile_jump, 1);
}

static void set_gs(uintptr_t base) { __asm__ volatile("wrgsbase %0" ::"r"(base) : "memory"); }

static void hostile_entries(void) {
  if (want_state != 'r' && want_state != 'p') return;
  printf("the fast entry entered by the guest itself:\n");
  long pid = getpid(), ppid = getppid();
  CHECK(site_getpid(0, 0, 0) == pid);
  uintptr_t stub = stub_of(site_getpid);
  const unsigned char* s = (const unsigned char*)stub;
  REQUIRE(s[0] == 0xb8 && s[1] == 39 && s[12] == 0xff && s[13] == 0x25,
          "site_getpid's stub is not `mov $39,%%eax; lea; jmp *`: %02x %02x", s[0], s[1]);
  uintptr_t entry;
  memcpy(&entry, s + 24, 8);

  // The stub called like a function: the call it stands for, back at the
  // site's `ret`.
  CHECK(((long (*)(void))stub)() == pid, "the stub called directly");
  // The entry with other numbers: flatux's own calls, or ENOSYS.
  CHECK(enter_with(entry, 110, 0) == ppid, "getppid through the entry");
  static const long unknown[] = {1000, 100000, 0x7fffffff, -1, -4096, 0x100000027};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    CHECK(enter_with(entry, unknown[i], 0) == -ENOSYS, "number %#lx through the entry", unknown[i]);
  CHECK(enter_with(entry, 39, 0) == pid, "getpid through the entry");

  static char altstack[64 * 1024];
  stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
  REQUIRE(sigaltstack(&ss, NULL) == 0);
  struct sigaction sa = {.sa_sigaction = on_hostile, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER};
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0 && sigaction(SIGBUS, &sa, NULL) == 0);
  for (int i = 0; i < 3; i++) {
    long nr = i == 1 ? 0xdeadbeef : 39;
    hostile_sig = 0;
    if (sigsetjmp(hostile_jump, 1) == 0) {
      enter_garbage(entry, nr);
      CHECK(0, "entered with garbage registers, it came back");
    }
    CHECK(hostile_sig == SIGSEGV && hostile_rip == 0x1000, "garbage entry %d: signal %d at %#lx", i,
          hostile_sig, hostile_rip);
    CHECK(hostile_rsp == 0xdeadbeefdeadbeef && hostile_rbx == 0xdeadbeefdeadbeef,
          "garbage entry %d: RSP %#lx RBX %#lx, not the guest's own", i, hostile_rsp, hostile_rbx);
    long want = nr == 39 ? pid : -ENOSYS;
    CHECK((long)hostile_rax == want, "garbage entry %d: RAX %ld, want %ld", i, (long)hostile_rax, want);
  }
  CHECK(site_getpid(0, 0, 0) == pid, "the site after the garbage entries");
  printf("  the stub and the entry serve flatux's calls (ENOSYS for unknown numbers); with every\n"
         "  register garbage the call is served and the return faults in the guest (3 times)\n");

  // rewrite-page0: a jump (not a call) into page 0's sled with an RSP that
  // points nowhere: the entry cannot take the return address from the
  // stack, and the guest gets SIGSEGV.
  if (want_state == 'p') {
    hostile_sig = 0;
    if (sigsetjmp(hostile_jump, 1) == 0) {
      __asm__ volatile("mov $39, %%eax\n\tmovabs $0x10, %%rsp\n\tjmp *%%rax" ::: "memory");
      CHECK(0, "a jump into page 0 came back");
    }
    CHECK(hostile_sig == SIGSEGV && hostile_rsp == 0x10, "page 0 with RSP 0x10: signal %d, RSP %#lx",
          hostile_sig, hostile_rsp);
    CHECK(site_getpid(0, 0, 0) == pid && generic_site(39, 0) == pid, "the sites after page 0's fault");
    printf("  a jump into page 0 with RSP 0x10 is SIGSEGV in the guest\n");
  }
  signal(SIGSEGV, SIG_DFL);
  signal(SIGBUS, SIG_DFL);
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, NULL);

  if (!(getauxval(AT_HWCAP2) & 2)) {  // HWCAP2_FSGSBASE
    printf("  (no FSGSBASE here: the GS base checks are left out)\n");
    return;
  }
  // Unmapped, then a page of zeros: each call is served.
  const uintptr_t bases[] = {0x1000, (uintptr_t)calloc(1, 8192)};
  for (size_t i = 0; i < 2; i++) {
    set_gs(bases[i]);
    CHECK(site_getpid(0, 0, 0) == pid, "with GS base %#lx", (unsigned long)bases[i]);
    CHECK(site_getpid(0, 0, 0) == pid, "again with GS base %#lx", (unsigned long)bases[i]);
  }
  free((void*)bases[1]);
  printf("  with the guest's GS base changed (unmapped, zeros): calls are served\n");
}

int main(int argc, char** argv) {
  guest_name = "syscall_sites";
  if (argc == 3 && strcmp(argv[1], "exit-with") == 0) return atoi(argv[2]);
  if (argc == 3 && strcmp(argv[1], "stop-and-continue") == 0) return stop_and_continue(atoi(argv[2]));
  if (argc == 2) want_state = argv[1][0];
  setvbuf(stdout, NULL, _IONBF, 0);
  red_zone();
  threads_on_one_site();
  handler_context();
  interrupted_reads();
  sleeps(argv[0]);
  changing_code();
  vfork_exec(argv[0]);
  forked();
  register_numbers();
  alignment_checks();
  hostile_entries();
  return guest_finish();
}
