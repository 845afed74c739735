// Guest side of the trap-path benchmark: raw getpid in a loop, run natively
// and under flatux. The syscall instruction is issued inline because libc's
// getpid() may be cached or routed differently between libcs. Output goes
// through write(2) alone so the program asks little of a young kernel.
//
// Usage: getpid_loop [ITERS [REPS]]
// Output: "getpid_ns <min_ns> <median_ns>", ns per call over REPS passes.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// `mov $39,%eax; syscall`, spelled out: the shape libc wrappers have (and
// the one flatux rewrites); left to itself the compiler may keep the number
// in another register and move it into RAX before each call.
static inline long raw_getpid(void) {
  long ret;
  __asm__ volatile("mov %1, %%eax\n\tsyscall" : "=a"(ret) : "i"(SYS_getpid) : "rcx", "r11", "memory");
  return ret;
}

// clock_gettime goes through the vDSO, which flatux's filter lets through
// untrapped, so the timer does not disturb what it measures.
static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void say(int fd, const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  long iters = argc > 1 ? strtol(argv[1], NULL, 0) : 100000;
  int reps = argc > 2 ? (int)strtol(argv[2], NULL, 0) : 9;
  char line[128];
  if (iters < 1 || reps < 1 || reps > 1000) {
    say(2, "usage: getpid_loop [ITERS [REPS<=1000]]\n");
    return 2;
  }
  long pid = raw_getpid();
  if (pid <= 0) {
    snprintf(line, sizeof line, "getpid_loop: getpid returned %ld\n", pid);
    say(2, line);
    return 1;
  }
  double ns[1000];
  for (int r = -1; r < reps; r++) {  // pass -1 warms up and is not counted
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) raw_getpid();
    double t1 = now_ns();
    if (r >= 0) ns[r] = (t1 - t0) / (double)iters;
  }
  qsort(ns, (size_t)reps, sizeof ns[0], cmp_double);
  double median = reps % 2 ? ns[reps / 2] : (ns[reps / 2 - 1] + ns[reps / 2]) / 2;
  snprintf(line, sizeof line, "getpid_ns %.1f %.1f\n", ns[0], median);
  say(1, line);
  return 0;
}
