// System V IPC: shared memory, semaphores and message queues, their
// control commands, errnos and permissions (as uid 65534 when root), and
// /proc/sysvipc. Objects are private (IPC_PRIVATE) or use keys derived
// from the pid, and are removed at the end.
#include "guest_check.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#define SEM_STAT_ANY 20
#define MSG_STAT_ANY 13
#endif
#ifndef MSG_COPY
#define MSG_COPY 040000
#endif
#ifndef SHM_DEST
#define SHM_DEST 01000
#endif

union semun {
  int val;
  struct semid_ds* buf;
  unsigned short* array;
  struct seminfo* info;
};

static int root;

// Raw calls where libc wrappers differ (glibc's semctl variadic argument,
// IPC_64 handling): the kernel's own interface.
static long rsemctl(int id, int num, int cmd, unsigned long arg) { return syscall(SYS_semctl, id, num, cmd, arg); }
static long rshmctl(int id, int cmd, void* buf) { return syscall(SYS_shmctl, id, cmd, buf); }
static long rmsgctl(int id, int cmd, void* buf) { return syscall(SYS_msgctl, id, cmd, buf); }

static void as_user(int on) {
  if (on) REQUIRE(syscall(SYS_setresgid, -1, 65534, 0) == 0 && syscall(SYS_setresuid, -1, 65534, 0) == 0);
  else REQUIRE(syscall(SYS_setresuid, -1, 0, -1) == 0 && syscall(SYS_setresgid, -1, 0, -1) == 0);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// A line of /proc/sysvipc/<file> for id, in `out`; 0 when found.
static int proc_line(const char* file, int id, char* out, size_t n) {
  char path[64];
  snprintf(path, sizeof path, "/proc/sysvipc/%s", file);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int found = -1;
  if (!fgets(line, sizeof line, f)) found = -2;  // the header
  while (found == -1 && fgets(line, sizeof line, f)) {
    int key, lid;
    if (sscanf(line, "%d %d", &key, &lid) == 2 && lid == id) {
      snprintf(out, n, "%s", line);
      found = 0;
    }
  }
  fclose(f);
  return found;
}

static void test_shm(void) {
  puts("shared memory");
  CHECK_ERR(shmget(IPC_PRIVATE, 0, IPC_CREAT | 0600), EINVAL);
  key_t key = 0x5e000000 | (getpid() & 0xffff);
  int id = shmget(key, 10000, IPC_CREAT | IPC_EXCL | 0600);
  REQUIRE(id >= 0, "shmget: %s", strerror(errno));
  CHECK_ERR(shmget(key, 10000, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
  CHECK_ERR(shmget(key, 20000, 0600), EINVAL);
  CHECK(shmget(key, 4096, 0600) == id, "a smaller size finds the segment");
  CHECK_ERR(shmget(key ^ 0x00ff0000, 4096, 0600), ENOENT);
  struct shmid_ds ds;
  CHECK_OK(rshmctl(id, IPC_STAT, &ds));
  CHECK(ds.shm_segsz == 10000 && ds.shm_nattch == 0 && ds.shm_cpid == getpid(), "segsz %zu nattch %lu cpid %d",
        (size_t)ds.shm_segsz, (unsigned long)ds.shm_nattch, ds.shm_cpid);
  CHECK((ds.shm_perm.mode & 0777) == 0600 && ds.shm_perm.__key == key && ds.shm_atime == 0, "mode %o",
        ds.shm_perm.mode);
  char* a = shmat(id, NULL, 0);
  REQUIRE(a != (char*)-1, "shmat: %s", strerror(errno));
  char* b = shmat(id, NULL, SHM_RDONLY);
  REQUIRE(b != (char*)-1, "shmat read-only: %s", strerror(errno));
  CHECK(a != b);
  strcpy(a + 9000, "one memory");
  CHECK(strcmp(b + 9000, "one memory") == 0, "the second attachment sees the first's write");
  CHECK_OK(rshmctl(id, IPC_STAT, &ds));
  CHECK(ds.shm_nattch == 2 && ds.shm_lpid == getpid() && ds.shm_atime > 0, "nattch %lu", (unsigned long)ds.shm_nattch);
  char line[512];
  CHECK(proc_line("shm", id, line, sizeof line) == 0, "/proc/sysvipc/shm lists %d", id);
  unsigned mode = 0, nattch = 0;
  unsigned long size = 0;
  int pkey = 0;
  CHECK(sscanf(line, "%d %*d %o %lu %*u %*u %u", &pkey, &mode, &size, &nattch) == 4 && pkey == key && mode == 0600 &&
            size == 10000 && nattch == 2,
        "line: %s", line);
  // Attaching at an address.
  CHECK_ERR((long)shmat(id, a + 1, 0), EINVAL);
  CHECK_ERR((long)shmat(id, NULL, SHM_REMAP), EINVAL);
  CHECK_ERR((long)shmat(id, a, 0), EINVAL);  // in use, no SHM_REMAP
  char* c = shmat(id, a + 1, SHM_RND | SHM_REMAP);
  CHECK(c == a, "SHM_RND|SHM_REMAP over our own attachment: %p vs %p (%s)", (void*)c, (void*)a, strerror(errno));
  CHECK(strcmp(c + 9000, "one memory") == 0);
  CHECK_ERR(shmdt(a + 4096), EINVAL);
  if (root) {
    as_user(1);
    CHECK_ERR((long)shmat(id, NULL, 0), EACCES);
    CHECK_ERR(rshmctl(id, IPC_STAT, &ds), EACCES);
    CHECK_ERR(rshmctl(id, IPC_RMID, NULL), EPERM);
    CHECK_ERR(rshmctl(id, IPC_SET, &ds), EPERM);
    as_user(0);
  }
  struct shminfo info;
  CHECK(rshmctl(0, IPC_INFO, &info) >= 0 && info.shmmni > 0 && info.shmmin == 1, "IPC_INFO");
  struct shm_info sinfo;
  long max = rshmctl(0, SHM_INFO, &sinfo);
  CHECK(max >= 0 && sinfo.used_ids >= 1, "SHM_INFO: %ld, %d ids", max, sinfo.used_ids);
  int found = 0;
  for (long i = 0; i <= max; i++) {
    long r = rshmctl((int)i, SHM_STAT_ANY, &ds);
    if (r == id) found = 1;
  }
  CHECK(found, "SHM_STAT_ANY finds the segment by index");
  // IPC_SET, then IPC_RMID while attached: the segment stays until the
  // last detach, its key private, marked for destruction.
  ds.shm_perm.mode = 0640;
  CHECK_OK(rshmctl(id, IPC_SET, &ds));
  CHECK_OK(rshmctl(id, IPC_RMID, NULL));
  CHECK_OK(rshmctl(id, IPC_STAT, &ds));
  CHECK((ds.shm_perm.mode & SHM_DEST) && (ds.shm_perm.mode & 0777) == 0640 && ds.shm_perm.__key == IPC_PRIVATE,
        "after IPC_RMID: mode %o key %x", ds.shm_perm.mode, ds.shm_perm.__key);
  CHECK_ERR(shmget(key, 4096, 0600), ENOENT);
  CHECK(strcmp(b + 9000, "one memory") == 0, "still readable");
  CHECK_OK(shmdt(b));
  CHECK_OK(rshmctl(id, IPC_STAT, &ds));
  CHECK(ds.shm_nattch == 1, "one shmdt takes one attachment: nattch %lu", (unsigned long)ds.shm_nattch);
  CHECK_OK(shmdt(a));
  CHECK_ERR(rshmctl(id, IPC_STAT, &ds), EINVAL);
  CHECK_ERR(shmdt(a), EINVAL);
  CHECK_ERR(rshmctl(id, 99, &ds), EINVAL);
  CHECK_ERR(rshmctl(-1, IPC_STAT, &ds), EINVAL);
  // munmap of an attachment detaches it too.
  id = shmget(IPC_PRIVATE, 4096, 0600);
  a = shmat(id, NULL, 0);
  REQUIRE(a != (char*)-1);
  CHECK_OK(munmap(a, 4096));
  CHECK_OK(rshmctl(id, IPC_STAT, &ds));
  CHECK(ds.shm_nattch == 0, "nattch after munmap %lu", (unsigned long)ds.shm_nattch);
  CHECK_OK(rshmctl(id, IPC_RMID, NULL));
}

struct sem_waiter {
  int id;
  long result;
  int err;
  volatile int started;
};

static void* sem_wait_thread(void* arg) {
  struct sem_waiter* w = arg;
  struct sembuf op = {0, -1, 0};
  errno = 0;
  w->result = semop(w->id, &op, 1);
  w->err = errno;
  return NULL;
}

static void wait_ncnt(int id, int n) {
  for (int i = 0; i < 2000 && rsemctl(id, 0, GETNCNT, 0) != n; i++) usleep(1000);
}

static void test_sem(void) {
  puts("semaphores");
  CHECK_ERR(semget(IPC_PRIVATE, -1, 0600), EINVAL);
  CHECK_ERR(semget(IPC_PRIVATE, 0, IPC_CREAT | 0600), EINVAL);
  int id = semget(IPC_PRIVATE, 3, IPC_CREAT | 0600);
  REQUIRE(id >= 0, "semget: %s", strerror(errno));
  CHECK_OK(rsemctl(id, 1, SETVAL, 5));
  CHECK(rsemctl(id, 1, GETVAL, 0) == 5);
  CHECK(rsemctl(id, 1, GETPID, 0) == getpid());
  unsigned short vals[3] = {1, 2, 3}, got[3] = {0};
  CHECK_OK(rsemctl(id, 0, SETALL, (unsigned long)vals));
  CHECK_OK(rsemctl(id, 0, GETALL, (unsigned long)got));
  CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3, "GETALL %u %u %u", got[0], got[1], got[2]);
  CHECK_ERR(rsemctl(id, 0, SETVAL, 32768), ERANGE);
  CHECK_ERR(rsemctl(id, 3, GETVAL, 0), EINVAL);
  struct sembuf ops[2] = {{0, -1, 0}, {2, +1, 0}};
  CHECK_OK(semop(id, ops, 2));
  CHECK(rsemctl(id, 0, GETVAL, 0) == 0 && rsemctl(id, 2, GETVAL, 0) == 4);
  // All or nothing: the second op cannot proceed, so the first is undone.
  struct sembuf nowait[2] = {{2, -1, 0}, {0, -1, IPC_NOWAIT}};
  CHECK_ERR(semop(id, nowait, 2), EAGAIN);
  CHECK(rsemctl(id, 2, GETVAL, 0) == 4, "semval 2 is untouched");
  struct sembuf big = {0, 32767, 0};
  CHECK_OK(semop(id, &big, 1));
  struct sembuf over = {0, 1, 0};
  CHECK_ERR(semop(id, &over, 1), ERANGE);
  CHECK_OK(rsemctl(id, 0, SETVAL, 0));
  struct sembuf bad = {3, 1, 0};
  CHECK_ERR(semop(id, &bad, 1), EFBIG);
  CHECK_ERR(semop(id, ops, 0), EINVAL);
  static struct sembuf many[501];
  CHECK_ERR(semop(id, many, 501), E2BIG);
  // A timed wait runs out.
  struct sembuf down = {0, -1, 0};
  struct timespec ts = {0, 50 * 1000 * 1000};
  int64_t t0 = now_ms();
  CHECK_ERR(semtimedop(id, &down, 1, &ts), EAGAIN);
  CHECK(now_ms() - t0 >= 40, "semtimedop waited %lld ms", (long long)(now_ms() - t0));
  // A sleeper counts in semncnt and is woken by a post.
  struct sem_waiter w = {id, -2, 0, 0};
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, sem_wait_thread, &w) == 0);
  wait_ncnt(id, 1);
  CHECK(rsemctl(id, 0, GETNCNT, 0) == 1, "semncnt %ld", rsemctl(id, 0, GETNCNT, 0));
  struct sembuf up = {0, 1, 0};
  CHECK_OK(semop(id, &up, 1));
  pthread_join(th, NULL);
  CHECK(w.result == 0, "woken semop: %ld (%s)", w.result, strerror(w.err));
  CHECK(rsemctl(id, 0, GETNCNT, 0) == 0 && rsemctl(id, 0, GETVAL, 0) == 0);
  // SEM_UNDO: a child's adjustments are undone when it exits.
  pid_t pid = vfork();
  if (pid == 0) {
    struct sembuf op = {1, 2, SEM_UNDO};
    _exit(syscall(SYS_semop, id, &op, 1) == 0 ? 0 : 1);
  }
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child semop");
  CHECK(rsemctl(id, 1, GETVAL, 0) == 2, "SEM_UNDO at exit: semval %ld, want 2", rsemctl(id, 1, GETVAL, 0));
  struct semid_ds ds;
  CHECK_OK(rsemctl(id, 0, IPC_STAT, (unsigned long)&ds));
  CHECK(ds.sem_nsems == 3 && ds.sem_otime > 0 && (ds.sem_perm.mode & 0777) == 0600, "nsems %lu",
        (unsigned long)ds.sem_nsems);
  char line[512];
  CHECK(proc_line("sem", id, line, sizeof line) == 0, "/proc/sysvipc/sem lists %d", id);
  unsigned mode = 0, nsems = 0;
  CHECK(sscanf(line, "%*d %*d %o %u", &mode, &nsems) == 2 && mode == 0600 && nsems == 3, "line: %s", line);
  struct seminfo si;
  CHECK(rsemctl(0, 0, IPC_INFO, (unsigned long)&si) >= 0 && si.semmsl == 32000 && si.semvmx == 32767,
        "IPC_INFO semmsl %d semvmx %d", si.semmsl, si.semvmx);
  CHECK(rsemctl(0, 0, SEM_INFO, (unsigned long)&si) >= 0 && si.semusz >= 1, "SEM_INFO in use %d", si.semusz);
  if (root) {
    as_user(1);
    CHECK_ERR(rsemctl(id, 0, GETVAL, 0), EACCES);
    CHECK_ERR(semop(id, &up, 1), EACCES);
    CHECK_ERR(rsemctl(id, 0, IPC_RMID, 0), EPERM);
    CHECK(rsemctl(0, 0, SEM_STAT_ANY, (unsigned long)&ds) >= 0 || errno == EINVAL, "SEM_STAT_ANY needs no permission");
    as_user(0);
  }
  // Removal wakes a sleeper with EIDRM.
  w.result = -2;
  REQUIRE(pthread_create(&th, NULL, sem_wait_thread, &w) == 0);
  wait_ncnt(id, 1);
  CHECK_OK(rsemctl(id, 0, IPC_RMID, 0));
  pthread_join(th, NULL);
  CHECK(w.result == -1 && w.err == EIDRM, "after IPC_RMID: %ld (%s)", w.result, strerror(w.err));
  CHECK_ERR(rsemctl(id, 0, GETVAL, 0), EINVAL);
}

struct msg {
  long type;
  char text[64];
};

static void* msg_recv_thread(void* arg) {
  struct sem_waiter* w = arg;
  struct msg m;
  errno = 0;
  w->started = 1;
  w->result = msgrcv(w->id, &m, sizeof m.text, 7, 0);
  w->err = errno;
  return NULL;
}

static void test_msg(void) {
  puts("message queues");
  int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  REQUIRE(id >= 0, "msgget: %s", strerror(errno));
  struct msg m = {1, "hello"};
  CHECK_OK(msgsnd(id, &m, 6, 0));
  m.type = 2;
  strcpy(m.text, "world!");
  CHECK_OK(msgsnd(id, &m, 7, 0));
  m.type = 3;
  strcpy(m.text, "third");
  CHECK_OK(msgsnd(id, &m, 6, 0));
  m.type = 0;
  CHECK_ERR(msgsnd(id, &m, 6, 0), EINVAL);
  CHECK_ERR(msgsnd(id, &m, 8193, 0), EINVAL);
  struct msqid_ds ds;
  CHECK_OK(rmsgctl(id, IPC_STAT, &ds));
  CHECK(ds.msg_qnum == 3 && ds.msg_cbytes == 19 && ds.msg_qbytes == 16384 && ds.msg_lspid == getpid(),
        "qnum %lu cbytes %lu qbytes %lu", (unsigned long)ds.msg_qnum, (unsigned long)ds.msg_cbytes,
        (unsigned long)ds.msg_qbytes);
  char line[512];
  CHECK(proc_line("msg", id, line, sizeof line) == 0, "/proc/sysvipc/msg lists %d", id);
  unsigned mode = 0;
  unsigned long cbytes = 0, qnum = 0;
  CHECK(sscanf(line, "%*d %*d %o %lu %lu", &mode, &cbytes, &qnum) == 3 && mode == 0600 && cbytes == 19 && qnum == 3,
        "line: %s", line);
  struct msg r;
  CHECK(msgrcv(id, &r, sizeof r.text, 2, 0) == 7 && strcmp(r.text, "world!") == 0 && r.type == 2, "by type");
  CHECK_ERR(msgrcv(id, &r, 3, 0, 0), E2BIG);
  long n = msgrcv(id, &r, 3, -2, MSG_NOERROR);  // the lowest type <= 2, cut to 3 bytes
  CHECK(n == 3 && r.type == 1 && memcmp(r.text, "hel", 3) == 0, "MSG_NOERROR: %ld type %ld", n, r.type);
  CHECK(msgrcv(id, &r, sizeof r.text, 3, MSG_EXCEPT | IPC_NOWAIT) == -1 && errno == ENOMSG, "MSG_EXCEPT finds none");
  CHECK_ERR(msgrcv(id, &r, sizeof r.text, 0, MSG_COPY), EINVAL);
  n = msgrcv(id, &r, sizeof r.text, 0, MSG_COPY | IPC_NOWAIT);
  if (n != -1 || errno != ENOSYS) {  // the host kernel may lack MSG_COPY (checkpoint/restore)
    CHECK(n == 6 && r.type == 3, "MSG_COPY: %ld (%s)", n, strerror(errno));
    CHECK_ERR(msgrcv(id, &r, sizeof r.text, 1, MSG_COPY | IPC_NOWAIT), ENOMSG);
  }
  CHECK(msgrcv(id, &r, sizeof r.text, 0, IPC_NOWAIT) == 6 && r.type == 3);
  CHECK_ERR(msgrcv(id, &r, sizeof r.text, 0, IPC_NOWAIT), ENOMSG);
  // A full queue: IPC_NOWAIT is EAGAIN; a smaller msg_qbytes by the owner.
  ds.msg_qbytes = 100;
  CHECK_OK(rmsgctl(id, IPC_SET, &ds));
  static char big[8200];
  struct msg* bm = (struct msg*)big;
  bm->type = 9;
  CHECK_OK(msgsnd(id, bm, 100, 0));
  CHECK_ERR(msgsnd(id, bm, 1, IPC_NOWAIT), EAGAIN);
  CHECK(msgrcv(id, bm, 100, 9, 0) == 100);
  // A sleeping receiver gets a message sent later.
  struct sem_waiter w = {id, -2, 0, 0};
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, msg_recv_thread, &w) == 0);
  usleep(20000);
  m.type = 7;
  CHECK_OK(msgsnd(id, &m, 4, 0));
  pthread_join(th, NULL);
  CHECK(w.result == 4, "woken msgrcv: %ld (%s)", w.result, strerror(w.err));
  if (root) {
    as_user(1);
    CHECK_ERR(msgsnd(id, &m, 4, 0), EACCES);
    CHECK_ERR(msgrcv(id, &r, sizeof r.text, 0, IPC_NOWAIT), EACCES);
    CHECK_ERR(rmsgctl(id, IPC_RMID, NULL), EPERM);
    ds.msg_qbytes = 1 << 20;  // above msgmnb: CAP_SYS_RESOURCE only
    CHECK_ERR(rmsgctl(id, IPC_SET, &ds), EPERM);
    as_user(0);
  }
  struct msginfo mi;
  CHECK(rmsgctl(0, IPC_INFO, &mi) >= 0 && mi.msgmax == 8192 && mi.msgmnb == 16384, "IPC_INFO");
  // Removal wakes a sleeping receiver with EIDRM (given time to fall asleep).
  w.result = -2;
  w.started = 0;
  REQUIRE(pthread_create(&th, NULL, msg_recv_thread, &w) == 0);
  while (!w.started) usleep(1000);
  usleep(200000);
  CHECK_OK(rmsgctl(id, IPC_RMID, NULL));
  pthread_join(th, NULL);
  CHECK(w.result == -1 && w.err == EIDRM, "after IPC_RMID: %ld (%s)", w.result, strerror(w.err));
  CHECK_ERR(rmsgctl(id, IPC_STAT, &ds), EINVAL);
}

// fork: attachments are inherited (counted again), and a child in its
// own address space shares the segment, sleeps on a semaphore the parent
// posts, and its SEM_UNDO adjustments go at its exit.
static void test_fork(void) {
  puts("fork: inherited attachments, semaphores across processes");
  int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  int sem = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
  REQUIRE(shm >= 0 && sem >= 0);
  char* p = shmat(shm, NULL, 0);
  REQUIRE(p != (char*)-1);
  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    struct shmid_ds ds;
    if (rshmctl(shm, IPC_STAT, &ds) != 0 || ds.shm_nattch != 2) _exit(10);
    struct sembuf wait_parent = {0, -1, 0}, undo = {1, 5, SEM_UNDO};
    if (semop(sem, &wait_parent, 1) != 0) _exit(11);  // the parent posts after a while
    strcpy(p, "from the child");
    if (semop(sem, &undo, 1) != 0) _exit(12);
    _exit(0);
  }
  usleep(50000);
  struct sembuf post = {0, 1, 0};
  CHECK_OK(semop(sem, &post, 1));
  int status;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
  CHECK(strcmp(p, "from the child") == 0, "the child's write: %.20s", p);
  struct shmid_ds ds;
  CHECK(rshmctl(shm, IPC_STAT, &ds) == 0 && ds.shm_nattch == 1, "nattch after the child: %lu",
        (unsigned long)ds.shm_nattch);
  CHECK(rsemctl(sem, 1, GETVAL, 0) == 0, "the child's SEM_UNDO: %ld", rsemctl(sem, 1, GETVAL, 0));
  shmdt(p);
  rshmctl(shm, IPC_RMID, NULL);
  rsemctl(sem, 0, IPC_RMID, 0);
}

int main(void) {
  guest_name = "sysv_ipc";
  root = geteuid() == 0;
  if (!root) puts("not root: the ordinary user's permission checks are skipped");
  test_shm();
  test_sem();
  test_msg();
  test_fork();
  return guest_finish();
}
