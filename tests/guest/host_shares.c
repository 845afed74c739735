// A process at its descriptor, mapping or thread limit leaves other
// processes able to open files, map memory and create threads; so do 25
// processes all holding as many descriptors as they can. Natively each
// process's limits are its own; under flatux all guests share one host
// descriptor table and their host process's vm.max_map_count and task
// table, of which each holds a bounded share.
//
// Every process here is started by vfork+execve of this program, so under
// flatux they all live in the same host process (the case where one
// guest's mappings could take the others'). Roles: (none) runs the test;
// fdhog/maphog/threadhog take what they can, report the count on the
// fd named in argv[2] and wait to be killed; other checks it still can.
#include "guest_check.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

// Bounds on what a hog takes, for native runs where the host's own limits
// are far away; each is above what one flatux guest may hold.
#define FD_HOG_CAP 2048
#define MAP_HOG_CAP 70000
#define THREAD_HOG_CAP 4200
#define FD_HOGS 25

static const char* self_path;

static void raise_to_hard(int which) {
  struct rlimit rl;
  if (getrlimit(which, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(which, &rl);
  }
}

static void report_and_wait(int out, long n, int err) {
  long msg[2] = {n, err};
  if (write(out, msg, sizeof msg) != sizeof msg) _exit(3);
  for (;;) pause();
}

static void fd_hog(int out) {
  raise_to_hard(RLIMIT_NOFILE);
  long n = 0;
  int err = 0;
  while (n < FD_HOG_CAP) {
    if (eventfd(0, EFD_CLOEXEC) < 0) {
      err = errno;
      break;
    }
    n++;
  }
  report_and_wait(out, n, err);
}

static void map_hog(int out) {
  raise_to_hard(RLIMIT_AS);
  long n = 0;
  int err = 0;
  while (n < MAP_HOG_CAP) {
    // Alternating protections keep neighbours from merging into one mapping.
    void* p = mmap(NULL, 4096, (n & 1) ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      err = errno;
      break;
    }
    n++;
  }
  report_and_wait(out, n, err);
}

static void* park(void* arg) {
  for (;;) pause();
  return arg;
}

static int under_flatux(void);

static void thread_hog(int out) {
  raise_to_hard(RLIMIT_NPROC);
  // Natively RLIMIT_NPROC is the user's, shared with everything else it
  // runs: a hog stops short of it so the others can still start.
  long cap = THREAD_HOG_CAP;
  struct rlimit rl;
  if (!under_flatux() && getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (long)rl.rlim_cur - 512 < cap)
    cap = (long)rl.rlim_cur - 512;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024);
  long n = 0;
  int err = 0;
  while (n < cap) {
    pthread_t th;
    int r = pthread_create(&th, &a, park, NULL);
    if (r != 0) {
      err = r;
      break;
    }
    n++;
  }
  report_and_wait(out, n, err);
}

static void* quick(void* arg) { return arg; }

// What another process must still be able to do: open files (a host file,
// an eventfd, a pipe, a socket pair), map memory and create threads.
static int other(void) {
  int bad = 0;
  for (int i = 0; i < 16; i++) {
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      fprintf(stderr, "other: open / #%d: %s\n", i, strerror(errno));
      bad++;
      break;
    }
  }
  for (int i = 0; i < 16; i++) {
    if (eventfd(0, EFD_CLOEXEC) < 0) {
      fprintf(stderr, "other: eventfd #%d: %s\n", i, strerror(errno));
      bad++;
      break;
    }
  }
  int p[2], sv[2];
  if (pipe(p) < 0) fprintf(stderr, "other: pipe: %s\n", strerror(errno)), bad++;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) fprintf(stderr, "other: socketpair: %s\n", strerror(errno)), bad++;
  for (int i = 0; i < 64; i++) {
    void* m = mmap(NULL, 4096, (i & 1) ? PROT_READ : PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      fprintf(stderr, "other: mmap #%d: %s\n", i, strerror(errno));
      bad++;
      break;
    }
  }
  pthread_t th[8];
  int made = 0;
  for (; made < 8; made++) {
    int r = pthread_create(&th[made], NULL, quick, NULL);
    if (r != 0) {
      fprintf(stderr, "other: pthread_create #%d: %s\n", made, strerror(r));
      bad++;
      break;
    }
  }
  for (int i = 0; i < made; i++) pthread_join(th[i], NULL);
  return bad;
}

// Starts this program as `role`, reporting on a pipe; returns its pid and
// the pipe's read end in *report.
static pid_t spawn(const char* role, int* report) {
  int p[2] = {-1, -1};
  REQUIRE(report == NULL || pipe2(p, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
  char fdarg[16];
  snprintf(fdarg, sizeof fdarg, "%d", p[1]);
  char* argv[] = {(char*)self_path, (char*)role, fdarg, NULL};
  pid_t pid = vfork();
  if (pid == 0) {
    if (p[1] >= 0) fcntl(p[1], F_SETFD, 0);
    execv(self_path, argv);
    _exit(127);
  }
  REQUIRE(pid > 0, "vfork: %s", strerror(errno));
  if (p[1] >= 0) close(p[1]);
  if (report) *report = p[0];
  return pid;
}

static long read_report(int fd, int* err) {
  long msg[2] = {-1, 0};
  ssize_t r = read(fd, msg, sizeof msg);
  close(fd);
  *err = (int)msg[1];
  return r == sizeof msg ? msg[0] : -1;
}

static int wait_exit(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void end_hogs(pid_t* pids, int n) {
  for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
  for (int i = 0; i < n; i++) wait_exit(pids[i]);
}

static void check_other(const char* after) {
  int status = wait_exit(spawn("other", NULL));
  CHECK(status == 0, "after %s: another process could not open, map or make threads (status %d)", after, status);
}

static int under_flatux(void) {
  struct utsname u;
  return uname(&u) == 0 && strstr(u.release, "flatux") != NULL;
}

// fs/file-nr's first field: under flatux, the host descriptors its guests
// hold (natively the whole machine's open files, which others change).
static long files_held(void) {
  FILE* f = fopen("/proc/sys/fs/file-nr", "re");
  long n = -1;
  if (f) {
    if (fscanf(f, "%ld", &n) != 1) n = -1;
    fclose(f);
  }
  return n;
}

static void hogs(const char* role, int n, const char* what) {
  long held_before = files_held();
  pid_t pids[FD_HOGS];
  long total = 0, least = -1, most = 0;
  for (int i = 0; i < n; i++) {
    int rep, err;
    pids[i] = spawn(role, &rep);
    long got = read_report(rep, &err);
    CHECK(got > 0, "%s #%d took nothing (%s)", role, i, strerror(err));
    if (got > 0 && got < FD_HOG_CAP && strcmp(role, "fdhog") == 0)
      CHECK(err == EMFILE || err == ENFILE, "%s #%d stopped with %s", role, i, strerror(err));
    if (strcmp(role, "maphog") == 0 && got < MAP_HOG_CAP) CHECK(err == ENOMEM, "maphog stopped with %s", strerror(err));
    if (strcmp(role, "threadhog") == 0 && err) CHECK(err == EAGAIN, "threadhog stopped with %s", strerror(err));
    total += got;
    if (least < 0 || got < least) least = got;
    if (got > most) most = got;
  }
  printf("%d %s: %ld %s in all, %ld..%ld each\n", n, role, total, what, least, most);
  check_other(role);
  end_hogs(pids, n);
  // Every descriptor charged for the hogs and the other process was given back.
  long held_after = files_held();
  if (under_flatux()) CHECK(held_after == held_before, "file-nr %ld before the %s, %ld after", held_before, role, held_after);
}

// Host descriptors the kernel holds outside any descriptor table count
// too: under flatux a System V segment's memory is a host memfd, charged
// to its creator until the segment goes.
static void kernel_held(void) {
  long before = files_held();
  int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  REQUIRE(id >= 0, "shmget: %s", strerror(errno));
  long during = files_held();
  CHECK(shmctl(id, IPC_RMID, NULL) == 0, "IPC_RMID: %s", strerror(errno));
  long after = files_held();
  if (under_flatux()) {
    CHECK(during == before + 1, "file-nr %ld before shmget, %ld after", before, during);
    CHECK(after == before, "file-nr %ld before shmget, %ld after IPC_RMID", before, after);
  }
}

int main(int argc, char** argv) {
  guest_name = "host_shares";
  self_path = argv[0];
  if (argc >= 3) {
    int out = atoi(argv[2]);
    if (strcmp(argv[1], "fdhog") == 0) fd_hog(out);
    if (strcmp(argv[1], "maphog") == 0) map_hog(out);
    if (strcmp(argv[1], "threadhog") == 0) thread_hog(out);
    if (strcmp(argv[1], "other") == 0) return other() ? 1 : 0;
    return 2;
  }
  REQUIRE(self_path[0] == '/', "run with an absolute path");
  // The limit a process sees is one it can reach on its own.
  struct rlimit rl;
  REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
  printf("RLIMIT_NOFILE %llu/%llu\n", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
  // One phase alone when named: fds, many_fds, maps or threads.
  const char* only = argc == 2 ? argv[1] : NULL;
  if (!only || strcmp(only, "fds") == 0) {
    kernel_held();
    hogs("fdhog", 1, "descriptors");
  }
  if (!only || strcmp(only, "many_fds") == 0) hogs("fdhog", FD_HOGS, "descriptors");
  if (!only || strcmp(only, "maps") == 0) hogs("maphog", 1, "mappings");
  if (!only || strcmp(only, "threads") == 0) hogs("threadhog", 1, "threads");
  return guest_failures ? 1 : 0;
}
