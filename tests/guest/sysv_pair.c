// A System V producer and consumer in two processes: the producer spawns
// the consumer (posix_spawn), hands it items through a shared memory
// segment guarded by two semaphores, and reads its replies from a message
// queue. Prints a transcript that must be the same natively and under
// flatux.
//
//   sysv_pair               private objects (keys from the pid)
//   sysv_pair --ipcs        fixed keys, and the host's `ipcs -a` and
//                           `ipcrm` run on them (a fresh IPC namespace:
//                           natively under `unshare --ipc`)
//   sysv_pair consumer SHM SEM MSG   (the spawned half)
#include "guest_check.h"

#include <spawn.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

enum { kItems = 5, kReady = 0, kFree = 1 };

struct reply {
  long type;
  char text[64];
};

static int sem_add(int sem, int num, int delta) {
  struct sembuf op = {(unsigned short)num, (short)delta, 0};
  return semop(sem, &op, 1);
}

static int consumer(int shm, int sem, int msg) {
  char* slot = shmat(shm, NULL, SHM_RDONLY);
  if (slot == (char*)-1) return 10;
  for (int i = 1; i <= kItems; i++) {
    if (sem_add(sem, kReady, -1)) return 11;
    struct reply r = {i};
    snprintf(r.text, sizeof r.text, "consumed <%s>", slot);
    if (sem_add(sem, kFree, +1)) return 12;
    if (msgsnd(msg, &r, strlen(r.text) + 1, 0)) return 13;
  }
  return shmdt(slot) ? 14 : 0;
}

static pid_t spawn(char* const argv[]) {
  pid_t pid;
  fflush(stdout);
  int r = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
  if (r) {
    errno = r;
    return -1;
  }
  return pid;
}

static int wait_for(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void run_tool(const char* what, char* const argv[]) {
  printf("$ %s\n", what);
  pid_t pid = spawn(argv);
  REQUIRE(pid > 0, "%s: %s", argv[0], strerror(errno));
  CHECK(wait_for(pid) == 0, "%s failed", what);
}

int main(int argc, char** argv) {
  guest_name = "sysv_pair";
  if (argc == 5 && strcmp(argv[1], "consumer") == 0) return consumer(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
  int ipcs = argc == 2 && strcmp(argv[1], "--ipcs") == 0;
  REQUIRE(argc == 1 || ipcs, "usage: sysv_pair [--ipcs]");
  key_t base = ipcs ? 0x464c5800 : (key_t)(0x5a000000 | (getpid() & 0xffff) << 4);
  int shm = shmget(base + 1, 4096, IPC_CREAT | IPC_EXCL | 0640);
  int sem = semget(base + 2, 2, IPC_CREAT | IPC_EXCL | 0600);
  int msg = msgget(base + 3, IPC_CREAT | IPC_EXCL | 0660);
  REQUIRE(shm >= 0 && sem >= 0 && msg >= 0, "get: %s", strerror(errno));
  unsigned short init[2] = {0, 1};
  REQUIRE(semctl(sem, 0, SETALL, init) == 0, "SETALL: %s", strerror(errno));
  char* slot = shmat(shm, NULL, 0);
  REQUIRE(slot != (char*)-1);

  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = 0;
  char a1[16], a2[16], a3[16];
  snprintf(a1, sizeof a1, "%d", shm);
  snprintf(a2, sizeof a2, "%d", sem);
  snprintf(a3, sizeof a3, "%d", msg);
  char* cargv[] = {self, "consumer", a1, a2, a3, NULL};
  pid_t child = spawn(cargv);
  REQUIRE(child > 0, "posix_spawn: %s", strerror(errno));
  for (int i = 1; i <= kItems; i++) {
    REQUIRE(sem_add(sem, kFree, -1) == 0);
    snprintf(slot, 4096, "item %d of %d", i, kItems);
    printf("producer: wrote %s\n", slot);
    REQUIRE(sem_add(sem, kReady, +1) == 0);
  }
  for (int i = 1; i <= kItems; i++) {
    struct reply r;
    long got = msgrcv(msg, &r, sizeof r.text, i, 0);
    CHECK(got > 0, "msgrcv: %s", strerror(errno));
    if (got > 0) printf("producer: reply %ld: %s\n", r.type, r.text);
  }
  CHECK(wait_for(child) == 0, "the consumer failed");
  struct shmid_ds ds;
  CHECK(shmctl(shm, IPC_STAT, &ds) == 0 && ds.shm_nattch == 1 && ds.shm_lpid == child,
        "nattch %lu lpid %d", (unsigned long)ds.shm_nattch, ds.shm_lpid);
  printf("producer: %lu attachment(s), last by the consumer\n", (unsigned long)ds.shm_nattch);
  struct reply left = {42, "left in the queue"};
  CHECK(msgsnd(msg, &left, sizeof left.text, 0) == 0);
  if (ipcs) {
    char* ls[] = {"/usr/bin/ipcs", "-a", NULL};
    run_tool("ipcs -a", ls);
    char* rm[] = {"/usr/bin/ipcrm", "-M", "0x464c5801", "-S", "0x464c5802", "-Q", "0x464c5803", NULL};
    run_tool("ipcrm -M 0x464c5801 -S 0x464c5802 -Q 0x464c5803", rm);
    CHECK(shmctl(shm, IPC_STAT, &ds) == 0 && (ds.shm_perm.mode & 01000), "ipcrm marked the segment");
    shmdt(slot);
    run_tool("ipcs -a", ls);
    CHECK(semget(base + 2, 0, 0) == -1 && errno == ENOENT);
    CHECK(msgget(base + 3, 0) == -1 && errno == ENOENT);
  } else {
    shmdt(slot);
    CHECK(shmctl(shm, IPC_RMID, NULL) == 0);
    CHECK(semctl(sem, 0, IPC_RMID) == 0);
    CHECK(msgctl(msg, IPC_RMID, NULL) == 0);
  }
  return guest_finish();
}
