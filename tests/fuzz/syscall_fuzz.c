// The syscall fuzzer's guest side (syscall_fuzz.py drives it from the
// host). Run as the first process of `flatux run`, it supervises rounds:
// each round is a disposable worker process (vfork+exec of this program)
// whose threads make syscalls with random and structure-aware arguments --
// every syscall number; pointers into its own memory, the kernel heap,
// kernel stacks, guard pages, unmapped and non-canonical addresses; sizes
// at their limits; descriptors valid and not -- until the round's time is
// up and the supervisor SIGKILLs whatever is left. A worker may die in any
// way it likes; the kernel must not. A process that SIGKILL cannot end is
// reported (exit 3); host-level failures are the driver's to see.
//
// usage: syscall_fuzz supervise SECONDS SEED THREADS [ROUND_SEED...]
//          (the run's first process; with ROUND_SEEDs, runs exactly those rounds)
//        syscall_fuzz worker ROUND_SEED THREADS
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

#define ROUND_MS 1500        // a worker's life
#define KILL_GRACE_MS 10000  // how long SIGKILL may take before it is a hang
#define MAX_NR 464           // syscall numbers 0..MAX_NR-1, plus a few beyond
#define KHEAP_BASE 0x7e0000000000ull
#define KSTACK_SIZE (256u * 1024)
#define KSTACK_MAGIC 0x6b737461636b2121ull
#define COUNTER_FD 3         // the supervisor's shared call counter, in workers

// --- randomness (xorshift, one state per thread) ---

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x ? x : 1;
}

struct rng {
  uint64_t s;
};

static uint64_t next(struct rng* r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

static uint64_t below(struct rng* r, uint64_t n) { return n ? next(r) % n : 0; }
static int one_in(struct rng* r, int n) { return below(r, (uint64_t)n) == 0; }

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

// --- the worker's material ---

#define NBUFS 8
static uint8_t* bufs[NBUFS];
static size_t buf_len[NBUFS];
static uint8_t* ro_page;      // PROT_READ
static uint8_t* none_page;    // PROT_NONE
static uint8_t* gone_page;    // mapped once, unmapped again
static uint8_t* edge;         // the last page before a PROT_NONE one
// Where pointers "into the stack" point: never the live stack, which a
// call writing there would corrupt under the fuzzer's own feet (and a
// guest running on corrupted state can write anywhere, the kernel heap
// included: the no-MMU limit, not a kernel bug).
static uint8_t* stackish;
enum { kStackish = 65536, kChildStacks = 8, kChildStack = 65536 };
static uint8_t* child_stacks;
static uintptr_t kstacks[16]; // kernel stacks found in the kernel heap
static int nkstacks;
static int fds[40];
static int nfds;
static const char* paths[32];
static int npaths;
static volatile uint64_t* counter;  // calls made, shared with the supervisor
static pid_t worker_pid;
static int supervisor;  // its pid (a run started beside another has no pid 1)

static sigjmp_buf probe_jump;
static void on_probe_fault(int sig) { siglongjmp(probe_jump, 1); }

static int readable(uintptr_t a) {
  signal(SIGSEGV, on_probe_fault);
  signal(SIGBUS, on_probe_fault);
  // volatile: set between sigsetjmp and the fault, it would otherwise be
  // stored before the load (it was, by gcc -O2 with musl), and read back
  // as 1 after the jump, so that every worker died reading the gap.
  volatile int ok = 0;
  if (sigsetjmp(probe_jump, 1) == 0) {
    (void)*(volatile char*)a;
    ok = 1;
  }
  signal(SIGSEGV, SIG_DFL);
  signal(SIGBUS, SIG_DFL);
  return ok;
}

static void find_kernel_stacks(void) {
  if (!readable(KHEAP_BASE)) return;
  for (uintptr_t i = 0; i < 512 && nkstacks < 16; i++) {
    uintptr_t a = KHEAP_BASE + i * KSTACK_SIZE;
    if (!readable(a)) break;
    if (((volatile uint64_t*)a)[1] == KSTACK_MAGIC) kstacks[nkstacks++] = a;
  }
}

static void add_fd(int fd) {
  if (fd >= 0 && nfds < (int)(sizeof fds / sizeof fds[0])) fds[nfds++] = fd;
}

// Memory for the fuzzer's material, between two PROT_NONE pages: a call
// given a length running past it stops there instead of overwriting the
// fuzzer's own stacks and heap (the worker would only kill itself sooner).
static uint8_t* map(size_t len, int prot) {
  len = (len + 4095) & ~(size_t)4095;
  uint8_t* p = mmap(NULL, len + 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (prot != PROT_NONE && mprotect(p + 4096, len, prot) != 0) return NULL;
  return p + 4096;
}

// Descriptors of every kind the kernel has, files in the scratch folder,
// buffers, and the odd places a pointer can name.
static void prepare(struct rng* r) {
  static const char* const names[] = {
      "a", "b", "dir", "dir/c", "fifo", "link", ".", "..", "/", "/scratch", "/scratch/a",
      "/tmp/t", "/proc/self/status", "/proc/self/maps", "/proc/self/fd/0", "/proc/self/mem",
      "/proc/meminfo", "/proc/1/status", "/dev/null", "/dev/zero", "/dev/full", "/dev/urandom",
      "/dev/loop-control", "/dev/loop0", "/fuzz", "", "nonexistent/x", "/proc/self/cwd/a"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) paths[npaths++] = names[i];
  static char long_path[5000];
  memset(long_path, 'x', sizeof long_path - 1);
  for (int i = 100; i < (int)sizeof long_path - 1; i += 100) long_path[i] = '/';
  paths[npaths++] = long_path;

  char dir[64];
  snprintf(dir, sizeof dir, "/scratch/w%d", (int)getpid());
  mkdir(dir, 0777);
  if (chdir(dir) != 0 && chdir("/scratch") != 0) chdir("/");
  int f = open("a", O_CREAT | O_RDWR, 0644);
  if (f >= 0) pwrite(f, "0123456789", 10, 0);
  add_fd(f);
  mkdir("dir", 0755);
  mkdir("mnt", 0755);
  mkfifo("fifo", 0644);
  symlink("a", "link");
  add_fd(open(".", O_RDONLY | O_DIRECTORY));
  add_fd(open("/proc/self/status", O_RDONLY));
  add_fd(open("/dev/null", O_RDWR));
  int p[2];
  if (pipe2(p, O_NONBLOCK) == 0) {
    add_fd(p[0]);
    add_fd(p[1]);
  }
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0) {
    add_fd(p[0]);
    add_fd(p[1]);
  }
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, p) == 0) add_fd(p[0]);
  add_fd(socket(AF_UNIX, SOCK_SEQPACKET, 0));
  add_fd(socket(AF_NETLINK, SOCK_RAW, 0));
  add_fd(eventfd(1, 0));
  add_fd(timerfd_create(CLOCK_MONOTONIC, 0));
  add_fd(epoll_create1(0));
  sigset_t all;
  sigfillset(&all);
  add_fd(signalfd(-1, &all, 0));
  add_fd((int)syscall(SYS_memfd_create, "fuzz", 0));
  add_fd(open("/dev/zero", O_RDONLY));

  for (int i = 0; i < NBUFS; i++) {
    buf_len[i] = (size_t)16 << below(r, 13);  // 16 B .. 64 KiB
    bufs[i] = map(buf_len[i] < 4096 ? 4096 : buf_len[i], PROT_READ | PROT_WRITE);
    if (!bufs[i]) bufs[i] = map(4096, PROT_READ | PROT_WRITE), buf_len[i] = 4096;
  }
  ro_page = map(4096, PROT_READ);
  none_page = map(4096, PROT_NONE);
  gone_page = map(4096, PROT_READ | PROT_WRITE);
  munmap(gone_page, 4096);
  stackish = map(kStackish, PROT_READ | PROT_WRITE);
  child_stacks = map((size_t)kChildStacks * kChildStack, PROT_READ | PROT_WRITE);
  edge = map(8192, PROT_READ | PROT_WRITE);
  if (edge) mprotect(edge + 4096, 4096, PROT_NONE);
  find_kernel_stacks();
}

// --- argument generators ---

static uint64_t gen_len(struct rng* r) {
  static const uint64_t edges[] = {0, 1, 2, 7, 8, 16, 64, 255, 256, 4095, 4096, 4097, 65535,
                                   65536, 1u << 20, 0x7fffffff, 0x80000000ull, 0xffffffffull,
                                   0x100000000ull, ~0ull, ~0ull >> 1, 1ull << 40};
  if (one_in(r, 3)) return below(r, 8192);
  return edges[below(r, sizeof edges / sizeof edges[0])];
}

static uint64_t gen_ptr(struct rng* r) {
  switch (below(r, 16)) {
    case 0: case 1: case 2: case 3: case 4: {  // our own buffers, anywhere in them
      int b = (int)below(r, NBUFS);
      uint64_t off = one_in(r, 2) ? 0 : below(r, buf_len[b]);
      return (uint64_t)bufs[b] + off;
    }
    case 5: return edge ? (uint64_t)edge + 4096 - below(r, 64) : 0;  // runs into PROT_NONE
    case 6: return (uint64_t)ro_page + below(r, 4096);
    case 7: return (uint64_t)none_page + below(r, 4096);
    case 8: return (uint64_t)gone_page + below(r, 4096);
    case 9: return below(r, 3) == 0 ? 0 : below(r, 65536);  // NULL and the low pages
    case 10: return KHEAP_BASE + below(r, 64u << 20);      // the kernel heap
    case 11:                                               // a kernel stack or its guard
      if (!nkstacks) return KHEAP_BASE;
      return kstacks[below(r, (uint64_t)nkstacks)] + (one_in(r, 2) ? 4096 + below(r, 4096)
                                                                   : below(r, KSTACK_SIZE));
    case 12: return 0x8000000000000000ull | next(r);  // non-canonical
    case 13: return 0x00007ffffffff000ull - below(r, 1u << 16) + (one_in(r, 2) ? 0x2000 : 0);
    case 14: return (uint64_t)stackish + below(r, kStackish);  // like a stack, not a live one
    default: return next(r);
  }
}

static uint64_t gen_fd(struct rng* r) {
  switch (below(r, 8)) {
    case 0: case 1: case 2: case 3: return nfds ? (uint64_t)fds[below(r, (uint64_t)nfds)] : 0;
    case 4: return below(r, 64);
    case 5: return (uint64_t)(int64_t)(int)-100;  // AT_FDCWD
    case 6: return (uint64_t)(int64_t)-1;
    default: return one_in(r, 2) ? 1023 + below(r, 3) : next(r);
  }
}

static uint64_t gen_path(struct rng* r) {
  if (one_in(r, 16)) return gen_ptr(r);
  return (uint64_t)paths[below(r, (uint64_t)npaths)];
}

static uint64_t gen_flags(struct rng* r) {
  switch (below(r, 5)) {
    case 0: return 0;
    case 1: return 1ull << below(r, 32);
    case 2: return next(r) & 0xffff;
    case 3: return next(r) & 0xffffffff;
    default: return next(r);
  }
}

static uint64_t gen_int(struct rng* r) {
  switch (below(r, 4)) {
    case 0: return below(r, 16);
    case 1: return (uint64_t)(int64_t)-(int64_t)below(r, 16);
    case 2: return gen_len(r);
    default: return next(r);
  }
}

enum { A_INT, A_FD, A_PTR, A_LEN, A_PATH, A_FLAGS, A_PID, A_SIG };

static uint64_t gen(struct rng* r, int kind) {
  switch (kind) {
    case A_FD: return gen_fd(r);
    case A_PTR: return gen_ptr(r);
    case A_LEN: return gen_len(r);
    case A_PATH: return gen_path(r);
    case A_FLAGS: return gen_flags(r);
    case A_PID: {
      static const int64_t pids[] = {0, -1, 2, 99999};
      if (one_in(r, 2)) return (uint64_t)(int64_t)(one_in(r, 2) ? worker_pid : syscall(SYS_gettid));
      return (uint64_t)pids[below(r, 4)];
    }
    case A_SIG: return one_in(r, 8) ? next(r) : below(r, 66);
    default: return gen_int(r);
  }
}

// What the arguments of the common calls are; the rest get a random kind
// per argument. Strings: i int, f fd, p pointer, l length, s path, g
// flags, d pid, S signal.
static const char* arg_kinds(long nr) {
  switch (nr) {
    case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64: return "fplg";
    case SYS_readv: case SYS_writev: case SYS_preadv: case SYS_pwritev: return "fplgg";
    case SYS_open: return "sgg";
    case SYS_openat: return "fsgg";
    case SYS_close: case SYS_fsync: case SYS_dup: return "f";
    case SYS_stat: case SYS_lstat: return "sp";
    case SYS_fstat: return "fp";
    case SYS_newfstatat: case SYS_statx: return "fsgip";
    case SYS_poll: return "pli";
    case SYS_ppoll: return "plpp";
    case SYS_select: case SYS_pselect6: return "ipppp";
    case SYS_lseek: return "fii";
    case SYS_mmap: return "plggfi";
    case SYS_mprotect: case SYS_munmap: case SYS_madvise: case SYS_msync: return "plg";
    case SYS_mremap: return "pllgp";
    case SYS_brk: return "p";
    case SYS_rt_sigaction: return "Sppl";
    case SYS_rt_sigprocmask: return "ippl";
    case SYS_ioctl: return "fgp";
    case SYS_pipe: case SYS_pipe2: return "pg";
    case SYS_dup2: case SYS_dup3: return "ffg";
    case SYS_nanosleep: case SYS_clock_nanosleep: return "ipp";
    case SYS_socket: return "iii";
    case SYS_connect: case SYS_bind: return "fpl";
    case SYS_accept: case SYS_accept4: return "fppg";
    case SYS_sendto: case SYS_recvfrom: return "fplgpl";
    case SYS_sendmsg: case SYS_recvmsg: return "fpg";
    case SYS_sendmmsg: case SYS_recvmmsg: return "fplgp";
    case SYS_socketpair: return "iiip";
    case SYS_setsockopt: case SYS_getsockopt: return "fiipp";
    case SYS_clone: return "gppppi";
    case SYS_wait4: return "dpgp";
    case SYS_kill: return "dS";
    case SYS_tkill: return "dS";
    case SYS_tgkill: return "ddS";
    case SYS_fcntl: return "fip";
    case SYS_flock: return "fi";
    case SYS_getdents64: return "fpl";
    case SYS_getcwd: return "pl";
    case SYS_chdir: case SYS_rmdir: case SYS_unlink: case SYS_chroot: return "s";
    case SYS_fchdir: return "f";
    case SYS_rename: case SYS_link: case SYS_symlink: return "ss";
    case SYS_renameat2: return "fsfsg";
    case SYS_mkdir: case SYS_chmod: return "sg";
    case SYS_readlink: return "spl";
    case SYS_readlinkat: return "fspl";
    case SYS_truncate: return "sl";
    case SYS_ftruncate: case SYS_fallocate: return "figl";
    case SYS_execve: return "spp";
    case SYS_execveat: return "fsppg";
    case SYS_mount: return "sssgp";
    case SYS_umount2: return "sg";
    case SYS_futex: return "pgippi";
    case SYS_epoll_ctl: return "fifp";
    case SYS_epoll_wait: case SYS_epoll_pwait: return "fpii";
    case SYS_sendfile: return "ffpl";
    case SYS_splice: return "fpfplg";
    case SYS_copy_file_range: return "fpfplg";
    case SYS_prlimit64: return "dipp";
    case SYS_setrlimit: case SYS_getrlimit: return "ip";
    case SYS_rt_sigqueueinfo: return "dSp";
    case SYS_rt_tgsigqueueinfo: return "ddSp";
    case SYS_sigaltstack: return "pp";
    case SYS_setpgid: return "dd";
    case SYS_memfd_create: return "sg";
    case SYS_timer_create: return "ipp";
    case SYS_timerfd_settime: return "fgpp";
    case SYS_getrandom: return "plg";
    case SYS_process_vm_readv: case SYS_process_vm_writev: return "dplplg";
    default: return NULL;
  }
}

// Calls whose pid-like arguments must never name the supervisor (its
// pid, or its group), init (1) or everyone (-1): ending the supervisor would end the run, not find a bug.
static int pid_args(long nr) {
  switch (nr) {
    case SYS_kill: case SYS_tkill: case SYS_rt_sigqueueinfo: case SYS_prlimit64:
    case SYS_getpriority: case SYS_setpriority: case SYS_sched_setaffinity:
    case SYS_sched_setparam: case SYS_sched_setscheduler: case SYS_process_vm_readv:
    case SYS_process_vm_writev: case SYS_kcmp: case SYS_pidfd_open: case SYS_ptrace:
    case SYS_ioprio_set: case SYS_migrate_pages: case SYS_move_pages: case SYS_waitid:
      return 1;  // argument 0 (or 1: setpriority's `who` -- both are checked)
    case SYS_tgkill: case SYS_rt_tgsigqueueinfo: case SYS_setpgid:
      return 2;
    default:
      return 0;
  }
}

static long raw_syscall(long nr, const uint64_t* a) {
  long ret;
  register uint64_t r10 __asm__("r10") = a[3];
  register uint64_t r8 __asm__("r8") = a[4];
  register uint64_t r9 __asm__("r9") = a[5];
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"(nr), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

// Fills part of a buffer with what structures hold: pointers, lengths,
// small numbers and random bytes, so iovecs, msghdrs and sigactions built
// from it point at things.
static void scribble(struct rng* r) {
  int b = (int)below(r, NBUFS);
  uint64_t* w = (uint64_t*)bufs[b];
  size_t n = buf_len[b] / 8;
  size_t start = below(r, n), count = 1 + below(r, 64);
  for (size_t i = start; i < n && i < start + count; i++) {
    switch (below(r, 4)) {
      case 0: w[i] = gen_ptr(r); break;
      case 1: w[i] = gen_len(r); break;
      case 2: w[i] = below(r, 64); break;
      default: w[i] = next(r); break;
    }
  }
}

// rt_sigreturn of a frame full of junk: every register random, but RIP
// only ever somewhere that faults or ends the thread's process at once,
// and RSP often somewhere hostile (a kernel stack, its guard page,
// unmapped, non-canonical). Never returns.
extern void fuzz_exit_now(void);
__asm__(".text\n.globl fuzz_exit_now\nfuzz_exit_now:\n"
        "  mov $231, %eax\n  mov $42, %edi\n  syscall\n  ud2\n");

__attribute__((noreturn)) static void junk_sigreturn(struct rng* r) {
  static __thread uint64_t frame_words[512] __attribute__((aligned(64)));
  uint64_t* frame = frame_words;
  for (int i = 0; i < 512; i++) frame[i] = one_in(r, 2) ? gen_ptr(r) : next(r);
  // struct ucontext: uc_flags, uc_link, uc_stack (24 bytes), then the
  // gregs: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags,
  // csgsfs, err, trapno, oldmask, cr2, fpregs; then the signal mask.
  uint64_t* g = frame + 5;
  static const uint64_t bad_rips[] = {0, 0x8000000000000000ull, 0xdead0000ull};
  switch (below(r, 5)) {
    case 0: g[16] = (uint64_t)fuzz_exit_now; break;
    case 1: g[16] = bad_rips[below(r, 3)]; break;
    case 2: g[16] = (uint64_t)bufs[below(r, NBUFS)]; break;  // not executable
    case 3: g[16] = (uint64_t)none_page; break;
    default: g[16] = nkstacks ? kstacks[0] + 8192 : KHEAP_BASE; break;  // not executable either
  }
  g[15] = gen_ptr(r);  // rsp
  if (one_in(r, 3)) g[23] = 0;  // fpregs: none
  else if (one_in(r, 2)) g[23] = (uint64_t)bufs[below(r, NBUFS)];  // random xstate
  __asm__ volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall\n\tud2" ::"r"(frame) : "memory");
  __builtin_unreachable();
}

static void fuzz_child_body(void);

// clone with random flags (CLONE_VM children only exist in one address
// space); a child starts on a stack of its own and runs fuzz_child_body.
extern long fuzz_clone(uint64_t flags, void* stack, uint64_t ptid, uint64_t ctid, uint64_t tls);
__asm__(".text\n.globl fuzz_clone\nfuzz_clone:\n"
        "  mov %rcx, %r10\n  mov $56, %eax\n  syscall\n"
        "  test %rax, %rax\n  jnz 1f\n"
        "  xor %ebp, %ebp\n  and $-16, %rsp\n  call fuzz_child_entry\n  ud2\n"
        "1: ret\n");
// The same, for a child given a hostile stack (a kernel stack, unmapped,
// non-canonical): it ends at once, touching no stack.
extern long fuzz_clone_bare(uint64_t flags, void* stack, uint64_t ptid, uint64_t ctid, uint64_t tls);
__asm__(".text\n.globl fuzz_clone_bare\nfuzz_clone_bare:\n"
        "  mov %rcx, %r10\n  mov $56, %eax\n  syscall\n"
        "  test %rax, %rax\n  jnz 1f\n"
        "  mov $60, %eax\n  xor %edi, %edi\n  syscall\n  ud2\n"
        "1: ret\n");

void fuzz_child_entry(void) { fuzz_child_body(); }

static void random_clone(struct rng* r) {
  uint64_t flags = gen_flags(r);
  if (one_in(r, 2)) flags |= CLONE_VM;
  if (one_in(r, 3)) flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
  uint8_t* stack = child_stacks + below(r, kChildStacks) * kChildStack + kChildStack - 64;
  uint64_t ptid = gen_ptr(r), ctid = gen_ptr(r);
  uint64_t tls = (uint64_t)stackish + 4096 * below(r, kStackish / 4096);
  if (one_in(r, 8)) fuzz_clone_bare(flags, (void*)gen_ptr(r), ptid, ctid, tls);
  else fuzz_clone(flags, stack, ptid, ctid, tls);
}

// One call. Returns without making it when the pick is one the run must
// not make (or only rarely).
static long nr_lo = 0, nr_hi = MAX_NR;  // FUZZ_NRS=LO-HI narrows the numbers tried

static void one_call(struct rng* r) {
  long nr = nr_lo + (long)below(r, (uint64_t)(nr_hi - nr_lo));
  if (one_in(r, 200)) nr = (long)(one_in(r, 2) ? 512 + below(r, 64) : next(r));
  switch (nr) {
    case SYS_reboot: return;  // would end the kernel, not find a bug in it
    case SYS_exit: case SYS_exit_group:
      if (!one_in(r, 300)) return;
      break;
    case SYS_rt_sigreturn:
      if (one_in(r, 300)) junk_sigreturn(r);
      return;
    case SYS_vfork: case SYS_clone: case SYS_clone3: case SYS_fork:
      // Children run on stacks of their own: one on its parent's would
      // run the fuzzer on corrupted state (tests/guest/hostile_regs.c has
      // the vfork child that runs on past its parent's frame).
      if (one_in(r, 20)) random_clone(r);
      return;
    case SYS_execve: case SYS_execveat: case SYS_pause: case SYS_rt_sigsuspend: case SYS_setsid:
      if (!one_in(r, 20)) return;
      break;
    default: break;
  }
  uint64_t a[6];
  const char* kinds = arg_kinds(nr);
  for (int i = 0; i < 6; i++) {
    int kind = (int)below(r, 8);
    if (kinds && kinds[i]) {
      switch (kinds[i]) {
        case 'f': kind = A_FD; break;
        case 'p': kind = A_PTR; break;
        case 'l': kind = A_LEN; break;
        case 's': kind = A_PATH; break;
        case 'g': kind = A_FLAGS; break;
        case 'd': kind = A_PID; break;
        case 'S': kind = A_SIG; break;
        default: kind = A_INT; break;
      }
      if (one_in(r, 16)) kind = (int)below(r, 8);  // now and then, anything
    }
    a[i] = gen(r, kind);
  }
  // The guest must not run code of its own making, nor take a TLS base
  // the fuzzer made up: with pointers into the kernel heap lying around it
  // would write there itself, which any guest may do (the no-MMU limit)
  // and which says nothing about the kernel.
  if (nr == SYS_mmap || nr == SYS_mprotect || nr == SYS_pkey_mprotect) a[2] &= ~(uint64_t)PROT_EXEC;
  if (nr == SYS_remap_file_pages) a[2] = 0;
  if (nr == SYS_arch_prctl && (a[0] == 0x1001 || a[0] == 0x1002)) a[1] = (uint64_t)stackish + 4096;
  // Mounts are the whole kernel's: mounted over, made read-only or noexec,
  // the root would stop the supervisor from starting workers. They change
  // only a folder of the worker's own.
  if (nr == SYS_mount) a[1] = (uint64_t)"mnt";
  if (nr == SYS_umount2) a[0] = (uint64_t)"mnt";
  if (nr == SYS_pivot_root) a[0] = a[1] = (uint64_t)"mnt";
  if (nr == SYS_move_mount || nr == SYS_mount_setattr || nr == SYS_open_tree) return;
  int pids = pid_args(nr);
  for (int i = 0; i < pids + (nr == SYS_setpriority); i++)
    if ((int)a[i] == 1 || (int)a[i] == -1 || (int)a[i] == supervisor || (int)a[i] == -supervisor) a[i] = 0;
  if (one_in(r, 4)) scribble(r);
  raw_syscall(nr, a);
  __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

// A cloned child: some calls of its own, then it ends its thread (a
// vfork child exits its process).
static void fuzz_child_body(void) {
  struct rng r = {mix((uint64_t)syscall(SYS_gettid) * 7919)};
  for (int i = 0; i < 200; i++) one_call(&r);
  syscall(SYS_exit, 0);
}

struct thread_arg {
  uint64_t seed;
};

static void* fuzz_thread(void* p) {
  struct rng r = {mix(((struct thread_arg*)p)->seed)};
  for (;;) one_call(&r);
  return NULL;
}

static int worker(uint64_t seed, int threads) {
  supervisor = (int)getppid();
  setsid();
  worker_pid = getpid();
  // Signals the calls send (to itself, its group) are mostly ignored, so a
  // worker lives long enough to matter; faults still kill it.
  for (int sig = 1; sig < 65; sig++)
    signal(sig, sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ? SIG_DFL
                                                                                                  : SIG_IGN);
  const char* nrs = getenv("FUZZ_NRS");
  if (nrs) sscanf(nrs, "%ld-%ld", &nr_lo, &nr_hi);
  if (nr_hi <= nr_lo) nr_hi = nr_lo + 1;
  static uint64_t dummy;
  counter = &dummy;
  // The counter page sits between two PROT_NONE pages: a transfer running
  // off a neighbouring buffer of ours stops short of it.
  uint8_t* fence = mmap(NULL, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* c = fence == MAP_FAILED ? MAP_FAILED
                                : mmap(fence + 4096, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                                       COUNTER_FD, 0);
  if (c != MAP_FAILED) counter = c;
  close(COUNTER_FD);
  struct rng r = {mix(seed)};
  prepare(&r);
  static struct thread_arg args[16];
  for (int i = 1; i < threads && i < 16; i++) {
    args[i].seed = mix(seed + (uint64_t)i);
    pthread_t t;
    pthread_create(&t, NULL, fuzz_thread, &args[i]);
  }
  args[0].seed = mix(seed + 1000);
  fuzz_thread(&args[0]);
  return 0;
}

// --- the supervisor ---

static void reap_all(void) {
  while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {
  }
}

// SIGKILLs everything but us and waits until it is all gone. Returns 0,
// or the pid that outlived its SIGKILL.
static pid_t kill_everyone(void) {
  kill(-1, SIGKILL);
  double t0 = now_ms();
  for (;;) {
    pid_t w = waitpid(-1, NULL, WNOHANG | __WALL);
    if (w < 0 && errno == ECHILD) return 0;
    if (w > 0) continue;
    if (now_ms() - t0 > KILL_GRACE_MS) {
      // Who is left? Any child still there.
      pid_t left = waitpid(-1, NULL, WNOHANG | __WALL);
      return left == 0 ? -1 : 0;
    }
    kill(-1, SIGKILL);
    sleep_ms(5);
  }
}

static void report_leftovers(void) {
  // What /proc says about every process still there.
  DIR* d = opendir("/proc");
  struct dirent* e;
  while (d && (e = readdir(d))) {
    int pid = atoi(e->d_name);
    if (pid <= 1) continue;
    char path[300], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
      buf[n] = 0;
      printf("left after SIGKILL: pid %d\n%s\n", pid, buf);
    }
  }
  if (d) closedir(d);
}

// The kernel heap and mem= account, now and then: growth over a run is a leak.
static void print_kernel_memory(void) {
  char buf[2048];
  int fd = open("/proc/meminfo", O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0) close(fd);
  if (n <= 0) return;
  buf[n] = 0;
  long slab = -1, committed = -1;
  for (char* l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    sscanf(l, "Slab: %ld", &slab);
    sscanf(l, "Committed_AS: %ld", &committed);
  }
  printf("kernel heap %ld kB, committed %ld kB\n", slab, committed);
}

static int supervise(int seconds, uint64_t seed, int threads, char** replay, int nreplay) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  // A stray signal a worker makes reach us (as a descriptor's owner, say,
  // F_SETOWN and F_SETSIG making it SIGILL) must not end the run: Linux's
  // init would not die of it either. The fault signals too: a real fault
  // is still fatal (forced), only sent ones are ignored. (The workers,
  // which inherit this, set their own.)
  for (int sig = 1; sig < 65; sig++)
    if (sig != SIGCHLD && sig != SIGKILL && sig != SIGSTOP)
      signal(sig, SIG_IGN);
  // Scratch space the workers may fill: tmpfs, bounded.
  mount("scratch", "/scratch", "tmpfs", 0, "size=32m,nr_inodes=4096");
  mount("tmp", "/tmp", "tmpfs", 0, "size=8m");
  // The workers count their calls in a shared page of this memfd; read
  // with pread, never mapped here, so nothing a worker does to it can
  // fault the supervisor.
  int cfd = (int)syscall(SYS_memfd_create, "fuzz-counter", 0);
  if (cfd < 0 || ftruncate(cfd, 4096) != 0) return 2;
  double start = now_ms();
  long round = 0;
  static long endings[321];
  for (;; round++) {
    if (replay ? round >= nreplay : now_ms() - start > seconds * 1e3) break;
    uint64_t rs = replay ? strtoull(replay[round], NULL, 0) : mix(seed * 1000003 + (uint64_t)round);
    printf("round %ld seed %llu\n", round, (unsigned long long)rs);
    char seed_arg[32], threads_arg[16];
    snprintf(seed_arg, sizeof seed_arg, "%llu", (unsigned long long)rs);
    snprintf(threads_arg, sizeof threads_arg, "%d", threads);
    char self[] = "/fuzz";
    char* const args[] = {self, "worker", seed_arg, threads_arg, NULL};
    pid_t pid = vfork();
    if (pid == 0) {
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      dup2(cfd, COUNTER_FD);
      execve(self, args, environ);
      _exit(errno < 100 ? 150 + errno : 127);  // "exit15x" in the endings: exec failed with errno x
    }
    if (pid < 0) {
      printf("vfork: %s\n", strerror(errno));
      reap_all();
      sleep_ms(100);
      continue;
    }
    double t0 = now_ms();
    int status = -1;
    while (now_ms() - t0 < ROUND_MS) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      status = -1;
      sleep_ms(20);
    }
    // How workers end: exit codes 0..255, signals 256+N, killed at the end
    // of their round 320.
    endings[status == -1 ? 320 : WIFSIGNALED(status) ? 256 + WTERMSIG(status) : WEXITSTATUS(status)]++;
    if (round % 100 == 0) print_kernel_memory();
    if (kill_everyone() != 0) {
      printf("FAIL: a process outlived SIGKILL by %d ms (round seed %llu)\n", KILL_GRACE_MS,
             (unsigned long long)rs);
      report_leftovers();
      sleep_ms(3000);  // the driver looks at the host threads meanwhile
      return 3;
    }
  }
  uint64_t calls = 0;
  if (pread(cfd, &calls, sizeof calls, 0) != sizeof calls) calls = 0;
  printf("done: %ld rounds, %llu calls in %.0f s\n", round, (unsigned long long)calls,
         (now_ms() - start) / 1e3);
  printf("workers:");
  for (int i = 0; i < 321; i++)
    if (endings[i])
      printf(" %s%d:%ld", i == 320 ? "timeout" : i >= 256 ? "sig" : "exit", i == 320 ? 0 : i % 256, endings[i]);
  printf("\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && strcmp(argv[1], "worker") == 0)
    return worker(strtoull(argv[2], NULL, 0), atoi(argv[3]));
  // Only the first process supervises (an exec of this program by a
  // worker, with whatever arguments, must not start a second run).
  if (argc >= 5 && strcmp(argv[1], "supervise") == 0)
    return supervise(atoi(argv[2]), strtoull(argv[3], NULL, 0), atoi(argv[4]),
                     argc > 5 ? argv + 5 : NULL, argc - 5);
  return 0;
}
