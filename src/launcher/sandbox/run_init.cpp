// Every host process of a run lives in a pid namespace of the run's own:
//
//   launcher      (the host's pid namespace) waits, relays the signals sent
//                 to it, and ends as the kernel's process ended
//     run init    (pid 1) reaps; relays; once the kernel's process has
//                 ended it ends too, and the host kills whatever is left in
//                 the namespace
//       kernel    (pid 2) the kernel and its guests; forked guests' host
//                 processes below it
//
// A guest that owns the kernel can make host processes flatux does not
// track (a raw clone through a `syscall` of the kernel's text); here they
// end with the run, whoever their parent is. From inside, no host process
// outside the run has a pid: kill, sched_setaffinity, setpriority,
// pidfd_open and process_vm_readv of one name nothing.
//
// Why not the kernel as pid 1: the host drops every signal without a
// handler sent to a namespace's init (the terminal's SIGTSTP, a host
// SIGTERM before the handlers exist); as pid 2 the kernel's process keeps
// ordinary signal semantics. The launcher stays outside because a process
// cannot enter a pid namespace itself, only its children can be born in
// one.
//
// Signals: the terminal's (SIGINT, SIGQUIT, SIGTSTP, SIGWINCH, SIGHUP)
// reach the whole foreground process group, the kernel's process
// included; the launcher does not relay them (the host marks them
// SI_KERNEL). A signal sent to the launcher's pid (kill PID, a
// supervisor's SIGTERM) is relayed: launcher, run init, kernel. One a
// program sends to the whole process group (kill -- -PGID) reaches the
// kernel's process both ways.
#include "launcher/sandbox/run_init.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace flatux::launcher {
namespace {

// What the kernel's process acts on (flatux run and a boot between them).
constexpr int kRelayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPWR, SIGWINCH};

// Blocks the relayed signals (and SIGCHLD) and returns a signalfd for
// them, or -1.
int take_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kRelayed) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  int fd = signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) sigprocmask(SIG_UNBLOCK, &set, nullptr);
  return fd;
}

// The next signal, or 0 (with SIGCHLD reported as itself).
signalfd_siginfo next_signal(int fd) {
  signalfd_siginfo si{};
  if (read(fd, &si, sizeof si) != (ssize_t)sizeof si) si.ssi_signo = 0;
  return si;
}

// pid 1 of the run: reaps every process the namespace hands it, relays
// signals to the kernel's process, and reports its wait status to the
// launcher once it has ended.
[[noreturn]] void run_init(pid_t kernel, int status_fd) {
  int sfd = take_signals();
  for (;;) {
    int st;
    pid_t r;
    while ((r = waitpid(-1, &st, sfd >= 0 ? WNOHANG | __WALL : __WALL)) > 0) {
      if (r != kernel) continue;
      (void)!write(status_fd, &st, sizeof st);
      _exit(0);  // the host ends every process left in the namespace
    }
    if (sfd < 0) {
      if (r < 0 && errno == ECHILD) _exit(125);
      continue;
    }
    signalfd_siginfo si = next_signal(sfd);
    if (si.ssi_signo && si.ssi_signo != SIGCHLD) kill(kernel, (int)si.ssi_signo);
  }
}

// The launcher's part: relay what is sent to it until the run's init ends.
[[noreturn]] void launcher_wait(pid_t init, int status_fd, RunCgroup* cg) {
  int sfd = take_signals();
  int st;
  for (;;) {
    pid_t r = waitpid(init, &st, sfd >= 0 ? WNOHANG : 0);
    if (r == init) break;
    if (r < 0 && errno != EINTR) _exit(125);
    if (sfd < 0) continue;
    signalfd_siginfo si = next_signal(sfd);
    // The terminal's signals reach the kernel's process themselves.
    if (si.ssi_signo && si.ssi_signo != SIGCHLD && si.ssi_code != SI_KERNEL) kill(init, (int)si.ssi_signo);
  }
  if (cg && cg->engine) run_cgroup_leave(*cg, getpid());
  if (cg) run_cgroup_remove(*cg);
  int kernel_status;
  if (read(status_fd, &kernel_status, sizeof kernel_status) == (ssize_t)sizeof kernel_status) end_as(kernel_status);
  // The run's init itself was killed (its status says how); the host
  // ended the kernel's process with it.
  if (WIFSIGNALED(st)) fprintf(stderr, "flatux: the run's init was killed (%s)\n", strsignal(WTERMSIG(st)));
  end_as(WIFSIGNALED(st) ? st : 125 << 8);
}

}  // namespace

[[noreturn]] void end_as(int st) {
  if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
  int sig = WTERMSIG(st);
  rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(128 + sig);
}

bool become_run_process(RunCgroup* cg, bool* in_cgroup, std::string* why) {
  int status[2], go[2];
  if (pipe2(status, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) {
    *why = std::string("pipe: ") + strerror(errno);
    return false;
  }
  fflush(nullptr);  // nothing buffered is written twice
  pid_t init = fork();
  if (init < 0) {
    *why = std::string("fork: ") + strerror(errno);
    return false;
  }
  if (init > 0) {
    close(status[1]);
    close(go[0]);
    std::string err;
    bool moved = cg && run_cgroup_enter(*cg, init, &err);
    if (cg && !moved) fprintf(stderr, "flatux: sandbox: %s\n", err.c_str());
    // The container's host pid, which engines and tools look its cgroup up
    // by, is in it too (it leaves before removing it).
    if (moved && cg->engine) (void)run_cgroup_enter(*cg, getpid(), &err);
    (void)!write(go[1], moved ? "c" : "n", 1);
    close(go[1]);
    launcher_wait(init, status[0], cg);
  }
  close(status[0]);
  close(go[1]);
  if (cg) run_cgroup_forget(*cg);  // no way back to the host's cgroups from the run
  char moved = 'n';
  (void)!read(go[0], &moved, 1);  // in its cgroup before anything is made below it
  close(go[0]);
  *in_cgroup = moved == 'c';
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher killed: the whole run goes
  pid_t kernel = fork();
  if (kernel < 0) {
    fprintf(stderr, "flatux: sandbox: forking the kernel's process: %s\n", strerror(errno));
    _exit(125);
  }
  if (kernel > 0) run_init(kernel, status[1]);
  close(status[1]);
  return true;
}

}  // namespace flatux::launcher
