// Each default action as a parent sees it: a vforked child execs this
// program again, raises one signal, and the parent prints the wait status
// it gets. The output is compared with a native run byte for byte, so
// every field a parent can look at is printed, the core-dump bit included.
// That bit would depend on the host's core settings, so the child makes
// itself non-dumpable and the parent sets RLIMIT_CORE to 0: on Linux it
// then reads 0 even where core_pattern pipes to a helper (fs.suid_dumpable
// 2 aside).
//
//   sig_status            parent: one line per signal
//   sig_status raise N    child: restore SIGN's default action and raise it
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct {
  int sig;
  const char* name;
} SIGNALS[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGABRT, "SIGABRT"}, {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGSEGV, "SIGSEGV"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGUSR1, "SIGUSR1"},
};

static int child(int sig) {
  // Whoever started us may have left the signal ignored or blocked, and
  // both survive exec; the test is about the default action.
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  raise(sig);
  // Reaching here means the signal did not end the process.
  return 100;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "raise") == 0) return child(atoi(argv[2]));
  if (argc != 1 || argv[0][0] != '/') {
    fprintf(stderr, "usage: /absolute/path/sig_status\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct rlimit no_core = {0, 0};
  if (setrlimit(RLIMIT_CORE, &no_core) != 0) perror("setrlimit(RLIMIT_CORE)");

  int failed = 0;
  for (size_t i = 0; i < sizeof SIGNALS / sizeof SIGNALS[0]; i++) {
    char num[16];
    snprintf(num, sizeof num, "%d", SIGNALS[i].sig);
    char* cargv[] = {argv[0], "raise", num, NULL};
    pid_t pid = vfork();
    if (pid == 0) {
      execv(argv[0], cargv);
      _exit(127);
    }
    if (pid < 0) {
      perror("vfork");
      return 1;
    }
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) == -1 && errno == EINTR) {
    }
    if (w != pid) {
      perror("waitpid");
      return 1;
    }
    printf("%-7s status=%#06x signaled=%d termsig=%d core=%d exited=%d\n", SIGNALS[i].name, st,
           WIFSIGNALED(st) ? 1 : 0, WIFSIGNALED(st) ? WTERMSIG(st) : 0,
           WIFSIGNALED(st) && WCOREDUMP(st) ? 1 : 0, WIFEXITED(st) ? 1 : 0);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGNALS[i].sig) failed = 1;
  }
  return failed;
}
