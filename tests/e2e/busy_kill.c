// A child spinning in user code, never entering the kernel, must still die
// promptly when another process sends it SIGKILL: the kernel cannot wait
// for a syscall to notice the signal.
//
//   busy_kill            parent: runs the rounds, prints one line per round
//   busy_kill spin FD    child: tells the parent through FD, then spins
//
// stdout is the same on every correct kernel; timings go to stderr.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 3 };
// Loose on purpose (a loaded CI machine): the failure this catches is a
// spinning child that SIGKILL does not reach at all.
static const double KILL_LIMIT_MS = 3000.0;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

static volatile unsigned long spins;

static int spin(int fd) {
  // The pipe write is the last syscall; from here on only user code runs.
  if (write(fd, "s", 1) != 1) return 3;
  for (;;) spins++;
}

static int round_(const char* self, int n) {
  int p[2];
  if (pipe(p) != 0) {
    perror("pipe");
    return 1;
  }
  char fdtext[16];
  snprintf(fdtext, sizeof fdtext, "%d", p[1]);
  char* argv[] = {(char*)self, "spin", fdtext, NULL};
  pid_t pid = vfork();
  if (pid == 0) {
    close(p[0]);
    execv(self, argv);
    _exit(127);
  }
  close(p[1]);
  if (pid < 0) {
    perror("vfork");
    return 1;
  }
  char c;
  ssize_t r;
  while ((r = read(p[0], &c, 1)) == -1 && errno == EINTR) {
  }
  close(p[0]);
  if (r != 1) {
    fprintf(stderr, "round %d: the child never started spinning\n", n);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return 1;
  }
  // Long enough that the child has used up whole time slices in the loop.
  sleep_ms(200);
  double t0 = now_ms();
  if (kill(pid, SIGKILL) != 0) {
    perror("kill");
    return 1;
  }
  int st;
  pid_t w;
  while ((w = waitpid(pid, &st, 0)) == -1 && errno == EINTR) {
  }
  double dt = now_ms() - t0;
  if (w != pid) {
    perror("waitpid");
    return 1;
  }
  fprintf(stderr, "round %d: kill to waitpid %.3f ms\n", n, dt);
  int ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  printf("round %d: %s\n", n,
         ok ? "child killed by SIGKILL" : "child NOT killed by SIGKILL");
  if (!ok) {
    fprintf(stderr, "round %d: wait status %#x\n", n, st);
    return 1;
  }
  if (dt >= KILL_LIMIT_MS) {
    fprintf(stderr, "round %d: FAIL: %.1f ms from kill to waitpid, limit %.0f ms\n", n, dt,
            KILL_LIMIT_MS);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "spin") == 0) return spin(atoi(argv[2]));
  if (argc != 1 || argv[0][0] != '/') {
    fprintf(stderr, "usage: /absolute/path/busy_kill\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  int failed = 0;
  for (int i = 1; i <= ROUNDS; i++) failed |= round_(argv[0], i);
  printf("%s\n", failed ? "FAILED" : "ok");
  return failed;
}
