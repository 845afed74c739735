// POSIX shared memory and named semaphores, which live in /dev/shm (a
// tmpfs, world-writable and sticky): shm_open/ftruncate/mmap shared with a
// forked child, sem_open/sem_post/sem_wait across processes, O_EXCL,
// shm_unlink. Python's multiprocessing (Lock, Queue, Pool) is built on
// sem_open; shared_memory on shm_open.
#include "guest_check.h"

#include <fcntl.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_dev_shm(void) {
  printf("/dev/shm is a sticky, world-writable tmpfs:\n");
  struct stat st;
  REQUIRE(stat("/dev/shm", &st) == 0, "%s", strerror(errno));
  CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 01777, "mode %o", st.st_mode);
  struct statfs sf;
  CHECK(statfs("/dev/shm", &sf) == 0 && sf.f_type == 0x01021994, "f_type %lx", (long)sf.f_type);
}

static void test_shm_open(const char* name) {
  printf("shm_open, shared with a forked child:\n");
  shm_unlink(name);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  REQUIRE(fd >= 0, "shm_open: %s", strerror(errno));
  CHECK(shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600) == -1 && errno == EEXIST);
  REQUIRE(ftruncate(fd, 8192) == 0);
  int* p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(p != MAP_FAILED);
  p[0] = 1;
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // A second opening by name sees the same object.
    int fd2 = shm_open(name, O_RDWR, 0);
    if (fd2 < 0) _exit(1);
    int* q = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
    if (q == MAP_FAILED || q[0] != 1) _exit(2);
    q[2047] = 42;
    p[1] = 7;
    _exit(0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  CHECK(p[2047] == 42 && p[1] == 7, "the child's writes did not reach the parent (%d, %d)", p[2047], p[1]);
  struct stat fst;
  CHECK(fstat(fd, &fst) == 0 && fst.st_size == 8192 && (fst.st_mode & 0777) == 0600);
  CHECK(shm_unlink(name) == 0);
  CHECK(shm_open(name, O_RDWR, 0) == -1 && errno == ENOENT);
  munmap(p, 8192);
  close(fd);
}

static void test_sem_open(const char* name) {
  printf("sem_open: a named semaphore between two processes:\n");
  sem_unlink(name);
  sem_t* s = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
  REQUIRE(s != SEM_FAILED, "sem_open: %s", strerror(errno));
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    sem_t* c = sem_open(name, 0);
    if (c == SEM_FAILED) _exit(1);
    for (int i = 0; i < 3; i++)
      if (sem_post(c) != 0) _exit(2);
    _exit(0);
  }
  for (int i = 0; i < 3; i++) CHECK(sem_wait(s) == 0);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  CHECK(sem_trywait(s) == -1 && errno == EAGAIN);
  CHECK(sem_close(s) == 0);
  CHECK(sem_unlink(name) == 0);
  CHECK(sem_open(name, 0) == SEM_FAILED && errno == ENOENT);
}

int main(void) {
  guest_name = "shm_posix";
  setvbuf(stdout, NULL, _IONBF, 0);
  char shm_name[64], sem_name[64];
  snprintf(shm_name, sizeof shm_name, "/flatux-shm-test-%d", (int)getpid());
  snprintf(sem_name, sizeof sem_name, "/flatux-sem-test-%d", (int)getpid());
  test_dev_shm();
  test_shm_open(shm_name);
  test_sem_open(sem_name);
  return guest_finish();
}
