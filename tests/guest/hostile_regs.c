// Garbage in the registers a process traps with must cost that process at
// most its life, never the kernel's: a syscall made with the stack pointer
// anywhere works (the kernel does not use the caller's stack), a signal
// that cannot be delivered on such a stack kills with SIGSEGV, the
// alignment-check flag stays the caller's business, a sigreturn frame full
// of garbage ends only the caller, and a vfork child that runs on past its
// parent's frame takes down at most that parent.
//
// Under flatux the kernel stacks (the host threads' alternate signal
// stacks) live in the kernel heap at 0x7e0000000000, readable by guests;
// this program finds them (the "kstack!!" magic in the header of each
// 256 KiB-aligned stack) and points its stack pointer into them too.
// Natively nothing lives there and those cases are skipped.
//
// usage: hostile_regs                 (the checks)
//        hostile_regs frame PLACE     (child: a signal with RSP at PLACE)
//        hostile_regs sigreturn SEED  (child: rt_sigreturn of a junk frame)
//        hostile_regs runpast         (child: its vfork child runs on)
#include "guest_check.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

extern char** environ;

#define KHEAP_BASE 0x7e0000000000ull
#define KSTACK_SIZE (256u * 1024)
#define KSTACK_MAGIC 0x6b737461636b2121ull
#define KSTACK_SCAN (1024u)  // slots: the first 256 MiB of the heap

static const char* self;
static uintptr_t kstacks[64];
static int nkstacks;

static sigjmp_buf probe_jump;
static void on_probe_fault(int sig) { siglongjmp(probe_jump, 1); }

static int readable(uintptr_t a) {
  struct sigaction sa, old_segv, old_bus;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_probe_fault;
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  int ok = 0;
  if (sigsetjmp(probe_jump, 1) == 0) {
    (void)*(volatile char*)a;
    ok = 1;
  }
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  return ok;
}

static void find_kernel_stacks(void) {
  if (!readable(KHEAP_BASE)) return;
  for (uintptr_t i = 0; i < KSTACK_SCAN && nkstacks < 64; i++) {
    uintptr_t a = KHEAP_BASE + i * KSTACK_SIZE;
    if (!readable(a)) break;
    if (((volatile uint64_t*)a)[1] == KSTACK_MAGIC) kstacks[nkstacks++] = a;
  }
}

// The places a stack pointer is sent to. Kernel-stack places are only
// offered under flatux.
enum { kNull, kUnmapped, kNonCanonical, kProtNone, kKstackLow, kKstackMid, kKstackTop, kPlaces };
static const char* const place_names[] = {"null", "unmapped", "non-canonical", "PROT_NONE page",
                                          "kernel stack bottom", "kernel stack middle",
                                          "kernel stack top"};

static uintptr_t place_address(int place, int k) {
  static uintptr_t prot_none;
  switch (place) {
    case kNull: return 8;
    case kUnmapped: {
      // A page we had and gave back.
      char* p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      REQUIRE(p != MAP_FAILED, "mmap");
      munmap(p, 4096);
      return (uintptr_t)p + 2048;
    }
    case kNonCanonical: return 0x8000000000001000ull;
    case kProtNone:
      if (!prot_none) {
        void* p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED, "mmap");
        prot_none = (uintptr_t)p;
      }
      return prot_none + 2048;
    // Two pages above the base: the header and the guard page.
    case kKstackLow: return kstacks[k] + 2 * 4096 + 512;
    case kKstackMid: return kstacks[k] + KSTACK_SIZE / 2;
    case kKstackTop: return kstacks[k] + KSTACK_SIZE - 64;
  }
  return 0;
}

// A raw syscall made with RSP = sp; the real stack pointer waits in r12.
static long syscall_on(uintptr_t sp, long nr, long a0, long a1) {
  long ret;
  __asm__ volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %[sp], %%rsp\n\t"
      "syscall\n\t"
      "mov %%r12, %%rsp"
      : "=a"(ret)
      : "0"(nr), "D"(a0), "S"(a1), [sp] "r"(sp)
      : "rcx", "r11", "r12", "memory");
  return ret;
}

// A non-canonical RSP: Linux kernels differ on returning to one (some
// serve the call, 6.18 kills the caller with SIGSEGV on the way back), so
// it is tried in a child, which must either get its pid or die of SIGSEGV;
// the caller goes on either way.
static int non_canonical_syscall_ends_well(uintptr_t sp) {
  pid_t child = fork();
  if (child < 0) return 0;
  if (child == 0) _exit(syscall_on(sp, SYS_getpid, 0, 0) == getpid() ? 0 : 1);
  int status;
  if (waitpid(child, &status, 0) != child) return 0;
  return (WIFEXITED(status) && WEXITSTATUS(status) == 0) || (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

static void syscalls_on_bad_stacks(void) {
  printf("a syscall works whatever the stack pointer holds:\n");
  long pid = getpid();
  for (int place = 0; place < kPlaces; place++) {
    int kernel_place = place >= kKstackLow;
    int n = kernel_place ? nkstacks : 1;
    for (int k = 0; k < n; k++) {
      uintptr_t sp = place_address(place, k);
      if (place == kNonCanonical) {
        CHECK(non_canonical_syscall_ends_well(sp), "a syscall with RSP=%#lx", (unsigned long)sp);
        continue;
      }
      long r = syscall_on(sp, SYS_getpid, 0, 0);
      CHECK(r == pid, "getpid with RSP=%#lx (%s) returned %ld", (unsigned long)sp,
            place_names[place], r);
    }
    if (n) printf("  RSP at %-20s: getpid works (%d stack%s)\n", place_names[place], n,
                  n == 1 ? "" : "s");
  }
}

// --- children ---

static void on_usr1(int sig) {}

static int child_frame(const char* which) {
  int place = atoi(which);
  find_kernel_stacks();
  if (place >= kKstackLow && !nkstacks) return 77;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  // The signal is delivered as the kill returns, onto the bad stack.
  syscall_on(place_address(place, nkstacks - 1), SYS_kill, getpid(), SIGUSR1);
  return 0;  // the frame was written somewhere it must not be
}

static uint64_t rng_state;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void die_quietly(void) { _exit(42); }

// One junk frame: every register random or chosen from the interesting
// places, the FPU image random, the mask empty (so the alarm can end a
// child that the junk sent into a loop).
static int child_sigreturn(const char* seed) {
  rng_state = strtoull(seed, NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
  find_kernel_stacks();
  alarm(5);
  static uint64_t frame[1024] __attribute__((aligned(64)));
  static uint8_t fpimage[8192] __attribute__((aligned(64)));
  for (size_t i = 0; i < sizeof frame / 8; i++) frame[i] = rng();
  for (size_t i = 0; i < sizeof fpimage; i++) fpimage[i] = (uint8_t)rng();
  ucontext_t* uc = (ucontext_t*)frame;
  greg_t* g = uc->uc_mcontext.gregs;
  int place = (int)(rng() % (kPlaces + 2));
  int kernel_rsp = place >= kKstackLow && place < kPlaces && nkstacks;
  if (place < kPlaces && !(place >= kKstackLow && !nkstacks))
    g[REG_RSP] = (greg_t)place_address(place, (int)(rng() % (nkstacks ? nkstacks : 1)));
  switch (rng() % 4) {
    // Code that runs pushes on RSP: into a kernel stack that may be another
    // task's (the parent's, asleep in wait4), that is a guest writing over
    // kernel memory, which the single address space cannot prevent (the
    // threat model's stated limit). Such a frame starts nowhere instead.
    case 0: g[REG_RIP] = kernel_rsp ? 0 : (greg_t)die_quietly; break;
    case 1: g[REG_RIP] = (greg_t)0x8000000000000000ull; break;
    case 2: g[REG_RIP] = 0; break;
    default: break;  // random
  }
  switch (rng() % 3) {
    case 0: uc->uc_mcontext.fpregs = (fpregset_t)fpimage; break;
    case 1: uc->uc_mcontext.fpregs = NULL; break;
    default: break;  // random
  }
  if (rng() % 2) uc->uc_stack.ss_flags = 0;
  memset(&uc->uc_sigmask, 0, 8);  // SIGALRM stays deliverable
  // rt_sigreturn reads the ucontext at the stack pointer.
  __asm__ volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall\n\tud2" ::"r"(frame) : "memory");
  return 0;
}

static int runpast_status;

// vfork, then: the parent waits for the child and exits with the child's
// exit code, all in registers (its stack is the child's playground by
// then); the child returns 0 out of this function.
__attribute__((noinline)) static long vfork_parent_waits_and_exits(void) {
  long r;
  __asm__ volatile(
      "mov $58, %%eax\n\t"       // vfork
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jz 1f\n\t"
      "mov %%rax, %%rdi\n\t"     // wait4(pid, &runpast_status, 0, NULL)
      "lea %1, %%rsi\n\t"
      "xor %%edx, %%edx\n\t"
      "xor %%r10d, %%r10d\n\t"
      "mov $61, %%eax\n\t"
      "syscall\n\t"
      "mov %1, %%edi\n\t"        // exit_group(WEXITSTATUS)
      "shr $8, %%edi\n\t"
      "and $0xff, %%edi\n\t"
      "mov $231, %%eax\n\t"
      "syscall\n\t"
      "ud2\n"
      "1:"
      : "=a"(r), "+m"(runpast_status)
      :
      : "rcx", "r11", "rdi", "rsi", "rdx", "r10", "memory");
  return r;
}

__attribute__((noinline)) static long scribble(int depth) {
  volatile char buf[512];
  memset((char*)buf, 0x5a, sizeof buf);
  long r = depth ? scribble(depth - 1) : syscall(SYS_getppid);
  return r + buf[7];
}

// The vfork child returns out of the function that called vfork and runs
// on over the stack its parent is still blocked on, making syscalls, then
// exits 7; the parent passes that on.
static int child_runpast(void) {
  alarm(5);
  if (vfork_parent_waits_and_exits() == 0) {
    scribble(8);
    _exit(7);
  }
  return 100;
}

// --- the checks ---

static pid_t spawn_self(const char* mode, const char* arg) {
  char* const args[] = {(char*)self, (char*)mode, (char*)arg, NULL};
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    execve(self, args, environ);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  return pid;
}

static int wait_for(pid_t pid) {
  int status = -1;
  CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
  return status;
}

static void signals_on_bad_stacks(void) {
  printf("a signal that cannot be delivered on the stack kills with SIGSEGV:\n");
  for (int place = 0; place < kPlaces; place++) {
    if (place >= kKstackLow && !nkstacks) continue;
    char arg[8];
    snprintf(arg, sizeof arg, "%d", place);
    int status = wait_for(spawn_self("frame", arg));
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
          "RSP at %s: status %#x, want killed by SIGSEGV", place_names[place], status);
    printf("  RSP at %-20s: %s\n", place_names[place],
           WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "not killed");
  }
}

static long ac_syscall(long nr, long a0, long a1, long a2) {
  long ret;
  register long r10 __asm__("r10") = 0;
  __asm__ volatile(
      "pushf\n\torl $0x40000, (%%rsp)\n\tpopf\n\t"
      "syscall\n\t"
      "pushf\n\tandl $~0x40000, (%%rsp)\n\tpopf"
      : "=a"(ret)
      : "0"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10)
      : "rcx", "r11", "memory");
  return ret;
}

// EFLAGS.AC makes misaligned accesses fault in user mode, and the handler
// of a trapped syscall starts with the caller's flags.
static void alignment_check_flag(void) {
  printf("syscalls made with EFLAGS.AC set work:\n");
  static char path[64] __attribute__((aligned(16)));
  strcpy(path + 1, "/proc/self/status");
  static char buf[512] __attribute__((aligned(16)));
  for (int i = 0; i < 50; i++) {
    long fd = ac_syscall(SYS_open, (long)(path + 1), O_RDONLY, 0);
    CHECK(fd >= 0, "open with AC: %ld", fd);
    if (fd < 0) return;
    long n = ac_syscall(SYS_read, fd, (long)(buf + 3), 300);
    CHECK(n > 0, "read with AC: %ld", n);
    CHECK(ac_syscall(SYS_fstat, fd, (long)(buf + 1), 0) == 0, "fstat with AC");
    ac_syscall(SYS_close, fd, 0, 0);
  }
  CHECK(ac_syscall(SYS_getpid, 0, 0, 0) == getpid(), "getpid with AC");
  printf("  open/read/fstat/close of misaligned buffers, 50 times\n");
}

static void junk_sigreturn_frames(int count) {
  printf("rt_sigreturn of %d junk frames ends only the caller:\n", count);
  int exited = 0, signalled = 0;
  for (int seed = 1; seed <= count; seed++) {
    char arg[16];
    snprintf(arg, sizeof arg, "%d", seed);
    int status = wait_for(spawn_self("sigreturn", arg));
    if (WIFEXITED(status)) exited++;
    else if (WIFSIGNALED(status)) signalled++;
    CHECK(WIFEXITED(status) || WIFSIGNALED(status), "seed %d: status %#x", seed, status);
    CHECK(!WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM, "seed %d: still running after 5 s",
          seed);
  }
  printf("  %d exited, %d killed by a signal; the kernel is still here\n", exited, signalled);
  CHECK(getppid() >= 0 && getpid() > 0, "still working");
}

static void vfork_child_running_on(void) {
  printf("a vfork child that runs on past its parent's frame:\n");
  for (int i = 0; i < 20; i++) {
    int status = wait_for(spawn_self("runpast", "0"));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7, "round %d: status %#x, want exit 7",
          i, status);
  }
  printf("  20 rounds: the child ran on and exited 7, its parent passed that on\n");
}

static char self_buf[4096];

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (argc == 3 && strcmp(argv[1], "frame") == 0) return child_frame(argv[2]);
  if (argc == 3 && strcmp(argv[1], "sigreturn") == 0) return child_sigreturn(argv[2]);
  if (argc == 3 && strcmp(argv[1], "runpast") == 0) return child_runpast();
  guest_name = "hostile_regs";
  self = realpath(argv[0], self_buf) ? self_buf : argv[0];
  find_kernel_stacks();
  printf("%d kernel stacks found\n", nkstacks);
  // Under flatux the heap is there; its stacks must then be found, or the
  // cases that matter most would silently be skipped.
  REQUIRE(nkstacks > 0 || !readable(KHEAP_BASE), "a kernel heap without kernel stacks");
  syscalls_on_bad_stacks();
  signals_on_bad_stacks();
  alignment_check_flag();
  junk_sigreturn_frames(200);
  vfork_child_running_on();
  return guest_finish();
}
