// Random seccomp filters, the same ones on every run (a fixed seed): each
// is installed in a child of its own, which then makes one call with
// fixed arguments; one line per filter says whether it was accepted (or
// the errno), what the call returned and how the child ended. The line
// must be the same natively and under flatux (e2e.host.seccomp_fuzz
// compares them), so flatux's checks and machine agree with Linux's on
// every program, and no program hurts the kernel.
//
// Usage: seccomp_fuzz [COUNT [SEED]]
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t state;

static uint32_t next(void) {  // xorshift64*
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return (uint32_t)((state * 0x2545F4914F6CDD1Dull) >> 32);
}

static uint32_t pick(const uint32_t* from, size_t n) { return from[next() % n]; }

// Offsets a filter may load (not instruction_pointer: addresses differ
// between runs), and a few it may not.
static const uint32_t kOffsets[] = {0, 4, 16, 20, 24, 28, 56, 60, 2, 64, 8};
static const uint32_t kRets[] = {SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | 1, SECCOMP_RET_ERRNO | 0xffff,
                                 SECCOMP_RET_TRAP, SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD,
                                 SECCOMP_RET_TRACE, SECCOMP_RET_LOG, 0x12340000, SECCOMP_RET_ERRNO | 13};

static uint16_t random_code(int bad) {
  static const uint16_t codes[] = {
      BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_W | BPF_ABS, BPF_LD | BPF_IMM,
      BPF_LDX | BPF_IMM, BPF_LD | BPF_W | BPF_LEN, BPF_LDX | BPF_W | BPF_LEN, BPF_LD | BPF_MEM, BPF_LDX | BPF_MEM,
      BPF_ST, BPF_STX, BPF_MISC | BPF_TAX, BPF_MISC | BPF_TXA, BPF_ALU | BPF_ADD | BPF_K, BPF_ALU | BPF_SUB | BPF_X,
      BPF_ALU | BPF_MUL | BPF_K, BPF_ALU | BPF_DIV | BPF_X, BPF_ALU | BPF_DIV | BPF_K, BPF_ALU | BPF_AND | BPF_K,
      BPF_ALU | BPF_OR | BPF_X, BPF_ALU | BPF_XOR | BPF_K, BPF_ALU | BPF_LSH | BPF_K, BPF_ALU | BPF_RSH | BPF_X,
      BPF_ALU | BPF_NEG, BPF_JMP | BPF_JA, BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JEQ | BPF_K,
      BPF_JMP | BPF_JGT | BPF_K, BPF_JMP | BPF_JGE | BPF_X, BPF_JMP | BPF_JSET | BPF_K, BPF_RET | BPF_K,
      BPF_RET | BPF_K, BPF_RET | BPF_A};
  static const uint16_t invalid[] = {BPF_ALU | BPF_MOD | BPF_K, BPF_LD | BPF_B | BPF_ABS, BPF_LD | BPF_W | BPF_IND,
                                     BPF_LDX | BPF_B | BPF_MSH, 0xffff, BPF_ALU | BPF_LSH | BPF_X | 0x08};
  if (bad && next() % 6 == 0) return invalid[next() % (sizeof invalid / sizeof invalid[0])];
  return codes[next() % (sizeof codes / sizeof codes[0])];
}

// Mostly valid programs (jumps in range, scratch words written first),
// now and then not; two in three judge getppid only (the rest of the
// child's calls are let through), the others every call.
static int random_program(struct sock_filter* p, int max) {
  int at = 0;
  if (next() % 3) {
    p[at++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
    p[at++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 1, 0);
    p[at++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  }
  int len = at + 1 + (int)(next() % (uint32_t)(max - at));
  unsigned stored = 0;
  int bad = next() % 4 == 0;  // a program that may break the rules
  for (int i = at; i < len; i++) {
    uint16_t code = random_code(bad);
    int room = len - i - 1;  // how far a jump from here may go
    uint32_t k = next() % 40;
    uint8_t jt = room ? (uint8_t)(next() % (uint32_t)room) : 0, jf = room ? (uint8_t)(next() % (uint32_t)room) : 0;
    if (code == (BPF_LD | BPF_W | BPF_ABS)) k = pick(kOffsets, sizeof kOffsets / sizeof kOffsets[0] - (bad ? 0 : 3));
    else if (!bad && (code == (BPF_ALU | BPF_DIV | BPF_K) || code == (BPF_ALU | BPF_LSH | BPF_K))) k = 1 + k % 31;
    else if (code == (BPF_RET | BPF_K)) k = pick(kRets, sizeof kRets / sizeof kRets[0]);
    else if (code == BPF_ST || code == BPF_STX) stored |= 1u << (k = next() % (bad ? 17 : 16) % 16);
    else if (code == (BPF_LD | BPF_MEM) || code == (BPF_LDX | BPF_MEM)) {
      k = next() % 16;
      if (!bad && !stored) code = BPF_LD | BPF_IMM;
      else if ((!bad || next() % 4) && stored) while (!(stored & (1u << k))) k = (k + 1) % 16;
    } else if (code == (BPF_JMP | BPF_JA)) {
      k = !bad || next() % 10 ? (room ? next() % (uint32_t)room : 0) : (uint32_t)room;
    }
    else if (code == (BPF_LD | BPF_IMM)) k = next() % 3 == 0 ? SECCOMP_RET_ERRNO | (next() % 50) : k;
    if (bad && BPF_CLASS(code) == BPF_JMP && next() % 12 == 0) jt = (uint8_t)(room + 1);  // out of range
    p[i] = (struct sock_filter){code, jt, jf, k};
  }
  if (next() % 8) p[len - 1] = (struct sock_filter){next() % 2 ? BPF_RET | BPF_A : BPF_RET | BPF_K, 0, 0,
                                                    pick(kRets, sizeof kRets / sizeof kRets[0])};
  return len;
}

// What the child leaves for the parent, in shared memory: no call of its
// own is needed to report (a filter may refuse them all).
struct report {
  volatile int installed;  // 1, or -errno
  volatile int called;
  volatile long result;
  volatile int err;
  volatile int exit_denied;
};

static void child(struct report* rep, struct sock_filter* prog, int len, uint64_t arg0) {
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  struct sock_fprog fp = {.len = (unsigned short)len, .filter = prog};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) != 0) {
    rep->installed = -errno;
    syscall(SYS_exit_group, 0);
  }
  rep->installed = 1;
  long r = syscall(SYS_getppid, arg0, 1, 2, 3, 4, 5);
  rep->err = r < 0 ? errno : 0;
  rep->result = r;
  rep->called = 1;
  syscall(SYS_exit_group, 0);
  syscall(SYS_exit, 0);
  rep->exit_denied = 1;  // the filter refuses both: the parent ends it
  for (;;) {
  }
}

static void describe(const struct report* rep, pid_t parent) {
  if (rep->installed < 0) {
    printf("refused %d", -rep->installed);
    return;
  }
  printf("installed");
  if (!rep->called) return;
  if (rep->result == parent) printf(", call: pid");
  else printf(", call: %ld/%d", rep->result, rep->err);
  if (rep->exit_denied) printf(", exit refused");
}

int main(int argc, char** argv) {
  int count = argc > 1 ? atoi(argv[1]) : 1500;
  state = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261207;
  struct report* rep = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (rep == MAP_FAILED) return 2;
  int installed = 0;
  for (int i = 0; i < count; i++) {
    struct sock_filter prog[16];
    int len = random_program(prog, 16);
    uint64_t arg0 = next() % 40;
    memset((void*)rep, 0, sizeof *rep);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) child(rep, prog, len, arg0);
    int status = 0;
    for (int waited = 0;; waited++) {
      if (waitpid(pid, &status, WNOHANG) == pid) break;
      if (rep->exit_denied || waited == 20000) {  // (20 s: a child that hangs is a finding too)
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      usleep(1000);
    }
    installed += rep->installed > 0;
    printf("%d len %d: ", i, len);
    describe(rep, getpid());
    if (rep->exit_denied) printf("\n");
    else if (WIFSIGNALED(status)) printf("; signal %d\n", WTERMSIG(status));
    else printf("; exit %d\n", WEXITSTATUS(status));
  }
  printf("%d of %d installed\n", installed, count);
  return 0;
}
